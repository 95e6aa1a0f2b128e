/*
 * stats.h - timing statistics, noise-aware comparison of scores and the
 * physics floor (VERDICT.md sections 4 and 5). Pure functions over numbers
 * the caller owns; nothing here allocates except stats_compute's scratch.
 */
#ifndef KILN_STATS_H
#define KILN_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "gpupeak.h"

/* Summary of one case's samples, all in ms except n and rse. */
struct stats_summary {
    size_t n;
    double median, mean, min, max, p10, p90;
    double stddev; /* sample standard deviation (n-1); 0 when n == 1 */
    double rse;    /* relative standard error of the mean: stddev/sqrt(n)/mean */
};

/* Computes the summary of `n` >= 1 samples (each finite and > 0, as
 * timings_parse guarantees; anything else is KILN_E_REJECTED). */
enum kiln_rc stats_compute(const double *samples, size_t n, struct stats_summary *out,
                           struct kiln_err *err) KILN_NODISCARD;

/* Percentile q in [0,1] of `sorted` (ascending, n >= 1), numpy's linear
 * interpolation. */
double stats_percentile_sorted(const double *sorted, size_t n, double q);

/* Fewer samples than this give no confidence interval: one sample has no
 * spread at all, and two give a standard deviation on one degree of freedom
 * whose 95% interval is 6.5 times the normal one (t = 12.7, not 1.96). */
#define STATS_MIN_INTERVAL_SAMPLES 3

/* True when `s` has enough samples for an interval. */
bool stats_has_interval(const struct stats_summary *s);

/* Uncertainty of ln(median) for one case: 1.2533 * rse; 1.0 (fully
 * uncertain, so it cannot win a comparison on luck) without an interval. */
double stats_log_sigma(const struct stats_summary *s);

/* A score: the geometric mean of per-case medians and the uncertainty of
 * its logarithm. */
struct stats_score {
    double geomean_ms; /* 0 when no case was given */
    double sigma;      /* standard error of ln(geomean_ms) */
    size_t ncases;
};

/* Adds one performance case to a score being built from a zeroed struct;
 * call stats_score_finish() once after the last case. Internally sums logs
 * in geomean_ms and variances in sigma until finished. */
void stats_score_add(struct stats_score *s, const struct stats_summary *c);
void stats_score_finish(struct stats_score *s);

/* Noise thresholds for stats_compare(). */
struct stats_noise {
    double z;          /* confidence multiplier, default 1.96 */
    double min_margin; /* smallest relative difference that counts, default 0.005 */
};

extern const struct stats_noise STATS_NOISE_DEFAULT;

/* 1 when `b` is faster than `a` beyond noise, -1 when `a` is faster than
 * `b` beyond noise, 0 when they tie. */
int stats_compare(const struct stats_score *a, const struct stats_score *b,
                  const struct stats_noise *noise);

/* The GPU's ceilings for one workload, passed by the caller: theoretical
 * peaks from the device's own properties (base/gpupeak.h), so no legitimate
 * kernel beats them, resolved for the units the workload's flops may use
 * (workload.json "math", gpupeak_for_units). bytes_per_s or flop_per_s 0:
 * no floor from that side. */
struct stats_ceilings {
    double bytes_per_s;      /* bytes read plus written per second */
    double flop_per_s;       /* the roofline: the peak of `unit` */
    enum gpu_unit unit;      /* the unit flop_per_s is the peak of */
    double guard_flop_per_s; /* impossible timing: the fastest path to a result at the
                                workload's precision (>= flop_per_s; 0: flop_per_s) */
    double slack;            /* a time below guard floor*(1-slack) is impossible */
    double reverify_speedup; /* faster than this vs the reference: re-verify */
    /* The device's measured copy bandwidth (bytes read plus written per
     * second; 0 unknown): reported beside the floor, never part of it. */
    double copy_bytes_per_s;
};

/* An fp32 workload (the default math) on an H200: FP32 SIMT roofline, the
 * TF32 tensor rate as the guard. For tests, and for the slack when no
 * ceilings are passed. */
extern const struct stats_ceilings STATS_CEILINGS_H200;

/* The roofline's fastest time for `bytes` and `flops`, in ms (0 when both
 * are 0: no floor): what "% of the floor" (sol) is measured against. */
double stats_floor_ms(const struct stats_ceilings *c, double bytes, double flops);

/* The same with the guard's flop rate: below this (less the slack) no
 * legitimate kernel can run, whatever units it uses to reach the
 * workload's precision (a 3xTF32 SGEMM beats the FP32 SIMT roofline). */
double stats_guard_ms(const struct stats_ceilings *c, double bytes, double flops);

/* True when `median_ms` beats the floor `floor_ms` beyond the slack. */
bool stats_below_floor(const struct stats_ceilings *c, double floor_ms, double median_ms);

/* What a case's flop side was measured against, for people: "BF16 tensor"
 * (gpu_unit_label), or NULL when the ceilings have no flop rate. */
const char *stats_floor_unit_label(const struct stats_ceilings *c);

#endif
