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

enum kiln_rc serve_run(const struct serve_opts *in, struct kiln_err *err)
{
    struct serve_opts o = *in;
    char data[PATH_MAX], dbp[PATH_MAX], wl[PATH_MAX], self[PATH_MAX], tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", o.data ? o.data : "kiln-serve");
    enum kiln_rc rc = fs_mkdirs(tmp, err);
    if (rc != KILN_OK)
        return rc;
    if (!realpath(tmp, data))
        return kiln_fail_errno(err, KILN_E_IO, "--data %s", tmp);
    o.data = data;
    snprintf(dbp, sizeof(dbp), "%s", o.db ? o.db : "");
    if (!o.db)
        snprintf(dbp, sizeof(dbp), "%s/kiln.db", data);
    o.db = dbp;
    snprintf(tmp, sizeof(tmp), "%s", o.workloads ? o.workloads : "");
    if (!o.workloads)
        snprintf(tmp, sizeof(tmp), "%s/workloads", fs_data_dir());
    if (!realpath(tmp, wl))
        return kiln_fail_errno(err, KILN_E_USAGE, "the workloads directory %s (--workloads)", tmp);
    o.workloads = wl;
    if ((rc = fs_self_path(false, self, sizeof(self), err)) != KILN_OK)
        return rc;
    char rec[PATH_MAX + 16], work[PATH_MAX + 16];
    snprintf(rec, sizeof(rec), "%s/records", data);
    snprintf(work, sizeof(work), "%s/work", data);
    if ((rc = fs_mkdirs(rec, err)) != KILN_OK || (rc = fs_mkdirs(work, err)) != KILN_OK)
        return rc;
    /* Records hold every tenant's sources, verdicts and secret seeds: 0700.
     * DATA itself is 0711: the sandboxes' own uids must pass through it to
     * the scratch they are given (work/), but nobody else may list it. */
    if (chmod(rec, 0700) != 0 || chmod(data, 0711) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "cannot restrict the modes of %s", data);

    if (o.slurm) {
        /* Checked once here (sbatch answers, the spool is writable), so a
         * bad configuration is a refusal to start, not workers that die. */
        struct slurm_runner probe;
        if ((rc = slurm_runner_init(&probe, o.slurm, err)) != KILN_OK)
            return rc;
    }
    int lock_fd = -1;
    if ((rc = sdb_lock(dbp, &lock_fd, err)) != KILN_OK)
        return rc;
    struct sdb db;
    if ((rc = sdb_open(dbp, &db, err)) != KILN_OK) {
        close(lock_fd);
        return rc;
    }
    /* Temporary records left by the last stop: a committed one (its name
     * is the job's record) is published; the rest were never committed, and
     * their jobs run again. */
    DIR *rd = opendir(rec);
    for (struct dirent *de; rd && (de = readdir(rd));) {
        if (strncmp(de->d_name, ".tmp-", 5) || strlen(de->d_name) < 5 + SERVE_ID_LEN)
            continue;
        char id[SERVE_ID_LEN + 1], committed[300] = "", p[PATH_MAX + 300];
        struct kiln_err e;
        kiln_err_clear(&e);
        memcpy(id, de->d_name + 5, SERVE_ID_LEN);
        id[SERVE_ID_LEN] = '\0';
        snprintf(p, sizeof(p), "%s/%s", rec, de->d_name);
        if (sdb_record_of(&db, id, committed, sizeof(committed), &e) == KILN_OK &&
            !strcmp(committed, de->d_name)) {
            if (serve_publish_record(&db, data, id, de->d_name, &e) != KILN_OK)
                fprintf(stderr, "kiln serve: %s\n", e.msg);
        } else if (fs_remove_tree(p, &e) != KILN_OK) {
            fprintf(stderr, "kiln serve: %s\n", e.msg);
        }
    }
    if (rd)
        closedir(rd);
    /* Community workloads a stopped server was still writing (the complete
     * ones were renamed to their hash). */
    char community[PATH_MAX + 16];
    snprintf(community, sizeof(community), "%s/community", data);
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
    /* Compiles done ahead for the last server: the workers compile again. */
    char pre[PATH_MAX + 32];
    snprintf(pre, sizeof(pre), "%s/work/precompiled", data);
    if (access(pre, F_OK) == 0 && (rc = fs_remove_tree(pre, err)) != KILN_OK)
        goto out_db;
    /* Nor is any of their Slurm jobs wanted: one still out was left by a
     * server killed before its workers could cancel it (kill -9). */
    if (o.slurm && (rc = cancel_orphans(&db, "left by the last server", err)) != KILN_OK)
        goto out_db;
    int requeued = 0;
    /* We hold the lock, so no worker of an earlier server is alive (they
     * hold it too): whatever is "running" was cut off, and runs again. */
    if ((rc = sdb_requeue(&db, true, &requeued, err)) != KILN_OK)
        goto out_db;
    if (requeued)
        fprintf(stderr, "kiln serve: %d submission(s) cut off by the last stop are queued again\n",
                requeued);

