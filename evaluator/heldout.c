/* heldout.c - drawing held-out cases and the held-out timing rule. */
#include "heldout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

/* splitmix64: small, stable across hosts and versions, so a recorded seed
 * reproduces its draw. Not the secret: the seed is, from getrandom. */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
    return (double)(next_u64(state) >> 11) * 0x1.0p-53;
}

/* Log-uniform in [lo, hi]: small and large sizes are equally likely per
 * decade, so edge sizes (1, primes, odd tails) come up as often as big ones. */
static int64_t log_uniform(uint64_t *state, int64_t lo, int64_t hi)
{
    double a = log((double)lo), b = log((double)hi + 1.0);
    double x = floor(exp(a + uniform01(state) * (b - a)));
    int64_t v = (int64_t)x;
    return v < lo ? lo : v > hi ? hi : v;
}

static bool same_sizes(const struct workload *w, const struct wl_case *a, const struct wl_case *b)
{
    return memcmp(a->sizes, b->sizes, w->nsizes * sizeof(a->sizes[0])) == 0;
}

struct budget {
    uint64_t bytes;
    int64_t flops;
};

/* The largest visible case of the backend bounds what a draw may need. */
static struct budget budget_of(const struct workload *w, unsigned backend)
{
    struct budget b = {0, 0};
    for (size_t i = 0; i < w->ncases; i++) {
        const struct wl_case *c = &w->cases[i];
        if (!(c->backends & backend))
            continue;
        b.bytes = c->bytes > b.bytes ? c->bytes : b.bytes;
        b.flops = c->cost_flops > b.flops ? c->cost_flops : b.flops;
    }
    if (w->held_draw.max_bytes)
        b.bytes = w->held_draw.max_bytes;
    if (b.bytes > WL_CASE_BYTES)
        b.bytes = WL_CASE_BYTES;
    return b;
}

/* Whether `c` (sizes set) is a valid, unseen case; fills its bytes and costs. */
static bool acceptable(const struct workload *w, const struct heldout_set *h, struct wl_case *c,
                       const struct budget *bud)
{
    for (size_t k = 0; k < w->nsizes; k++) {
        int64_t lo, hi;
        if (!workload_draw_bounds(w, c, k, &lo, &hi) || c->sizes[k] < lo || c->sizes[k] > hi)
            return false;
    }
    for (size_t i = 0; i < w->ncases; i++)
        if (same_sizes(w, &w->cases[i], c))
            return false;
    for (size_t i = 0; i < h->n; i++)
        if (same_sizes(w, &h->cases[i], c))
            return false;
    if (!workload_where_holds(w, c))
        return false;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (workload_case_cost(w, c, &c->bytes, &c->cost_bytes, &c->cost_flops, &e) != KILN_OK ||
        c->bytes > bud->bytes || c->cost_flops > bud->flops)
        return false;
    for (size_t i = 0; i < w->nargs; i++) {
        int64_t v;
        if (w->args[i].kind == WL_ARG_SCALAR && w->args[i].expr &&
            workload_case_int_scalar(w, c, (int)i, &v, &e) != KILN_OK)
            return false;
    }
    struct expr_var vars[WL_MAX_SIZES];
    workload_case_vars(w, c, vars);
    for (int k = 0; k < 3 && w->baseline_expr[k]; k++) {
        int64_t v;
        if (expr_eval(w->baseline_expr[k], vars, w->nsizes, &v, &e) != KILN_OK || v < 1 ||
            (workload_baseline_is_gemm(w->baseline) && v > INT32_MAX))
            return false;
    }
    return true;
}

static void name_case(struct wl_case *c, const char *what, size_t i)
{
    snprintf(c->name, sizeof(c->name), WL_DRAWN_PREFIX "%s%zu", what, i + 1);
}

