/* server.c - `kiln serve`: takes the database's lock, puts the jobs of a
 * dead server back in the queue, starts the workers (fresh processes: the
 * pipeline forks sandboxes, which a process with HTTP threads should not
 * do), serves HTTP, reaps stale leases and restarts dead workers until
 * SIGINT or SIGTERM. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "service_impl.h"
#include "slurm.h"

struct wproc {
    pid_t pid;
    int gpu;
    double started;
};

/* gpu: >= 0 a GPU worker, -1 the cpu worker, -2 a compile-pool process. */
static pid_t spawn_worker(const char *self, const struct serve_opts *o, int slot, int gpu,
                          int lock_fd, const sigset_t *oldmask)
{
    char s_slot[16], s_gpu[16], s_fd[16], s_w[16], s_i[16], s_l[16];
    snprintf(s_l, sizeof(s_l), "%d", o->lease_s);
    snprintf(s_slot, sizeof(s_slot), "%d", slot);
    snprintf(s_gpu, sizeof(s_gpu), "%d", gpu < 0 ? -1 : gpu);
    snprintf(s_fd, sizeof(s_fd), "%d", lock_fd);
    snprintf(s_w, sizeof(s_w), "%d", o->warmups);
    snprintf(s_i, sizeof(s_i), "%d", o->iterations);
    char *argv[40] = {"kiln",
                      "serve",
                      gpu == -2 ? "--compile-worker" : "--worker",
                      s_slot,
                      "--worker-gpu",
                      s_gpu,
                      "--worker-lock-fd",
                      s_fd,
                      "--db",
                      (char *)o->db,
                      "--data",
                      (char *)o->data,
                      "--workloads",
                      (char *)o->workloads,
                      "--warmups",
                      s_w,
                      "--iterations",
                      s_i,
                      "--lease",
                      s_l};
    size_t n = 20;
    char s_rse[32], s_budget[32];
    snprintf(s_rse, sizeof(s_rse), "%.9g", o->target_rse);
    snprintf(s_budget, sizeof(s_budget), "%.9g", o->budget_ms / 1000);
    argv[n++] = "--until-rse";
    argv[n++] = o->timing_fixed ? "off" : o->target_rse > 0 ? s_rse : "0.5%";
    if (!o->timing_fixed && o->budget_ms > 0) {
        argv[n++] = "--time-budget";
        argv[n++] = s_budget;
    }
    if (o->arch) {
        argv[n++] = "--arch";
        argv[n++] = (char *)o->arch;
    }
    if (o->slurm && gpu != -2) {
        const struct slurm_config *c = o->slurm;
        const char *opt[][2] = {{"--executor", "slurm"},        {"--spool", c->spool},
                                {"--partition", c->partition},  {"--account", c->account},
                                {"--slurm-kiln", c->node_kiln}, {"--slurm-gres", c->gres}};
        for (size_t i = 0; i < sizeof(opt) / sizeof(*opt); i++) {
            if (!opt[i][1])
                continue;
            argv[n++] = (char *)opt[i][0];
            argv[n++] = (char *)opt[i][1];
        }
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls here: this process has threads. */
        int fl = fcntl(lock_fd, F_GETFD);
        if (fl >= 0)
            fcntl(lock_fd, F_SETFD, fl & ~FD_CLOEXEC);
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        execv(self, argv);
        _exit(127);
    }
    return pid;
}

/* --executor slurm, holding the lock: no worker of this database lives, so
 * every Slurm job of its name still out has no one to collect it. */
static enum kiln_rc cancel_orphans(struct sdb *db, const char *why, struct kiln_err *err)
{
    char name[64];
    enum kiln_rc rc = sdb_slurm_job_name(db, name, sizeof(name), err);
    if (rc == KILN_OK && (rc = slurm_cancel_named(name, err)) != KILN_OK)
        kiln_err_prefix(err, "cancelling the Slurm jobs %s (%s)", why, name);
    return rc;
}

/* A judging worker died (killed, crashed, or stopped itself after losing
 * its lease): whatever it was judging is queued again at once, in its
 * place, rather than after its lease runs out. Its attempt was counted. */
