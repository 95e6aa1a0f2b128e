/* worker.c - one worker process: claims the next queued submission of
 * its backend (tenants take turns: sdb_claim), judges it with the pipeline
 * `kiln eval` uses (session.h), re-verifies a pass on a secret seed,
 * writes the record, commits the verdict under its lease. A heartbeat
 * thread renews the lease; one GPU's jobs run strictly one after another
 * in its one worker. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "evaluate.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "service_impl.h"
#include "session.h"
#include "slurm.h"
#include "verdict.h"
#include "wlcheck.h"

struct worker {
    const struct serve_opts *o;
    struct sdb db;
    int slot, gpu;
    char gpu_model[128];
    char wdir[PATH_MAX]; /* the workloads directory */
    pid_t parent;
    /* --executor slurm: harness runs go through this runner; a cuda
     * verdict is ranked under the GPU the node reported (serve_verdict_gpu),
     * "slurm:PARTITION" when it reported none. */
    const struct sbexec_runner *runner;
    char slurm_model[96];
    char job_name[64];            /* sdb_slurm_job_name: the name the server cancels orphans by */
    volatile sig_atomic_t cancel; /* SIGTERM: scancel the job in flight, stop */
};

struct beat {
    const char *dbpath;
    int slot;
    const struct sjob *job;
    double lease_s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
};

static void *heartbeat(void *arg)
{
    struct beat *b = arg;
    struct sdb d;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_open(b->dbpath, &d, &e) != KILN_OK) {
        fprintf(stderr, "kiln serve worker: heartbeat: %s\n", e.msg);
        return NULL;
    }
    d.lease_s = b->lease_s;
    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        /* Three beats per lease, and one at least every 5 s: a cancelled
         * job's worker notices within seconds whatever the lease. */
        double every = b->lease_s / 3 < 5 ? b->lease_s / 3 : 5;
        long long ns = (long long)(every * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec += (long)(ns % 1000000000LL);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&b->cv, &b->mu, &ts);
        if (b->stop)
            break;
        bool held = true;
        pthread_mutex_unlock(&b->mu);
        if (sdb_heartbeat(&d, b->job, &held, &e) != KILN_OK) {
            fprintf(stderr, "kiln serve worker: heartbeat: %s\n", e.msg);
            kiln_err_clear(&e);
        }
        if (!held) {
            /* Cancelled (DELETE), or reaped as stale and maybe judged by
             * another worker: nothing this run finds can be committed, so it
             * stops now (its sandboxes die with it: PR_SET_PDEATHSIG) rather
             * than judge on; the server starts a fresh worker. */
            fprintf(stderr,
                    "kiln serve worker %d: lost the lease of %s (cancelled, or reaped as stale): "
                    "its verdict is dropped; stopping this worker (the server restarts it)\n",
                    b->slot, b->job->id);
            fflush(stderr);
            _exit(3);
        }
        pthread_mutex_lock(&b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    sdb_close(&d);
    return NULL;
}

static void note(struct worker *w, const struct sjob *j, const char *stage, const char *detail)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_event(&w->db, j->id, stage, detail, &e) != KILN_OK)
        fprintf(stderr, "kiln serve worker %d: %s\n", w->slot, e.msg);
}

static void mark_run(struct worker *w, const struct sjob *j, bool finished)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_mark_run(&w->db, j, finished, &e) != KILN_OK)
        fprintf(stderr, "kiln serve worker %d: %s\n", w->slot, e.msg);
}

/* A record's file: 0600, like its directory's 0700 (a tenant's source,
 * the secret seed). */
