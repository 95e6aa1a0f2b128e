/* Comparison, poison detection and the weak-case guard (VERDICT.md 2, 3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

/* A tensor over caller memory; tensor.c is another module, so the tests
 * build the struct by hand. */
static struct tensor mk(enum tensor_dtype dt, void *data, size_t count, size_t elsize)
{
    struct tensor t = {0};
    t.dtype = dt;
    t.ndim = 1;
    t.shape[0] = (int64_t)count;
    t.count = count;
    t.nbytes = count * elsize;
    t.data = data;
    return t;
}

static struct tensor f32(float *d, size_t n)
{
    return mk(DT_FLOAT32, d, n, 4);
}

static void equal_outputs_pass(void **state)
{
    (void)state;
    float r[4] = {1, -2, 3.5f, 0}, o[4] = {1, -2, 3.5f, 0};
    struct tensor to = f32(o, 4), tr = f32(r, 4);
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_true(rep.pass);
    assert_int_equal(rep.mismatches, 0);
    assert_int_equal(rep.unwritten, 0);
    assert_int_equal(rep.first_unwritten, -1);
    assert_true(rep.max_abs_err == 0.0);
    assert_true(rep.rel_l2_err == 0.0);
    assert_string_equal(rep.reason, "");
}

static void tolerance_edges_and_errors(void **state)
{
    (void)state;
    /* atol 0.1, rtol 0.1: allowed |d| at ref 1 is 0.2, at ref 10 it is 1.1. */
    struct compare_tol tol = {.rtol = 0.1, .atol = 0.1};
    float r[3] = {1, 10, 4}, o[3] = {1.1875f, 11.25f, 4};
    struct tensor to = f32(o, 3), tr = f32(r, 3);
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, &tol, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.mismatches, 1);
    assert_int_equal(rep.nreported, 1);
    assert_int_equal(rep.first[0].index, 1);
    assert_true(rep.first[0].out == 11.25 && rep.first[0].ref == 10.0);
    assert_true(rep.max_abs_err == 1.25);
    assert_true(fabs(rep.max_rel_err - 0.1875) < 1e-12);
    /* ||(0.1875, 1.25, 0)|| / ||(1, 10, 4)|| */
    double want = sqrt(0.1875 * 0.1875 + 1.25 * 1.25) / sqrt(1 + 100 + 16);
    assert_true(fabs(rep.rel_l2_err - want) < 1e-12);
    assert_non_null(strstr(rep.reason, "1 of 3 elements differ; first at index 1"));
}

static void nan_and_inf_in_output_fail(void **state)
{
    (void)state;
    /* Tolerances so loose any finite value passes: non-finite must still fail. */
    struct compare_tol tol = {.rtol = 1e30, .atol = 1e30};
    float r[4] = {1, 2, 3, 4}, o[4] = {1, NAN, INFINITY, -INFINITY};
    struct tensor to = f32(o, 4), tr = f32(r, 4);
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, &tol, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.mismatches, 3);
    assert_int_equal(rep.first[0].index, 1);
    assert_true(isnan(rep.first[0].out));
    assert_true(isinf(rep.max_abs_err));
    assert_true(isinf(rep.rel_l2_err));
    assert_int_equal(rep.unwritten, 0);
}

static void matching_nonfinite_reference_passes(void **state)
{
    (void)state;
    float r[3] = {NAN, INFINITY, -INFINITY}, o[3] = {NAN, INFINITY, -INFINITY};
    struct tensor to = f32(o, 3), tr = f32(r, 3);
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_true(rep.pass);
    o[1] = -INFINITY;
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.first[0].index, 1);
}

