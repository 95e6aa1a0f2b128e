/* db.c - the service's durable state in SQLite: tokens, the queue, events,
 * verdicts. WAL so readers never block the writer; busy_timeout so a
 * second process (a worker, `kiln token add`) waits instead of failing;
 * every read-modify-write in BEGIN IMMEDIATE, so two writers never both
 * read the old state. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "clock.h"
#include "service_impl.h"
#include "session.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS tokens("
    " id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, hash BLOB NOT NULL,"
    " admin INTEGER NOT NULL, created REAL NOT NULL, rate REAL NOT NULL, burst REAL NOT NULL,"
    " quota INTEGER NOT NULL, bucket REAL NOT NULL, bucket_at REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS jobs("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
    " token_id TEXT NOT NULL, user TEXT NOT NULL, idem_key TEXT, body_sha TEXT NOT NULL,"
    " workload TEXT NOT NULL, backend TEXT NOT NULL, source BLOB NOT NULL,"
    " state TEXT NOT NULL CHECK(state IN ('queued','running','done')),"
    " attempts INTEGER NOT NULL DEFAULT 0, lease TEXT, lease_until REAL,"
    " submitted REAL NOT NULL, started REAL, finished REAL,"
    " status TEXT, stage TEXT, detail TEXT, score_ms REAL, verified INTEGER NOT NULL DEFAULT 0,"
    " gpu_model TEXT, secret_seed TEXT, record TEXT, verdicts INTEGER NOT NULL DEFAULT 0,"
    " hacked INTEGER NOT NULL DEFAULT 0, hacked_by TEXT, hacked_reason TEXT, hacked_at REAL,"
    " compile_state TEXT, compile_until REAL,"
    " UNIQUE(token_id, idem_key));"
    /* The visible inputs' seed of each leaderboard (drawn on first use, rotated by an admin). */
    "CREATE TABLE IF NOT EXISTS visible_seeds("
    " board TEXT PRIMARY KEY, seed TEXT NOT NULL, set_at REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS jobs_queue ON jobs(state, backend, seq);"
    "CREATE INDEX IF NOT EXISTS jobs_token ON jobs(token_id, state);"
    "CREATE TABLE IF NOT EXISTS events("
    " n INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL, at REAL NOT NULL,"
    " stage TEXT NOT NULL, detail TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS events_job ON events(job, n);"
    /* Community workload checks by content (checkcache.c); problems '': passed. */
    "CREATE TABLE IF NOT EXISTS community_checks("
    " tar_sha TEXT NOT NULL, backend TEXT NOT NULL, seed TEXT NOT NULL, checker TEXT NOT NULL,"
    " problems TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY(tar_sha, backend, seed, checker));"
    /* Facts of this database's server, drawn once: slurm_tag names its Slurm
     * jobs, handle_key keys the tenants' public handles (db_tenant.c). */
    "CREATE TABLE IF NOT EXISTS server_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/* Columns added after the first release, for databases made before them:
 * board (the leaderboard, = workload for a built-in), the visible seed,
 * a community workload's directory, the timeline (serve_mono), the worker
 * judging a job; a token's expiry and revocation, and its place in the
 * claims' rotation (db_worker.c). */
static const char *const added_columns[][2] = {
    {"jobs", "board TEXT"},
    {"jobs", "visible_seed TEXT"},
    {"jobs", "wl_dir TEXT"},
    {"jobs", "compile_started REAL"},
    {"jobs", "compile_finished REAL"},
    {"jobs", "run_started REAL"},
    {"jobs", "run_finished REAL"},
    {"jobs", "worker_pid INTEGER"},
    {"tokens", "expires REAL"},
    {"tokens", "revoked REAL"},
    {"tokens", "claim_turn INTEGER"},
};

double serve_mono(void)
{
    return clock_mono_s();
}