/* One case anywhere in the ranges. */
static enum kiln_rc draw_anywhere(const struct workload *w, unsigned backend, uint64_t *state,
                                  const struct budget *bud, size_t i, struct heldout_set *h,
                                  struct kiln_err *err)
{
    struct wl_case *c = &h->cases[h->n];
    for (int t = 0; t < HELDOUT_TRIES; t++) {
        memset(c, 0, sizeof(*c));
        bool ok = true;
        for (size_t k = 0; k < w->nsizes && ok; k++) {
            int64_t lo, hi;
            ok = workload_draw_bounds(w, c, k, &lo, &hi);
            if (ok)
                c->sizes[k] = log_uniform(state, lo, hi);
        }
        if (!ok || !acceptable(w, h, c, bud))
            continue;
        name_case(c, "draw", i);
        c->kind = WL_CASE_HELD_OUT;
        c->backends = backend;
        h->near[h->n++] = -1;
        return KILN_OK;
    }
    return kiln_fail(err, KILN_E_REJECTED,
                     "no valid %s case in %d random draws within held_out.sizes, held_out.where "
                     "and the budget of %llu bytes and %lld flops (the largest visible case of "
                     "the backend, or held_out.max_bytes): widen the ranges or relax the "
                     "constraints",
                     kiln_backend_name((enum kiln_backend)backend), HELDOUT_TRIES,
                     (unsigned long long)bud->bytes, (long long)bud->flops);
}

/* One case near visible performance case `p`: every size scaled by a
 * random factor, so the work is comparable and the timing rule applies. */
static bool draw_near(const struct workload *w, unsigned backend, uint64_t *state,
                      const struct budget *bud, size_t p, size_t i, struct heldout_set *h)
{
    struct wl_case *c = &h->cases[h->n];
    const struct wl_case *v = &w->cases[p];
    double a = log(HELDOUT_NEAR_MIN), b = log(HELDOUT_NEAR_MAX);
    for (int t = 0; t < HELDOUT_TRIES; t++) {
        memset(c, 0, sizeof(*c));
        bool ok = true;
        for (size_t k = 0; k < w->nsizes && ok; k++) {
            double x = nearbyint((double)v->sizes[k] * exp(a + uniform01(state) * (b - a)));
            int64_t lo, hi, y = x < 1.0 ? 1 : x > (double)WL_SIZE_MAX ? WL_SIZE_MAX : (int64_t)x;
            /* Into the range the earlier sizes leave (conv2d's p near h). */
            ok = workload_draw_bounds(w, c, k, &lo, &hi);
            c->sizes[k] = y < lo ? lo : y > hi ? hi : y;
        }
        if (!ok || !acceptable(w, h, c, bud))
            continue;
        name_case(c, "near", i);
        c->kind = WL_CASE_PERFORMANCE;
        c->backends = backend;
        h->near[h->n++] = (int)p;
        return true;
    }
    return false;
}

enum kiln_rc heldout_draw(const struct workload *w, unsigned backend, uint64_t seed,
                          struct heldout_set *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    out->seed = seed;
    for (size_t i = 0; i < w->nheld_out; i++) {
        if (!(w->held_out[i].backends & backend))
            continue;
        out->cases[out->n] = w->held_out[i];
        out->near[out->n++] = -1;
    }
    out->nincluded = out->n;
    if (w->held_draw.draw == 0)
        return KILN_OK;
    uint64_t state = seed;
    struct budget bud = budget_of(w, backend);
    for (size_t i = 0; i < (size_t)w->held_draw.draw; i++) {
        enum kiln_rc rc = draw_anywhere(w, backend, &state, &bud, i, out, err);
        if (rc != KILN_OK)
            return rc;
    }
    /* Neighbours of the performance cases, in a random order when there
     * are more than HELDOUT_MAX_TIMED of them. */
    size_t perf[WL_MAX_CASES], np = 0, timed = 0;
    for (size_t i = 0; i < w->ncases; i++)
        if (w->cases[i].kind == WL_CASE_PERFORMANCE && (w->cases[i].backends & backend))
            perf[np++] = i;
    for (size_t i = np; i > 1; i--) {
        size_t j = (size_t)(next_u64(&state) % i), t = perf[i - 1];
        perf[i - 1] = perf[j];
        perf[j] = t;
    }
    for (size_t i = 0; i < np && timed < HELDOUT_MAX_TIMED; i++)
        timed += draw_near(w, backend, &state, &bud, perf[i], timed, out);
    if (np > 0 && timed == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "no valid %s case near any performance case (sizes scaled by %.2f .. "
                         "%.2f) within held_out.sizes, held_out.where and the budget: widen "
                         "the ranges to cover the performance cases",
                         kiln_backend_name((enum kiln_backend)backend), HELDOUT_NEAR_MIN,
                         HELDOUT_NEAR_MAX);
    return KILN_OK;
}