    sigset_t mask, oldmask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &mask, &oldmask); /* before any thread starts */

    size_t judges = o.slurm   ? (size_t)(o.slurm_workers ? o.slurm_workers : 4)
                    : o.ngpus ? o.ngpus
                              : 1;
    size_t ncomp = o.compile_workers < 0 ? 0 : o.compile_workers ? (size_t)o.compile_workers : 1;
    size_t nw = judges + ncomp;
    struct wproc w[SERVE_MAX_GPUS + SERVE_MAX_COMPILE_WORKERS];
    for (size_t i = 0; i < nw; i++) {
        w[i].gpu = i >= judges ? -2 : o.ngpus && !o.slurm ? o.gpus[i] : -1;
        w[i].pid = spawn_worker(self, &o, (int)(i >= judges ? i - judges : i), w[i].gpu, lock_fd,
                                &oldmask);
        w[i].started = serve_now();
        if (w[i].pid < 0) {
            rc = kiln_fail_errno(err, KILN_E_IO, "cannot start worker %zu", i);
            nw = i;
            goto out_workers;
        }
    }
    struct shttp *http = NULL;
    struct shttp_cfg cfg = {.opts = &o,
                            .db = &db,
                            .backends = o.slurm   ? "cuda,cpu"
                                        : o.ngpus ? "cuda"
                                                  : "cpu",
                            .workloads_dir = wl,
                            .workers = (int)judges};
    if ((rc = shttp_start(&cfg, &http, err)) != KILN_OK)
        goto out_workers;
    fprintf(stderr,
            "kiln serve: database %s, records in %s/records, %zu %s worker(s)%s, %zu compile "
            "worker(s)\n",
            dbp, data, judges, cfg.backends, o.slurm ? " submitting to Slurm" : "", ncomp);

    double last_reap = 0;
    for (;;) {
        struct timespec ts = {.tv_sec = 1};
        int sig = sigtimedwait(&mask, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            fprintf(stderr, "kiln serve: stopping (signal %d)\n", sig);
            break;
        }
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            for (size_t i = 0; i < nw; i++) {
                if (w[i].pid != p)
                    continue;
                fprintf(stderr, "kiln serve: worker %zu (pid %d) ended (%s %d); restarting it\n", i,
                        (int)p, WIFEXITED(st) ? "exit" : "signal",
                        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
                w[i].pid = 0;
                if (i < judges)
                    requeue_cut_off(&db, p, st);
            }
        }
        double now = serve_now();
        for (size_t i = 0; i < nw; i++) {
            /* At most one restart every 2 s, so a worker that cannot start
             * does not spin. */
            if (w[i].pid == 0 && now - w[i].started > 2) {
                w[i].pid = spawn_worker(self, &o, (int)(i >= judges ? i - judges : i), w[i].gpu,
                                        lock_fd, &oldmask);
                w[i].started = now;
                if (w[i].pid < 0)
                    w[i].pid = 0;
            }
        }
        if (now - last_reap > 2) {
            int k = 0;
            struct kiln_err e;
            kiln_err_clear(&e);
            if (sdb_requeue(&db, false, &k, &e) != KILN_OK)
                fprintf(stderr, "kiln serve: reaper: %s\n", e.msg);
            else if (k)
                fprintf(stderr, "kiln serve: %d stale lease(s) reaped; queued again\n", k);
            last_reap = now;
        }
    }
    shttp_stop(http);
out_workers:
    for (size_t i = 0; i < nw; i++)
        if (w[i].pid > 0)
            kill(w[i].pid, SIGTERM);
    for (size_t i = 0; i < nw; i++) {
        if (w[i].pid <= 0)
            continue;
        /* Bounded: 5 s, then SIGKILL. */
        int st;
        for (int k = 0; k < 50 && waitpid(w[i].pid, &st, WNOHANG) == 0; k++) {
            struct timespec t = {.tv_nsec = 100000000L};
            nanosleep(&t, NULL);
        }
        if (kill(w[i].pid, 0) == 0) {
            kill(w[i].pid, SIGKILL);
            waitpid(w[i].pid, &st, 0);
        }
    }
    {
        int k = 0;
        struct kiln_err e;
        kiln_err_clear(&e);
        /* A worker killed after its 5 s could not cancel its job. */
        if (o.slurm && cancel_orphans(&db, "left by a worker that did not stop", &e) != KILN_OK) {
            fprintf(stderr, "kiln serve: %s\n", e.msg);
            kiln_err_clear(&e);
        }
        if (sdb_requeue(&db, true, &k, &e) == KILN_OK && k)
            fprintf(stderr,
                    "kiln serve: %d running submission(s) queued again for the next start\n", k);
    }
    pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
out_db:
    sdb_close(&db);
    close(lock_fd);
    return rc;
}
