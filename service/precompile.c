/* precompile.c - the compile pool: a process that compiles queued
 * submissions ahead of the worker that will judge them, so a GPU is not idle
 * while nvcc runs. It uses the pipeline's split evaluation
 * (eval_session_compile), leaves compile/ in DATA/work/precompiled/ID/, and
 * the judging worker moves it into its own session, where
 * eval_session_run_compiled takes it only if its input digest matches
 * (else it compiles itself). Nothing here decides a verdict. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "service_impl.h"
#include "session.h"

void serve_job_workload_dir(const struct serve_opts *o, const struct sjob *j, char *out, size_t cap)
{
    if (j->wl_dir[0])
        snprintf(out, cap, "%s", j->wl_dir);
    else
        snprintf(out, cap, "%s/%s", o->workloads, j->workload);
}

void serve_precompiled_dir(const struct serve_opts *o, const char *id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/work/precompiled/%s", o->data, id);
}

static enum kiln_rc compile_one(const struct serve_opts *o, struct sdb *db, const struct sjob *j,
                                struct kiln_err *err)
{
    char wl[PATH_MAX], work[PATH_MAX], cand[PATH_MAX], dest[PATH_MAX], from[PATH_MAX + 16],
        to[PATH_MAX + 16];
    serve_job_workload_dir(o, j, wl, sizeof(wl));
    snprintf(work, sizeof(work), "%s/work/compile/%s", o->data, j->board);
    struct eval_session_opts so = {.workload = wl,
                                   .backend = kiln_backend_from_name(j->backend),
                                   .work_dir = work,
                                   .seed = 1,
                                   .warmups = o->warmups,
                                   .iterations = o->iterations};
    struct eval_session *s = NULL;
    struct eval_outcome out;
    memset(&out, 0, sizeof(out));
    enum kiln_rc rc = eval_session_open(&so, &s, err);
    if (rc == KILN_OK)
        rc = eval_session_compile(s, j->id, j->source, j->source_len, NULL, &out, err);
    bool ok = rc == KILN_OK && out.compile.ok;
    if (s)
        eval_session_candidate_dir(s, j->id, false, cand, sizeof(cand));
    serve_precompiled_dir(o, j->id, dest, sizeof(dest));
    snprintf(from, sizeof(from), "%s/compile", cand);
    snprintf(to, sizeof(to), "%s/compile", dest);
    /* Handed over by rename: the worker sees all of compile/ or none. */
    if (ok && (rc = fs_mkdirs(dest, err)) == KILN_OK && rename(from, to) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "rename %s to %s", from, to);
    struct kiln_err e2 = {0};
    kiln_err_clear(&e2);
    if (s && access(cand, F_OK) == 0 && fs_remove_tree(cand, &e2) != KILN_OK)
        fprintf(stderr, "kiln serve compile: %s\n", e2.msg);
    eval_outcome_free(&out);
    eval_session_close(s);
    bool queued = false;
    kiln_err_clear(&e2);
    if (sdb_compile_done(db, j->id, ok && rc == KILN_OK, &queued, &e2) != KILN_OK)
        fprintf(stderr, "kiln serve compile: %s\n", e2.msg);
    if (ok && rc == KILN_OK && queued) {
        kiln_err_clear(&e2);
        if (sdb_event(db, j->id, "compiled", "compiled ahead by the compile pool", &e2) != KILN_OK)
            fprintf(stderr, "kiln serve compile: %s\n", e2.msg);
    }
    if (!queued && access(dest, F_OK) == 0 && fs_remove_tree(dest, &e2) != KILN_OK)
        fprintf(stderr, "kiln serve compile: %s\n", e2.msg);
    return rc;
}

enum kiln_rc serve_compile_main(const struct serve_opts *o, int slot, int lock_fd,
                                struct kiln_err *err)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent || parent == 1)
        return kiln_fail(err, KILN_E_INTERNAL, "compile worker %d: the server is gone", slot);
    if (lock_fd >= 0) {
        int fl = fcntl(lock_fd, F_GETFD);
        if (fl < 0 || fcntl(lock_fd, F_SETFD, fl | FD_CLOEXEC) != 0)
            return kiln_fail_errno(err, KILN_E_INTERNAL, "compile worker %d: lock descriptor",
                                   slot);
    }
    if (!o->db || !o->data || !o->workloads)
        return kiln_fail(err, KILN_E_USAGE, "compile worker %d: needs --db, --data, --workloads",
                         slot);
    struct sdb db;
    enum kiln_rc rc = sdb_open(o->db, &db, err);
    if (rc != KILN_OK)
        return rc;
    fprintf(stderr, "kiln serve: compile worker %d ready\n", slot);
    while (getppid() == parent) {
        struct sjob j;
        bool got = false;
        if ((rc = sdb_claim_compile(&db, &j, &got, err)) != KILN_OK)
            break;
        if (!got) {
            struct timespec ts = {.tv_nsec = 150000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        struct kiln_err e;
        kiln_err_clear(&e);
        /* A failed compile ahead is not the job's verdict: its worker
         * compiles again and reports what the compiler said. */
        if (compile_one(o, &db, &j, &e) != KILN_OK)
            fprintf(stderr, "kiln serve: compile worker %d: %s: %s\n", slot, j.id, e.msg);
        sjob_free(&j);
    }
    sdb_close(&db);
    return rc;
}