static enum kiln_rc put_file(const char *dir, const char *name, const char *data, size_t len,
                             struct kiln_err *err)
{
    char p[PATH_MAX];
    enum kiln_rc rc = fs_join(p, sizeof(p), dir, name, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(p, data, len, err);
    if (rc == KILN_OK && chmod(p, 0600) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "chmod %s", p);
    return rc;
}

/* The record is written whole into records/.tmp-ID-LEASE, whose name the
 * verdict's commit stores; only a committed record is then renamed to
 * records/ID (serve_publish_record; a server that starts finishes a rename a
 * crash cut off, and deletes the temporary records of uncommitted runs).
 * So records/ID is complete, and is the committed verdict's. */
static enum kiln_rc write_record(struct worker *w, const struct sjob *j,
                                 const struct eval_outcome *out, const struct sverdict *v,
                                 bool held_ran, const char *held_status, bool check_cached,
                                 char *name, size_t cap, struct kiln_err *err)
{
    char tmp[PATH_MAX];
    snprintf(name, cap, ".tmp-%s-%.8s", j->id, j->lease);
    snprintf(tmp, sizeof(tmp), "%s/records/%s", w->o->data, name);
    enum kiln_rc rc = fs_mkdirs(tmp, err);
    if (rc == KILN_OK && chmod(tmp, 0700) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "chmod %s", tmp);
    json_t *doc = NULL;
    if (rc == KILN_OK && out && out->v.ncases)
        rc = verdict_to_json(&out->v, &doc, err);
    if (rc != KILN_OK)
        return rc;
    if (!doc)
        doc = json_object();
    json_object_set_new(doc, "submission", json_string(j->id));
    json_object_set_new(doc, "user", json_string(j->user));
    json_object_set_new(doc, "workload", json_string(j->workload));
    json_object_set_new(doc, "leaderboard", json_string(j->board));
    json_object_set_new(doc, "backend", json_string(j->backend));
    json_object_set_new(doc, "gpu_model", json_string(v->gpu_model));
    json_object_set_new(doc, "executor", json_string(w->runner ? "slurm" : "local"));
    json_object_set_new(doc, "service_status", json_string(v->status));
    json_object_set_new(doc, "stage", json_string(v->stage));
    json_object_set_new(doc, "service_detail", json_string(v->detail));
    json_object_set_new(doc, "attempt", json_integer(j->attempts));
    json_object_set_new(doc, "compiled_ahead", json_boolean(out && out->precompiled));
    json_object_set_new(doc, "held_out", held_ran ? json_string(held_status) : json_null());
    /* A community workload's check: run for this submission, or its
     * outcome for the same tarball reused; null for a built-in workload. */
    json_object_set_new(doc, "community_check",
                        !j->wl_dir[0] ? json_null() : json_string(check_cached ? "cached" : "ran"));
    char seed[32];
    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)v->secret_seed);
    json_object_set_new(doc, "secret_seed", v->secret_seed ? json_string(seed) : json_null());
    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)j->visible_seed);
    json_object_set_new(doc, "visible_seed", json_string(seed));
    if (out) {
        json_object_set_new(doc, "turnaround_s", eval_turnaround_json(&out->t));
        /* Where the visible run ran (through Slurm: the node and its GPU). */
        json_object_set_new(doc, "ran_on", eval_ran_on_json(out));
        json_object_set_new(doc, "arch", eval_arch_json(out));
    }
    char *txt = json_dumps(doc, JSON_INDENT(2));
    json_decref(doc);
    if (!txt)
        return kiln_fail(err, KILN_E_NOMEM, "record");
    rc = put_file(tmp, "verdict.json", txt, strlen(txt), err);
    free(txt);
    if (rc == KILN_OK)
        rc = put_file(tmp, strcmp(j->backend, "cpu") ? "candidate.cu" : "candidate.c", j->source,
                      j->source_len, err);
    if (rc == KILN_OK && out && out->log_tail)
        rc = put_file(tmp, "harness.log", out->log_tail, strlen(out->log_tail), err);
    if (rc == KILN_OK && out && out->compile.diagnostics)
        rc = put_file(tmp, "compiler.log", out->compile.diagnostics,
                      strlen(out->compile.diagnostics), err);
    if (rc != KILN_OK) {
        struct kiln_err e2 = {0};
        if (fs_remove_tree(tmp, &e2) != KILN_OK)
            fprintf(stderr, "kiln serve worker: %s\n", e2.msg);
    }
    return rc;
}

/* A community workload is checked as `kiln workload check` checks one (its
 * scripts in the script sandbox on every visible and held-out case, each
 * tensor against the signature) before any candidate runs on it. KILN_OK
 * with problems[0] set: the workload's fault, which is the verdict. An
 * outcome that is the workload's is remembered by content (checkcache.c):
 * the same tarball on the same seed is not checked again (*cached). */
