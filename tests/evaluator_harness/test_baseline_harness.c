/*
 * The harness in baseline mode (HARNESS.md section 7), end to end: a
 * baseline plan and no candidate module in /in. Built twice:
 *   test_baseline_cpu  (unit)  kiln-harness-cpu: memcpy timed, cublas_sgemm
 *                              "unavailable" with the reason, cublaslt_bf16's
 *                              C reference GEMM timed, stopping rules;
 *   test_baseline_cuda (gpu)   kiln-harness-cuda: memcpy at a plausible
 *                              bandwidth, cuBLAS SGEMM loaded by dlopen at a
 *                              float32 (not TF32) rate, cuBLASLt bf16 at a
 *                              tensor-core rate; exits 77 without a GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness_fixture.h"

#ifdef KILN_TEST_CUDA
#define BACKEND     HB_CUDA
#define HARNESS_ENV "KILN_HARNESS_CUDA"
#else
#define BACKEND     HB_CPU
#define HARNESS_ENV "KILN_HARNESS_CPU"
#endif

struct env {
    struct fx f;
    struct harness_plan p;
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    if (!e || fx_init(&e->f) != 0)
        return -1;
    harness_plan_init(&e->p);
    e->p.backend = BACKEND;
    e->p.warmups = 2;
    e->p.iterations = 5;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    harness_plan_free(&e->p);
    fx_cleanup(&e->f);
    free(e);
    return 0;
}

static void add(struct harness_plan *p, const char *name, int64_t a, int64_t b, int64_t c)
{
    struct harness_case *hc;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(harness_plan_add_case(p, &hc, &err), KILN_OK);
    snprintf(hc->name, sizeof(hc->name), "%s", name);
    hc->timed = true;
    hc->baseline[0] = a;
    hc->baseline[1] = b;
    hc->baseline[2] = c;
}

/* Runs the harness; it must exit 0 and write status.json. */
static json_t *run_ok(struct env *e)
{
    int st = fx_run(&e->f, getenv(HARNESS_ENV), &e->p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "cat %s/log.txt >&2", e->f.out);
        (void)!system(cmd);
        fail_msg("harness status 0x%x", st);
    }
    json_t *s = fx_json(&e->f, "status.json");
    assert_non_null(s);
    return s;
}

static json_t *case_of(json_t *doc, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "cases"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "case")), name))
            return c;
    }
    return NULL;
}

/* The case's timings entry: set 0, the plan's warmups, `n` samples within
 * [lo, hi] (if n is 0: between the plan's bounds); returns the median. */
