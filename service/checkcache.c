/* checkcache.c - a community workload check's outcome, remembered by
 * content: the SHA-256 of the tarball's bytes (computed by the server over
 * the body it received), the backend checked, the visible seed the check
 * drew its cases from, and the checker (kiln's version and revision, the
 * check's rules, the python and numpy the scripts run on). Only outcomes
 * that say something about the workload are kept (worker.c decides). */
#include <stdio.h>
#include <string.h>

#include "kiln_version.h"
#include "pyfind.h"
#include "service_impl.h"
#include "wlcheck.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

enum kiln_rc serve_checker_id(char *out, size_t cap, struct kiln_err *err)
{
    struct pyfind py;
    enum kiln_rc rc = pyfind_numpy(&py, err);
    if (rc != KILN_OK)
        return rc;
    snprintf(out, cap,
             "kiln " KILN_VERSION " (git " KILN_GIT_REV
             ") check rules " STR(WLCHECK_RULES_VERSION) " python %s numpy %s",
             py.python_version, py.numpy_version);
    return KILN_OK;
}

static void bind_key(sqlite3_stmt *st, const struct scheck_key *k)
{
    char seed[32];
    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)k->seed);
    sqlite3_bind_text(st, 1, k->tar_sha, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, k->backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, seed, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, k->checker, -1, SQLITE_STATIC);
}

enum kiln_rc sdb_check_known(struct sdb *d, const struct scheck_key *k, bool *found, char *problems,
                             size_t cap, struct kiln_err *err)
{
    *found = false;
    problems[0] = '\0';
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    pthread_mutex_lock(&d->mu);
    if (sdb_prep(d,
                 "SELECT problems FROM community_checks WHERE tar_sha=?1 AND backend=?2 AND "
                 "seed=?3 AND checker=?4",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "community check lookup");
    } else {
        bind_key(st, k);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            const char *p = (const char *)sqlite3_column_text(st, 0);
            snprintf(problems, cap, "%s", p ? p : "");
            *found = true;
        } else if (r != SQLITE_DONE) {
            rc = sdb_fail(d, err, "community check lookup");
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

enum kiln_rc sdb_check_remember(struct sdb *d, const struct scheck_key *k, const char *problems,
                                struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    pthread_mutex_lock(&d->mu);
    /* OR IGNORE: two workers that checked the same tarball at once found
     * the same outcome; the first one stays. */
    if (sdb_prep(d,
                 "INSERT OR IGNORE INTO community_checks(tar_sha, backend, seed, checker, "
                 "problems, at) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                 &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "remembering a community check");
    } else {
        bind_key(st, k);
        sqlite3_bind_text(st, 5, problems, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 6, serve_now());
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sdb_fail(d, err, "remembering a community check");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    return rc;
}