static enum kiln_rc check_community(struct worker *w, const struct sjob *j, const char *wl,
                                    const char *work, char *problems, size_t cap, bool *cached,
                                    struct kiln_err *err)
{
    char checker[256];
    enum kiln_rc rc = serve_checker_id(checker, sizeof(checker), err);
    if (rc != KILN_OK)
        return rc;
    struct scheck_key key = {
        .tar_sha = j->body_sha, .backend = j->backend, .seed = j->visible_seed, .checker = checker};
    bool found = false;
    /* A job queued before the cache existed has no tarball digest: checked. */
    if (j->body_sha[0] &&
        (rc = sdb_check_known(&w->db, &key, &found, problems, cap, err)) != KILN_OK)
        return rc;
    if (found) {
        *cached = true;
        note(w, j, "workload_check",
             problems[0] ? "cached: this tarball failed its check before (not checked again)"
                         : "cached: this tarball passed its check before (not checked again)");
        return KILN_OK;
    }
    struct workload *wp = NULL;
    if ((rc = workload_load(wl, &wp, err)) != KILN_OK)
        return rc;
    char cache[PATH_MAX + 16], held[PATH_MAX + 16];
    snprintf(cache, sizeof(cache), "%s/inputs", work);
    snprintf(held, sizeof(held), "%s/inputs-check", work);
    struct wlcheck_opts co = {.backends = kiln_backend_from_name(j->backend),
                              .cache_dir = cache,
                              .held_cache_dir = held,
                              .seed = j->visible_seed};
    struct wlcheck_result *res = malloc(sizeof(*res));
    if (!res) {
        workload_free(wp);
        return kiln_fail(err, KILN_E_NOMEM, "workload check");
    }
    note(w, j, "workload_check", "checking the community workload (its scripts, every case)");
    wlcheck_run(wp, &co, res);
    workload_free(wp);
    if (res->environment != KILN_OK)
        rc = kiln_fail(err, res->environment, "the workload check could not run here: %s",
                       res->problems);
    else if (res->nproblems)
        snprintf(problems, cap, "%d problem(s) in the workload: %s", res->nproblems, res->problems);
    /* The host's failures say nothing about the workload, and a timeout may
     * be the host's load: neither is remembered. A stop (SIGTERM) may have
     * cut the check short. */
    if (rc == KILN_OK && !res->load_dependent && !w->cancel && j->body_sha[0]) {
        struct kiln_err ce = {0};
        if (sdb_check_remember(&w->db, &key, problems, &ce) != KILN_OK)
            fprintf(stderr, "kiln serve worker %d: %s (the next submission checks again)\n",
                    w->slot, ce.msg);
    }
    free(res);
    struct kiln_err e2 = {0};
    if (access(held, F_OK) == 0 && fs_remove_tree(held, &e2) != KILN_OK)
        fprintf(stderr, "kiln serve worker: %s\n", e2.msg);
    return rc;
}

/* Judges one claimed job into *v; KILN_OK when a verdict (any) was reached
 * (problems[0] set: a community workload that failed its check). */
