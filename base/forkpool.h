/*
 * forkpool.h - run independent tasks in forked worker processes, a bounded
 * number at a time, and collect each task's error. Processes rather than
 * threads because every task starts sandboxes (fork, namespaces, seccomp),
 * which is only safe from a single-threaded process; and because a task's
 * result must already be a value that crosses a process (files it writes,
 * plus the error that comes back through a pipe).
 *
 * A worker dies with kiln (PR_SET_PDEATHSIG), so kill -9 of kiln leaves no
 * task running; a task must therefore leave its result so that a rerun can
 * tell a finished one from an interrupted one (inputs.c writes `ok` last).
 */
#ifndef KILN_FORKPOOL_H
#define KILN_FORKPOOL_H

#include <stddef.h>

#include "error.h"

/* One task: index i of the caller's list. Runs in a worker process (or in
 * this process when jobs <= 1); may write files, must not rely on changing
 * the caller's memory. */
typedef enum kiln_rc (*forkpool_task)(size_t i, void *arg, struct kiln_err *err);

struct forkpool_opts {
    int jobs;              /* workers at a time; <= 1: run in order in this process */
    const long long *cost; /* NULL, or per task: its estimated peak memory */
    long long budget;      /* running tasks' costs stay under this (one always runs) */
};

/* Runs task(i) for every i in [0, n). Every task runs even when another
 * fails (their results are cached work); the returned error is the one of
 * the lowest failing index, so the report does not depend on timing. */
enum kiln_rc forkpool_run(size_t n, forkpool_task task, void *arg, const struct forkpool_opts *o,
                          struct kiln_err *err) KILN_NODISCARD;

/* A default worker count: the online CPUs, at most `cap`. */
int forkpool_default_jobs(int cap);

/* Half of MemAvailable from /proc/meminfo, or `fallback` when unreadable:
 * a budget for forkpool_opts.cost that leaves the rest to the sandboxes'
 * page cache and to kiln itself. */
long long forkpool_memory_budget(long long fallback);

#endif
