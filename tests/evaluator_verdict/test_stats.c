/* Timing statistics, noise and the physics floor (VERDICT.md 4, 5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "stats.h"

#define near(a, b) assert_true(fabs((a) - (b)) <= 1e-12 * (fabs(b) + 1.0))

static void odd_sample_set(void **state)
{
    (void)state;
    const double s[5] = {5, 1, 4, 2, 3};
    struct stats_summary st;
    struct kiln_err e = {0};
    assert_int_equal(stats_compute(s, 5, &st, &e), KILN_OK);
    assert_int_equal(st.n, 5);
    near(st.median, 3.0);
    near(st.mean, 3.0);
    near(st.min, 1.0);
    near(st.max, 5.0);
    near(st.p10, 1.4); /* numpy.percentile([1..5], 10) */
    near(st.p90, 4.6);
    near(st.stddev, sqrt(2.5));
    near(st.rse, sqrt(2.5) / sqrt(5.0) / 3.0);
    /* the input is not reordered */
    assert_true(s[0] == 5 && s[1] == 1);
}

static void even_sample_set(void **state)
{
    (void)state;
    const double s[4] = {4, 1, 3, 2};
    struct stats_summary st;
    struct kiln_err e = {0};
    assert_int_equal(stats_compute(s, 4, &st, &e), KILN_OK);
    near(st.median, 2.5);
    near(st.p10, 1.3);
    near(st.p90, 3.7);
    near(st.mean, 2.5);
}

static void single_sample(void **state)
{
    (void)state;
    const double s[1] = {0.75};
    struct stats_summary st;
    struct kiln_err e = {0};
    assert_int_equal(stats_compute(s, 1, &st, &e), KILN_OK);
    near(st.median, 0.75);
    near(st.p10, 0.75);
    near(st.p90, 0.75);
    assert_true(st.stddev == 0.0);
    assert_true(stats_log_sigma(&st) == 1.0); /* one sample: no noise estimate */
}

/* --iterations 2 (or 5 over three input sets) leaves sets with two samples:
 * a standard deviation exists but no honest interval, so the case counts as
 * fully uncertain like a single sample, never as a precise one. */
static void two_samples_no_interval(void **state)
{
    (void)state;
    const double s[2] = {1.0, 1.001}, s3[3] = {1.0, 1.001, 1.0005};
    struct stats_summary st;
    struct kiln_err e = {0};
    assert_int_equal(stats_compute(s, 2, &st, &e), KILN_OK);
    assert_true(st.stddev > 0.0);
    assert_false(stats_has_interval(&st));
    assert_true(stats_log_sigma(&st) == 1.0);
    assert_int_equal(stats_compute(s3, 3, &st, &e), KILN_OK);
    assert_true(stats_has_interval(&st));
    assert_true(stats_log_sigma(&st) < 0.01);
}

static void bad_samples_rejected(void **state)
{
    (void)state;
    const double nan_s[2] = {1, NAN}, neg[2] = {1, -1}, zero[1] = {0}, inf[1] = {INFINITY};
    struct stats_summary st;
    struct kiln_err e = {0};
    assert_int_equal(stats_compute(nan_s, 2, &st, &e), KILN_E_REJECTED);
    kiln_err_clear(&e);
    assert_int_equal(stats_compute(neg, 2, &st, &e), KILN_E_REJECTED);
    kiln_err_clear(&e);
    assert_int_equal(stats_compute(zero, 1, &st, &e), KILN_E_REJECTED);
    kiln_err_clear(&e);
    assert_int_equal(stats_compute(inf, 1, &st, &e), KILN_E_REJECTED);
    kiln_err_clear(&e);
    assert_int_equal(stats_compute(neg, 0, &st, &e), KILN_E_REJECTED);
}

static void geomean_of_medians(void **state)
{
    (void)state;
    struct stats_summary a = {.n = 10, .median = 1.0, .mean = 1.0, .rse = 0.01};
    struct stats_summary b = {.n = 10, .median = 4.0, .mean = 4.0, .rse = 0.02};
    struct stats_score sc = {0};
    stats_score_add(&sc, &a);
    stats_score_add(&sc, &b);
    stats_score_finish(&sc);
    near(sc.geomean_ms, 2.0);
    assert_int_equal(sc.ncases, 2);
    double s1 = 1.2533141373155001 * 0.01, s2 = 1.2533141373155001 * 0.02;
    near(sc.sigma, sqrt(s1 * s1 + s2 * s2) / 2.0);
}

static void noise_decides_ties(void **state)
{
    (void)state;
    /* 1% apart, each with 2% uncertainty: a tie. */
    struct stats_score a = {.geomean_ms = 1.00, .sigma = 0.02, .ncases = 1};
    struct stats_score b = {.geomean_ms = 0.99, .sigma = 0.02, .ncases = 1};
    assert_int_equal(stats_compare(&a, &b, NULL), 0);
    assert_int_equal(stats_compare(&b, &a, NULL), 0);
    /* 20% apart with 1% uncertainty: b wins. */
    b.geomean_ms = 0.8;
    a.sigma = b.sigma = 0.01;
    assert_int_equal(stats_compare(&a, &b, NULL), 1);
    assert_int_equal(stats_compare(&b, &a, NULL), -1);
    /* Zero noise still needs the 0.5% minimum margin. */
    a.sigma = b.sigma = 0.0;
    b.geomean_ms = 0.996;
    assert_int_equal(stats_compare(&a, &b, NULL), 0);
    b.geomean_ms = 0.99;
    assert_int_equal(stats_compare(&a, &b, NULL), 1);
}

