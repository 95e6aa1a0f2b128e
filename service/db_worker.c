/* db_worker.c - the workers' and the compile pool's side of the database:
 * claims under a lease, heartbeats, the run timeline, the verdict's
 * exactly-once commit, compile-ahead hints, and publishing the record.
 * Shares db.c's connection rules (db.c's header comment). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "service_impl.h"

void sjob_free(struct sjob *j)
{
    free(j->source);
    j->source = NULL;
}

/* board, visible_seed, wl_dir, body_sha from column `c` on. */
static void claimed_extra(sqlite3_stmt *st, int c, struct sjob *job)
{
    const char *b = (const char *)sqlite3_column_text(st, c),
               *seed = (const char *)sqlite3_column_text(st, c + 1),
               *dir = (const char *)sqlite3_column_text(st, c + 2),
               *sha = (const char *)sqlite3_column_text(st, c + 3);
    snprintf(job->board, sizeof(job->board), "%s", b ? b : job->workload);
    /* A job queued before visible seeds existed runs on seed 0, recorded as such. */
    job->visible_seed = seed ? strtoull(seed, NULL, 10) : 0;
    snprintf(job->wl_dir, sizeof(job->wl_dir), "%s", dir ? dir : "");
    snprintf(job->body_sha, sizeof(job->body_sha), "%s", sha ? sha : "");
}

/* The claimed row's id, workload, backend (columns 0..2) and source blob
 * (column `src`) into job; false when the source cannot be copied. */