static void poison_left_in_output_fails(void **state)
{
    (void)state;
    float r[6] = {1, 2, 3, 4, 5, 6}, o[6] = {1, 2, 3, 4, 5, 6};
    memset(&o[3], KILN_POISON_BYTE, 3 * sizeof(float)); /* unwritten tail */
    struct tensor to = f32(o, 6), tr = f32(r, 6);
    struct compare_tol tol = {.rtol = 1e30, .atol = 1e30};
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, &tol, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.unwritten, 3);
    assert_int_equal(rep.first_unwritten, 3);
    assert_int_equal(rep.mismatches, 0);
    assert_non_null(strstr(rep.reason, "output not written: 3 of 6 elements"));
    assert_non_null(strstr(rep.reason, "first at index 3"));

    /* A single poisoned element in the middle is caught too. */
    float o2[6] = {1, 2, 3, 4, 5, 6};
    memset(&o2[1], 0xFF, sizeof(float));
    to.data = o2;
    assert_int_equal(compare_tensors(&to, &tr, &tol, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.unwritten, 1);
    assert_int_equal(rep.first_unwritten, 1);

    /* A canonical NaN is not poison: it is a wrong value. */
    float o3[6] = {1, 2, 3, 4, 5, 6};
    uint32_t canon = 0x7FC00000;
    memcpy(&o3[0], &canon, 4);
    to.data = o3;
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_int_equal(rep.unwritten, 0);
    assert_int_equal(rep.mismatches, 1);
}

static void poison_for_half_and_int_types(void **state)
{
    (void)state;
    /* bfloat16: 1.0 is 0x3F80 */
    uint16_t rb[2] = {0x3F80, 0x3F80}, ob[2] = {0x3F80, 0xFFFF};
    struct tensor to = mk(DT_BFLOAT16, ob, 2, 2), tr = mk(DT_BFLOAT16, rb, 2, 2);
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_int_equal(rep.unwritten, 1);
    assert_int_equal(rep.first_unwritten, 1);

    /* int32: -1 is poison only where the reference is not -1. */
    int32_t ri[3] = {-1, 5, 7}, oi[3] = {-1, -1, 7};
    to = mk(DT_INT32, oi, 3, 4);
    tr = mk(DT_INT32, ri, 3, 4);
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.unwritten, 1);
    assert_int_equal(rep.first_unwritten, 1);
    oi[1] = 5;
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_true(rep.pass);
    oi[1] = 6; /* integers are exact by default */
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.mismatches, 1);

    /* int64 beyond 2^53 compares by bits, not through double. */
    int64_t r64[1] = {(INT64_C(1) << 60) + 1}, o64[1] = {(INT64_C(1) << 60)};
    to = mk(DT_INT64, o64, 1, 8);
    tr = mk(DT_INT64, r64, 1, 8);
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_false(rep.pass);

    /* float16 1.0 = 0x3C00, 1.001 within 1e-2 */
    uint16_t rh[2] = {0x3C00, 0x4000}, oh[2] = {0x3C01, 0x4000};
    to = mk(DT_FLOAT16, oh, 2, 2);
    tr = mk(DT_FLOAT16, rh, 2, 2);
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_true(rep.pass);
    assert_true(fabs(rep.max_abs_err - 1.0 / 1024) < 1e-15);
}

static void shape_and_dtype_mismatch(void **state)
{
    (void)state;
    float r[4] = {0}, o[4] = {0};
    struct tensor to = f32(o, 3), tr = f32(r, 4);
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_non_null(strstr(rep.reason, "shape mismatch"));
    to = mk(DT_INT32, o, 4, 4);
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_string_equal(rep.reason, "dtype mismatch: output int32, reference float32");
    /* A tensor whose byte count disagrees with its count is a caller bug. */
    to = f32(o, 4);
    to.nbytes = 3;
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_E_INTERNAL);
}

static void weak_all_zero(void **state)
{
    (void)state;
    float r[5] = {0};
    struct tensor tr = f32(r, 5);
    char why[256];
    unsigned f = compare_weak_reference(&tr, NULL, why, sizeof(why));
    assert_true(f & COMPARE_WEAK_ALL_ZERO);
    assert_true(f & COMPARE_WEAK_ZERO_PASSES);
    assert_non_null(strstr(why, "all zeros"));
}

static void weak_tiny_reference(void **state)
{
    (void)state;
    /* float32 default atol 1e-5: a reference of ~1e-6 is passed by zeros. */
    float r[4] = {1e-6f, -3e-6f, 2e-6f, 9e-6f};
    struct tensor tr = f32(r, 4);
    char why[256];
    unsigned f = compare_weak_reference(&tr, NULL, why, sizeof(why));
    assert_false(f & COMPARE_WEAK_ALL_ZERO);
    assert_true(f & COMPARE_WEAK_ZERO_PASSES);
    assert_non_null(strstr(why, "so small"));
    /* ... and a zero output indeed passes the comparison. */
    float z[4] = {0};
    struct tensor tz = f32(z, 4);
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&tz, &tr, NULL, &rep, &e), KILN_OK);
    assert_true(rep.pass);
}

