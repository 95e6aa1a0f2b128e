/*
 * hx_watchdog.c - see hx_watchdog.h. The documents are prepared by the main
 * thread while it is healthy; the watchdog thread only substitutes where the
 * case stood and writes them with plain system calls, so a main thread stuck
 * anywhere (in the driver, in candidate code) cannot block it.
 */
#include "hx_watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hx.h"

struct hx_watchdog {
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool armed;
    double deadline_ms, limit_ms;
    char case_name[64];
    char *timings, *status;
    char *scratch; /* the status document with its markers filled in */
    size_t scratch_cap;
    _Atomic(const char *) phase;
    _Atomic(const char *) set;
    atomic_int run;
    char out_dir[PATH_MAX];
    int log_fd;
    double t0_ms;
};

static void log_line(struct hx_watchdog *w, const char *fmt, ...) KILN_PRINTF(2, 3);

static void log_line(struct hx_watchdog *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hx_log_vline(w->log_fd, w->t0_ms, fmt, ap);
    va_end(ap);
}

/* `text` with each marker replaced, into `out` (`cap` bytes, allocated at
 * arm time: nothing is allocated once the deadline passed, when the stuck
 * main thread might hold the allocator's lock). 0, or -1 if it would not
 * fit. */
static int fill_markers(const char *text, const char *const *from, const char *const *to, int n,
                        char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = text; *p;) {
        int hit = -1;
        for (int i = 0; i < n && hit < 0; i++)
            if (strncmp(p, from[i], strlen(from[i])) == 0)
                hit = i;
        const char *src = hit >= 0 ? to[hit] : p;
        size_t len = hit >= 0 ? strlen(to[hit]) : 1;
        if (o + len + 1 > cap)
            return -1;
        memcpy(out + o, src, len);
        o += len;
        p += hit >= 0 ? strlen(from[hit]) : 1;
    }
    out[o] = '\0';
    return 0;
}

static int write_doc(struct hx_watchdog *w, const char *name, const char *text)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", w->out_dir, name);
    snprintf(tmp, sizeof(tmp), "%s/.%s.watchdog", w->out_dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    int ok = done == len && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The deadline passed: write what the core prepared and end the process. */
static void fire(struct hx_watchdog *w)
{
    const char *phase = atomic_load(&w->phase), *set = atomic_load(&w->set);
    int run = atomic_load(&w->run);
    char where[160], runs[24], mark[24];
    if (!phase)
        phase = "setup";
    if (!set)
        set = "";
    if (set[0])
        snprintf(where, sizeof(where), "%s run %d on set %s", phase, run, set);
    else
        snprintf(where, sizeof(where), "%s", phase);
    snprintf(runs, sizeof(runs), "%d", run);
    snprintf(mark, sizeof(mark), "%lld", HX_WATCHDOG_RUN_MARK);
    log_line(w,
             "case %s: timeout: still running after %.0f ms (the harness's per-case limit), in "
             "the %s; ending the process",
             w->case_name, w->limit_ms, where);
    const char *from[] = {"@PHASE@", "@SET@", "@WHERE@", mark};
    const char *to[] = {phase, set, where, runs};
    int bad = fill_markers(w->status, from, to, 4, w->scratch, w->scratch_cap) != 0 ||
              write_doc(w, "timings.json", w->timings) != 0 ||
              write_doc(w, "status.json", w->scratch) != 0;
    if (bad)
        log_line(w, "harness error: the watchdog could not write the documents");
    else
        log_line(w, "done: the candidate failed (timeout)");
    /* write(2), not stdio: the stuck main thread may hold stderr's lock. */
    char line[400];
    int len =
        snprintf(line, sizeof(line), "kiln-harness: case %s: timeout after %.0f ms in the %s\n",
                 w->case_name, w->limit_ms, where);
    if (len > 0) {
        ssize_t wr =
            write(STDERR_FILENO, line, (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
        (void)wr;
    }
    /* No cleanup: the main thread is stuck in the driver or in candidate
     * code, and only the process's end takes a hung kernel off the GPU. */
    _exit(bad ? 1 : 0);
}

static void to_timespec(double ms, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ms / 1e3);
    ts->tv_nsec = (long)((ms - (double)ts->tv_sec * 1e3) * 1e6);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
    if (ts->tv_nsec < 0)
        ts->tv_nsec = 0;
}

static void *watch(void *arg)
{
    struct hx_watchdog *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        if (!w->armed) {
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        double now = hx_now_ms();
        if (now >= w->deadline_ms)
            fire(w); /* does not return */
        struct timespec ts;
        to_timespec(w->deadline_ms, &ts);
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

enum kiln_rc hx_watchdog_start(struct hx_watchdog **out, const char *out_dir, int log_fd,
                               double t0_ms, struct kiln_err *err)
{
    *out = NULL;
    struct hx_watchdog *w = calloc(1, sizeof(*w));
    if (!w)
        return kiln_fail(err, KILN_E_NOMEM, "watchdog: out of memory");
    if (strlen(out_dir) >= sizeof(w->out_dir)) {
        free(w);
        return kiln_fail(err, KILN_E_LIMIT, "watchdog: output directory path too long");
    }
    strcpy(w->out_dir, out_dir);
    w->log_fd = log_fd;
    w->t0_ms = t0_ms;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    /* hx_now_ms is CLOCK_MONOTONIC: so is the wait. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&w->thread, NULL, watch, w);
    if (e != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        errno = e;
        return kiln_fail_errno(err, KILN_E_INTERNAL, "watchdog: cannot start its thread");
    }
    w->started = true;
    *out = w;
    return KILN_OK;
}

enum kiln_rc hx_watchdog_arm(struct hx_watchdog *w, const char *case_name, double deadline_ms,
                             double limit_ms, char *timings, char *status, struct kiln_err *err)
{
    /* Room for the markers' values: a phase, a set name, the where line
     * (each under 200 bytes) and a run number, once each. */
    size_t cap = status ? strlen(status) + 1024 : 0;
    char *scratch = status ? malloc(cap) : NULL;
    if (!timings || !status || !scratch) {
        free(timings);
        free(status);
        free(scratch);
        return kiln_fail(err, KILN_E_NOMEM, "watchdog: out of memory for case %s's documents",
                         case_name);
    }
    atomic_store(&w->phase, "setup");
    atomic_store(&w->set, "");
    atomic_store(&w->run, 0);
    pthread_mutex_lock(&w->mu);
    free(w->timings);
    free(w->status);
    free(w->scratch);
    w->timings = timings;
    w->status = status;
    w->scratch = scratch;
    w->scratch_cap = cap;
    snprintf(w->case_name, sizeof(w->case_name), "%s", case_name);
    w->deadline_ms = deadline_ms;
    w->limit_ms = limit_ms;
    w->armed = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return KILN_OK;
}

void hx_watchdog_where(struct hx_watchdog *w, const char *phase, const char *set, int run)
{
    if (!w)
        return;
    atomic_store(&w->phase, phase);
    atomic_store(&w->set, set);
    atomic_store(&w->run, run);
}

void hx_watchdog_disarm(struct hx_watchdog *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->armed = false;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void hx_watchdog_stop(struct hx_watchdog *w)
{
    if (!w)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->timings);
    free(w->status);
    free(w->scratch);
    free(w);
}
