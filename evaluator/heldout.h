/*
 * heldout.h - the held-out cases of one verification: drawn at verification
 * time from a secret seed within the ranges the workload declares
 * (workloads/README.md, "held_out"), so their sizes are unknown to anyone
 * before the check; and the timing rule that compares a candidate's
 * held-out times with its visible ones (VERDICT.md section 9).
 *
 * A draw holds, in order: the workload's fixed `include` cases; `draw`
 * cases anywhere in the ranges (correctness, one input set each); and one
 * case near each performance case of the backend (at most
 * HELDOUT_MAX_TIMED), every size scaled by a random factor in
 * [HELDOUT_NEAR_MIN, HELDOUT_NEAR_MAX], timed like a performance case.
 * Every drawn case meets the `where` constraints, evaluates every
 * expression of the workload, differs in its sizes from every visible and
 * included case, and stays within the byte budget (held_out.max_bytes, else
 * the largest visible case of the backend) and the flop budget (the most
 * flops of a visible case of the backend), so the host and GPU that hold
 * the visible cases hold these too.
 *
 * Pure functions: the same workload, backend and seed give the same draw.
 */
#ifndef KILN_HELDOUT_H
#define KILN_HELDOUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "verdict.h"
#include "workload.h"

#define HELDOUT_MAX_TIMED 3
#define HELDOUT_MAX_CASES (WL_MAX_HELD_OUT + WL_MAX_DRAW + HELDOUT_MAX_TIMED)
#define HELDOUT_NEAR_MIN  0.8
#define HELDOUT_NEAR_MAX  1.25
#define HELDOUT_TRIES     4000 /* random candidates per drawn case before giving up */
/* A timed held-out case slower than its visible neighbour scaled by work
 * by more than this is `inconsistent_timing` (VERDICT.md section 9). */
#define HELDOUT_TIMING_FACTOR 4.0

struct heldout_set {
    uint64_t seed; /* the secret seed the draw came from */
    struct wl_case cases[HELDOUT_MAX_CASES];
    int near[HELDOUT_MAX_CASES]; /* index in workload.cases of a timed case's neighbour; -1 */
    size_t n;
    size_t nincluded; /* cases[0 .. nincluded) are the workload's fixed ones */
};

/* Draws the held-out cases of `backend` (one enum kiln_backend bit) from
 * `seed` into `out`. A workload without ranges (held_out a plain list)
 * gives its fixed cases only. An error names what could not be drawn. */
enum kiln_rc heldout_draw(const struct workload *w, unsigned backend, uint64_t seed,
                          struct heldout_set *out, struct kiln_err *err) KILN_NODISCARD;

/* The draw as recorded: {"seed": N, "cases": [{"name", "sizes": {...},
 * "timed": bool, "near": NAME|null, "fixed": bool}]}. NULL on no memory. */
json_t *heldout_json(const struct workload *w, const struct heldout_set *h);

/* The timing rule: true when the fastest run of a timed held-out case of
 * `held` took more than HELDOUT_TIMING_FACTOR times what the candidate's
 * median on its visible neighbour in `visible` predicts, scaled by the
 * work of the two cases (the physics floor of each under `ceil`, NULL: the
 * H200's). `why` gets the worst case and its numbers. A case is skipped
 * when either side has a set timed with fewer than
 * STATS_MIN_INTERVAL_SAMPLES samples, or none timed. */
bool heldout_timing_inconsistent(const struct workload *w, const struct heldout_set *h,
                                 const struct verdict *visible, const struct verdict *held,
                                 const struct stats_ceilings *ceil, char *why, size_t cap);

#endif
