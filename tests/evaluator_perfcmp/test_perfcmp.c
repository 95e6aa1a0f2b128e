/* perfcmp on synthetic samples: identical -> SAME, shifted by 5% -> SLOW or
 * FAST, noisy overlap -> AMBIGUOUS, too few samples -> AMBIGUOUS, an outlier
 * does not move the call (medians, not means), clock normalisation, and bad
 * samples rejected. Samples come from a fixed-seed generator, so every run
 * sees the same numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "perfcmp.h"

#define N 200

/* Deterministic uniform in [0,1): splitmix64. */
static double unit(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

/* `n` samples around `center` ms, uniformly spread by +-`spread` (relative). */
static void fill(double *x, size_t n, double center, double spread, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = center * (1 + spread * (2 * unit(&seed) - 1));
}

static enum perf_call judge(const double *a, size_t na, const double *b, size_t nb, double scale,
                            struct perf_judgement *j)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(perfcmp_judge(a, na, b, nb, scale, NULL, j, &err), KILN_OK);
    return j->call;
}

static void identical_is_same(void **state)
{
    (void)state;
    double a[N], b[N];
    fill(a, N, 1.0, 0.01, 1);
    memcpy(b, a, sizeof(a));
    struct perf_judgement j;
    assert_int_equal(judge(a, N, b, N, 1, &j), PERF_SAME);
    assert_true(fabs(j.ratio - 1) < 1e-12);
    /* Two independent draws of the same distribution: still SAME. */
    fill(b, N, 1.0, 0.01, 2);
    assert_int_equal(judge(a, N, b, N, 1, &j), PERF_SAME);
    assert_string_equal(perf_call_name(j.call), "SAME");
}

static void shifted_five_percent(void **state)
{
    (void)state;
    double a[N], b[N];
    fill(a, N, 1.0, 0.01, 3);
    fill(b, N, 1.05, 0.01, 4);
    struct perf_judgement j;
    assert_int_equal(judge(a, N, b, N, 1, &j), PERF_SLOW);
    assert_true(j.lo > 1.02 && j.ratio > 1.04 && j.ratio < 1.06);
    fill(b, N, 0.95, 0.01, 5);
    assert_int_equal(judge(a, N, b, N, 1, &j), PERF_FAST);
    assert_true(j.hi < 0.98);
}

static void noisy_overlap_is_ambiguous(void **state)
{
    (void)state;
    double a[20], b[20];
    fill(a, 20, 1.0, 0.30, 6);
    fill(b, 20, 1.03, 0.30, 7);
    struct perf_judgement j;
    assert_int_equal(judge(a, 20, b, 20, 1, &j), PERF_AMBIGUOUS);
    assert_true(j.lo < 0.98 && j.hi > 1.02);
    assert_non_null(strstr(j.why, "crosses"));
    /* A 1% shift is below the 2% minimum effect, but with this much noise
     * SAME cannot be claimed either. */
    fill(b, 20, 1.01, 0.30, 8);
    assert_int_equal(judge(a, 20, b, 20, 1, &j), PERF_AMBIGUOUS);
}

static void small_shift_is_same(void **state)
{
    (void)state;
    /* 0.5% slower with little noise: real but under the minimum effect. */
    double a[N], b[N];
    fill(a, N, 1.0, 0.002, 9);
    fill(b, N, 1.005, 0.002, 10);
    struct perf_judgement j;
    assert_int_equal(judge(a, N, b, N, 1, &j), PERF_SAME);
}

static void too_few_samples(void **state)
{
    (void)state;
    double a[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2};
    struct perf_judgement j;
    assert_int_equal(judge(a, 4, b, 4, 1, &j), PERF_AMBIGUOUS);
    assert_non_null(strstr(j.why, "at least 8"));
    assert_int_equal(judge(a, 0, b, 4, 1, &j), PERF_AMBIGUOUS);
}

static void outliers_do_not_move_the_median(void **state)
{
    (void)state;
    double a[N], b[N];
    fill(a, N, 1.0, 0.01, 11);
    memcpy(b, a, sizeof(a));
    for (int i = 0; i < 10; i++) /* 5% of the runs hit by something 100x slower */
        b[i * 17] = 100.0;
    struct perf_judgement j;
    assert_int_equal(judge(a, N, b, N, 1, &j), PERF_SAME);
}

