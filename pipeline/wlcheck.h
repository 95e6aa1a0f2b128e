/*
 * wlcheck.h - `kiln workload check` as a function, so that a workload a
 * model generated (wlgen.h) is validated by exactly the code that validates
 * a workload from a stranger: for each backend, inputs.py and reference.py
 * run in the `script` sandbox for every visible and held-out case, every
 * tensor is checked against the signature, and weak cases are flagged (a
 * weak performance case the workload does not accept by name is a problem);
 * with check_start, the starting kernel is compiled and run on the
 * correctness cases like any candidate (pipeline/evaluate.h).
 *
 * The caller loads the workload first (workload_load: the strict parser).
 */
#ifndef KILN_WLCHECK_H
#define KILN_WLCHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "given.h"
#include "workload.h"

struct wlcheck_opts {
    unsigned backends;           /* mask of enum kiln_backend, intersected with the workload's */
    const char *cache_dir;       /* visible sets (cache_dir/<hash>/...), shared with a session */
    const char *held_cache_dir;  /* held-out sets; NULL: cache_dir */
    uint64_t seed;               /* base seed of both */
    long long script_timeout_ms; /* 0: the script policy's default */
    FILE *table;                 /* a row per input set, as `kiln workload check`; NULL: none */
    bool verbose;                /* progress lines on stderr */
    const char *input_cases;     /* --input-cases: stand in for the visible inputs; NULL: none */
    const struct given_reference *reference; /* --reference; NULL: reference.py */
    /* `kiln workload check`: also compile each backend's starting kernel
     * and run it on the correctness cases (the gpu-run sandbox; a cuda one
     * only compiled where there is no GPU), so a start that does not
     * compile, takes the wrong parameter types or computes the wrong thing
     * fails the check with the reason; its unused tunables are warned
     * about (WARN rows, not problems). */
    bool check_start;
    int gpu; /* the GPU a cuda start runs on */
};

#define WLCHECK_PROBLEMS_MAX 2048

/* Bumped whenever what the check accepts or refuses changes, so that a
 * check's outcome remembered by an earlier kiln (the service's cache of
 * community workload checks) is not taken for this one's. */
#define WLCHECK_RULES_VERSION 1

struct wlcheck_result {
    int nproblems;                       /* 0: the workload passed */
    char problems[WLCHECK_PROBLEMS_MAX]; /* one line per problem (truncated) */
    enum kiln_rc environment;            /* KILN_OK, or why the host could not check */
    /* A problem a loaded host can cause (a script ran out of time, or died
     * of a SIGKILL kiln did not send: the host's OOM killer, an operator):
     * the same workload may pass a check on a quieter host, so this outcome
     * says less than the others and must not be remembered as final. */
    bool load_dependent;
    /* Visible correctness sets whose reference is weak (a zero or constant
     * output passes): no problem for the check, which shows them as WEAK,
     * but a generator of workloads (kiln import) refuses to write one. */
    int weak_correctness;
    char weak_first[300]; /* "case small on cpu: <why>" of the first */
};

/*
 * Runs the check. Always fills *res; a problem of the workload (a script
 * fails or times out, a tensor breaks the signature, an unaccepted weak
 * performance case) is a line in res->problems. res->environment is set
 * when a failure was the host's (the sandbox could not be built, I/O, out
 * of memory), which says nothing about the workload.
 */
void wlcheck_run(const struct workload *w, const struct wlcheck_opts *o,
                 struct wlcheck_result *res);

/* True when a failure with this code is the host's (I/O, memory, the
 * sandbox, a missing tool), not the workload's. */
bool wlcheck_host_failure(enum kiln_rc rc);

#endif