static void weak_near_constant(void **state)
{
    (void)state;
    float r[4] = {100.0f, 100.004f, 99.998f, 100.001f}; /* spread 6e-3, tol ~1e-2 */
    struct tensor tr = f32(r, 4);
    char why[256];
    unsigned f = compare_weak_reference(&tr, NULL, why, sizeof(why));
    assert_int_equal(f, COMPARE_WEAK_NEAR_CONSTANT);
    assert_non_null(strstr(why, "near-constant"));
}

/* A 0-d output (a loss) is one number: always "constant", so only a zero
 * that passes makes it weak (issue 37: all six scalar losses of
 * KernelBench's level 1 were refused as near-constant). */
static void scalar_judged_as_scalar(void **state)
{
    (void)state;
    float loss = 0.731f, tiny = 1e-9f;
    struct tensor tr = f32(&loss, 1);
    tr.ndim = 0;
    char why[256] = "x";
    assert_int_equal(compare_weak_reference(&tr, NULL, why, sizeof(why)), 0);
    assert_string_equal(why, "");
    tr = f32(&tiny, 1);
    tr.ndim = 0;
    assert_int_equal(compare_weak_reference(&tr, NULL, why, sizeof(why)), COMPARE_WEAK_ZERO_PASSES);
    /* Two equal elements are still near-constant. */
    float two[2] = {5.0f, 5.0f};
    tr = f32(two, 2);
    assert_true(compare_weak_reference(&tr, NULL, why, sizeof(why)) & COMPARE_WEAK_NEAR_CONSTANT);
}

/* A mismatch in an N-d output names its N-d index (and the flat one);
 * a 1-d output keeps the flat index alone. */
static void nd_index_in_messages(void **state)
{
    (void)state;
    float r[24] = {0}, o[24] = {0};
    for (int i = 0; i < 24; i++)
        r[i] = o[i] = (float)i + 1.0f;
    o[17] = -5.0f; /* [1, 1, 1] of a [2, 3, 4] tensor */
    struct tensor to = f32(o, 24), tr = f32(r, 24);
    to.ndim = tr.ndim = 3;
    to.shape[0] = tr.shape[0] = 2;
    to.shape[1] = tr.shape[1] = 3;
    to.shape[2] = tr.shape[2] = 4;
    struct compare_report rep;
    struct kiln_err e = {0};
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_non_null(strstr(rep.reason, "1 of 24 elements differ; first at index [1, 1, 1] "
                                       "(flat 17): -5 vs reference 18"));
    assert_int_equal(rep.first[0].index, 17); /* the record keeps the flat index */
    memcpy(&o[17], &(uint32_t){0xFFFFFFFFu}, 4);
    assert_int_equal(compare_tensors(&to, &tr, NULL, &rep, &e), KILN_OK);
    assert_non_null(strstr(rep.reason, "first at index [1, 1, 1] (flat 17)"));
    char at[COMPARE_INDEX_MAX];
    struct tensor one = f32(r, 24);
    compare_index_text(&one, 17, at, sizeof(at));
    assert_string_equal(at, "17");
}

static void strong_reference_is_not_weak(void **state)
{
    (void)state;
    float r[4] = {1.0f, -2.0f, 0.5f, 3.0f};
    struct tensor tr = f32(r, 4);
    char why[256] = "x";
    assert_int_equal(compare_weak_reference(&tr, NULL, why, sizeof(why)), 0);
    assert_string_equal(why, "");
    float n[2] = {1.0f, NAN};
    tr = f32(n, 2);
    assert_int_equal(compare_weak_reference(&tr, NULL, why, sizeof(why)), COMPARE_WEAK_NON_FINITE);
}

/* bfloat16 of a float whose low 16 bits are zero (exact). */
static uint16_t bf16_exact(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    assert_int_equal(u & 0xFFFF, 0);
    return (uint16_t)(u >> 16);
}