static double check_samples(struct env *e, json_t *t, const char *name, size_t n)
{
    json_t *c = case_of(t, name);
    assert_non_null(c);
    assert_int_equal(json_integer_value(json_object_get(c, "set")), 0);
    assert_true(json_is_true(json_object_get(c, "fingerprint_ok")));
    assert_int_equal(json_integer_value(json_object_get(c, "warmup")), e->p.warmups);
    assert_true(json_boolean_value(json_object_get(c, "l2_flush")) == e->p.l2_flush);
    json_t *s = json_object_get(c, "samples_ms");
    if (n)
        assert_int_equal(json_array_size(s), n);
    double v[1000];
    size_t k = json_array_size(s);
    assert_true(k >= 1 && k <= 1000);
    for (size_t i = 0; i < k; i++) {
        v[i] = json_real_value(json_array_get(s, i));
        assert_true(v[i] > 0 && v[i] < 60000);
    }
    for (size_t i = 1; i < k; i++) /* insertion sort: tiny */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

static void memcpy_is_timed_without_a_module(void **state)
{
    struct env *e = *state;
    e->p.baseline = HBL_MEMCPY;
    add(&e->p, "big", 64 << 20, 0, 0);
    add(&e->p, "odd", 7, 0, 0);
    char mod[400];
    snprintf(mod, sizeof(mod), "%s/candidate.so", e->f.in);
    assert_int_not_equal(access(mod, F_OK), 0); /* nothing to load */
    json_t *s = run_ok(e);
    assert_string_equal(json_string_value(json_object_get(s, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(case_of(s, "big"), "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(case_of(s, "odd"), "status")), "ok");
    json_decref(s);
    json_t *t = fx_json(&e->f, "timings.json");
    assert_non_null(t);
    assert_int_equal(json_array_size(json_object_get(t, "cases")), 2);
    double big = check_samples(e, t, "big", 5);
    check_samples(e, t, "odd", 5);
    /* 64 MiB read plus written: between 0.1 GB/s and 20 TB/s. */
    double bw = (double)(64 << 20) / (big * 1e-3);
    print_message("memcpy baseline: 64 MiB read+written in %.4f ms = %.3g B/s\n", big, bw);
    assert_true(bw > 1e8 && bw < 2e13);
    json_decref(t);
    assert_true(fx_log_contains(&e->f, "case big: baseline memcpy of 67108864 bytes"));
    assert_true(fx_log_contains(&e->f, "done: every case ran"));
}

static void hot_and_adaptive(void **state)
{
    struct env *e = *state;
    e->p.baseline = HBL_MEMCPY;
    e->p.l2_flush = false;
    e->p.adaptive = true;
    e->p.iterations = 4;
    e->p.max_iterations = 40;
    e->p.target_rse = 0.9; /* loose: stops at the minimum */
    e->p.budget_ms = 10000;
    add(&e->p, "small", 1 << 16, 0, 0);
    json_t *s = run_ok(e);
    json_decref(s);
    json_t *t = fx_json(&e->f, "timings.json");
    json_t *c = case_of(t, "small");
    assert_non_null(c);
    size_t n = json_array_size(json_object_get(c, "samples_ms"));
    assert_true(n >= 4 && n <= 40);
    check_samples(e, t, "small", 0);
    json_decref(t);
}

#ifndef KILN_TEST_CUDA
static void cublas_unavailable_on_cpu(void **state)
{
    struct env *e = *state;
    e->p.baseline = HBL_CUBLAS_SGEMM;
    add(&e->p, "sq", 64, 64, 64);
    json_t *s = run_ok(e);
    assert_string_equal(json_string_value(json_object_get(s, "status")), "failed");
    json_t *c = case_of(s, "sq");
    assert_string_equal(json_string_value(json_object_get(c, "status")), "failed");
    json_t *f = json_object_get(c, "failure");
    assert_string_equal(json_string_value(json_object_get(f, "kind")), "unavailable");
    assert_string_equal(json_string_value(json_object_get(f, "phase")), "setup");
    assert_non_null(strstr(json_string_value(json_object_get(f, "detail")),
                           "baseline unavailable: cublas_sgemm is not available on the cpu "
                           "backend"));
    json_decref(s);
    json_t *t = fx_json(&e->f, "timings.json");
    assert_int_equal(json_array_size(json_object_get(t, "cases")), 0);
    json_decref(t);
}

/* cublaslt_bf16 on the cpu backend: the plain C bf16 GEMM (hx_bf16.h)
 * stands in for cuBLASLt and is timed like any baseline, so CI judges a
 * gemm_bf16 candidate against something (issue 36). */
static void cublaslt_bf16_is_a_c_gemm_on_cpu(void **state)
{
    struct env *e = *state;
    e->p.baseline = HBL_CUBLASLT_BF16;
    add(&e->p, "sq", 64, 64, 64);
    add(&e->p, "odd", 7, 131, 19);
    json_t *s = run_ok(e);
    assert_string_equal(json_string_value(json_object_get(s, "status")), "ok");
    json_decref(s);
    json_t *t = fx_json(&e->f, "timings.json");
    check_samples(e, t, "sq", 5);
    check_samples(e, t, "odd", 5);
    json_decref(t);
    assert_true(fx_log_contains(&e->f, "case odd: baseline cublaslt_bf16 m 7 n 131 k 19"));
}
#else
/* Times `kind` on 4096^3 and 4099 x 3001 x 2053 (20 runs each) and returns
 * their rates in flop/s, printed with `label`. */
static void gemm_rates(struct env *e, enum harness_baseline kind, const char *label, double rate[2])
{
    e->p.baseline = kind;
    e->p.warmups = 5;
    e->p.iterations = 20;
    add(&e->p, "sq4096", 4096, 4096, 4096);
    add(&e->p, "odd_big", 4099, 3001, 2053);
    json_t *s = run_ok(e);
    assert_string_equal(json_string_value(json_object_get(s, "status")), "ok");
    json_decref(s);
    json_t *t = fx_json(&e->f, "timings.json");
    double sq = check_samples(e, t, "sq4096", 20);
    double odd = check_samples(e, t, "odd_big", 20);
    json_decref(t);
    rate[0] = 2.0 * 4096.0 * 4096.0 * 4096.0 / (sq * 1e-3);
    rate[1] = 2.0 * 4099.0 * 3001.0 * 2053.0 / (odd * 1e-3);
    print_message("%s: 4096^3 %.4f ms = %.1f TFLOP/s; 4099x3001x2053 %.4f ms = %.1f TFLOP/s\n",
                  label, sq, rate[0] / 1e12, odd, rate[1] / 1e12);
}

/* cuBLASLt bf16 (fp32 compute) 4096^3: a tensor-core rate, far above any
 * SIMT peak (H200 FP32 SIMT: about 67 TFLOP/s) and below the dense BF16
 * peak (H100/H200 SXM: about 990 TFLOP/s). */
static void cublaslt_bf16_tensor_rate(void **state)
{
    struct env *e = *state;
    double rate[2];
    gemm_rates(e, HBL_CUBLASLT_BF16, "cuBLASLt bf16", rate);
    assert_true(rate[0] > 150e12 && rate[0] < 1.1e15);
    assert_true(rate[1] > 50e12 && rate[1] < 1.1e15);
    assert_true(fx_log_contains(&e->f, "CUBLAS_COMPUTE_32F"));
}

/* cuBLAS SGEMM 4096^3 in float32: a real rate, and not a TF32 one (cuBLAS
 * with TF32 tensor cores is several times faster than the float32 peak). */
static void cublas_sgemm_float32_rate(void **state)
{
    struct env *e = *state;
    double rate[2];
    gemm_rates(e, HBL_CUBLAS_SGEMM, "cuBLAS SGEMM", rate);
    /* H200: about 51 TFLOP/s measured (shared/field-notes.md); float32 peak
     * about 67; TF32 would be far above. */
    assert_true(rate[0] > 5e12 && rate[0] < 75e12);
    assert_true(rate[1] > 2e12 && rate[1] < 75e12);
    assert_true(fx_log_contains(&e->f, "loaded, cuBLAS version"));
    assert_true(fx_log_contains(&e->f, "CUBLAS_DEFAULT_MATH"));
}
#endif

int main(void)
{
#ifdef KILN_TEST_CUDA
    if (access("/dev/nvidiactl", F_OK) != 0) {
        printf("skipped: no NVIDIA GPU here (/dev/nvidiactl is absent)\n");
        return 77;
    }
#endif
    if (!getenv(HARNESS_ENV)) {
        fprintf(stderr, "run through ctest (%s)\n", HARNESS_ENV);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(memcpy_is_timed_without_a_module, setup, teardown),
        cmocka_unit_test_setup_teardown(hot_and_adaptive, setup, teardown),
#ifdef KILN_TEST_CUDA
        cmocka_unit_test_setup_teardown(cublas_sgemm_float32_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(cublaslt_bf16_tensor_rate, setup, teardown),
#else
        cmocka_unit_test_setup_teardown(cublas_unavailable_on_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(cublaslt_bf16_is_a_c_gemm_on_cpu, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