static void requeue_cut_off(struct sdb *db, pid_t pid, int status)
{
    char why[128];
    snprintf(why, sizeof(why), "the worker judging it (pid %d) ended (%s %d): queued again",
             (int)pid, WIFEXITED(status) ? "exit" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    int n = 0;
    struct kiln_err e = {0};
    if (sdb_requeue_worker(db, pid, why, &n, &e) != KILN_OK)
        fprintf(stderr, "kiln serve: %s\n", e.msg);
    else if (n)
        fprintf(stderr, "kiln serve: %d submission(s) of worker pid %d queued again at once\n", n,
                (int)pid);
}

/* What serve_run() holds while it serves: the resolved paths, the lock and
 * the database, the blocked signals, the workers and the HTTP server. */
struct server {
    struct serve_opts o; /* the caller's, its paths resolved to the ones below */
    char data[PATH_MAX], dbp[PATH_MAX], wl[PATH_MAX], self[PATH_MAX];
    char rec[PATH_MAX + 16];
    int lock_fd;
    struct sdb db;
    sigset_t mask, oldmask;
    size_t judges, ncomp, nw;
    struct wproc w[SERVE_MAX_GPUS + SERVE_MAX_COMPILE_WORKERS];
    struct shttp_cfg cfg;
    struct shttp *http;
};

/* DATA (made), the database, the workloads and kiln's own path, absolute. */
static enum kiln_rc resolve_paths(struct server *s, struct kiln_err *err)
{
    struct serve_opts *o = &s->o;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", o->data ? o->data : "kiln-serve");
    enum kiln_rc rc = fs_mkdirs(tmp, err);
    if (rc != KILN_OK)
        return rc;
    if (!realpath(tmp, s->data))
        return kiln_fail_errno(err, KILN_E_IO, "--data %s", tmp);
    o->data = s->data;
    snprintf(s->dbp, sizeof(s->dbp), "%s", o->db ? o->db : "");
    if (!o->db)
        snprintf(s->dbp, sizeof(s->dbp), "%s/kiln.db", s->data);
    o->db = s->dbp;
    snprintf(tmp, sizeof(tmp), "%s", o->workloads ? o->workloads : "");
    if (!o->workloads)
        snprintf(tmp, sizeof(tmp), "%s/workloads", fs_data_dir());
    if (!realpath(tmp, s->wl))
        return kiln_fail_errno(err, KILN_E_USAGE, "the workloads directory %s (--workloads)", tmp);
    o->workloads = s->wl;
    return fs_self_path(false, s->self, sizeof(s->self), err);
}

/* DATA/records and DATA/work, with the modes that keep tenants apart. */
static enum kiln_rc make_data_dirs(struct server *s, struct kiln_err *err)
{
    char work[PATH_MAX + 16];
    snprintf(s->rec, sizeof(s->rec), "%s/records", s->data);
    snprintf(work, sizeof(work), "%s/work", s->data);
    enum kiln_rc rc;
    if ((rc = fs_mkdirs(s->rec, err)) != KILN_OK || (rc = fs_mkdirs(work, err)) != KILN_OK)
        return rc;
    /* Records hold every tenant's sources, verdicts and secret seeds: 0700.
     * DATA itself is 0711: the sandboxes' own uids must pass through it to
     * the scratch they are given (work/), but nobody else may list it. */
    if (chmod(s->rec, 0700) != 0 || chmod(s->data, 0711) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "cannot restrict the modes of %s", s->data);
    return KILN_OK;
}

/* Checked once here (sbatch answers, the spool is writable), so a bad
 * configuration is a refusal to start, not workers that die. */
static enum kiln_rc check_slurm(const struct server *s, struct kiln_err *err)
{
    struct slurm_runner probe;
    return s->o.slurm ? slurm_runner_init(&probe, s->o.slurm, err) : KILN_OK;
}

/* The database's lock, then the database; neither is held on failure. */
static enum kiln_rc open_db(struct server *s, struct kiln_err *err)
{
    enum kiln_rc rc = sdb_lock(s->dbp, &s->lock_fd, err);
    if (rc != KILN_OK)
        return rc;
    if ((rc = sdb_open(s->dbp, &s->db, err)) != KILN_OK) {
        close(s->lock_fd);
        s->lock_fd = -1;
    }
    return rc;
}

/* Temporary records left by the last stop: a committed one (its name is
 * the job's record) is published; the rest were never committed, and their
 * jobs run again. Failures are reported and skipped. */
static void settle_temp_records(struct server *s)
{
    DIR *rd = opendir(s->rec);
    for (struct dirent *de; rd && (de = readdir(rd));) {
        if (strncmp(de->d_name, ".tmp-", 5) || strlen(de->d_name) < 5 + SERVE_ID_LEN)
            continue;
        char id[SERVE_ID_LEN + 1], committed[300] = "", p[PATH_MAX + 300];
        struct kiln_err e;
        kiln_err_clear(&e);
        memcpy(id, de->d_name + 5, SERVE_ID_LEN);
        id[SERVE_ID_LEN] = '\0';
        snprintf(p, sizeof(p), "%s/%s", s->rec, de->d_name);
        if (sdb_record_of(&s->db, id, committed, sizeof(committed), &e) == KILN_OK &&
            !strcmp(committed, de->d_name)) {
            if (serve_publish_record(&s->db, s->data, id, de->d_name, &e) != KILN_OK)
                fprintf(stderr, "kiln serve: %s\n", e.msg);
        } else if (fs_remove_tree(p, &e) != KILN_OK) {
            fprintf(stderr, "kiln serve: %s\n", e.msg);
        }
    }
    if (rd)
        closedir(rd);
}

/* Community workloads a stopped server was still writing (the complete
 * ones were renamed to their hash). Failures are reported and skipped. */
static void remove_temp_community(const struct server *s)
{
    char community[PATH_MAX + 16];
    snprintf(community, sizeof(community), "%s/community", s->data);
    DIR *cd = opendir(community);
    for (struct dirent *de; cd && (de = readdir(cd));) {
        char p[PATH_MAX + 300];
        struct kiln_err e = {0};
        if (strncmp(de->d_name, ".tmp-", 5))
            continue;
        snprintf(p, sizeof(p), "%s/%s", community, de->d_name);
        if (fs_remove_tree(p, &e) != KILN_OK)
            fprintf(stderr, "kiln serve: %s\n", e.msg);
    }
    if (cd)
        closedir(cd);
}

/* Cleans up after the last server, holding the lock: its temporary files,
 * its compiles, its Slurm jobs, and the jobs it was running. */
static enum kiln_rc recover_last_stop(struct server *s, struct kiln_err *err)
{
    settle_temp_records(s);
    remove_temp_community(s);
    /* Compiles done ahead for the last server: the workers compile again. */
    char pre[PATH_MAX + 32];
    snprintf(pre, sizeof(pre), "%s/work/precompiled", s->data);
    enum kiln_rc rc;
    if (access(pre, F_OK) == 0 && (rc = fs_remove_tree(pre, err)) != KILN_OK)
        return rc;
    /* Nor is any of their Slurm jobs wanted: one still out was left by a
     * server killed before its workers could cancel it (kill -9). */
    if (s->o.slurm && (rc = cancel_orphans(&s->db, "left by the last server", err)) != KILN_OK)
        return rc;
    int requeued = 0;
    /* We hold the lock, so no worker of an earlier server is alive (they
     * hold it too): whatever is "running" was cut off, and runs again. */
    if ((rc = sdb_requeue(&s->db, true, &requeued, err)) != KILN_OK)
        return rc;
    if (requeued)
        fprintf(stderr, "kiln serve: %d submission(s) cut off by the last stop are queued again\n",
                requeued);
    return KILN_OK;
}

/* SIGINT, SIGTERM and SIGCHLD are waited for, never delivered: blocked
 * before any thread starts, so every thread inherits the mask. */
static void block_signals(struct server *s)
{
    sigemptyset(&s->mask);
    sigaddset(&s->mask, SIGINT);
    sigaddset(&s->mask, SIGTERM);
    sigaddset(&s->mask, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &s->mask, &s->oldmask);
}

static pid_t spawn_slot(const struct server *s, size_t i)
{
    int slot = (int)(i >= s->judges ? i - s->judges : i);
    return spawn_worker(s->self, &s->o, slot, s->w[i].gpu, s->lock_fd, &s->oldmask);
}

/* The judging workers, then the compile pool; on failure s->nw counts the
 * ones started, which the caller stops. */
static enum kiln_rc start_workers(struct server *s, struct kiln_err *err)
{
    const struct serve_opts *o = &s->o;
    s->judges = o->slurm   ? (size_t)(o->slurm_workers ? o->slurm_workers : 4)
                : o->ngpus ? o->ngpus
                           : 1;
    s->ncomp = o->compile_workers < 0 ? 0 : o->compile_workers ? (size_t)o->compile_workers : 1;
    size_t want = s->judges + s->ncomp;
    for (s->nw = 0; s->nw < want; s->nw++) {
        size_t i = s->nw;
        s->w[i].gpu = i >= s->judges ? -2 : o->ngpus && !o->slurm ? o->gpus[i] : -1;
        s->w[i].pid = spawn_slot(s, i);
        s->w[i].started = serve_now();
        if (s->w[i].pid < 0)
            return kiln_fail_errno(err, KILN_E_IO, "cannot start worker %zu", i);
    }
    return KILN_OK;
}

static enum kiln_rc start_http(struct server *s, struct kiln_err *err)
{
    const struct serve_opts *o = &s->o;
    s->cfg = (struct shttp_cfg){.opts = o,
                                .db = &s->db,
                                .backends = o->slurm   ? "cuda,cpu"
                                            : o->ngpus ? "cuda"
                                                       : "cpu",
                                .workloads_dir = s->wl,
                                .workers = (int)s->judges};
    enum kiln_rc rc = shttp_start(&s->cfg, &s->http, err);
    if (rc != KILN_OK)
        return rc;
    fprintf(stderr,
            "kiln serve: database %s, records in %s/records, %zu %s worker(s)%s, %zu compile "
            "worker(s)\n",
            s->dbp, s->data, s->judges, s->cfg.backends, o->slurm ? " submitting to Slurm" : "",
            s->ncomp);
    return KILN_OK;
}

/* Marks the workers that ended; a judging one's jobs are queued again. */
static void reap_workers(struct server *s)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        for (size_t i = 0; i < s->nw; i++) {
            if (s->w[i].pid != p)
                continue;
            fprintf(stderr, "kiln serve: worker %zu (pid %d) ended (%s %d); restarting it\n", i,
                    (int)p, WIFEXITED(st) ? "exit" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            s->w[i].pid = 0;
            if (i < s->judges)
                requeue_cut_off(&s->db, p, st);
        }
    }
}

