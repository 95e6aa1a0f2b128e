/*
 * stats.c - timing statistics, noise and the physics floor.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const struct stats_noise STATS_NOISE_DEFAULT = {.z = 1.96, .min_margin = 0.005};

/* What base/gpupeak.c derives from an H200's own properties for an fp32
 * workload (132 SMs at 1980 MHz x 256 FP32 SIMT flop per SM per clock, the
 * guard at 2048 dense TF32; 6144-bit HBM3e at 3125 MHz x 2). kiln asks the
 * device (eval_device_ceilings); this is for tests and for the slack when
 * no ceilings are passed. */
const struct stats_ceilings STATS_CEILINGS_H200 = {
    .bytes_per_s = 4.8e12,
    .flop_per_s = 132 * 1.98e9 * 256,
    .unit = GPU_UNIT_FP32_SIMT,
    .guard_flop_per_s = 132 * 1.98e9 * 2048,
    .slack = 0.15,
    .reverify_speedup = 10.0,
};

/* The standard error of a median is about sqrt(pi/2) times the mean's. */
#define MEDIAN_SE_FACTOR 1.2533141373155001

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_percentile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 1 || q <= 0.0)
        return sorted[0];
    if (q >= 1.0)
        return sorted[n - 1];
    double p = q * (double)(n - 1);
    size_t lo = (size_t)p;
    double frac = p - (double)lo;
    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

enum kiln_rc stats_compute(const double *samples, size_t n, struct stats_summary *out,
                           struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (n == 0)
        return kiln_fail(err, KILN_E_REJECTED, "no timing samples");
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(samples[i]) || !(samples[i] > 0.0))
            return kiln_fail(err, KILN_E_REJECTED,
                             "timing sample %zu is %g; samples must be finite and > 0", i,
                             samples[i]);
        sum += samples[i];
    }
    double *sorted = malloc(n * sizeof(double));
    if (!sorted)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory sorting %zu samples", n);
    memcpy(sorted, samples, n * sizeof(double));
    qsort(sorted, n, sizeof(double), cmp_double);
    out->n = n;
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->median = stats_percentile_sorted(sorted, n, 0.5);
    out->p10 = stats_percentile_sorted(sorted, n, 0.1);
    out->p90 = stats_percentile_sorted(sorted, n, 0.9);
    free(sorted);
    out->mean = sum / (double)n;
    if (n > 1) {
        /* Two-pass variance: stable for samples that differ in the last digits. */
        double ss = 0.0;
        for (size_t i = 0; i < n; i++) {
            double d = samples[i] - out->mean;
            ss += d * d;
        }
        out->stddev = sqrt(ss / (double)(n - 1));
    }
    out->rse = out->stddev / sqrt((double)n) / out->mean;
    return KILN_OK;
}

bool stats_has_interval(const struct stats_summary *s)
{
    return s->n >= STATS_MIN_INTERVAL_SAMPLES;
}

double stats_log_sigma(const struct stats_summary *s)
{
    /* One or two samples say nothing reliable about noise: count them as
     * fully uncertain rather than exact, so a lucky sample cannot win. */
    if (!stats_has_interval(s))
        return 1.0;
    return MEDIAN_SE_FACTOR * s->rse;
}

void stats_score_add(struct stats_score *s, const struct stats_summary *c)
{
    double ls = stats_log_sigma(c);
    s->geomean_ms += log(c->median);
    s->sigma += ls * ls;
    s->ncases++;
}

void stats_score_finish(struct stats_score *s)
{
    if (s->ncases == 0) {
        s->geomean_ms = 0.0;
        s->sigma = 0.0;
        return;
    }
    double n = (double)s->ncases;
    s->geomean_ms = exp(s->geomean_ms / n);
    s->sigma = sqrt(s->sigma) / n;
}

int stats_compare(const struct stats_score *a, const struct stats_score *b,
                  const struct stats_noise *noise)
{
    if (!noise)
        noise = &STATS_NOISE_DEFAULT;
    if (!(a->geomean_ms > 0.0) || !(b->geomean_ms > 0.0))
        return 0;
    double diff = log(a->geomean_ms / b->geomean_ms);
    double need = noise->z * sqrt(a->sigma * a->sigma + b->sigma * b->sigma);
    double margin = log1p(noise->min_margin);
    if (need < margin)
        need = margin;
    if (diff > need)
        return 1;
    if (-diff > need)
        return -1;
    return 0;
}

static double floor_at(double bytes_per_s, double flop_per_s, double bytes, double flops)
{
    double t_bytes = bytes_per_s > 0.0 ? bytes / bytes_per_s : 0.0;
    double t_flops = flop_per_s > 0.0 ? flops / flop_per_s : 0.0;
    return 1000.0 * (t_bytes > t_flops ? t_bytes : t_flops);
}

double stats_floor_ms(const struct stats_ceilings *c, double bytes, double flops)
{
    return floor_at(c->bytes_per_s, c->flop_per_s, bytes, flops);
}

double stats_guard_ms(const struct stats_ceilings *c, double bytes, double flops)
{
    double rate = c->guard_flop_per_s > c->flop_per_s ? c->guard_flop_per_s : c->flop_per_s;
    return floor_at(c->bytes_per_s, rate, bytes, flops);
}

bool stats_below_floor(const struct stats_ceilings *c, double floor_ms, double median_ms)
{
    return floor_ms > 0.0 && median_ms < floor_ms * (1.0 - c->slack);
}

const char *stats_floor_unit_label(const struct stats_ceilings *c)
{
    return c->flop_per_s > 0.0 ? gpu_unit_label(c->unit) : NULL;
}
