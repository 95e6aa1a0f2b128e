#include "perfcmp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct perf_rule PERF_RULE_DEFAULT = {0.02, 2.576, 8};

const char *perf_call_name(enum perf_call c)
{
    switch (c) {
    case PERF_SAME:
        return "SAME";
    case PERF_FAST:
        return "FAST";
    case PERF_SLOW:
        return "SLOW";
    case PERF_AMBIGUOUS:
        break;
    }
    return "AMBIGUOUS";
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void perfcmp_median_interval(const double *sorted, size_t n, double z, double *median, double *lo,
                             double *hi)
{
    *median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    /* Ranks (1-based) j = floor(n/2 - z sqrt(n)/2), k = ceil(1 + n/2 + z sqrt(n)/2):
     * the normal approximation of the binomial interval for the median. */
    double half = z * sqrt((double)n) / 2.0;
    double j = floor((double)n / 2.0 - half), k = ceil(1.0 + (double)n / 2.0 + half);
    if (j < 1)
        j = 1;
    if (k > (double)n)
        k = (double)n;
    *lo = sorted[(size_t)j - 1];
    *hi = sorted[(size_t)k - 1];
}

static enum kiln_rc sorted_copy(const double *x, size_t n, double scale, const char *side,
                                double **out, struct kiln_err *err)
{
    *out = malloc((n ? n : 1) * sizeof(double));
    if (!*out)
        return kiln_fail(err, KILN_E_NOMEM, "comparing timings: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || x[i] <= 0) {
            free(*out);
            *out = NULL;
            return kiln_fail(err, KILN_E_REJECTED,
                             "%s sample %zu is %g: timing samples must be finite and positive",
                             side, i, x[i]);
        }
        (*out)[i] = x[i] * scale;
    }
    qsort(*out, n, sizeof(double), cmp_double);
    return KILN_OK;
}

enum kiln_rc perfcmp_judge(const double *old, size_t n_old, const double *new_, size_t n_new,
                           double clock_scale, const struct perf_rule *rule,
                           struct perf_judgement *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!rule)
        rule = &PERF_RULE_DEFAULT;
    if (!(clock_scale > 0) || !isfinite(clock_scale))
        return kiln_fail(err, KILN_E_USAGE, "clock scale %g: must be a positive number",
                         clock_scale);
    out->call = PERF_AMBIGUOUS;
    out->n_old = n_old;
    out->n_new = n_new;
    out->clock_scale = clock_scale;
    if (n_old == 0 || n_new == 0) {
        snprintf(out->why, sizeof(out->why), "no samples on the %s side",
                 n_old == 0 ? "archived" : "new");
        return KILN_OK;
    }
    double *a = NULL, *b = NULL;
    enum kiln_rc rc = sorted_copy(old, n_old, 1.0, "archived", &a, err);
    if (rc == KILN_OK)
        rc = sorted_copy(new_, n_new, clock_scale, "new", &b, err);
    if (rc != KILN_OK) {
        free(a);
        return rc;
    }
    double alo, ahi, blo, bhi;
    perfcmp_median_interval(a, n_old, rule->z, &out->old_median, &alo, &ahi);
    perfcmp_median_interval(b, n_new, rule->z, &out->new_median, &blo, &bhi);
    free(a);
    free(b);
    out->ratio = out->new_median / out->old_median;
    out->lo = blo / ahi;
    out->hi = bhi / alo;
    double e = rule->min_effect;
    if (n_old < rule->min_samples || n_new < rule->min_samples)
        snprintf(out->why, sizeof(out->why),
                 "%zu and %zu samples: at least %zu on each side are needed to judge", n_old, n_new,
                 rule->min_samples);
    else if (out->lo > 1 + e)
        out->call = PERF_SLOW;
    else if (out->hi < 1 - e)
        out->call = PERF_FAST;
    else if (out->lo >= 1 - e && out->hi <= 1 + e)
        out->call = PERF_SAME;
    else
        snprintf(out->why, sizeof(out->why),
                 "the interval [%.3f, %.3f] of the ratio crosses the +-%.0f%% band: "
                 "more samples (--iterations) would decide",
                 out->lo, out->hi, 100 * e);
    if (out->call != PERF_AMBIGUOUS)
        snprintf(out->why, sizeof(out->why), "ratio %.3f, interval [%.3f, %.3f], band +-%.0f%%%s",
                 out->ratio, out->lo, out->hi, 100 * e,
                 clock_scale != 1 ? ", clock-normalised" : "");
    return KILN_OK;
}

enum perf_call perfcmp_speedup_call(double speedup, double sigma_old, double sigma_new,
                                    const struct stats_noise *noise, double *noise_pct)
{
    if (!noise)
        noise = &STATS_NOISE_DEFAULT;
    double need = noise->z * sqrt(sigma_old * sigma_old + sigma_new * sigma_new);
    if (need < log1p(noise->min_margin))
        need = log1p(noise->min_margin);
    if (noise_pct)
        *noise_pct = 100.0 * expm1(need);
    /* A side without an interval (stats_log_sigma's 1.0) says nothing. */
    if (!(speedup > 0) || !isfinite(speedup) || !(sigma_old < 1.0) || !(sigma_new < 1.0))
        return PERF_AMBIGUOUS;
    struct stats_score old = {.geomean_ms = speedup, .sigma = sigma_old, .ncases = 1},
                       new_ = {.geomean_ms = 1.0, .sigma = sigma_new, .ncases = 1};
    int c = stats_compare(&old, &new_, noise);
    return c > 0 ? PERF_FAST : c < 0 ? PERF_SLOW : PERF_SAME;
}