json_t *heldout_json(const struct workload *w, const struct heldout_set *h)
{
    json_t *cases = json_array();
    json_t *doc =
        cases ? json_pack("{s:I, s:o}", "seed", (json_int_t)h->seed, "cases", cases) : NULL;
    if (!doc) {
        json_decref(cases);
        return NULL;
    }
    for (size_t i = 0; i < h->n; i++) {
        const struct wl_case *c = &h->cases[i];
        json_t *sizes = json_object();
        for (size_t k = 0; sizes && k < w->nsizes; k++)
            json_object_set_new(sizes, w->size_names[k], json_integer(c->sizes[k]));
        json_t *e =
            sizes ? json_pack("{s:s, s:o, s:b, s:b}", "name", c->name, "sizes", sizes, "timed",
                              c->kind == WL_CASE_PERFORMANCE, "fixed", i < h->nincluded)
                  : NULL;
        if (!e ||
            json_object_set_new(e, "near",
                                h->near[i] >= 0 ? json_string(w->cases[h->near[i]].name)
                                                : json_null()) != 0 ||
            json_array_append_new(cases, e) != 0) {
            json_decref(doc);
            return NULL;
        }
    }
    return doc;
}

/* Case `name`'s time over its timed sets: the median of their medians, or
 * (fastest) the least sample of all. 0 when a set of it was timed with too
 * few samples for an interval (the rule then says nothing) or none was. */
static double case_ms(const struct verdict *v, const char *name, bool fastest)
{
    double m[VERDICT_MAX_CASES], least = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < v->ncases && n < VERDICT_MAX_CASES; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (!c->timed || strcmp(c->name, name) != 0)
            continue;
        if (!stats_has_interval(&c->timing))
            return 0.0;
        m[n++] = c->timing.median;
        least = least > 0.0 && least < c->timing.min ? least : c->timing.min;
    }
    if (n == 0 || fastest)
        return least;
    for (size_t i = 1; i < n; i++) /* insertion sort: a few sets */
        for (size_t j = i; j > 0 && m[j - 1] > m[j]; j--) {
            double t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    return stats_percentile_sorted(m, n, 0.5);
}

bool heldout_timing_inconsistent(const struct workload *w, const struct heldout_set *h,
                                 const struct verdict *visible, const struct verdict *held,
                                 const struct stats_ceilings *ceil, char *why, size_t cap)
{
    if (!ceil)
        ceil = &STATS_CEILINGS_H200;
    double worst = 0.0;
    for (size_t i = 0; i < h->n; i++) {
        if (h->near[i] < 0)
            continue;
        const struct wl_case *c = &h->cases[i], *p = &w->cases[h->near[i]];
        /* The held-out case's fastest run against the visible median: noise
         * only ever adds time, so a slow outlier cannot flag an honest
         * kernel, while one fast only on the visible inputs is slow on
         * every held-out run. */
        double th = case_ms(held, c->name, true), tp = case_ms(visible, p->name, false);
        /* Work by the physics floor: only the ratio of the two counts. */
        double wh = stats_floor_ms(ceil, (double)c->cost_bytes, (double)c->cost_flops);
        double wp = stats_floor_ms(ceil, (double)p->cost_bytes, (double)p->cost_flops);
        if (!(th > 0) || !(tp > 0) || !(wh > 0) || !(wp > 0))
            continue;
        double predicted = tp * wh / wp, ratio = th / predicted;
        if (ratio > HELDOUT_TIMING_FACTOR && ratio > worst) {
            worst = ratio;
            snprintf(why, cap,
                     "held-out case %s took at least %.4g ms, %.1fx what the candidate's %.4g "
                     "ms on "
                     "visible case %s predicts for its work (%.4g ms; the limit is %.0fx): "
                     "fast only on the visible inputs?",
                     c->name, th, ratio, tp, p->name, predicted, HELDOUT_TIMING_FACTOR);
        }
    }
    return worst > 0.0;
}