void serve_time_in(clockid_t clk, long ms, struct timespec *ts)
{
    clock_gettime(clk, ts);
    ts->tv_nsec += (ms % 1000) * 1000000L;
    ts->tv_sec += ms / 1000 + ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

double serve_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

enum kiln_rc serve_random_hex(char *out, size_t nhex, struct kiln_err *err)
{
    unsigned char b[64];
    size_t nb = (nhex + 1) / 2;
    if (nb > sizeof(b))
        return kiln_fail(err, KILN_E_INTERNAL, "random_hex: %zu digits is too many", nhex);
    if (getrandom(b, nb, 0) != (ssize_t)nb)
        return kiln_fail_errno(err, KILN_E_IO, "getrandom");
    for (size_t i = 0; i < nhex; i++)
        out[i] = "0123456789abcdef"[(b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    out[nhex] = '\0';
    return KILN_OK;
}

enum kiln_rc sdb_fail(struct sdb *d, struct kiln_err *err, const char *what)
{
    return kiln_fail(err, KILN_E_IO, "database: %s: %s", what, sqlite3_errmsg(d->db));
}

enum kiln_rc sdb_exec(struct sdb *d, const char *sql, struct kiln_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(d->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        enum kiln_rc rc = kiln_fail(err, KILN_E_IO, "database: %.60s...: %s", sql,
                                    msg ? msg : sqlite3_errmsg(d->db));
        sqlite3_free(msg);
        return rc;
    }
    return KILN_OK;
}

/* Community leaderboards were once NAME@ and 12 hex digits of the
 * workload's hash (48 bits: two workloads of one name were found to share
 * them). They are NAME@ and the full SHA-256 now, which is the last part of
 * the job's community directory. */
static enum kiln_rc full_hash_boards(struct sdb *d, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    json_t *rows = NULL;
    if (sdb_prep(d,
                 "SELECT DISTINCT board, workload, wl_dir FROM jobs WHERE wl_dir IS NOT NULL"
                 " AND length(board) = length(workload) + 13",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "leaderboard names");
    enum kiln_rc rc = sdb_rows_json(d, st, &rows, err);
    sqlite3_finalize(st);
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *old = json_string_value(json_object_get(r, "board")),
                   *name = json_string_value(json_object_get(r, "workload")),
                   *dir = json_string_value(json_object_get(r, "wl_dir"));
        const char *hash = dir ? strrchr(dir, '/') : NULL;
        if (rc != KILN_OK || !old || !name || !hash || strlen(hash + 1) != 64)
            continue;
        char board[SERVE_BOARD_MAX + 1];
        snprintf(board, sizeof(board), "%s@%s", name, hash + 1);
        const char *sql[] = {"UPDATE jobs SET board=?1 WHERE board=?2 AND wl_dir=?3",
                             "UPDATE OR IGNORE visible_seeds SET board=?1 WHERE board=?2"};
        for (size_t k = 0; rc == KILN_OK && k < 2; k++) {
            if (sdb_prep(d, sql[k], &st) != SQLITE_OK) {
                rc = sdb_fail(d, err, "leaderboard names");
                break;
            }
            sqlite3_bind_text(st, 1, board, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, old, -1, SQLITE_STATIC);
            if (k == 0)
                sqlite3_bind_text(st, 3, dir, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = sdb_fail(d, err, "leaderboard names");
            sqlite3_finalize(st);
        }
    }
    json_decref(rows);
    return rc;
}

enum kiln_rc sdb_open(const char *path, struct sdb *d, struct kiln_err *err)
{
    memset(d, 0, sizeof(*d));
    /* The database holds every tenant's sources and the tokens' hashes:
     * created 0600 (SQLite gives its -wal and -shm files the same mode), and
     * an older one made 0644 is narrowed. */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO,
                               "cannot open the database %s (check the directory exists and is "
                               "writable)",
                               path);
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_uid == geteuid() && (sb.st_mode & 077))
        (void)fchmod(fd, sb.st_mode & 0700);
    close(fd);
    if (sqlite3_open_v2(path, &d->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        enum kiln_rc rc = kiln_fail(err, KILN_E_IO,
                                    "cannot open the database %s: %s (check the "
                                    "directory exists and is writable)",
                                    path, d->db ? sqlite3_errmsg(d->db) : "out of memory");
        sqlite3_close(d->db);
        d->db = NULL;
        return rc;
    }
    pthread_mutex_init(&d->mu, NULL);
    d->lease_s = SERVE_LEASE_S;
    sqlite3_busy_timeout(d->db, 10000);
    /* synchronous=FULL: an accepted submission (202) survives a power cut. */
    enum kiln_rc rc = sdb_exec(d, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", err);
    if (rc == KILN_OK)
        rc = sdb_exec(d, schema, err);
    for (size_t i = 0; rc == KILN_OK && i < sizeof(added_columns) / sizeof(*added_columns); i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s", added_columns[i][0],
                 added_columns[i][1]);
        /* Fails with "duplicate column name" when it is there: that is fine. */
        if (sqlite3_exec(d->db, sql, NULL, NULL, NULL) == SQLITE_OK) {
            if (i == 0) /* board just added: the old rows' board is their workload */
                rc = sdb_exec(d, "UPDATE jobs SET board=workload", err);
        } else if (!strstr(sqlite3_errmsg(d->db), "duplicate column")) {
            rc = sdb_fail(d, err, "adding a column");
        }
    }
    if (rc == KILN_OK)
        rc = sdb_exec(d,
                      "CREATE INDEX IF NOT EXISTS jobs_by_board ON jobs(board, status, verified,"
                      " hacked);",
                      err);
    if (rc == KILN_OK)
        rc = full_hash_boards(d, err);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "%s: ", path);
        sdb_close(d);
    }
    return rc;
}

void sdb_close(struct sdb *d)
{
    if (!d->db)
        return;
    sqlite3_close(d->db);
    d->db = NULL;
    pthread_mutex_destroy(&d->mu);
}

enum kiln_rc sdb_lock(const char *db_path, int *fd, struct kiln_err *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s.lock", db_path);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (f < 0)
        return kiln_fail_errno(err, KILN_E_IO, "cannot open the lock file %s", path);
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(f, pid, sizeof(pid) - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(f);
        return kiln_fail(err, KILN_E_USAGE,
                         "another kiln serve (pid %s) is using the database %s: stop it, or "
                         "give this one its own --db",
                         pid[0] ? pid : "unknown", db_path);
    }
    char line[32];
    int n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
    if (ftruncate(f, 0) != 0 || pwrite(f, line, (size_t)n, 0) != n) {
        close(f);
        return kiln_fail_errno(err, KILN_E_IO, "cannot write the lock file %s", path);
    }
    *fd = f;
    return KILN_OK;
}

enum kiln_rc sdb_meta_locked(struct sdb *d, const char *key, size_t nhex, char out[SERVE_META_MAX],
                             struct kiln_err *err)
{
    char fresh[SERVE_META_MAX];
    if (nhex >= SERVE_META_MAX)
        return kiln_fail(err, KILN_E_INTERNAL, "server_meta %s: %zu digits is too many", key, nhex);
    enum kiln_rc rc = serve_random_hex(fresh, nhex, err);
    if (rc != KILN_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    /* The first server of the database draws it; every later one reads it. */
    if (sdb_prep(d,
                 "INSERT INTO server_meta(key, value) VALUES(?1, ?2)"
                 " ON CONFLICT(key) DO UPDATE SET value=value RETURNING value",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, key);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, fresh, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW)
        rc = sdb_fail(d, err, key);
    else
        snprintf(out, SERVE_META_MAX, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return rc;
}

/* A prepared statement, run under the mutex by its callers. */
int sdb_prep(struct sdb *d, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v2(d->db, sql, -1, st, NULL);
}

enum kiln_rc sdb_requeue(struct sdb *d, bool all, int *n, struct kiln_err *err)
{
    pthread_mutex_lock(&d->mu);
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    *n = 0;
    if (sdb_prep(d,
                 all ? "UPDATE jobs SET state='queued', lease=NULL, lease_until=NULL"
                       " WHERE state='running'"
                     : "UPDATE jobs SET state='queued', lease=NULL, lease_until=NULL"
                       " WHERE state='running' AND lease_until < ?1",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "requeue");
        goto out;
    }
    if (!all)
        sqlite3_bind_double(st, 1, serve_now());
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sdb_fail(d, err, "requeue");
    else
        *n = sqlite3_changes(d->db);
out:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_event_locked(struct sdb *d, const char *job, const char *stage, const char *detail,
                              struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    if (sdb_prep(d, "INSERT INTO events(job, at, stage, detail) VALUES(?1, ?2, ?3, ?4)", &st) !=
        SQLITE_OK)
        return sdb_fail(d, err, "event");
    sqlite3_bind_text(st, 1, job, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, serve_now());
    sqlite3_bind_text(st, 3, stage, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, detail ? detail : "", -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sdb_fail(d, err, "event");
    sqlite3_finalize(st);
    return rc;
}

enum kiln_rc sdb_event(struct sdb *d, const char *job, const char *stage, const char *detail,
                       struct kiln_err *err)
{
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = sdb_event_locked(d, job, stage, detail, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* Refills the token's bucket and takes one; *retry when it is empty. */
static enum kiln_rc take_from_bucket(struct sdb *d, const char *tok, bool *ok, double *retry,
                                     struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sdb_prep(d, "SELECT rate, burst, bucket, bucket_at FROM tokens WHERE id=?1", &st) !=
        SQLITE_OK)
        return sdb_fail(d, err, "token bucket");
    sqlite3_bind_text(st, 1, tok, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return kiln_fail(err, KILN_E_NOTFOUND, "the token was removed");
    }
    double rate = sqlite3_column_double(st, 0), burst = sqlite3_column_double(st, 1),
           bucket = sqlite3_column_double(st, 2), at = sqlite3_column_double(st, 3);
    sqlite3_finalize(st);
    double now = serve_now();
    bucket = fmin(burst, bucket + fmax(0, now - at) * rate);
    *ok = bucket >= 1.0;
    if (*ok)
        bucket -= 1.0;
    else
        *retry = rate > 0 ? (1.0 - bucket) / rate : 3600;
    if (sdb_prep(d, "UPDATE tokens SET bucket=?1, bucket_at=?2 WHERE id=?3", &st) != SQLITE_OK)
        return sdb_fail(d, err, "token bucket");
    sqlite3_bind_double(st, 1, bucket);
    sqlite3_bind_double(st, 2, now);
    sqlite3_bind_text(st, 3, tok, -1, SQLITE_STATIC);
    enum kiln_rc rc = sqlite3_step(st) == SQLITE_DONE ? KILN_OK : sdb_fail(d, err, "token bucket");
    sqlite3_finalize(st);
    return rc;
}

/* The board's visible seed, drawn (and kept) on its first use. */
static enum kiln_rc visible_seed_locked(struct sdb *d, const char *board, bool rotate,
                                        char seed[32], struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    if (!rotate) {
        if (sdb_prep(d, "SELECT seed FROM visible_seeds WHERE board=?1", &st) != SQLITE_OK)
            return sdb_fail(d, err, "visible seed");
        sqlite3_bind_text(st, 1, board, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW)
            snprintf(seed, 32, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (r == SQLITE_ROW)
            return KILN_OK;
        if (r != SQLITE_DONE)
            return sdb_fail(d, err, "visible seed");
    }
    uint64_t v = 0;
    enum kiln_rc rc = eval_fresh_seed(&v, err);
    if (rc != KILN_OK)
        return rc;
    snprintf(seed, 32, "%llu", (unsigned long long)v);
    if (sdb_prep(d, "INSERT OR REPLACE INTO visible_seeds(board, seed, set_at) VALUES(?1, ?2, ?3)",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "visible seed");
    sqlite3_bind_text(st, 1, board, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, seed, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, serve_now());
    rc = sqlite3_step(st) == SQLITE_DONE ? KILN_OK : sdb_fail(d, err, "visible seed");
    sqlite3_finalize(st);
    return rc;
}

enum kiln_rc sdb_rotate_seed(struct sdb *d, const char *board, char seed[32], struct kiln_err *err)
{
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = sdb_exec(d, "BEGIN IMMEDIATE", err);
    if (rc == KILN_OK) {
        rc = visible_seed_locked(d, board, true, seed, err);
        if (rc == KILN_OK)
            rc = sdb_exec(d, "COMMIT", err);
        struct kiln_err e2 = {0};
        if (rc != KILN_OK && sdb_exec(d, "ROLLBACK", &e2) != KILN_OK)
            fprintf(stderr, "kiln serve: %s\n", e2.msg);
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

static enum kiln_rc submit_locked(struct sdb *d, const struct ssubmit *s, char id[SERVE_ID_LEN + 1],
                                  enum ssubmit_result *res, double *retry, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    if (s->idem_key) {
        if (sdb_prep(d, "SELECT id, body_sha FROM jobs WHERE token_id=?1 AND idem_key=?2", &st) !=
            SQLITE_OK)
            return sdb_fail(d, err, "idempotency");
        sqlite3_bind_text(st, 1, s->tok->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, s->idem_key, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            snprintf(id, SERVE_ID_LEN + 1, "%s", (const char *)sqlite3_column_text(st, 0));
            *res = strcmp((const char *)sqlite3_column_text(st, 1), s->body_sha)
                       ? SSUBMIT_IDEM_CLASH
                       : SSUBMIT_REPLAY;
        }
        sqlite3_finalize(st);
        if (r == SQLITE_ROW)
            return KILN_OK;
        if (r != SQLITE_DONE)
            return sdb_fail(d, err, "idempotency");
    }
    if (sdb_prep(d,
                 "SELECT t.quota, (SELECT COUNT(*) FROM jobs WHERE token_id=t.id AND state!='done')"
                 " FROM tokens t WHERE t.id=?1",
                 &st) != SQLITE_OK)
        return sdb_fail(d, err, "quota");
    sqlite3_bind_text(st, 1, s->tok->id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return kiln_fail(err, KILN_E_NOTFOUND, "the token was removed");
    }
    long long quota = sqlite3_column_int64(st, 0), pending = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    if (pending >= quota) {
        *res = SSUBMIT_QUOTA;
        return KILN_OK;
    }
    bool ok = false;
    enum kiln_rc rc = take_from_bucket(d, s->tok->id, &ok, retry, err);
    if (rc != KILN_OK)
        return rc;
    if (!ok) {
        *res = SSUBMIT_RATE;
        return KILN_OK;
    }
    if ((rc = serve_random_hex(id, SERVE_ID_LEN, err)) != KILN_OK)
        return rc;
    char seed[32];
    const char *board = s->board ? s->board : s->sub->workload;
    if ((rc = visible_seed_locked(d, board, false, seed, err)) != KILN_OK)
        return rc;
    if (sdb_prep(
            d,
            "INSERT INTO jobs(id, token_id, user, idem_key, body_sha, workload, backend, source,"
            " state, submitted, board, visible_seed, wl_dir)"
            " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'queued', ?9, ?10, ?11, ?12)",
            &st) != SQLITE_OK)
        return sdb_fail(d, err, "submit");
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, s->tok->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, s->tok->name, -1, SQLITE_STATIC);
    if (s->idem_key)
        sqlite3_bind_text(st, 4, s->idem_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, s->body_sha, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, s->sub->workload, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, s->sub->backend, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 8, s->sub->source, (int)s->sub->source_len, SQLITE_STATIC);
    sqlite3_bind_double(st, 9, serve_now());
    sqlite3_bind_text(st, 10, board, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, seed, -1, SQLITE_STATIC);
    if (s->wl_dir)
        sqlite3_bind_text(st, 12, s->wl_dir, -1, SQLITE_STATIC);
    rc = sqlite3_step(st) == SQLITE_DONE ? KILN_OK : sdb_fail(d, err, "submit");
    sqlite3_finalize(st);
    if (rc == KILN_OK)
        rc = sdb_event_locked(d, id, "queued", "accepted", err);
    *res = SSUBMIT_NEW;
    return rc;
}

enum kiln_rc sdb_submit(struct sdb *d, const struct ssubmit *s, char id[SERVE_ID_LEN + 1],
                        enum ssubmit_result *res, double *retry_after_s, struct kiln_err *err)
{
    pthread_mutex_lock(&d->mu);
    enum kiln_rc rc = sdb_exec(d, "BEGIN IMMEDIATE", err);
    if (rc == KILN_OK) {
        rc = submit_locked(d, s, id, res, retry_after_s, err);
        /* Rate and quota refusals still commit the bucket's refill time. */
        struct kiln_err e2 = {0};
        kiln_err_clear(&e2);
        if (rc == KILN_OK)
            rc = sdb_exec(d, "COMMIT", err);
        if (rc != KILN_OK)
            if (sdb_exec(d, "ROLLBACK", &e2) != KILN_OK)
                fprintf(stderr, "kiln serve: %s\n", e2.msg);
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

static json_t *col_json(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, i));
    case SQLITE_TEXT:
        return json_string((const char *)sqlite3_column_text(st, i));
    default:
        return json_null();
    }
}

/* Rows of a query as an array of objects keyed by column name. */
enum kiln_rc sdb_rows_json(struct sdb *d, sqlite3_stmt *st, json_t **out, struct kiln_err *err)
{
    json_t *arr = json_array();
    int r;
    while (arr && (r = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_object();
        for (int i = 0; o && i < sqlite3_column_count(st); i++)
            json_object_set_new(o, sqlite3_column_name(st, i), col_json(st, i));
        json_array_append_new(arr, o);
    }
    if (!arr)
        return kiln_fail(err, KILN_E_NOMEM, "query result");
    if (r != SQLITE_DONE) {
        json_decref(arr);
        return sdb_fail(d, err, "query");
    }
    *out = arr;
    return KILN_OK;
}

enum kiln_rc sdb_query_json(struct sdb *d, const char *sql, const char *a, json_t **out,
                            struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, sql, &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "query");
    } else {
        if (a)
            sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
        rc = sdb_rows_json(d, st, out, err);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_submission_json(struct sdb *d, const char *id, json_t **out, struct kiln_err *err)
{
    json_t *rows = NULL;
    enum kiln_rc rc = sdb_query_json(
        d,
        "SELECT id, user, workload, board AS leaderboard, backend, state, attempts, "
        "submitted, started, finished, NULL AS position, token_id, seq,"
        " status, stage, detail, score_ms, verified, gpu_model, visible_seed, hacked,"
        " hacked_reason, compile_started, compile_finished, run_started, run_finished"
        " FROM jobs j WHERE id=?1",
        id, &rows, err);
    if (rc != KILN_OK)
        return rc;
    if (json_array_size(rows) == 0) {
        json_decref(rows);
        return kiln_fail(err, KILN_E_NOTFOUND, "no submission %s", id);
    }
    *out = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    json_t *o = *out;
    /* Its place in the claims' rotation (fair share), while queued. */
    if (!strcmp(json_string_value(json_object_get(o, "state")), "queued")) {
        long long pos = 0;
        rc = sdb_fair_position(d, json_string_value(json_object_get(o, "backend")),
                               json_string_value(json_object_get(o, "token_id")),
                               json_integer_value(json_object_get(o, "seq")), &pos, err);
        if (rc != KILN_OK) {
            json_decref(o);
            return rc;
        }
        json_object_set_new(o, "position", json_integer(pos));
    }
    json_object_del(o, "token_id");
    json_object_del(o, "seq");
    /* The verdict as one object, absent until there is one. */
    if (!strcmp(json_string_value(json_object_get(o, "state")), "done")) {
        json_t *v = json_object();
        const char *keys[] = {"status", "stage", "detail", "score_ms", "verified", "gpu_model"};
        for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
            json_object_set(v, keys[i], json_object_get(o, keys[i]));
        json_object_set(v, "verified",
                        json_boolean(json_integer_value(json_object_get(o, "verified"))));
        json_object_set_new(o, "verdict", v);
    }
    /* The timeline, on CLOCK_MONOTONIC (comparable between jobs, not a date). */
    json_t *tl = json_object();
    const char *marks[] = {"compile_started", "compile_finished", "run_started", "run_finished"};
    for (size_t i = 0; i < sizeof(marks) / sizeof(*marks); i++)
        json_object_set(tl, marks[i], json_object_get(o, marks[i]));
    json_object_set_new(o, "timeline", tl);
    const char *drop[] = {"status",      "stage",       "detail",          "score_ms",
                          "verified",    "gpu_model",   "compile_started", "compile_finished",
                          "run_started", "run_finished"};
    for (size_t i = 0; i < sizeof(drop) / sizeof(*drop); i++)
        json_object_del(o, drop[i]);
    json_object_set_new(o, "hacked",
                        json_boolean(json_integer_value(json_object_get(o, "hacked"))));
    return KILN_OK;
}

/* Each row's "user" as public views show it. */
static enum kiln_rc public_users(struct sdb *d, json_t *rows, struct kiln_err *err)
{
    return sdb_public_names(d, rows, "token_id", "user", "user", err);
}

/* The public queue: no submission ids (a tenant's handle), no sources or
 * diagnostics, tenants by their public names; who waits for what, in order. */
enum kiln_rc sdb_queue_json(struct sdb *d, json_t **out, struct kiln_err *err)
{
    json_t *rows = NULL;
    enum kiln_rc rc = sdb_query_json(
        d,
        "SELECT user, token_id, COALESCE(board, workload) AS leaderboard, backend, state,"
        " attempts, submitted, started FROM jobs WHERE state!='done'"
        " ORDER BY state DESC, seq LIMIT 1000",
        NULL, &rows, err);
    if (rc == KILN_OK)
        rc = public_users(d, rows, err);
    if (rc != KILN_OK) {
        json_decref(rows);
        return rc;
    }
    json_t *o = json_object();
    size_t queued = 0, running = 0, i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        json_object_del(r, "token_id");
        if (!strcmp(json_string_value(json_object_get(r, "state")), "queued"))
            queued++;
        else
            running++;
    }
    json_object_set_new(o, "queued", json_integer((json_int_t)queued));
    json_object_set_new(o, "running", json_integer((json_int_t)running));
    json_object_set_new(o, "jobs", rows);
    *out = o;
    return KILN_OK;
}

/* Verified cpu passes of a board: judged, never ranked. */
static json_t *unranked_cpu(struct sdb *d, const char *board)
{
    sqlite3_stmt *st = NULL;
    long long n = 0;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d,
                 "SELECT COUNT(*) FROM jobs WHERE board=?1 AND backend='cpu' AND state='done'"
                 " AND status='pass' AND verified=1 AND hacked=0",
                 &st) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, board, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return json_pack("{s:{s:I,s:s}}", "cpu", "verified_passes", (json_int_t)n, "why",
                     SERVE_CPU_UNRANKED);
}

/* serve_board_display against every board of the same name; the full
 * name (never ambiguous) when they cannot be read. */
static void board_display(struct sdb *d, const char *board, char *out, size_t cap)
{
    const char *at = strchr(board, '@');
    snprintf(out, cap, "%s", board);
    if (!at)
        return;
    /* Boards NAME@... sort between "NAME@" and "NAMEA" ('@' + 1). */
    char lo[SERVE_BOARD_MAX + 2], hi[SERVE_BOARD_MAX + 2];
    snprintf(lo, sizeof(lo), "%.*s", (int)(at - board + 1), board);
    snprintf(hi, sizeof(hi), "%.*sA", (int)(at - board), board);
    sqlite3_stmt *st = NULL;
    const char **others = NULL;
    size_t n = 0;
    bool ok = false;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "SELECT DISTINCT board FROM jobs WHERE board > ?1 AND board < ?2", &st) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
        int r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            const char **v = realloc(others, (n + 1) * sizeof(*others));
            char *b = strdup((const char *)sqlite3_column_text(st, 0));
            if (!v || !b) {
                free(b);
                others = v ? v : others;
                break;
            }
            others = v;
            others[n++] = b;
        }
        ok = r == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    if (ok)
        serve_board_display(board, others, n, out, cap);
    for (size_t i = 0; i < n; i++)
        free((char *)others[i]);
    free(others);
}

enum kiln_rc sdb_leaderboard_json(struct sdb *d, const char *workload, const struct stoken *viewer,
                                  json_t **out, struct kiln_err *err)
{
    /* Verified passes only, not flagged, never cpu; each user's best per GPU
     * model. A row without a board (written by hand, not by kiln) counts as
     * its workload's. */
    json_t *rows = NULL;
    enum kiln_rc rc =
        sdb_query_json(d,
                       "SELECT gpu_model, user, id, token_id, score_ms, finished FROM ("
                       " SELECT gpu_model, user, id, token_id, score_ms, finished, ROW_NUMBER()"
                       "  OVER (PARTITION BY gpu_model, user ORDER BY score_ms, seq) AS k"
                       " FROM jobs WHERE (board=?1 OR (board IS NULL AND workload=?1))"
                       " AND state='done' AND status='pass' AND verified=1 AND backend!='cpu'"
                       " AND hacked=0 AND score_ms > 0)"
                       " WHERE k=1 ORDER BY gpu_model, score_ms",
                       workload, &rows, err);
    if (rc == KILN_OK)
        rc = public_users(d, rows, err);
    if (rc != KILN_OK) {
        json_decref(rows);
        return rc;
    }
    json_t *boards = json_object(), *doc = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *gpu = json_string_value(json_object_get(r, "gpu_model"));
        json_t *b = json_object_get(boards, gpu ? gpu : "unknown");
        if (!b) {
            b = json_array();
            json_object_set_new(boards, gpu ? gpu : "unknown", b);
        }
        json_t *e = json_object();
        json_object_set_new(e, "rank", json_integer((json_int_t)json_array_size(b) + 1));
        json_object_set(e, "user", json_object_get(r, "user"));
        /* The submission id is its owner's handle: shown to them and admins only. */
        const char *owner = json_string_value(json_object_get(r, "token_id"));
        bool mine = viewer && owner && !strcmp(owner, viewer->id);
        if (viewer && (viewer->admin || mine))
            json_object_set(e, "submission", json_object_get(r, "id"));
        if (mine)
            json_object_set_new(e, "you", json_true());
        json_object_set(e, "geomean_ms", json_object_get(r, "score_ms"));
        json_object_set(e, "finished", json_object_get(r, "finished"));
        json_array_append_new(b, e);
    }
    json_decref(rows);
    json_object_set_new(doc, "workload", json_string(workload));
    /* A community board's name carries the full SHA-256; display is short. */
    char shown[SERVE_BOARD_MAX + 1];
    board_display(d, workload, shown, sizeof(shown));
    json_object_set_new(doc, "display", json_string(shown));
    json_object_set_new(doc, "gpus", boards);
    json_object_set_new(doc, "unranked", unranked_cpu(d, workload));
    *out = doc;
    return KILN_OK;
}

enum kiln_rc sdb_workloads_json(struct sdb *d, json_t **out, struct kiln_err *err)
{
    return sdb_query_json(d,
                          "SELECT DISTINCT COALESCE(board, workload) AS workload FROM jobs"
                          " ORDER BY 1 LIMIT 200",
                          NULL, out, err);
}

enum kiln_rc sdb_flag_hacked(struct sdb *d, const char *id, const char *by, const char *reason,
                             struct kiln_err *err)
{
    pthread_mutex_lock(&d->mu);
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    if (sdb_prep(d,
                 "UPDATE jobs SET hacked=1, hacked_by=?2, hacked_reason=?3, hacked_at=?4"
                 " WHERE id=?1",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "flag");
        goto out;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, by, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, reason, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, serve_now());
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = sdb_fail(d, err, "flag");
    else if (sqlite3_changes(d->db) == 0)
        rc = kiln_fail(err, KILN_E_NOTFOUND, "no submission %s", id);
    if (rc == KILN_OK)
        rc = sdb_event_locked(d, id, "flagged", reason, err);
out:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_events_json(struct sdb *d, const char *id, long long after, json_t **out,
                             bool *finished, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    *finished = false;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d, "SELECT state FROM jobs WHERE id=?1", &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "events");
        goto out;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    if (r != SQLITE_ROW) {
        rc = r == SQLITE_DONE ? kiln_fail(err, KILN_E_NOTFOUND, "no submission %s", id)
                              : sdb_fail(d, err, "events");
        goto out;
    }
    /* Read before the events: a job done now has all its events below. */
    *finished = !strcmp((const char *)sqlite3_column_text(st, 0), "done");
    sqlite3_finalize(st);
    st = NULL;
    /* A job's events only ever grow at the end: its k-th stays its k-th. */
    if (sdb_prep(d,
                 "SELECT 0 AS n, at, stage, detail FROM events WHERE job=?1 ORDER BY events.n"
                 " LIMIT 100 OFFSET ?2",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "events");
        goto out;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, after);
    rc = sdb_rows_json(d, st, out, err);
    if (rc == KILN_OK) {
        size_t i;
        json_t *ev;
        json_array_foreach(*out, i, ev)
            json_object_set_new(ev, "n", json_integer((json_int_t)(after + 1 + (long long)i)));
        if (json_array_size(*out) == 100)
            *finished = false; /* more to read */
    }
out:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}