static enum kiln_rc judge(struct worker *w, const struct sjob *j, struct eval_outcome *out,
                          struct eval_outcome *held, bool *held_ran, uint64_t *secret,
                          char *problems, size_t pcap, bool *check_cached, struct kiln_err *err)
{
    char wl[PATH_MAX], work[PATH_MAX];
    serve_job_workload_dir(w->o, j, wl, sizeof(wl));
    /* One work directory per leaderboard: a community workload never
     * shares cached inputs with a built-in of its name. */
    snprintf(work, sizeof(work), "%s/work/%d/%s", w->o->data, w->slot, j->board);
    if (j->wl_dir[0]) {
        enum kiln_rc crc = check_community(w, j, wl, work, problems, pcap, check_cached, err);
        if (crc != KILN_OK || problems[0])
            return crc;
    }
    struct eval_session_opts so = {.workload = wl,
                                   .backend = kiln_backend_from_name(j->backend),
                                   .gpu = w->gpu < 0 ? 0 : w->gpu,
                                   .work_dir = work,
                                   .runner = w->runner,
                                   .seed = j->visible_seed,
                                   .warmups = w->o->warmups,
                                   .iterations = w->o->iterations,
                                   .adaptive = !w->o->timing_fixed,
                                   .target_rse = w->o->target_rse,
                                   .budget_ms = w->o->budget_ms};
    if (so.backend == KILN_BACKEND_CUDA) /* cpu jobs compile for the host */
        so.arch = w->o->arch;
    struct eval_session *s = NULL;
    note(w, j, "inputs", "preparing inputs and references");
    enum kiln_rc rc = eval_session_open(&so, &s, err);
    if (rc == KILN_OK) {
        /* The compile pool's result, when it is there, moves into this
         * session; eval_session_run_compiled takes it only if it matches. */
        char pre[PATH_MAX], cand[PATH_MAX], from[PATH_MAX + 16], to[PATH_MAX + 16];
        serve_precompiled_dir(w->o, j->id, pre, sizeof(pre));
        eval_session_candidate_dir(s, j->id, false, cand, sizeof(cand));
        snprintf(from, sizeof(from), "%s/compile", pre);
        snprintf(to, sizeof(to), "%s/compile", cand);
        struct kiln_err me = {0}; /* a failed hand-over only means compiling here */
        bool have =
            access(from, F_OK) == 0 && fs_mkdirs(cand, &me) == KILN_OK && rename(from, to) == 0;
        note(w, j, "run",
             have ? "running on the visible cases (compiled ahead)"
                  : "compiling and running on the visible cases");
        mark_run(w, j, false);
        rc = eval_session_run_compiled(s, j->id, j->source, j->source_len, NULL, out, err);
    }
    if (rc == KILN_OK && out->v.status == VERDICT_PASS) {
        note(w, j, "held_out", "re-verifying on fresh inputs from a secret seed");
        rc = eval_session_held_out(s, j->id, j->source, j->source_len, NULL, held, err);
        if (rc == KILN_OK) {
            *held_ran = true;
            *secret = eval_session_secret_seed(s);
            eval_session_apply_held_out(s, out, held);
        }
    }
    if (s)
        mark_run(w, j, true);
    /* Held-out inputs are per job (a fresh secret each time) and the
     * candidate's scratch is in its record: neither is kept. */
    char dirs[4][PATH_MAX + 16];
    snprintf(dirs[0], sizeof(dirs[0]), "%s/inputs-held", work);
    serve_precompiled_dir(w->o, j->id, dirs[1], sizeof(dirs[1]));
    dirs[2][0] = dirs[3][0] = '\0';
    if (s) {
        eval_session_candidate_dir(s, j->id, false, dirs[2], sizeof(dirs[2]));
        eval_session_candidate_dir(s, j->id, true, dirs[3], sizeof(dirs[3]));
    }
    eval_session_close(s);
    for (int i = 0; i < 4; i++) {
        struct kiln_err e2 = {0};
        if (dirs[i][0] && access(dirs[i], F_OK) == 0 && fs_remove_tree(dirs[i], &e2) != KILN_OK)
            fprintf(stderr, "kiln serve worker: %s\n", e2.msg);
    }
    return rc;
}

/* What judging one job produced, and the verdict made of it (v points
 * into detail and gpu). */
struct job_result {
    struct eval_outcome out, held;
    bool held_ran, check_cached;
    uint64_t secret;
    char detail[WLCHECK_PROBLEMS_MAX + 64];
    char gpu[sizeof(((struct eval_outcome *)0)->ran_on.model)];
    struct sverdict v;
};

/* A job claimed more than SERVE_MAX_ATTEMPTS times is not judged again. */
static void set_exhausted_verdict(const struct sjob *j, struct job_result *r)
{
    r->v.status = "error";
    r->v.stage = "service";
    snprintf(r->detail, sizeof(r->detail),
             "judging this submission stopped kiln %d times (a crash or a kill); it is not "
             "retried again",
             j->attempts - 1);
}

/* Judges j while a heartbeat thread renews its lease. */
static enum kiln_rc judge_under_lease(struct worker *w, struct sjob *j, struct job_result *r,
                                      struct kiln_err *je)
{
    struct beat b = {.dbpath = w->o->db, .slot = w->slot, .job = j, .lease_s = w->db.lease_s};
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    pthread_t t;
    bool beating = pthread_create(&t, NULL, heartbeat, &b) == 0;
    enum kiln_rc jrc = judge(w, j, &r->out, &r->held, &r->held_ran, &r->secret, r->detail,
                             sizeof(r->detail), &r->check_cached, je);
    if (beating) {
        pthread_mutex_lock(&b.mu);
        b.stop = true;
        pthread_cond_signal(&b.cv);
        pthread_mutex_unlock(&b.mu);
        pthread_join(t, NULL);
    }
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    return jrc;
}

static bool host_killed(const struct job_result *r)
{
    return r->out.host_killed || (r->held_ran && r->held.host_killed);
}

/* Not the candidate's verdict: a signal kiln did not send (the host's OOM
 * killer, an operator). Judged again, at most SERVE_MAX_ATTEMPTS claims in
 * all. */
