/*
 * tune_search.h - the embedded tuner's search: successive halving over the
 * valid configurations of a candidate's tunables.
 *
 *   1. Plan: every configuration is enumerated (the space is the product of
 *      the tunables' value sets) and those the caller's `valid` callback
 *      refuses (a `// kiln: require` broken, a launch over the device's
 *      limits) are pruned before anything is compiled.
 *   2. Rung 0: the defaults plus a sample drawn with the seed, each timed
 *      with a short run (fewer iterations).
 *   3. Rung r+1: the fastest 1/eta of rung r that passed, timed again; the
 *      last rung is timed in full. The best of the last rung is the result.
 *
 * When the valid space fits in the budget, rung 0 is all of it, timed in
 * full (one rung: nothing to halve).
 *
 * Proposals may be requested ahead of reports (kiln optimize --jobs) within
 * a rung; the first member of the next rung waits (KILN_E_LIMIT) until every
 * report of the rung before has arrived, so what is proposed depends on the
 * seed alone, never on --jobs or the host.
 *
 * Lifecycle: tune_search_new -> (tune_search_next -> evaluate ->
 * tune_search_report)* -> tune_search_free. Pure logic: it runs nothing.
 */
#ifndef KILN_TUNE_SEARCH_H
#define KILN_TUNE_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TUNE_SEARCH_MAX_DIMS  64
#define TUNE_SEARCH_MAX_SPACE (1u << 20) /* configurations enumerated at most */
#define TUNE_SEARCH_MAX_RUNGS 8

/* True when configuration `idx` (one value index per tunable) may run. */
typedef bool (*tune_valid_fn)(const size_t *idx, void *ctx);

struct tune_search_opts {
    size_t budget;  /* evaluations over all rungs (>= 1) */
    unsigned eta;   /* rung r+1 keeps ceil(n_r / eta) (>= 2) */
    uint64_t seed;  /* draws rung 0's sample */
    int short_iter; /* timing iterations of every rung but the last (>= 1) */
};

/* Sensible defaults: budget 40, eta 3, short runs of 20 iterations. */
#define TUNE_SEARCH_DEFAULTS                                                                       \
    {                                                                                              \
        .budget = 40, .eta = 3, .seed = 1, .short_iter = 20                                        \
    }

struct tune_search;

/* Plans the search over `ndims` tunables with n_values[d] values each;
 * default_at[d] is the declared default (always in rung 0 when valid).
 * KILN_E_LIMIT when the space exceeds TUNE_SEARCH_MAX_SPACE, KILN_E_REJECTED
 * when no configuration is valid. */
enum kiln_rc tune_search_new(const size_t *n_values, const size_t *default_at, size_t ndims,
                             tune_valid_fn valid, void *ctx, const struct tune_search_opts *o,
                             struct tune_search **out, struct kiln_err *err) KILN_NODISCARD;

/* Sizes of the plan: the whole space, the valid part, and the evaluations
 * the rungs will take (<= budget). */
size_t tune_search_space(const struct tune_search *s);
size_t tune_search_valid(const struct tune_search *s);
size_t tune_search_planned(const struct tune_search *s);
size_t tune_search_rungs(const struct tune_search *s);

/* The next configuration: idx[ndims], its rung, and the timing iterations
 * to use (0: the session's full count). KILN_E_NOTFOUND when the plan is
 * done; KILN_E_LIMIT when the next rung needs reports still outstanding
 * (report, then ask again). */
enum kiln_rc tune_search_next(struct tune_search *s, size_t *idx, int *rung, int *iterations,
                              struct kiln_err *err) KILN_NODISCARD;

/* Reports the oldest unreported proposal: passed, and its time (ms). */
void tune_search_report(struct tune_search *s, bool passed, double ms);

/* The fastest configuration of the highest rung with a passing report into
 * idx[ndims] and its time into *ms; false before any passed. */
bool tune_search_best(const struct tune_search *s, size_t *idx, double *ms);

void tune_search_free(struct tune_search *s);

#endif