/* At most one restart every 2 s, so a worker that cannot start does not
 * spin. */
static void restart_workers(struct server *s, double now)
{
    for (size_t i = 0; i < s->nw; i++) {
        if (s->w[i].pid == 0 && now - s->w[i].started > 2) {
            s->w[i].pid = spawn_slot(s, i);
            s->w[i].started = now;
            if (s->w[i].pid < 0)
                s->w[i].pid = 0;
        }
    }
}

static void reap_stale_leases(struct server *s)
{
    int k = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_requeue(&s->db, false, &k, &e) != KILN_OK)
        fprintf(stderr, "kiln serve: reaper: %s\n", e.msg);
    else if (k)
        fprintf(stderr, "kiln serve: %d stale lease(s) reaped; queued again\n", k);
}

/* Until SIGINT or SIGTERM: restarts dead workers, reaps stale leases. */
static void serve_until_signal(struct server *s)
{
    double last_reap = 0;
    for (;;) {
        struct timespec ts = {.tv_sec = 1};
        int sig = sigtimedwait(&s->mask, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            fprintf(stderr, "kiln serve: stopping (signal %d)\n", sig);
            return;
        }
        reap_workers(s);
        double now = serve_now();
        restart_workers(s, now);
        if (now - last_reap > 2) {
            reap_stale_leases(s);
            last_reap = now;
        }
    }
}