/* The tolerance guard against lower precision (VERDICT.md section 3), with
 * gemm_bf16's tolerance: an fp8-accurate output (each element off by half
 * an e4m3 ulp, 2^-5) must fail the comparison, so the guard finds the case
 * strong; a tolerance loose enough to let it pass is flagged, and the
 * guard's verdict agrees with compare_tensors on that very output. */
static void low_precision_guard(void **state)
{
    (void)state;
    const float vals[4] = {1.0f, -2.0f, 0.5f, 3.0f};
    uint16_t r[4], o[4];
    for (int i = 0; i < 4; i++) {
        r[i] = bf16_exact(vals[i]);
        o[i] = bf16_exact(vals[i] * (1.0f + 0x1p-5f)); /* exact in bf16 */
    }
    struct tensor tr = mk(DT_BFLOAT16, r, 4, 2), to = mk(DT_BFLOAT16, o, 4, 2);
    struct compare_tol gemm = {.atol = 1e-3, .rtol = 8e-3}, loose = {.atol = 1e-3, .rtol = 5e-2};
    struct compare_report rep;
    struct kiln_err e = {0};
    char why[256] = "x";

    assert_int_equal(compare_low_precision_passes(&tr, &gemm, 4, "fp8 (e4m3)", why, sizeof(why)),
                     0);
    assert_int_equal(compare_tensors(&to, &tr, &gemm, &rep, &e), KILN_OK);
    assert_false(rep.pass);
    assert_int_equal(rep.mismatches, 4);

    assert_int_equal(compare_low_precision_passes(&tr, &loose, 4, "fp8 (e4m3)", why, sizeof(why)),
                     COMPARE_WEAK_LOW_PRECISION);
    assert_non_null(strstr(why, "accurate only to fp8 (e4m3) (off by 2^-5) passes"));
    assert_int_equal(compare_tensors(&to, &tr, &loose, &rep, &e), KILN_OK);
    assert_true(rep.pass);

    /* The rule's edge: off by exactly rtol passes (<=), off by more fails. */
    struct compare_tol edge = {.atol = 0, .rtol = 0x1p-5};
    assert_int_equal(compare_low_precision_passes(&tr, &edge, 4, "fp8", NULL, 0),
                     COMPARE_WEAK_LOW_PRECISION);
    edge.rtol = 0x1p-6;
    assert_int_equal(compare_low_precision_passes(&tr, &edge, 4, "fp8", NULL, 0), 0);
    /* One failing element is enough (here -2.0 against an absolute 0.04;
     * 1.0, 0.5 and a zero pass): the cheat fails the case. */
    r[3] = bf16_exact(0.0f);
    struct compare_tol abs_only = {.atol = 0.04, .rtol = 0};
    assert_int_equal(compare_low_precision_passes(&tr, &abs_only, 4, "fp8", NULL, 0), 0);
    r[1] = bf16_exact(-1.0f);
    assert_int_equal(compare_low_precision_passes(&tr, &abs_only, 4, "fp8", NULL, 0),
                     COMPARE_WEAK_LOW_PRECISION);
    /* Integers, and bits outside 2 .. 52, are not judged. */
    int32_t ri[2] = {1, 2};
    struct tensor ti = mk(DT_INT32, ri, 2, 4);
    assert_int_equal(compare_low_precision_passes(&ti, &loose, 4, "fp8", NULL, 0), 0);
    assert_int_equal(compare_low_precision_passes(&tr, &loose, 1, "x", NULL, 0), 0);
    assert_int_equal(compare_low_precision_passes(&tr, &loose, 53, "x", NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_outputs_pass),
        cmocka_unit_test(tolerance_edges_and_errors),
        cmocka_unit_test(nan_and_inf_in_output_fail),
        cmocka_unit_test(matching_nonfinite_reference_passes),
        cmocka_unit_test(poison_left_in_output_fails),
        cmocka_unit_test(poison_for_half_and_int_types),
        cmocka_unit_test(shape_and_dtype_mismatch),
        cmocka_unit_test(weak_all_zero),
        cmocka_unit_test(weak_tiny_reference),
        cmocka_unit_test(weak_near_constant),
        cmocka_unit_test(strong_reference_is_not_weak),
        cmocka_unit_test(scalar_judged_as_scalar),
        cmocka_unit_test(nd_index_in_messages),
        cmocka_unit_test(low_precision_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