static enum kiln_rc release_killed(struct worker *w, struct sjob *j, struct kiln_err *err)
{
    char why[256];
    snprintf(why, sizeof(why),
             "the harness was killed by a signal kiln did not send (attempt %d of %d): "
             "judging it again",
             j->attempts, SERVE_MAX_ATTEMPTS);
    fprintf(stderr, "kiln serve worker %d: %s: %s\n", w->slot, j->id, why);
    bool released = false;
    return sdb_release(&w->db, j, why, &released, err);
}

/* The verdict of a job judge() finished with jrc (je: why it failed). */
static void set_verdict(struct job_result *r, enum kiln_rc jrc, const struct kiln_err *je)
{
    struct sverdict *v = &r->v;
    if (jrc != KILN_OK) {
        /* kiln could not do its job: an error verdict naming why. */
        v->status = "error";
        v->stage = "kiln";
        snprintf(r->detail, sizeof(r->detail), "%s", je->msg);
    } else if (r->detail[0]) {
        /* The community workload failed its check: no candidate ran. */
        v->status = "bad_workload";
        v->stage = "workload_check";
    } else {
        const struct eval_outcome *out = &r->out;
        v->status = verdict_status_name(out->v.status);
        v->stage = out->stage;
        snprintf(r->detail, sizeof(r->detail), "%s",
                 out->v.status == VERDICT_PASS ? out->v.summary : out->v.detail);
        v->verified =
            out->v.status == VERDICT_PASS && r->held_ran && r->held.v.status == VERDICT_PASS;
        v->score_ms = out->v.score_ms;
        v->secret_seed = r->secret;
    }
}

/* Writes the record and commits the verdict under the job's lease; when
 * the lease was lost the verdict and its record are dropped. */
static enum kiln_rc record_and_commit(struct worker *w, struct sjob *j, struct job_result *r,
                                      struct kiln_err *err)
{
    serve_verdict_gpu(j->backend, &r->out, w->gpu_model, w->runner ? w->slurm_model : NULL, r->gpu,
                      sizeof(r->gpu));
    note(w, j, "record", "writing the record");
    char record[PATH_MAX];
    const char *held_status = r->held_ran ? verdict_status_name(r->held.v.status) : NULL;
    enum kiln_rc rc = write_record(w, j, &r->out, &r->v, r->held_ran, held_status, r->check_cached,
                                   record, sizeof(record), err);
    bool committed = false;
    if (rc == KILN_OK) {
        r->v.record = record;
        rc = sdb_finish(&w->db, j, &r->v, &committed, err);
    }
    if (rc == KILN_OK && committed)
        rc = serve_publish_record(&w->db, w->o->data, j->id, record, err);
    if (rc == KILN_OK && !committed) {
        fprintf(stderr,
                "kiln serve worker %d: lost the lease of %s (reaped as stale): its verdict is "
                "dropped; the job's current holder commits\n",
                w->slot, j->id);
        char tmp[PATH_MAX + 300];
        snprintf(tmp, sizeof(tmp), "%s/records/%s", w->o->data, record);
        rc = fs_remove_tree(tmp, err);
    }
    return rc;
}

static enum kiln_rc run_job(struct worker *w, struct sjob *j, struct kiln_err *err)
{
    struct job_result r;
    memset(&r, 0, sizeof(r));
    r.v.gpu_model = r.gpu;
    r.v.detail = r.detail;
    enum kiln_rc rc = KILN_OK;
    if (j->attempts > SERVE_MAX_ATTEMPTS) {
        set_exhausted_verdict(j, &r);
    } else {
        struct kiln_err je;
        kiln_err_clear(&je);
        enum kiln_rc jrc = judge_under_lease(w, j, &r, &je);
        /* Stopping (SIGTERM): the Slurm job was cancelled, which is no
         * verdict. The job stays claimed; the stopping server queues it again. */
        if (w->cancel)
            goto out;
        if (jrc == KILN_OK && !r.detail[0] && host_killed(&r)) {
            rc = release_killed(w, j, err);
            goto out;
        }
        set_verdict(&r, jrc, &je);
    }
    rc = record_and_commit(w, j, &r, err);
out:
    eval_outcome_free(&r.out);
    eval_outcome_free(&r.held);
    return rc;
}

/* --executor slurm: SIGTERM and SIGINT are taken by this thread (blocked
 * everywhere else) and set the flag the Slurm runner polls, so the job in
 * flight is cancelled rather than left running on the cluster. */