/* SIGTERM to every worker; bounded: 5 s each, then SIGKILL. */
static void stop_workers(struct server *s)
{
    for (size_t i = 0; i < s->nw; i++)
        if (s->w[i].pid > 0)
            kill(s->w[i].pid, SIGTERM);
    for (size_t i = 0; i < s->nw; i++) {
        if (s->w[i].pid <= 0)
            continue;
        int st;
        for (int k = 0; k < 50 && waitpid(s->w[i].pid, &st, WNOHANG) == 0; k++) {
            struct timespec t = {.tv_nsec = 100000000L};
            nanosleep(&t, NULL);
        }
        if (kill(s->w[i].pid, 0) == 0) {
            kill(s->w[i].pid, SIGKILL);
            waitpid(s->w[i].pid, &st, 0);
        }
    }
}

/* With every worker gone: their Slurm jobs cancelled, their running jobs
 * queued again for the next start. Failures are reported only. */
static void requeue_for_next_start(struct server *s)
{
    int k = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    /* A worker killed after its 5 s could not cancel its job. */
    if (s->o.slurm && cancel_orphans(&s->db, "left by a worker that did not stop", &e) != KILN_OK) {
        fprintf(stderr, "kiln serve: %s\n", e.msg);
        kiln_err_clear(&e);
    }
    if (sdb_requeue(&s->db, true, &k, &e) == KILN_OK && k)
        fprintf(stderr, "kiln serve: %d running submission(s) queued again for the next start\n",
                k);
}

enum kiln_rc serve_run(const struct serve_opts *in, struct kiln_err *err)
{
    struct server srv = {.o = *in, .lock_fd = -1}, *s = &srv;
    enum kiln_rc rc = resolve_paths(s, err);
    if (rc == KILN_OK)
        rc = make_data_dirs(s, err);
    if (rc == KILN_OK)
        rc = check_slurm(s, err);
    if (rc == KILN_OK)
        rc = open_db(s, err);
    if (rc != KILN_OK)
        return rc;
    rc = recover_last_stop(s, err);
    if (rc == KILN_OK) {
        block_signals(s);
        rc = start_workers(s, err);
        if (rc == KILN_OK)
            rc = start_http(s, err);
        if (rc == KILN_OK) {
            serve_until_signal(s);
            shttp_stop(s->http);
        }
        stop_workers(s);
        requeue_for_next_start(s);
        pthread_sigmask(SIG_SETMASK, &s->oldmask, NULL);
    }
    sdb_close(&s->db);
    close(s->lock_fd);
    return rc;
}
