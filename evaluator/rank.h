/*
 * rank.h - orders a set of verdicts with noise-aware ties (VERDICT.md
 * section 7). The verdicts are the caller's, in submission order; the
 * result is a new array the caller frees with free().
 */
#ifndef KILN_RANK_H
#define KILN_RANK_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "stats.h"
#include "verdict.h"

#define RANK_REASON_MAX 256

struct rank_entry {
    size_t index; /* into the verdicts array given to rank_verdicts */
    int place;    /* 1 = best; 0 = not ranked (failed, awaiting re-verification, not compared) */
    bool tie;     /* within the noise of the candidate ranked just above it */
    char reason[RANK_REASON_MAX];
};

/* Writes all `n` verdicts in rank order to a new array *out of n entries:
 * ranked passes first, then passes awaiting re-verification, then passes
 * not compared (verdict.not_compared: timed in another session), then the
 * rest in submission order. `noise` NULL: STATS_NOISE_DEFAULT. */
enum kiln_rc rank_verdicts(const struct verdict *v, size_t n, const struct stats_noise *noise,
                           struct rank_entry **out, struct kiln_err *err) KILN_NODISCARD;

/* Candidate `c` against the starting kernel `start` of its own timing
 * session: 1 when faster beyond noise, -1 slower beyond noise, 0 within it
 * (its speedup_ref on the start's scale, as rank_pick_best compares). 1
 * when `start` has no time (nothing to beat); 0 when `c` has none. */
int rank_vs_start(const struct verdict *c, const struct verdict *start,
                  const struct stats_noise *noise);

/* 1 when `b` is faster than `a` beyond noise, -1 slower, 0 a tie: by their
 * speedups over their own sessions' starting kernels when both have one
 * (comparable across the sessions of a resumed run), else by score. */
int rank_compare(const struct verdict *a, const struct verdict *b, const struct stats_noise *noise);

/* The run's result: the top-ranked candidate, but only when it is faster
 * than the starting kernel beyond noise. The starting kernel is a candidate
 * too: a best slower than it (or within its noise) is never reported as
 * the improvement. */
struct rank_pick {
    int best;        /* index into the verdicts; -1: none (start kept, or nothing passed) */
    bool start_kept; /* the starting kernel stays: no candidate beat it beyond noise */
    char why[RANK_REASON_MAX]; /* one line: why this is the result */
};

/* Picks from `top` (index of the candidate that passed every check
 * including the held-out one, -1: none) against `start` (the starting
 * kernel's verdict; NULL or without a score: `top` wins unchecked),
 * comparing on the same cases: a candidate's speedup_ref when it has one.
 * `noise` NULL: STATS_NOISE_DEFAULT. */
void rank_pick_best(const struct verdict *v, size_t n, int top, const struct verdict *start,
                    const struct stats_noise *noise, struct rank_pick *out);

/* True when candidate `i` measured a lower geomean than the result of
 * `pick` (the chosen candidate, or `start` when it was kept) and was passed
 * over; `buf` then gets one line saying why, e.g. "004 was 1.30x faster but
 * failed: held-out check ... failed: ...". */
bool rank_passed_over(const struct verdict *v, size_t n, size_t i, const struct rank_pick *pick,
                      const struct verdict *start, const struct stats_noise *noise, char *buf,
                      size_t cap);

#endif
