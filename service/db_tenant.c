/* db_tenant.c - what each tenant may see and do: ownership checks, a
 * tenant's own list, cancellation, the requeue of a dead worker's job, the
 * retry of a job kiln failed, and the operator's metrics. Shares db.c's
 * connection rules (db.c's header comment). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "service_impl.h"
#include "strbuf.h"

/* BEGIN IMMEDIATE, f(d, arg, err), COMMIT or ROLLBACK; under the mutex. */
static enum kiln_rc in_txn(struct sdb *d,
                           enum kiln_rc (*f)(struct sdb *, void *, struct kiln_err *), void *arg,
                           struct kiln_err *err)
{
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = sdb_exec(d, "BEGIN IMMEDIATE", err);
    if (rc == KILN_OK) {
        rc = f(d, arg, err);
        if (rc == KILN_OK)
            rc = sdb_exec(d, "COMMIT", err);
        struct kiln_err e2 = {0};
        kiln_err_clear(&e2);
        if (rc != KILN_OK && sdb_exec(d, "ROLLBACK", &e2) != KILN_OK)
            fprintf(stderr, "kiln serve: %s\n", e2.msg);
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_public_name_locked(struct sdb *d, const char *token_id, const char *name,
                                    char out[SERVE_PUBLIC_NAME_MAX], struct kiln_err *err)
{
    if (d->public_names) {
        snprintf(out, SERVE_PUBLIC_NAME_MAX, "%s", name ? name : "");
        return KILN_OK;
    }
    if (!d->handle_key[0]) {
        enum kiln_rc rc = sdb_meta_locked(d, "handle_key", 64, d->handle_key, err);
        if (rc != KILN_OK)
            return rc;
    }
    /* Keyed by a secret of the database: a handle cannot be computed from
     * a token id (nor a guessed name) by anyone without it. */
    char in[SERVE_META_MAX + SERVE_TOKEN_ID_LEN + 2], hex[SHA256_HEX_LEN + 1];
    int n = snprintf(in, sizeof(in), "%s:%s", d->handle_key, token_id ? token_id : "");
    sha256_hex_of(in, (size_t)n, hex);
    snprintf(out, SERVE_PUBLIC_NAME_MAX, "tenant-%.10s", hex);
    return KILN_OK;
}

enum kiln_rc sdb_public_names(struct sdb *d, json_t *rows, const char *id_key, const char *name_key,
                              const char *out_key, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    size_t i;
    json_t *r;
    pthread_mutex_lock(&d->mu);
    json_array_foreach(rows, i, r)
    {
        char shown[SERVE_PUBLIC_NAME_MAX];
        rc = sdb_public_name_locked(
            d, json_string_value(json_object_get(r, id_key)),
            name_key ? json_string_value(json_object_get(r, name_key)) : NULL, shown, err);
        if (rc != KILN_OK)
            break;
        json_object_set_new(r, out_key, json_string(shown));
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_job_visible(struct sdb *d, const char *id, const struct stoken *tok,
                             struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    bool mine = false;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "SELECT token_id FROM jobs WHERE id=?1", &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "ownership");
    } else {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW)
            mine = tok->admin || !strcmp((const char *)sqlite3_column_text(st, 0), tok->id);
        else if (r != SQLITE_DONE)
            rc = sdb_fail(d, err, "ownership");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    if (rc == KILN_OK && !mine)
        rc = kiln_fail(err, KILN_E_NOTFOUND,
                       "no submission %s for this token (a submission is visible to the token "
                       "that sent it and to admins)",
                       id);
    return rc;
}

/* The seq of the cursor's submission, which must be one tok may list. */
static enum kiln_rc cursor_seq_locked(struct sdb *d, const struct stoken *tok, bool all,
                                      const char *cursor, long long *seq, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sdb_prep(d, "SELECT seq FROM jobs WHERE id=?2 AND (?1 IS NULL OR token_id=?1)", &st) !=
        SQLITE_OK)
        return sdb_fail(d, err, "list");
    if (!(all && tok->admin))
        sqlite3_bind_text(st, 1, tok->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, cursor, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        *seq = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (r == SQLITE_DONE)
        return kiln_fail(err, KILN_E_USAGE,
                         "cursor '%s' is not a next_cursor this server returned to this token",
                         cursor);
    return r == SQLITE_ROW ? KILN_OK : sdb_fail(d, err, "list");
}

/* The page's rows (one more than limit: it tells whether there is a next). */
static enum kiln_rc list_rows_locked(struct sdb *d, const struct stoken *tok, bool all,
                                     const char *cursor, int limit, json_t **rows,
                                     struct kiln_err *err)
{
    long long before = 0;
    enum kiln_rc rc = cursor ? cursor_seq_locked(d, tok, all, cursor, &before, err) : KILN_OK;
    sqlite3_stmt *st = NULL;
    if (rc != KILN_OK)
        return rc;
    if (sdb_prep(d,
                 "SELECT id, workload, board AS leaderboard, backend, state, status, detail,"
                 " score_ms, verified, submitted, finished FROM jobs"
                 " WHERE (?1 IS NULL OR token_id=?1) AND (?2 <= 0 OR seq < ?2)"
                 " ORDER BY seq DESC LIMIT ?3",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "list");
    if (!(all && tok->admin))
        sqlite3_bind_text(st, 1, tok->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, before);
    sqlite3_bind_int(st, 3, limit + 1);
    rc = sdb_rows_json(d, st, rows, err);
    sqlite3_finalize(st);
    return rc;
}

enum kiln_rc sdb_list_json(struct sdb *d, const struct stoken *tok, bool all, const char *cursor,
                           int limit, json_t **out, struct kiln_err *err)
{
    json_t *rows = NULL;
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = list_rows_locked(d, tok, all, cursor, limit, &rows, err);
    pthread_mutex_unlock(&d->mu);
    if (rc != KILN_OK)
        return rc;
    /* The cursor is the last listed submission's id: the tenant's own
     * handle, so it tells nothing of anyone else's submissions (a row
     * number would count them). */
    json_t *next = json_null();
    if (json_array_size(rows) > (size_t)limit) {
        json_array_remove(rows, (size_t)limit);
        json_decref(next);
        next = json_incref(json_object_get(json_array_get(rows, (size_t)limit - 1), "id"));
    }
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        json_object_set_new(r, "verified",
                            json_boolean(json_integer_value(json_object_get(r, "verified"))));
    }
    *out = json_pack("{s:o,s:o}", "submissions", rows, "next_cursor", next);
    return *out ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "list");
}

struct cancel_arg {
    const char *id, *by;
    char *was;
};

static enum kiln_rc cancel_locked(struct sdb *d, void *arg, struct kiln_err *err)
{
    struct cancel_arg *a = arg;
    sqlite3_stmt *st = NULL;
    if (sdb_prep(d, "SELECT state FROM jobs WHERE id=?1", &st) != SQLITE_OK)
        return sdb_fail(d, err, "cancel");
    sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        snprintf(a->was, 16, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (r != SQLITE_ROW)
        return r == SQLITE_DONE ? kiln_fail(err, KILN_E_NOTFOUND, "no submission %s", a->id)
                                : sdb_fail(d, err, "cancel");
    if (!strcmp(a->was, "done"))
        return KILN_OK;
    char detail[128];
    snprintf(detail, sizeof(detail), "cancelled by %s while %s", a->by, a->was);
    /* The lease goes with it: a worker judging it commits nothing. */
    if (sdb_prep(d,
                 "UPDATE jobs SET state='done', lease=NULL, lease_until=NULL, worker_pid=NULL,"
                 " finished=?2, status='cancelled', stage='cancelled', detail=?3 WHERE id=?1",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "cancel");
    sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, serve_now());
    sqlite3_bind_text(st, 3, detail, -1, SQLITE_STATIC);
    enum kiln_rc rc = sqlite3_step(st) == SQLITE_DONE ? KILN_OK : sdb_fail(d, err, "cancel");
    sqlite3_finalize(st);
    if (rc == KILN_OK)
        rc = sdb_event_locked(d, a->id, "cancelled", detail, err);
    return rc;
}

enum kiln_rc sdb_cancel(struct sdb *d, const char *id, const char *by, char was_state[16],
                        struct kiln_err *err)
{
    struct cancel_arg a = {.id = id, .by = by, .was = was_state};
    was_state[0] = '\0';
    return in_txn(d, cancel_locked, &a, err);
}

enum kiln_rc sdb_board_known(struct sdb *d, const char *board, bool *known, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    *known = false;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "SELECT 1 FROM jobs WHERE board=?1 LIMIT 1", &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "leaderboard");
    } else {
        sqlite3_bind_text(st, 1, board, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        *known = r == SQLITE_ROW;
        if (r != SQLITE_ROW && r != SQLITE_DONE)
            rc = sdb_fail(d, err, "leaderboard");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

struct requeue_arg {
    long pid;
    const char *why;
    int *n;
};

static enum kiln_rc requeue_worker_locked(struct sdb *d, void *arg, struct kiln_err *err)
{
    struct requeue_arg *a = arg;
    sqlite3_stmt *st = NULL;
    if (sdb_prep(d,
                 "UPDATE jobs SET state='queued', lease=NULL, lease_until=NULL, worker_pid=NULL"
                 " WHERE state='running' AND worker_pid=?1 RETURNING id",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "requeue");
    sqlite3_bind_int64(st, 1, a->pid);
    char ids[8][SERVE_ID_LEN + 1];
    int r, k = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW)
        if (k < 8)
            snprintf(ids[k++], sizeof(ids[0]), "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return sdb_fail(d, err, "requeue");
    enum kiln_rc rc = KILN_OK;
    for (int i = 0; rc == KILN_OK && i < k; i++)
        rc = sdb_event_locked(d, ids[i], "requeued", a->why, err);
    *a->n = k;
    return rc;
}

enum kiln_rc sdb_requeue_worker(struct sdb *d, long pid, const char *why, int *n,
                                struct kiln_err *err)
{
    struct requeue_arg a = {.pid = pid, .why = why, .n = n};
    *n = 0;
    return in_txn(d, requeue_worker_locked, &a, err);
}

struct release_arg {
    const struct sjob *j;
    const char *why;
    bool *released;
};

static enum kiln_rc release_locked(struct sdb *d, void *arg, struct kiln_err *err)
{
    struct release_arg *a = arg;
    sqlite3_stmt *st = NULL;
    if (sdb_prep(d,
                 "UPDATE jobs SET state='queued', lease=NULL, lease_until=NULL, worker_pid=NULL"
                 " WHERE id=?1 AND lease=?2 AND state='running'",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "release");
    sqlite3_bind_text(st, 1, a->j->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, a->j->lease, -1, SQLITE_STATIC);
    enum kiln_rc rc = sqlite3_step(st) == SQLITE_DONE ? KILN_OK : sdb_fail(d, err, "release");
    *a->released = rc == KILN_OK && sqlite3_changes(d->db) == 1;
    sqlite3_finalize(st);
    if (rc == KILN_OK && *a->released)
        rc = sdb_event_locked(d, a->j->id, "retry", a->why, err);
    return rc;
}

enum kiln_rc sdb_release(struct sdb *d, const struct sjob *j, const char *why, bool *released,
                         struct kiln_err *err)
{
    struct release_arg a = {.j = j, .why = why, .released = released};
    *released = false;
    return in_txn(d, release_locked, &a, err);
}

enum kiln_rc sdb_bucket(struct sdb *d, const char *token_id, struct sbucket *b,
                        struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    memset(b, 0, sizeof(*b));
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "SELECT rate, burst, bucket, bucket_at FROM tokens WHERE id=?1", &st) !=
        SQLITE_OK) {
        rc = sdb_fail(d, err, "token bucket");
    } else {
        sqlite3_bind_text(st, 1, token_id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            double rate = sqlite3_column_double(st, 0);
            b->burst = sqlite3_column_double(st, 1);
            double now = serve_now(), at = sqlite3_column_double(st, 3);
            b->remaining = fmin(b->burst, sqlite3_column_double(st, 2) + fmax(0, now - at) * rate);
            b->reset_s = rate > 0 ? (b->burst - b->remaining) / rate : 0;
        } else {
            rc = kiln_fail(err, KILN_E_NOTFOUND, "the token was removed");
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* One query's integer answer (0 on any failure: a metric, not a decision). */
static long long count_of(struct sdb *d, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = 0;
    if (sdb_prep(d, sql, &st) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Queued submissions per tenant and backend, each tenant by its public
 * name (token names are [A-Za-z0-9_.@-], handles hex: no label escaping). */
static enum kiln_rc tenant_depths_locked(struct sdb *d, struct strbuf *sb, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    strbuf_puts(sb, "# HELP kiln_tenant_queue_depth Submissions waiting for a worker, per tenant "
                    "(claimed round-robin across tenants).\n"
                    "# TYPE kiln_tenant_queue_depth gauge\n");
    if (sdb_prep(d,
                 "SELECT token_id, MIN(user), backend, COUNT(*) FROM jobs WHERE state='queued'"
                 " GROUP BY token_id, backend ORDER BY token_id, backend",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "metrics");
    enum kiln_rc rc = KILN_OK;
    while (rc == KILN_OK && sqlite3_step(st) == SQLITE_ROW) {
        char shown[SERVE_PUBLIC_NAME_MAX];
        rc = sdb_public_name_locked(d, (const char *)sqlite3_column_text(st, 0),
                                    (const char *)sqlite3_column_text(st, 1), shown, err);
        if (rc == KILN_OK)
            strbuf_printf(sb, "kiln_tenant_queue_depth{tenant=\"%s\",backend=\"%s\"} %lld\n", shown,
                          (const char *)sqlite3_column_text(st, 2),
                          (long long)sqlite3_column_int64(st, 3));
    }
    sqlite3_finalize(st);
    return rc;
}

/* The judge-time histogram's upper bounds, seconds. */
static const double judge_le[] = {1, 2, 5, 10, 30, 60, 120, 300, 600, 1800};

static enum kiln_rc metrics_locked(struct sdb *d, struct strbuf *sb, int workers,
                                   struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    strbuf_puts(sb, "# HELP kiln_queue_depth Submissions waiting for a worker.\n"
                    "# TYPE kiln_queue_depth gauge\n");
    if (sdb_prep(d,
                 "SELECT b, (SELECT COUNT(*) FROM jobs WHERE state='queued' AND backend=b)"
                 " FROM (SELECT 'cpu' AS b UNION SELECT 'cuda')",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "metrics");
    while (sqlite3_step(st) == SQLITE_ROW)
        strbuf_printf(sb, "kiln_queue_depth{backend=\"%s\"} %lld\n",
                      (const char *)sqlite3_column_text(st, 0),
                      (long long)sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    enum kiln_rc rc = tenant_depths_locked(d, sb, err);
    if (rc != KILN_OK)
        return rc;
    long long busy = count_of(d, "SELECT COUNT(*) FROM jobs WHERE state='running'");
    strbuf_printf(sb,
                  "# HELP kiln_workers Judging worker processes.\n# TYPE kiln_workers gauge\n"
                  "kiln_workers %d\n"
                  "# HELP kiln_workers_busy Workers judging a submission now.\n"
                  "# TYPE kiln_workers_busy gauge\nkiln_workers_busy %lld\n",
                  workers, busy);
    strbuf_puts(sb, "# HELP kiln_verdicts_total Submissions judged, by verdict status.\n"
                    "# TYPE kiln_verdicts_total counter\n");
    if (sdb_prep(d,
                 "SELECT status, COUNT(*) FROM jobs WHERE state='done' AND status IS NOT NULL"
                 " GROUP BY status ORDER BY status",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "metrics");
    while (sqlite3_step(st) == SQLITE_ROW) {
        /* Status names are kiln's own words (verdict.h), never a client's. */
        strbuf_printf(sb, "kiln_verdicts_total{status=\"%s\"} %lld\n",
                      (const char *)sqlite3_column_text(st, 0),
                      (long long)sqlite3_column_int64(st, 1));
    }
    sqlite3_finalize(st);
    strbuf_puts(sb, "# HELP kiln_judge_seconds From a submission's first claim to its verdict.\n"
                    "# TYPE kiln_judge_seconds histogram\n");
    if (sdb_prep(d,
                 "SELECT finished - started FROM jobs WHERE state='done' AND started IS NOT NULL"
                 " AND finished IS NOT NULL AND status != 'cancelled'",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "metrics");
    size_t nb = sizeof(judge_le) / sizeof(*judge_le);
    long long bucket[sizeof(judge_le) / sizeof(*judge_le)] = {0}, n = 0;
    double sum = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double s = fmax(0, sqlite3_column_double(st, 0));
        for (size_t i = 0; i < nb; i++)
            bucket[i] += s <= judge_le[i];
        sum += s;
        n++;
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < nb; i++)
        strbuf_printf(sb, "kiln_judge_seconds_bucket{le=\"%g\"} %lld\n", judge_le[i], bucket[i]);
    strbuf_printf(sb,
                  "kiln_judge_seconds_bucket{le=\"+Inf\"} %lld\nkiln_judge_seconds_sum %.3f\n"
                  "kiln_judge_seconds_count %lld\n",
                  n, sum, n);
    return KILN_OK;
}

enum kiln_rc sdb_metrics_text(struct sdb *d, int workers, char **out, struct kiln_err *err)
{
    struct strbuf sb;
    strbuf_init(&sb);
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = metrics_locked(d, &sb, workers, err);
    pthread_mutex_unlock(&d->mu);
    if (rc != KILN_OK) {
        strbuf_free(&sb);
        return rc;
    }
    return strbuf_finish(&sb, out, err);
}
