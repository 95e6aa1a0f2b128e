/*
 * rank.c - ordering verdicts. A later candidate only moves ahead of an
 * earlier one when it is faster beyond the measured noise, so noise alone
 * never reorders the board.
 */
#include "rank.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct stats_score score_of(const struct verdict *v)
{
    return (struct stats_score){.geomean_ms = v->score_ms, .sigma = v->sigma, .ncases = 1};
}

static bool may_rank(const struct verdict *v)
{
    return v->status == VERDICT_PASS && (!v->needs_reverify || v->reverified);
}

/* Why the candidate at ranked position p (0-based) sits below p-1. */
static void explain(const struct verdict *v, const size_t *order, size_t p,
                    const struct stats_noise *noise, char *buf, size_t cap)
{
    const struct verdict *cur = &v[order[p]];
    if (p == 0) {
        snprintf(buf, cap, "fastest: geomean %.6g ms (+-%.2f%%)", cur->score_ms,
                 100.0 * noise->z * cur->sigma);
        return;
    }
    const struct verdict *prev = &v[order[p - 1]];
    struct stats_score a = score_of(prev), b = score_of(cur);
    int c = stats_compare(&a, &b, noise);
    double pct = prev->score_ms > 0.0 ? 100.0 * (cur->score_ms / prev->score_ms - 1.0) : 0.0;
    if (c < 0)
        snprintf(buf, cap, "slower than %s beyond noise: %.6g ms vs %.6g ms (%+.2f%%)",
                 prev->candidate, cur->score_ms, prev->score_ms, pct);
    else if (c == 0)
        snprintf(buf, cap,
                 "within noise of %s: %.6g ms vs %.6g ms (%+.2f%%); tie, the earlier "
                 "candidate keeps its place",
                 prev->candidate, cur->score_ms, prev->score_ms, pct);
    else
        snprintf(buf, cap,
                 "faster than %s (%.6g ms vs %.6g ms) but did not beat a candidate ranked "
                 "above it beyond noise",
                 prev->candidate, cur->score_ms, prev->score_ms);
}

enum kiln_rc rank_verdicts(const struct verdict *v, size_t n, const struct stats_noise *noise,
                           struct rank_entry **out, struct kiln_err *err)
{
    *out = NULL;
    if (!noise)
        noise = &STATS_NOISE_DEFAULT;
    if (n == 0)
        return KILN_OK;
    struct rank_entry *res = calloc(n, sizeof(*res));
    size_t *order = calloc(n, sizeof(*order));
    if (!res || !order) {
        free(res);
        free(order);
        return kiln_fail(err, KILN_E_NOMEM, "rank: out of memory for %zu verdicts", n);
    }
    /* Insert in submission order, each directly ahead of the highest-ranked
     * candidate it beats beyond noise; otherwise at the end. */
    size_t nranked = 0;
    for (size_t i = 0; i < n; i++) {
        if (!may_rank(&v[i]))
            continue;
        struct stats_score b = score_of(&v[i]);
        size_t at = nranked;
        for (size_t p = 0; p < nranked; p++) {
            struct stats_score a = score_of(&v[order[p]]);
            if (stats_compare(&a, &b, noise) > 0) {
                at = p;
                break;
            }
        }
        memmove(&order[at + 1], &order[at], (nranked - at) * sizeof(*order));
        order[at] = i;
        nranked++;
    }
    size_t k = 0;
    for (size_t p = 0; p < nranked; p++, k++) {
        res[k].index = order[p];
        res[k].place = (int)p + 1;
        explain(v, order, p, noise, res[k].reason, sizeof(res[k].reason));
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].status == VERDICT_PASS && !may_rank(&v[i])) {
            res[k].index = i;
            snprintf(res[k].reason, sizeof(res[k].reason),
                     "needs re-verification on fresh inputs: %.1fx faster than the reference",
                     v[i].speedup_ref);
            k++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].status != VERDICT_PASS) {
            const char *st = verdict_status_name(v[i].status);
            res[k].index = i;
            snprintf(res[k].reason, sizeof(res[k].reason), "%s: %s", st ? st : "invalid status",
                     v[i].detail);
            k++;
        }
    }
    free(order);
    *out = res;
    return KILN_OK;
}
