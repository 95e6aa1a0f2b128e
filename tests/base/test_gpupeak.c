/* gpupeak: peak rates from synthetic device properties, and the strict
 * parser of the probe's line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpupeak.h"

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fabs(want))
        fail_msg("got %.6g, want %.6g", got, want);
}

static const struct gpu_props H200 = {.sm_count = 132,
                                      .sm_clock_khz = 1980000,
                                      .cc_major = 9,
                                      .cc_minor = 0,
                                      .mem_clock_khz = 3125000,
                                      .bus_width_bits = 6144};

static void h200_peaks_are_the_tensor_and_hbm_peaks(void **state)
{
    (void)state;
    struct gpu_peaks pk;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpupeak_compute(&H200, &pk, &e), KILN_OK);
    near(pk.flop_per_s, 132 * 1.98e9 * 2048); /* 535 TFLOP/s: dense TF32 */
    near(pk.bytes_per_s, 4.8e12);
    /* Never below a real peak: NVIDIA's dense TF32 figure (494.7 TFLOP/s)
     * and far above the old constant (51e12, cuBLAS float32 SGEMM). */
    assert_true(pk.flop_per_s >= 494.7e12);
    assert_true(pk.flop_per_s > 3 * 51e12);
}

/* The rates scale with what the device says, not with a table of models. */
static void rates_follow_the_device(void **state)
{
    (void)state;
    struct gpu_peaks a, b;
    struct kiln_err e;
    kiln_err_clear(&e);
    struct gpu_props half = H200;
    half.sm_count = 66;
    half.sm_clock_khz = 990000;
    half.mem_clock_khz = 1562500;
    assert_int_equal(gpupeak_compute(&H200, &a, &e), KILN_OK);
    assert_int_equal(gpupeak_compute(&half, &b, &e), KILN_OK);
    near(b.flop_per_s, a.flop_per_s / 4);
    near(b.bytes_per_s, a.bytes_per_s / 2);
}

/* Each architecture's published dense peaks are at or under the ceiling. */
static void published_peaks_are_not_exceeded(void **state)
{
    (void)state;
    struct {
        struct gpu_props p;
        double tensor_peak, bw_peak;
    } dev[] = {
        /* A100 SXM: 156 TF tf32, 2039 GB/s (HBM2e 1593 MHz x 5120 bits) */
        {{108, 1410000, 8, 0, 1593000, 5120, 0}, 155.9e12, 2.039e12},
        /* H100 SXM: 494.7 TF tf32 at 1830 MHz (clock reported 1980), 3.35 TB/s */
        {{132, 1980000, 9, 0, 2619000, 5120, 0}, 494.7e12, 3.35e12},
        /* L40S: 183 TF tf32 dense, 864 GB/s */
        {{142, 2520000, 8, 9, 9001000, 384, 0}, 183e12, 0.864e12},
        /* V100 SXM2: 125 TF fp16 (no tf32), 900 GB/s */
        {{80, 1530000, 7, 0, 877000, 4096, 0}, 125e12, 0.898e12},
        /* B200: 1.2 PF tf32 dense (GB200's figure), 8 TB/s */
        {{148, 1965000, 10, 0, 3996000, 8192, 0}, 1.2e15, 7.9e12},
    };
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++) {
        struct gpu_peaks pk;
        struct kiln_err e;
        kiln_err_clear(&e);
        assert_int_equal(gpupeak_compute(&dev[i].p, &pk, &e), KILN_OK);
        if (pk.flop_per_s < dev[i].tensor_peak * 0.999)
            fail_msg("device %zu: ceiling %.4g below the published %.4g", i, pk.flop_per_s,
                     dev[i].tensor_peak);
        if (pk.bytes_per_s < dev[i].bw_peak * 0.99)
            fail_msg("device %zu: bandwidth %.4g below %.4g", i, pk.bytes_per_s, dev[i].bw_peak);
    }
}

static void unknown_architecture_has_no_flop_floor(void **state)
{
    (void)state;
    struct gpu_props p = H200;
    p.cc_major = 42;
    struct gpu_peaks pk;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpupeak_compute(&p, &pk, &e), KILN_OK);
    assert_true(pk.flop_per_s == 0.0);
    assert_true(pk.bytes_per_s > 0.0);
}

static void implausible_properties_are_refused(void **state)
{
    (void)state;
    struct gpu_props p = H200;
    p.sm_count = 0;
    struct gpu_peaks pk;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpupeak_compute(&p, &pk, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "SM count 0"));
    p = H200;
    p.sm_clock_khz = -5;
    assert_int_equal(gpupeak_compute(&p, &pk, &e), KILN_E_REJECTED);
}

