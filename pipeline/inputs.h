/*
 * inputs.h - stage "inputs and reference": for every case of a workload that
 * runs on a backend, and for each of its input sets, runs the workload's
 * inputs.py and then reference.py in the `script` sandbox, ingests what they
 * return strictly, checks every tensor against the signature, and flags
 * weak cases (evaluator/compare.h). Results are cached on disk per
 * (workload content hash, case, seed), so a run computes each once.
 *
 * Given data (given.h) replaces the workload's own: `given` input cases
 * replace inputs.py for the visible cases (their sets and seeds are the
 * given ones; held-out cases never take them), `reference` replaces
 * reference.py everywhere. The cache key then also covers the given
 * reference's and input cases' digests, so a different replacement never
 * reuses a cached set.
 *
 * Layout of one set's directory: in/<tensor>.npy for in/inout tensors,
 * ref/<tensor>.npy for out/inout tensors, and `ok` (written last: a set
 * without it is incomplete and is rebuilt).
 *
 * Sets are generated in parallel worker processes (forkpool.h), the
 * cheapest first (a smoke test), then the costliest first; each leaves its
 * result in its directory, complete once `ok` exists. The parent then
 * reads each set's weak flags from its `ok`, in set order: the worker
 * digested the files, once.
 *
 * Lifecycle: inputs_prepare fills a caller-owned `struct input_sets`;
 * input_sets_free releases it.
 */
#ifndef KILN_INPUTS_H
#define KILN_INPUTS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "compare.h"
#include "error.h"
#include "given.h"
#include "workload.h"

struct input_set {
    const struct wl_case *wcase; /* points into the workload */
    int set;                     /* 0 .. sets-1 within the case */
    uint64_t seed;
    char dir[PATH_MAX];
    unsigned weak;      /* compare_weak bits over the outputs; 0 when fit */
    char weak_why[256]; /* first weak output's explanation */
};

struct input_sets {
    struct input_set *sets;
    size_t n;
};

struct plog;

struct inputs_request {
    const struct workload *wl;
    unsigned backend; /* enum kiln_backend: cases that run on it */
    bool held_out;    /* the held-out cases instead of the visible ones */
    /* Non-NULL: these cases (a held-out draw, heldout.h) instead of the
     * workload's; they must outlive the sets, which point into them. */
    const struct wl_case *cases;
    size_t ncases;
    const char *cache_dir;                   /* sets live in cache_dir/<hash>/<case>-<seed>/ */
    uint64_t seed;                           /* base seed; per-set seeds derive from it */
    int perf_sets;                           /* input sets per performance case (>= 1) */
    long long script_timeout_ms;             /* 0: the script policy's default */
    bool verbose;                            /* progress lines on stderr */
    const struct given_inputs *given;        /* NULL: inputs.py generates (visible only) */
    const struct given_reference *reference; /* NULL: the workload's reference.py */
    int jobs; /* sets generated at a time; 0: $KILN_INPUT_JOBS (1 .. INPUTS_MAX_JOBS),
                 else the CPUs, at most INPUTS_MAX_JOBS; within half the free memory */
    /* Lay the sets out (cases, seeds, directories) and generate nothing: a
     * candidate's launch plan can be resolved and compiled against them
     * before any input exists (fail fast). */
    bool layout_only;
    const struct plog *log; /* where `verbose` lines go (plog.h); NULL: stderr */
};

#define INPUTS_MAX_JOBS 16

/* True when the set counts towards the score: a performance case whose
 * reference is not weak, or is weak and accepted by name in accept_weak. */
bool inputs_set_scored(const struct workload *wl, const struct input_set *s);

/* Per-set seed: a hash of the base seed, the case name and the set index. */
uint64_t inputs_seed(uint64_t base, const char *case_name, int set);

struct sandbox_limits;

/* The script sandbox's limits for one script of case `c` that reads and
 * writes `io_bytes` (inputs.py: its inputs; reference.py: inputs and
 * outputs): memory, wall time (timeout_ms > 0 replaces the computed one:
 * --timeout) and CPU time, set in *l (workloads/README.md, "Script
 * limits"). */
void inputs_script_limits(const struct workload *wl, const struct wl_case *c, long long io_bytes,
                          bool reference, long long timeout_ms, struct sandbox_limits *l);

/* A script that fails is KILN_E_CHILD, one that runs out of time
 * KILN_E_TIMEOUT and one killed by a SIGKILL kiln did not send
 * KILN_E_KILLED (both of which the host can cause), each naming the script. */
enum kiln_rc inputs_prepare(const struct inputs_request *req, struct input_sets *out,
                            struct kiln_err *err) KILN_NODISCARD;

void input_sets_free(struct input_sets *s);

#endif
