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
    return v->status == VERDICT_PASS && !v->not_compared && (!v->needs_reverify || v->reverified);
}

/* Why the candidate at ranked position p (0-based) sits below p-1;
 * returns stats_compare of the two (0: a tie), 1 for the first. */
static int explain(const struct verdict *v, const size_t *order, size_t p,
                   const struct stats_noise *noise, char *buf, size_t cap)
{
    const struct verdict *cur = &v[order[p]];
    if (p == 0) {
        snprintf(buf, cap, "fastest: geomean %.6g ms (+-%.2f%%)", cur->score_ms,
                 100.0 * noise->z * cur->sigma);
        return 1;
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
    return c;
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
        res[k].tie = explain(v, order, p, noise, res[k].reason, sizeof(res[k].reason)) == 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].status == VERDICT_PASS && !v[i].not_compared && !may_rank(&v[i])) {
            res[k].index = i;
            snprintf(res[k].reason, sizeof(res[k].reason),
                     "needs re-verification on fresh inputs: %.1fx faster than the reference",
                     v[i].speedup_ref);
            k++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i].status == VERDICT_PASS && v[i].not_compared) {
            res[k].index = i;
            snprintf(res[k].reason, sizeof(res[k].reason),
                     "not compared: timed in an earlier session (before an interruption) and "
                     "not timed again");
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

/* The relative difference two scores must exceed to count (stats_compare's
 * threshold), in percent. */
static double noise_pct(const struct verdict *a, const struct verdict *b,
                        const struct stats_noise *noise)
{
    double need = noise->z * sqrt(a->sigma * a->sigma + b->sigma * b->sigma);
    if (need < log1p(noise->min_margin))
        need = log1p(noise->min_margin);
    return 100.0 * expm1(need);
}

static bool has_score(const struct verdict *v)
{
    return v && v->score_ms > 0.0;
}

/* Candidate `c` against the starting kernel on the same cases: its
 * speedup_ref (per-case reference medians, what the final table shows as
 * "vs start") as a score on the start's scale. Geomeans over different
 * timed sets are not comparable; without speedup_ref, its own score. */
static struct verdict vs_start(const struct verdict *c, const struct verdict *start)
{
    struct verdict x = *c;
    if (c->speedup_ref > 0.0 && has_score(start))
        x.score_ms = start->score_ms / c->speedup_ref;
    return x;
}

int rank_vs_start(const struct verdict *c, const struct verdict *start,
                  const struct stats_noise *noise)
{
    if (!has_score(start))
        return 1;
    const struct verdict x = vs_start(c, start);
    if (!has_score(&x))
        return 0;
    struct stats_score s = score_of(start), b = score_of(&x);
    return stats_compare(&s, &b, noise);
}

int rank_compare(const struct verdict *a, const struct verdict *b, const struct stats_noise *noise)
{
    struct stats_score sa = score_of(a), sb = score_of(b);
    if (a->speedup_ref > 0.0 && b->speedup_ref > 0.0) {
        sa.geomean_ms = 1.0 / a->speedup_ref; /* on a start of 1: a smaller figure is faster */
        sb.geomean_ms = 1.0 / b->speedup_ref;
    }
    return stats_compare(&sa, &sb, noise);
}

void rank_pick_best(const struct verdict *v, size_t n, int top, const struct verdict *start,
                    const struct stats_noise *noise, struct rank_pick *out)
{
    if (!noise)
        noise = &STATS_NOISE_DEFAULT;
    memset(out, 0, sizeof(*out));
    out->best = -1;
    if (top < 0 || (size_t)top >= n) {
        snprintf(out->why, sizeof(out->why), "no candidate passed every check");
        return;
    }
    const struct verdict cs = vs_start(&v[top], start), *c = &cs;
    if (!has_score(start) || !has_score(c)) {
        out->best = top;
        snprintf(out->why, sizeof(out->why),
                 "%s: the best ranked candidate (no starting kernel's time to compare with)",
                 c->candidate);
        return;
    }
    struct stats_score s = score_of(start), b = score_of(c);
    int cmp = stats_compare(&s, &b, noise);
    double ratio = start->score_ms / c->score_ms, pct = noise_pct(start, c, noise);
    if (cmp > 0) {
        out->best = top;
        snprintf(out->why, sizeof(out->why),
                 "%s: %.2fx the starting kernel, beyond measured noise (+-%.1f%%)", c->candidate,
                 ratio, pct);
        return;
    }
    out->start_kept = true;
    if (cmp == 0)
        snprintf(out->why, sizeof(out->why),
                 "starting kernel kept: no candidate beat it beyond measured noise (+-%.1f%%); "
                 "the top-ranked candidate (within noise, the earlier keeps its place), %s, "
                 "was %.2fx",
                 pct, c->candidate, ratio);
    else
        snprintf(out->why, sizeof(out->why),
                 "starting kernel kept: every candidate was slower; the top-ranked, %s, was %.2fx "
                 "(beyond measured noise, +-%.1f%%)",
                 c->candidate, ratio, pct);
}

bool rank_passed_over(const struct verdict *v, size_t n, size_t i, const struct rank_pick *pick,
                      const struct verdict *start, const struct stats_noise *noise, char *buf,
                      size_t cap)
{
    if (!noise)
        noise = &STATS_NOISE_DEFAULT;
    const struct verdict *chosen = pick->best >= 0 && (size_t)pick->best < n ? &v[pick->best]
                                   : pick->start_kept                        ? start
                                                                             : NULL;
    /* A figure from another timing session is no evidence either way. */
    if (i >= n || !chosen || (pick->best >= 0 && (size_t)pick->best == i) || v[i].not_compared)
        return false;
    const struct verdict cs = chosen == start ? vs_start(&v[i], start) : v[i], *c = &cs;
    if (!has_score(c) || !has_score(chosen) || c->score_ms >= chosen->score_ms)
        return false;
    char head[160];
    if (chosen == start)
        snprintf(head, sizeof(head), "%s was %.2fx faster than the starting kernel", c->candidate,
                 chosen->score_ms / c->score_ms);
    else
        snprintf(head, sizeof(head), "%s was %.2fx faster than %s", c->candidate,
                 chosen->score_ms / c->score_ms, chosen->candidate);
    if (c->status != VERDICT_PASS) {
        const char *st = verdict_status_name(c->status);
        snprintf(buf, cap, "%s but failed (%s): %s", head, st ? st : "invalid status", c->detail);
    } else if (!may_rank(c)) {
        snprintf(buf, cap,
                 "%s but was flagged for re-verification (%.1fx the reference) and was not "
                 "re-verified on the held-out cases, so it may not rank",
                 head, c->speedup_ref);
    } else {
        struct stats_score a = score_of(chosen), b = score_of(c);
        if (stats_compare(&a, &b, noise) == 0)
            snprintf(buf, cap, "%s but within measured noise (+-%.1f%%)%s", head,
                     noise_pct(chosen, c, noise),
                     chosen == start ? ": the starting kernel is kept"
                                     : "; a tie keeps the earlier candidate");
        else
            snprintf(buf, cap,
                     "%s but was not re-verified on the held-out cases: a candidate ranked "
                     "before it passed them first",
                     head);
    }
    return true;
}