static bool claimed_row(sqlite3_stmt *st, int src, struct sjob *job)
{
    snprintf(job->id, sizeof(job->id), "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(job->workload, sizeof(job->workload), "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(job->backend, sizeof(job->backend), "%s", (const char *)sqlite3_column_text(st, 2));
    int n = sqlite3_column_bytes(st, src);
    job->source = malloc((size_t)n + 1);
    if (!job->source)
        return false;
    if (n)
        memcpy(job->source, sqlite3_column_blob(st, src), (size_t)n);
    job->source[n] = '\0';
    job->source_len = (size_t)n;
    return true;
}

/* Fair share: the next job is the oldest queued one of the tenant (token)
 * whose turn came longest ago (claim_turn, a counter each claim advances;
 * never claimed: first), so tenants take turns one job at a time and one
 * tenant's backlog holds another's next job back by at most one job per
 * worker. Round-robin with equal weights; `cond` picks the jobs considered. */
#define FAIR_NEXT_SEQ(cond)                                                                        \
    "SELECT q.seq FROM (SELECT token_id, MIN(seq) AS seq FROM jobs WHERE " cond                    \
    " GROUP BY token_id) q LEFT JOIN tokens t ON t.id=q.token_id"                                  \
    " ORDER BY COALESCE(t.claim_turn, 0), q.seq LIMIT 1"

/* The claims' SQL, laid out by hand (clang-format cannot lay out a macro
 * inside a string). */
/* clang-format off */
/* A worker's claim of the next job of its backend (?4), in turns. */
static const char claim_sql[] =
    "UPDATE jobs SET state='running', attempts=attempts+1, lease=?1, lease_until=?2,"
    " started=COALESCE(started, ?3), worker_pid=?5"
    " WHERE seq=(" FAIR_NEXT_SEQ("state='queued' AND backend=?4") ")"
    " RETURNING id, workload, backend, user, source, attempts, submitted, board, visible_seed,"
    " wl_dir, body_sha, token_id";

/* The compile pool's claim, in the same turns: a queued job not compiled
 * yet, or whose compile claim expired (?2). */
static const char compile_claim_sql[] =
    "UPDATE jobs SET compile_state='compiling', compile_until=?1, compile_started=?3,"
    " compile_finished=NULL"
    " WHERE seq=(" FAIR_NEXT_SEQ("state='queued' AND wl_dir IS NULL AND (compile_state IS NULL"
                                 " OR (compile_state='compiling' AND compile_until < ?2))") ")"
    " RETURNING id, workload, backend, source, board, visible_seed, wl_dir, body_sha";
/* clang-format on */

/* The claimed job's tenant goes to the back of the rotation. */
static enum kiln_rc take_turn_locked(struct sdb *d, const char *token_id, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sdb_prep(d,
                 "UPDATE tokens SET claim_turn=(SELECT COALESCE(MAX(claim_turn), 0) + 1 FROM"
                 " tokens) WHERE id=?1",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "claim turn");
    sqlite3_bind_text(st, 1, token_id, -1, SQLITE_STATIC);
    enum kiln_rc rc = sqlite3_step(st) == SQLITE_DONE ? KILN_OK : sdb_fail(d, err, "claim turn");
    sqlite3_finalize(st);
    return rc;
}

enum kiln_rc sdb_fair_position(struct sdb *d, const char *backend, const char *token_id,
                               long long seq, long long *pos, struct kiln_err *err)
{
    /* Per tenant with queued jobs: how many, its place in the rotation, and
     * how many of them come before `seq`. */
    sqlite3_stmt *st = NULL;
    *pos = 0;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d,
                 "SELECT q.token_id, q.n, q.first, COALESCE(t.claim_turn, 0),"
                 " (SELECT COUNT(*) FROM jobs b WHERE b.state='queued' AND b.backend=?1"
                 "  AND b.token_id=q.token_id AND b.seq < ?2)"
                 " FROM (SELECT token_id, COUNT(*) AS n, MIN(seq) AS first FROM jobs"
                 "  WHERE state='queued' AND backend=?1 GROUP BY token_id) q"
                 " LEFT JOIN tokens t ON t.id=q.token_id",
                 &st) != SQLITE_OK) {
        pthread_mutex_unlock(&d->mu);
        return sdb_fail(d, err, "queue position");
    }
    sqlite3_bind_text(st, 1, backend, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, seq);
    struct tenant_q {
        long long n, first, turn, before;
        bool mine;
    } *v = NULL, me = {0};
    size_t nv = 0;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        struct tenant_q *nvv = realloc(v, (nv + 1) * sizeof(*v));
        if (!nvv)
            break;
        v = nvv;
        const char *tid = (const char *)sqlite3_column_text(st, 0);
        v[nv] = (struct tenant_q){sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                                  sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
                                  tid && !strcmp(tid, token_id)};
        if (v[nv].mine)
            me = v[nv];
        nv++;
    }
    enum kiln_rc rc = r == SQLITE_DONE  ? KILN_OK
                      : r == SQLITE_ROW ? kiln_fail(err, KILN_E_NOMEM, "queue position")
                                        : sdb_fail(d, err, "queue position");
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    /* Round k gives each tenant with more than k jobs one claim, in the
     * rotation's order: ours comes in round `before`, after that round's
     * claims of the tenants ahead of us in the rotation. */
    long long p = me.before;
    for (size_t i = 0; rc == KILN_OK && i < nv; i++) {
        if (v[i].mine)
            continue;
        bool ahead = v[i].turn < me.turn || (v[i].turn == me.turn && v[i].first < me.first);
        long long k = me.before + ahead;
        p += v[i].n < k ? v[i].n : k;
    }
    free(v);
    *pos = p;
    return rc;
}