static void clock_normalised(void **state)
{
    (void)state;
    /* The new run's clock was 10% lower and it took 10/9 as long: after
     * normalisation the kernel is the same. */
    double a[N], b[N];
    fill(a, N, 1.0, 0.005, 12);
    for (size_t i = 0; i < N; i++)
        b[i] = a[i] / 0.9;
    struct perf_judgement j;
    assert_int_equal(judge(a, N, b, N, 1, &j), PERF_SLOW);
    assert_int_equal(judge(a, N, b, N, 0.9, &j), PERF_SAME);
    assert_non_null(strstr(j.why, "clock-normalised"));
}

static void bad_samples_rejected(void **state)
{
    (void)state;
    double a[N], b[N];
    fill(a, N, 1.0, 0.01, 13);
    memcpy(b, a, sizeof(a));
    b[3] = NAN;
    struct perf_judgement j;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(perfcmp_judge(a, N, b, N, 1, NULL, &j, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "new sample 3"));
    a[0] = -1;
    assert_int_equal(perfcmp_judge(a, N, a + 1, N - 1, 1, NULL, &j, &err), KILN_E_REJECTED);
    assert_int_equal(perfcmp_judge(a + 1, 3, a + 1, 3, 0, NULL, &j, &err), KILN_E_USAGE);
}

static void median_interval_ranks(void **state)
{
    (void)state;
    double s[101];
    for (int i = 0; i < 101; i++)
        s[i] = i + 1;
    double m, lo, hi;
    perfcmp_median_interval(s, 101, 1.96, &m, &lo, &hi);
    assert_true(m == 51);
    /* n=101, z=1.96: ranks floor(50.5-9.85)=40 and ceil(51.5+9.85)=62. */
    assert_true(lo == 40 && hi == 62);
    perfcmp_median_interval(s, 1, 1.96, &m, &lo, &hi);
    assert_true(m == 1 && lo == 1 && hi == 1);
}

/* A speedup from two summaries (kiln eval's "vs ref", issue 35 item 2):
 * the ranking's rule on the log-sigmas, with the threshold it used. The
 * unchanged kernel "against itself" at 1.37x with 31% noise is SAME. */
static void speedup_against_the_noise(void **state)
{
    (void)state;
    double pct = 0;
    assert_int_equal(perfcmp_speedup_call(1.37, 0.31, 0.31, NULL, &pct), PERF_SAME);
    assert_true(fabs(pct - 100 * expm1(1.96 * sqrt(2 * 0.31 * 0.31))) < 1e-9);
    assert_int_equal(perfcmp_speedup_call(1.37, 0.01, 0.01, NULL, &pct), PERF_FAST);
    assert_int_equal(perfcmp_speedup_call(0.73, 0.01, 0.01, NULL, NULL), PERF_SLOW);
    /* Within the 0.5% margin that always counts as a tie. */
    assert_int_equal(perfcmp_speedup_call(1.004, 0.0, 0.0, NULL, &pct), PERF_SAME);
    assert_true(fabs(pct - 0.5) < 1e-9);
    /* A side without an interval (stats_log_sigma's 1.0), or no ratio. */
    assert_int_equal(perfcmp_speedup_call(3.0, 1.0, 0.01, NULL, NULL), PERF_AMBIGUOUS);
    assert_int_equal(perfcmp_speedup_call(0.0, 0.01, 0.01, NULL, NULL), PERF_AMBIGUOUS);
    assert_int_equal(perfcmp_speedup_call(NAN, 0.01, 0.01, NULL, NULL), PERF_AMBIGUOUS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identical_is_same),
        cmocka_unit_test(shifted_five_percent),
        cmocka_unit_test(noisy_overlap_is_ambiguous),
        cmocka_unit_test(small_shift_is_same),
        cmocka_unit_test(too_few_samples),
        cmocka_unit_test(outliers_do_not_move_the_median),
        cmocka_unit_test(clock_normalised),
        cmocka_unit_test(bad_samples_rejected),
        cmocka_unit_test(median_interval_ranks),
        cmocka_unit_test(speedup_against_the_noise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