/* The roofline table per architecture against figures computed by hand
 * from NVIDIA's published dense peaks (gpupeak.c cites them): published
 * TFLOP/s / (SMs x the clock they were quoted at), per SM per clock. */
static void unit_rates_per_architecture(void **state)
{
    (void)state;
    static const struct {
        int major, minor;
        enum gpu_unit unit;
        double tflops, sms, ghz; /* a published figure; 0 TF: the unit is absent */
    } fig[] = {
        {7, 5, GPU_UNIT_FP32_SIMT, 8.1, 40, 1.59}, /* T4: 8.1 TF fp32 -> 127 ~ 128 */
        {7, 5, GPU_UNIT_FP16, 65, 40, 1.59},       /* T4: 65 TF fp16 -> 1022 ~ 1024 */
        {7, 5, GPU_UNIT_BF16, 0, 40, 1.59},        /* no bf16 mma before sm_80 */
        {7, 5, GPU_UNIT_TF32, 0, 40, 1.59},
        {8, 0, GPU_UNIT_FP32_SIMT, 19.5, 108, 1.41}, /* A100 */
        {8, 0, GPU_UNIT_TF32, 156, 108, 1.41},
        {8, 0, GPU_UNIT_BF16, 312, 108, 1.41},
        {8, 0, GPU_UNIT_FP8, 0, 108, 1.41},
        {8, 6, GPU_UNIT_FP32_SIMT, 37.4, 84, 1.74}, /* A40 */
        {8, 6, GPU_UNIT_BF16, 149.7, 84, 1.74},
        {8, 9, GPU_UNIT_FP32_SIMT, 91.6, 142, 2.52}, /* L40S */
        {8, 9, GPU_UNIT_TF32, 183, 142, 2.52},
        {8, 9, GPU_UNIT_BF16, 362, 142, 2.52},
        {8, 9, GPU_UNIT_FP8, 733, 142, 2.52},
        {9, 0, GPU_UNIT_FP32_SIMT, 66.9, 132, 1.98}, /* H100 SXM */
        {9, 0, GPU_UNIT_TF32, 494.7, 132, 1.83},
        {9, 0, GPU_UNIT_FP16, 989.4, 132, 1.83},
        {9, 0, GPU_UNIT_BF16, 989.4, 132, 1.83},
        {9, 0, GPU_UNIT_FP8, 1978.9, 132, 1.83},
    };
    for (size_t i = 0; i < sizeof(fig) / sizeof(fig[0]); i++) {
        int got = gpupeak_unit_flop_per_clk_sm(fig[i].major, fig[i].minor, fig[i].unit);
        double want = fig[i].tflops * 1e12 / (fig[i].sms * fig[i].ghz * 1e9);
        /* Exact where the figure is, within 2% where it was rounded. */
        if ((want == 0) != (got == 0) || fabs(got - want) > 0.02 * want)
            fail_msg("sm_%d%d %s: %d flop/SM/clock, the published figure gives %.1f", fig[i].major,
                     fig[i].minor, gpu_unit_name(fig[i].unit), got, want);
    }
    /* The H200 from its own properties: FP32 SIMT 66.9 TFLOP/s, BF16 1070
     * (at the 1.98 GHz it reports; 989 at the 1.83 the datasheet used). */
    struct gpu_peaks pk;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpupeak_compute(&H200, &pk, &e), KILN_OK);
    near(pk.unit_flop_per_s[GPU_UNIT_FP32_SIMT], 132 * 1.98e9 * 256);
    near(pk.unit_flop_per_s[GPU_UNIT_BF16], 132 * 1.98e9 * 4096);
    near(pk.unit_flop_per_s[GPU_UNIT_FP8], 132 * 1.98e9 * 8192);
    /* Unknown architectures have no rate for any unit. */
    for (int u = 0; u < GPU_UNIT_COUNT; u++)
        assert_int_equal(gpupeak_unit_flop_per_clk_sm(42, 0, (enum gpu_unit)u), 0);
}

/* What a workload's math is measured against: the fastest allowed unit,
 * and for fp32 math a guard at the fastest fp32-exact path (3xTF32). */