enum kiln_rc sdb_claim(struct sdb *d, const char *backend, struct sjob *job, bool *got,
                       struct kiln_err *err)
{
    memset(job, 0, sizeof(*job));
    *got = false;
    enum kiln_rc rc = serve_random_hex(job->lease, 32, err);
    if (rc != KILN_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&d->mu);
    if ((rc = sdb_exec(d, "BEGIN IMMEDIATE", err)) != KILN_OK)
        goto out;
    /* One statement claims: no window between choosing and taking. */
    if (sdb_prep(d, claim_sql, &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "claim");
        goto rollback;
    }
    double now = serve_now();
    sqlite3_bind_text(st, 1, job->lease, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, now + d->lease_s);
    sqlite3_bind_double(st, 3, now);
    sqlite3_bind_text(st, 4, backend, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)getpid()); /* the server requeues it if we die */
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        snprintf(job->user, sizeof(job->user), "%s", (const char *)sqlite3_column_text(st, 3));
        if (!claimed_row(st, 4, job)) {
            rc = kiln_fail(err, KILN_E_NOMEM, "claimed source");
            goto rollback;
        }
        job->attempts = sqlite3_column_int(st, 5);
        job->submitted = sqlite3_column_double(st, 6);
        claimed_extra(st, 7, job);
        snprintf(job->token_id, sizeof(job->token_id), "%s",
                 (const char *)sqlite3_column_text(st, 11));
        r = sqlite3_step(st);
        *got = true;
    }
    if (r != SQLITE_DONE) {
        rc = sdb_fail(d, err, "claim");
        goto rollback;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (*got) {
        char line[64];
        snprintf(line, sizeof(line), "attempt %d", job->attempts);
        rc = sdb_event_locked(d, job->id, "claimed", line, err);
        if (rc == KILN_OK)
            rc = take_turn_locked(d, job->token_id, err);
    }
    if (rc == KILN_OK)
        rc = sdb_exec(d, "COMMIT", err);
    if (rc == KILN_OK)
        goto out;
rollback:
    sqlite3_finalize(st);
    st = NULL;
    {
        struct kiln_err e2 = {0};
        if (sdb_exec(d, "ROLLBACK", &e2) != KILN_OK)
            fprintf(stderr, "kiln serve: %s\n", e2.msg);
    }
    sjob_free(job);
    *got = false;
out:
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_heartbeat(struct sdb *d, const struct sjob *j, bool *held, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "UPDATE jobs SET lease_until=?1 WHERE id=?2 AND lease=?3 AND state='running'",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "heartbeat");
    } else {
        sqlite3_bind_double(st, 1, serve_now() + d->lease_s);
        sqlite3_bind_text(st, 2, j->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, j->lease, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sdb_fail(d, err, "heartbeat");
        else
            *held = sqlite3_changes(d->db) == 1;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_mark_run(struct sdb *d, const struct sjob *j, bool finished, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d,
                 finished
                     ? "UPDATE jobs SET run_finished=?1 WHERE id=?2 AND lease=?3"
                     : "UPDATE jobs SET run_started=?1, run_finished=NULL WHERE id=?2 AND lease=?3",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "timeline");
    } else {
        sqlite3_bind_double(st, 1, serve_mono());
        sqlite3_bind_text(st, 2, j->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, j->lease, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sdb_fail(d, err, "timeline");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_finish(struct sdb *d, const struct sjob *j, const struct sverdict *v,
                        bool *committed, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    *committed = false;
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = sdb_exec(d, "BEGIN IMMEDIATE", err);
    if (rc != KILN_OK)
        goto out;
    /* The lease in the WHERE clause is the exactly-once rule: a worker whose
     * lease was reaped (and the job claimed again) commits nothing. */
    if (sdb_prep(d,
                 "UPDATE jobs SET state='done', lease=NULL, lease_until=NULL, finished=?3,"
                 " status=?4, stage=?5, detail=?6, score_ms=?7, verified=?8, gpu_model=?9,"
                 " secret_seed=?10, record=?11, verdicts=verdicts+1"
                 " WHERE id=?1 AND lease=?2 AND state='running'",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "finish");
        goto rollback;
    }
    char seed[32] = "";
    if (v->secret_seed)
        snprintf(seed, sizeof(seed), "%llu", (unsigned long long)v->secret_seed);
    sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, j->lease, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, serve_now());
    sqlite3_bind_text(st, 4, v->status, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, v->stage, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, v->detail, -1, SQLITE_STATIC);
    if (v->score_ms > 0)
        sqlite3_bind_double(st, 7, v->score_ms);
    sqlite3_bind_int(st, 8, v->verified);
    sqlite3_bind_text(st, 9, v->gpu_model, -1, SQLITE_STATIC);
    if (seed[0])
        sqlite3_bind_text(st, 10, seed, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, v->record, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = sdb_fail(d, err, "finish");
        goto rollback;
    }
    *committed = sqlite3_changes(d->db) == 1;
    sqlite3_finalize(st);
    st = NULL;
    if (*committed) {
        char line[600];
        snprintf(line, sizeof(line), "%s (stage %s)%s%s", v->status, v->stage,
                 v->detail && v->detail[0] ? ": " : "", v->detail ? v->detail : "");
        rc = sdb_event_locked(d, j->id, "verdict", line, err);
    }
    if (rc == KILN_OK)
        rc = sdb_exec(d, "COMMIT", err);
    if (rc == KILN_OK)
        goto out;
rollback:
    sqlite3_finalize(st);
    {
        struct kiln_err e2 = {0};
        if (sdb_exec(d, "ROLLBACK", &e2) != KILN_OK)
            fprintf(stderr, "kiln serve: %s\n", e2.msg);
    }
    *committed = false;
out:
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* ---- the compile pool's side ---- */

enum kiln_rc sdb_claim_compile(struct sdb *d, struct sjob *job, bool *got, struct kiln_err *err)
{
    memset(job, 0, sizeof(*job));
    *got = false;
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    pthread_mutex_lock(&d->mu);
    /* A compile claim is a hint, not a lease on the job: the judging worker
     * compiles itself whenever the result is not there. A compile claimed
     * by a pool process that died is claimable again after a minute. A
     * community workload is not compiled ahead: opening its session would
     * run its scripts before the worker has checked it. */
    if (sdb_prep(d, compile_claim_sql, &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "compile claim");
        goto out;
    }
    double now = serve_now();
    sqlite3_bind_double(st, 1, now + 60);
    sqlite3_bind_double(st, 2, now);
    sqlite3_bind_double(st, 3, serve_mono());
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        if (!claimed_row(st, 3, job)) {
            rc = kiln_fail(err, KILN_E_NOMEM, "compile claim");
            goto out;
        }
        claimed_extra(st, 4, job);
        r = sqlite3_step(st);
        *got = true;
    }
    if (r != SQLITE_DONE) {
        rc = sdb_fail(d, err, "compile claim");
        sjob_free(job);
        *got = false;
    }
out:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_compile_done(struct sdb *d, const char *id, bool ok, bool *still_queued,
                              struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    *still_queued = false;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(
            d, "UPDATE jobs SET compile_state=?2, compile_finished=?3 WHERE id=?1 RETURNING state",
            &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "compile done");
        goto out;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, ok ? "done" : "failed", -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, serve_mono());
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        *still_queued = !strcmp((const char *)sqlite3_column_text(st, 0), "queued");
        r = sqlite3_step(st);
    }
    if (r != SQLITE_DONE)
        rc = sdb_fail(d, err, "compile done");
out:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_record_of(struct sdb *d, const char *id, char *out, size_t cap,
                           struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    out[0] = '\0';
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "SELECT record FROM jobs WHERE id=?1 AND state='done'", &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "record");
    } else {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
        else if (r != SQLITE_ROW && r != SQLITE_DONE)
            rc = sdb_fail(d, err, "record");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc serve_publish_record(struct sdb *d, const char *data, const char *id, const char *tmp,
                                  struct kiln_err *err)
{
    char from[PATH_MAX], to[PATH_MAX];
    snprintf(from, sizeof(from), "%s/records/%s", data, tmp);
    snprintf(to, sizeof(to), "%s/records/%s", data, id);
    enum kiln_rc rc = KILN_OK;
    if (access(to, F_OK) == 0)
        rc = fs_remove_tree(to, err);
    if (rc == KILN_OK && rename(from, to) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "rename %s to %s", from, to);
    if (rc != KILN_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "UPDATE jobs SET record=?2 WHERE id=?1", &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "record");
    } else {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sdb_fail(d, err, "record");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_slurm_job_name(struct sdb *d, char *out, size_t cap, struct kiln_err *err)
{
    char tag[SERVE_META_MAX];
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = sdb_meta_locked(d, "slurm_tag", 16, tag, err);
    pthread_mutex_unlock(&d->mu);
    if (rc == KILN_OK)
        snprintf(out, cap, "kiln-serve-%s", tag);
    return rc;
}
