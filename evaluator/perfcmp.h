/*
 * perfcmp.h - is one set of timing samples faster, slower or the same as
 * another? The judgement `kiln replay` and `kiln compare` make per case.
 *
 * The rule (after nvbench's robust compare, never a bare threshold on
 * means): each side's median with a distribution-free order-statistic
 * confidence interval (ranks from the binomial, so outliers and skew do not
 * move it); the interval of the ratio new/old is [new_lo/old_hi,
 * new_hi/old_lo], conservative because both medians must be inside their
 * intervals. With e the minimum effect (2% by default):
 *   SLOW       the whole interval lies above 1 + e
 *   FAST       the whole interval lies below 1 - e
 *   SAME       the whole interval lies within [1 - e, 1 + e]
 *   AMBIGUOUS  anything else, or too few samples to say
 * Clock normalisation: when both sides recorded their SM clock, the new
 * samples are scaled by new_clock/old_clock first (a kernel run at a lower
 * clock takes longer in proportion, to first order), and the judgement
 * says so. Pure functions; perfcmp_judge allocates two sorted copies.
 */
#ifndef KILN_PERFCMP_H
#define KILN_PERFCMP_H

#include <stddef.h>

#include "error.h"
#include "stats.h"

enum perf_call { PERF_SAME, PERF_FAST, PERF_SLOW, PERF_AMBIGUOUS };

struct perf_rule {
    double min_effect;  /* relative; 0.02 = 2% */
    double z;           /* per-median confidence multiplier; 2.576 = 99% */
    size_t min_samples; /* fewer on either side: AMBIGUOUS */
};

extern const struct perf_rule PERF_RULE_DEFAULT; /* 2%, z 2.576, 8 samples */

struct perf_judgement {
    enum perf_call call;
    double old_median, new_median; /* ms; new_median clock-normalised */
    double ratio;                  /* new_median / old_median */
    double lo, hi;                 /* interval of the ratio */
    size_t n_old, n_new;
    double clock_scale; /* factor applied to the new samples (1: none) */
    char why[160];      /* one line: why this call */
};

/* Judges `new` against `old` (each sample finite and > 0, else
 * KILN_E_REJECTED naming the side). `clock_scale` > 0 multiplies every new
 * sample (new SM clock / old SM clock; 1 when either is unknown). `rule`
 * NULL means PERF_RULE_DEFAULT. */
enum kiln_rc perfcmp_judge(const double *old, size_t n_old, const double *new_, size_t n_new,
                           double clock_scale, const struct perf_rule *rule,
                           struct perf_judgement *out, struct kiln_err *err) KILN_NODISCARD;

/* A speedup judged against the noise of both sides when only their
 * summaries are left (kiln eval's "vs ref", the optimizer's "vs start"):
 * `speedup` = old / new (above 1: new is faster), `sigma_old` and
 * `sigma_new` the uncertainties of the logs of both figures
 * (stats_log_sigma, a score's sigma). The rule is the ranking's
 * (stats_compare, VERDICT.md section 4): FAST when ln(speedup) exceeds
 * max(z * sqrt(sigma_old^2 + sigma_new^2), ln(1 + min_margin)), SLOW when
 * -ln(speedup) does, SAME (within the noise) otherwise; AMBIGUOUS when a
 * side has no interval (sigma >= 1: fewer than 3 samples) or a figure is
 * missing. *noise_pct (may be NULL) gets that threshold in percent: the
 * difference that would have counted. `noise` NULL: STATS_NOISE_DEFAULT. */
enum perf_call perfcmp_speedup_call(double speedup, double sigma_old, double sigma_new,
                                    const struct stats_noise *noise, double *noise_pct);

/* "SAME", "FAST", "SLOW", "AMBIGUOUS". */
const char *perf_call_name(enum perf_call c);

/* The order-statistic interval of the median of `sorted` (ascending, n >= 1)
 * at multiplier z: the ranks n/2 -+ z*sqrt(n)/2, clamped to the sample. */
void perfcmp_median_interval(const double *sorted, size_t n, double z, double *median, double *lo,
                             double *hi);

#endif
