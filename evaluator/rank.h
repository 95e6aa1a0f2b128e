/*
 * rank.h - orders a set of verdicts with noise-aware ties (VERDICT.md
 * section 7). The verdicts are the caller's, in submission order; the
 * result is a new array the caller frees with free().
 */
#ifndef KILN_RANK_H
#define KILN_RANK_H

#include <stddef.h>

#include "error.h"
#include "stats.h"
#include "verdict.h"

#define RANK_REASON_MAX 256

struct rank_entry {
    size_t index; /* into the verdicts array given to rank_verdicts */
    int place;    /* 1 = best; 0 = not ranked (failed or awaiting re-verification) */
    char reason[RANK_REASON_MAX];
};

/* Writes all `n` verdicts in rank order to a new array *out of n entries:
 * ranked passes first, then passes awaiting re-verification, then the rest
 * in submission order. `noise` NULL: STATS_NOISE_DEFAULT. */
enum kiln_rc rank_verdicts(const struct verdict *v, size_t n, const struct stats_noise *noise,
                           struct rank_entry **out, struct kiln_err *err) KILN_NODISCARD;

#endif