static void physics_floor(void **state)
{
    (void)state;
    const struct stats_ceilings *c = &STATS_CEILINGS_H200;
    near(stats_floor_ms(c, 4.8e9, 0), 1.0);                   /* 4.8 GB at 4.8 TB/s */
    near(stats_floor_ms(c, 0, c->flop_per_s / 1e3), 1.0);     /* one ms of peak flops */
    near(stats_floor_ms(c, 4.8e9, c->flop_per_s / 5e2), 2.0); /* the larger bound wins */
    assert_true(stats_floor_ms(c, 0, 0) == 0.0);
    /* slack 0.15: 0.86 ms against a 1 ms floor is plausible, 0.84 is not */
    assert_false(stats_below_floor(c, 1.0, 0.86));
    assert_true(stats_below_floor(c, 1.0, 0.84));
    assert_false(stats_below_floor(c, 0.0, 1e-9)); /* no floor, no verdict */
}

/* Issue 13 item 5: an exact split-precision (3xTF32) SGEMM on an H200 runs
 * at up to a third of the dense TF32 peak, ~165 TFLOP/s; the old ceiling
 * (51 TFLOP/s, cuBLAS's float32 SGEMM) called such a kernel impossible.
 * Issue 36: the roofline an fp32 workload's "% of the floor" is measured
 * against is the FP32 SIMT peak (67 TFLOP/s), so the impossible-timing
 * guard is a floor of its own (stats_guard_ms) at the TF32 rate. */
static void split_precision_sgemm_is_possible(void **state)
{
    (void)state;
    const struct stats_ceilings *c = &STATS_CEILINGS_H200;
    double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
    double bytes = 3.0 * 4096.0 * 4096.0 * 4.0;
    double guard = stats_guard_ms(c, bytes, flops);
    double ms_3xtf32 = 1e3 * flops / 165e12;
    assert_false(stats_below_floor(c, guard, ms_3xtf32));
    /* Even a plain TF32 kernel at the full dense peak is possible. */
    assert_false(stats_below_floor(c, guard, 1e3 * flops / 494.7e12));
    /* Beating the tensor peak is not. */
    assert_true(stats_below_floor(c, guard, 1e3 * flops / 700e12));
    /* The roofline is the FP32 SIMT peak: cuBLAS's 51 TFLOP/s SGEMM (the
     * field notes' H200 figure) reads 76% of it, not the 10% a TF32 floor
     * gave, and a 3xTF32 kernel reads past 100%: faster than FP32 SIMT,
     * possible all the same. */
    double floor = stats_floor_ms(c, bytes, flops);
    near(floor / (1e3 * flops / 51e12), 51e12 / (132 * 1.98e9 * 256));
    assert_true(floor / ms_3xtf32 > 1.0);
    assert_string_equal(stats_floor_unit_label(c), "FP32 SIMT");
}

/* A bf16 workload's roofline and guard are the BF16 tensor peak: no path
 * to a bf16-accurate product is faster (fp8 fails its tolerance). */
static void bf16_roofline_is_its_guard(void **state)
{
    (void)state;
    struct gpu_peaks pk;
    struct gpu_props h200 = {132, 1980000, 9, 0, 3125000, 6144, 0};
    struct stats_ceilings c = STATS_CEILINGS_H200;
    struct gpu_roofline roof;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpupeak_compute(&h200, &pk, &e), KILN_OK);
    gpupeak_for_units(&pk, GPU_UNIT_MASK(GPU_UNIT_BF16), &roof);
    c.flop_per_s = roof.flop_per_s;
    c.unit = roof.unit;
    c.guard_flop_per_s = roof.guard_flop_per_s;
    double flops = 2.0 * 8192 * 14336 * 4096;
    near(stats_floor_ms(&c, 0, flops), 1e3 * flops / (132 * 1.98e9 * 4096));
    near(stats_guard_ms(&c, 0, flops), stats_floor_ms(&c, 0, flops));
    assert_string_equal(stats_floor_unit_label(&c), "BF16 tensor");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(odd_sample_set),
        cmocka_unit_test(even_sample_set),
        cmocka_unit_test(single_sample),
        cmocka_unit_test(two_samples_no_interval),
        cmocka_unit_test(bad_samples_rejected),
        cmocka_unit_test(geomean_of_medians),
        cmocka_unit_test(noise_decides_ties),
        cmocka_unit_test(physics_floor),
        cmocka_unit_test(split_precision_sgemm_is_possible),
        cmocka_unit_test(bf16_roofline_is_its_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