static void *signal_watch(void *arg)
{
    struct worker *w = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    int sig = 0;
    if (sigwait(&set, &sig) == 0)
        w->cancel = 1;
    return NULL;
}

static enum kiln_rc slurm_start(struct worker *w, struct slurm_runner *sr, struct kiln_err *err)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_t t;
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0 ||
        pthread_create(&t, NULL, signal_watch, w) != 0)
        return kiln_fail(err, KILN_E_INTERNAL, "worker %d: cannot watch for SIGTERM", w->slot);
    pthread_detach(t);
    enum kiln_rc rc = sdb_slurm_job_name(&w->db, w->job_name, sizeof(w->job_name), err);
    if (rc != KILN_OK)
        return rc;
    struct slurm_config cfg = *w->o->slurm;
    cfg.cancel = &w->cancel;
    cfg.job_name = w->job_name;
    rc = slurm_runner_init(sr, &cfg, err);
    if (rc != KILN_OK)
        return rc;
    w->runner = &sr->runner;
    snprintf(w->slurm_model, sizeof(w->slurm_model), "slurm:%s",
             cfg.partition ? cfg.partition : "default");
    return KILN_OK;
}

static void nap_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

enum kiln_rc serve_worker_main(const struct serve_opts *o, int slot, int gpu, int lock_fd,
                               struct kiln_err *err)
{
    /* The server's lock, inherited open: it keeps a second server out while
     * this worker lives. Close-on-exec from here, so nothing we start holds it. */
    if (lock_fd >= 0) {
        int fl = fcntl(lock_fd, F_GETFD);
        if (fl < 0 || fcntl(lock_fd, F_SETFD, fl | FD_CLOEXEC) != 0)
            return kiln_fail_errno(err, KILN_E_INTERNAL, "worker %d: lock descriptor %d", slot,
                                   lock_fd);
    }
    struct worker w = {.o = o, .slot = slot, .gpu = gpu, .parent = getppid()};
    /* The server's death ends its workers: a new server requeues their jobs. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != w.parent || w.parent == 1)
        return kiln_fail(err, KILN_E_INTERNAL, "worker %d: the server is gone", slot);
    if (!o->db || !o->data || !o->workloads)
        return kiln_fail(err, KILN_E_USAGE, "worker %d: needs --db, --data and --workloads", slot);
    snprintf(w.wdir, sizeof(w.wdir), "%s", o->workloads);
    snprintf(w.gpu_model, sizeof(w.gpu_model), "cpu");
    if (gpu >= 0) {
        struct gpuinfo g[GPUINFO_MAX];
        size_t n = 0;
        enum kiln_rc rc = gpuinfo_list("/proc", g, &n, err);
        if (rc != KILN_OK)
            return rc;
        if ((size_t)gpu >= n)
            return kiln_fail(err, KILN_E_USAGE, "worker %d: no GPU %d (this host has %zu)", slot,
                             gpu, n);
        snprintf(w.gpu_model, sizeof(w.gpu_model), "%s", g[gpu].model);
    }
    enum kiln_rc rc = sdb_open(o->db, &w.db, err);
    if (rc != KILN_OK)
        return rc;
    if (o->lease_s > 0)
        w.db.lease_s = o->lease_s;
    struct slurm_runner sr; /* outlives every step: the loop below */
    if (o->slurm && (rc = slurm_start(&w, &sr, err)) != KILN_OK) {
        sdb_close(&w.db);
        return rc;
    }
    /* Through Slurm a worker judges both backends: cuda first. */
    const char *backends[2] = {gpu >= 0 || w.runner ? "cuda" : "cpu", w.runner ? "cpu" : NULL};
    fprintf(stderr, "kiln serve: worker %d (%s%s%s, %s) ready\n", slot, backends[0],
            backends[1] ? "," : "", backends[1] ? backends[1] : "",
            w.runner ? w.slurm_model : w.gpu_model);
    while (rc == KILN_OK && getppid() == w.parent && !w.cancel) {
        struct sjob j;
        bool got = false;
        for (size_t b = 0; rc == KILN_OK && !got && b < 2 && backends[b]; b++)
            rc = sdb_claim(&w.db, backends[b], &j, &got, err);
        if (rc != KILN_OK)
            break;
        if (!got) {
            nap_ms(150);
            continue;
        }
        rc = run_job(&w, &j, err);
        sjob_free(&j);
    }
    sdb_close(&w.db);
    return rc;
}
