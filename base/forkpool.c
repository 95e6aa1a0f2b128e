/*
 * forkpool.c - see forkpool.h.
 */
#include "forkpool.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What a worker sends back: its task's error, whole or not at all. */
struct report {
    int rc;
    char msg[KILN_ERR_MSG_MAX];
};

struct worker {
    pid_t pid;
    int fd; /* read end of the worker's report pipe */
    size_t task;
};

/* Waits for one of the pool's own workers to end and reaps it, never
 * another child of the caller (kiln optimize --jobs has compile workers
 * of its own running while inputs are generated: waitpid(-1) reaped one,
 * and its owner then failed with ECHILD). waitid(WNOWAIT) says which child
 * ended without reaping it; when that child is not ours (it stays
 * waitable), the pool's workers are polled instead. */
static pid_t wait_own(const struct worker *w, int jobs, int *st)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0)
        return -1; /* errno: EINTR, or ECHILD */
    for (int k = 0; k < jobs; k++)
        if (w[k].pid > 0 && w[k].pid == si.si_pid)
            return waitpid(si.si_pid, st, 0);
    for (;;) {
        for (int k = 0; k < jobs; k++) {
            pid_t got = w[k].pid > 0 ? waitpid(w[k].pid, st, WNOHANG) : 0;
            if (got != 0)
                return got;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int forkpool_default_jobs(int cap)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                          : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return (int)(cap > 0 && n > cap ? cap : n);
}

long long forkpool_memory_budget(long long fallback)
{
    FILE *f = fopen("/proc/meminfo", "re");
    long long kb = -1;
    char line[128];
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb > 0 ? kb * 1024 / 2 : fallback;
}

/* A worker's exit status; the parent reads the outcome from the pipe and
 * only needs to tell a clean exit from these. */
enum worker_exit {
    WORKER_EXIT_OK = 0,
    WORKER_EXIT_PIPE = 126,   /* the report could not be written */
    WORKER_EXIT_ORPHAN = 127, /* kiln died before the worker started */
};

static void worker_main(size_t i, forkpool_task task, void *arg, int fd, pid_t parent)
{
    /* Die with kiln; and if kiln died before this line, do not start. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(WORKER_EXIT_ORPHAN);
    struct kiln_err e;
    kiln_err_clear(&e);
    struct report r;
    memset(&r, 0, sizeof(r));
    r.rc = (int)task(i, arg, &e);
    memcpy(r.msg, e.msg, sizeof(r.msg));
    r.msg[sizeof(r.msg) - 1] = '\0';
    const char *p = (const char *)&r;
    size_t left = sizeof(r);
    while (left > 0) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            _exit(WORKER_EXIT_PIPE);
        p += k;
        left -= (size_t)k;
    }
    _exit(WORKER_EXIT_OK); /* no atexit handlers, no second flush of kiln's stdio */
}

static enum kiln_rc worker_start(struct worker *w, size_t i, forkpool_task task, void *arg,
                                 struct kiln_err *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "forkpool: pipe for task %zu", i);
    fflush(NULL); /* the child must not inherit unwritten output */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return kiln_fail_errno(err, KILN_E_IO, "forkpool: fork for task %zu", i);
    }
    if (pid == 0) {
        close(fds[0]);
        worker_main(i, task, arg, fds[1], parent);
    }
    close(fds[1]);
    w->pid = pid;
    w->fd = fds[0];
    w->task = i;
    return KILN_OK;
}

/* Reads the report of a worker that has exited with status `st`. */
static void worker_collect(struct worker *w, int st, struct kiln_err *e)
{
    struct report r;
    size_t got = 0;
    while (got < sizeof(r)) {
        ssize_t k = read(w->fd, (char *)&r + got, sizeof(r) - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(w->fd);
    w->fd = -1;
    kiln_err_clear(e);
    if (got == sizeof(r) && WIFEXITED(st) && WEXITSTATUS(st) == WORKER_EXIT_OK) {
        r.msg[sizeof(r.msg) - 1] = '\0';
        if (r.rc != KILN_OK)
            kiln_fail(e, (enum kiln_rc)r.rc, "%s", r.msg);
        return;
    }
    if (WIFSIGNALED(st))
        kiln_fail(e, KILN_E_CHILD, "the worker of task %zu was killed by signal %d", w->task,
                  WTERMSIG(st));
    else
        kiln_fail(e, KILN_E_CHILD, "the worker of task %zu exited with status %d without a report",
                  w->task, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static enum kiln_rc run_in_order(size_t n, forkpool_task task, void *arg, struct kiln_err *err)
{
    for (size_t i = 0; i < n; i++) {
        enum kiln_rc rc = task(i, arg, err);
        if (rc != KILN_OK)
            return rc;
    }
    return KILN_OK;
}

enum kiln_rc forkpool_run(size_t n, forkpool_task task, void *arg, const struct forkpool_opts *o,
                          struct kiln_err *err)
{
    int jobs = o && o->jobs > 1 ? o->jobs : 1;
    if (jobs == 1 || n <= 1)
        return run_in_order(n, task, arg, err);
    if ((size_t)jobs > n)
        jobs = (int)n;
    struct worker *w = calloc((size_t)jobs, sizeof(*w));
    if (!w)
        return kiln_fail(err, KILN_E_NOMEM, "forkpool: out of memory");
    for (int k = 0; k < jobs; k++)
        w[k].pid = -1;
    size_t next = 0, failed = SIZE_MAX;
    int running = 0;
    long long used = 0;
    struct kiln_err first;
    kiln_err_clear(&first);
    /* After a failure no new task starts; the running ones finish. */
    while (running > 0 || (failed == SIZE_MAX && next < n)) {
        while (failed == SIZE_MAX && next < n && running < jobs) {
            long long c = o->cost ? o->cost[next] : 0;
            if (running > 0 && o->cost && used + c > o->budget)
                break;
            int slot = 0;
            while (w[slot].pid > 0)
                slot++;
            struct kiln_err e;
            kiln_err_clear(&e);
            if (worker_start(&w[slot], next, task, arg, &e) != KILN_OK) {
                if (running > 0)
                    break; /* retry once a worker has finished */
                failed = next;
                first = e;
                break;
            }
            used += c;
            running++;
            next++;
        }
        if (running == 0)
            break;
        int st = 0;
        pid_t pid = wait_own(w, jobs, &st);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0) {
            kiln_fail_errno(&first, KILN_E_INTERNAL, "forkpool: waitpid");
            failed = 0;
            break;
        }
        for (int k = 0; k < jobs; k++) {
            if (w[k].pid != pid)
                continue;
            struct kiln_err e;
            worker_collect(&w[k], st, &e);
            if (e.rc != KILN_OK && (failed == SIZE_MAX || w[k].task < failed)) {
                failed = w[k].task;
                first = e;
            }
            used -= o->cost ? o->cost[w[k].task] : 0;
            w[k].pid = -1;
            running--;
        }
    }
    /* Only after a waitpid failure can workers remain: stop them. */
    for (int k = 0; k < jobs; k++)
        if (w[k].pid > 0) {
            kill(w[k].pid, SIGKILL);
            waitpid(w[k].pid, NULL, 0);
            close(w[k].fd);
        }
    free(w);
    if (failed != SIZE_MAX) {
        *err = first;
        return first.rc;
    }
    return KILN_OK;
}