static void roofline_of_the_declared_units(void **state)
{
    (void)state;
    struct gpu_peaks pk;
    struct gpu_roofline r;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpupeak_compute(&H200, &pk, &e), KILN_OK);
    gpupeak_for_units(&pk, 0, &r); /* no "math": FP32 SIMT */
    assert_int_equal(r.unit, GPU_UNIT_FP32_SIMT);
    near(r.flop_per_s, 132 * 1.98e9 * 256);
    near(r.guard_flop_per_s, 132 * 1.98e9 * 2048);
    gpupeak_for_units(&pk, GPU_UNIT_MASK(GPU_UNIT_BF16), &r);
    assert_int_equal(r.unit, GPU_UNIT_BF16);
    near(r.flop_per_s, 132 * 1.98e9 * 4096);
    near(r.guard_flop_per_s, r.flop_per_s);
    gpupeak_for_units(&pk, GPU_UNIT_MASK(GPU_UNIT_BF16) | GPU_UNIT_MASK(GPU_UNIT_FP8), &r);
    assert_int_equal(r.unit, GPU_UNIT_FP8);
    /* A T4 has no BF16 unit: a bf16 workload gets no flop floor there. */
    struct gpu_props t4 = {40, 1590000, 7, 5, 5001000, 256, 0};
    assert_int_equal(gpupeak_compute(&t4, &pk, &e), KILN_OK);
    gpupeak_for_units(&pk, GPU_UNIT_MASK(GPU_UNIT_BF16), &r);
    assert_true(r.flop_per_s == 0.0 && r.guard_flop_per_s == 0.0);
    /* Names round-trip; anything else is refused. */
    for (int u = 0; u < GPU_UNIT_COUNT; u++) {
        enum gpu_unit back;
        assert_true(gpu_unit_parse(gpu_unit_name((enum gpu_unit)u), &back));
        assert_int_equal(back, u);
    }
    enum gpu_unit x;
    assert_false(gpu_unit_parse("bf16", &x));
    assert_false(gpu_unit_parse("", &x));
    assert_null(gpu_unit_name((enum gpu_unit)GPU_UNIT_COUNT));
}

/* The precision the tolerance guard tries for a workload's math: one step
 * below its narrowest unit (fp32 -> tf32 -> bf16 -> fp8), none below fp8. */
static void the_guard_steps_below_the_narrowest_unit(void **state)
{
    (void)state;
    const struct {
        unsigned units;
        int bits;
        const char *label;
    } want[] = {
        {GPU_UNIT_MASK(GPU_UNIT_FP32_SIMT), 11, "tf32"},
        {GPU_UNIT_MASK(GPU_UNIT_TF32), 8, "bf16"},
        {GPU_UNIT_MASK(GPU_UNIT_FP16), 8, "bf16"},
        {GPU_UNIT_MASK(GPU_UNIT_BF16), 4, "fp8 (e4m3)"},
        {GPU_UNIT_MASK(GPU_UNIT_BF16) | GPU_UNIT_MASK(GPU_UNIT_FP32_SIMT), 4, "fp8 (e4m3)"},
        {GPU_UNIT_MASK(GPU_UNIT_FP8), 0, NULL},
        {0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *label = "unset";
        assert_int_equal(gpu_unit_guard_bits(want[i].units, &label), want[i].bits);
        if (want[i].label)
            assert_string_equal(label, want[i].label);
        else
            assert_null(label);
    }
}

static void the_probe_line_is_parsed_strictly(void **state)
{
    (void)state;
    struct gpu_props p;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpupeak_parse_props("sm_count=132 sm_clock_khz=1980000 cc=9.0 "
                                         "mem_clock_khz=3125000 bus_width_bits=6144\n",
                                         &p, &e),
                     KILN_OK);
    assert_memory_equal(&p, &H200, sizeof(p));
    const char *bad[] = {
        "",
        "sm_count=132 sm_clock_khz=1980000 cc=9.0 mem_clock_khz=3125000 bus_width_bits=6144",
        "sm_count=132 sm_clock_khz=1980000 cc=9.0 mem_clock_khz=3125000 bus_width_bits=6144\nx",
        "sm_count=+132 sm_clock_khz=1980000 cc=9.0 mem_clock_khz=3125000 bus_width_bits=6144\n",
        "sm_count= 132 sm_clock_khz=1980000 cc=9.0 mem_clock_khz=3125000 bus_width_bits=6144\n",
        "sm_count=132 sm_clock_khz=1980000 cc=9.0 bus_width_bits=6144\n",
        "sm_count=99999999999 sm_clock_khz=1 cc=9.0 mem_clock_khz=1 bus_width_bits=1\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (gpupeak_parse_props(bad[i], &p, &e) != KILN_E_PARSE)
            fail_msg("accepted bad line %zu: %s", i, bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(h200_peaks_are_the_tensor_and_hbm_peaks),
        cmocka_unit_test(rates_follow_the_device),
        cmocka_unit_test(published_peaks_are_not_exceeded),
        cmocka_unit_test(unknown_architecture_has_no_flop_floor),
        cmocka_unit_test(implausible_properties_are_refused),
        cmocka_unit_test(unit_rates_per_architecture),
        cmocka_unit_test(roofline_of_the_declared_units),
        cmocka_unit_test(the_guard_steps_below_the_narrowest_unit),
        cmocka_unit_test(the_probe_line_is_parsed_strictly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
