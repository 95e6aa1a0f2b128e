/*
 * test_compare_equiv.c - the fast comparison gives the verdict the old one
 * gave. Three implementations on the same random tensors (every dtype;
 * NaN with several payloads, +-inf, -0, subnormals, huge values, the
 * poison pattern, integer -1 with and without a matching reference,
 * values just inside and outside the tolerance; default, zero and custom
 * tolerances; tensors of 0, 1 and a few elements up to several chunks):
 *
 *   compare_tensors (typed, chunked, threaded) vs compare_tensors_generic:
 *     every field identical to the bit;
 *   compare_tensors vs compare_old.c (the code before them, verbatim):
 *     every field identical to the bit, except rel_l2_err of tensors
 *     larger than one chunk, where the chunks' sums of squares are merged
 *     in another order: within 1e-9 relative (a sequential sum of millions
 *     of terms is itself only good to about 1e-10).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "compare_old.h"

#define CHUNK ((size_t)1 << 20) /* compare.c's COMPARE_CHUNK */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static double rnd_unit(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static const enum tensor_dtype all_dtypes[] = {
    DT_FLOAT16, DT_BFLOAT16, DT_FLOAT32, DT_FLOAT64, DT_INT8,   DT_INT16,
    DT_INT32,   DT_INT64,    DT_UINT8,   DT_UINT32,  DT_UINT64, DT_BOOL,
};

static bool is_float(enum tensor_dtype dt)
{
    return dt == DT_FLOAT16 || dt == DT_BFLOAT16 || dt == DT_FLOAT32 || dt == DT_FLOAT64;
}

/* A value of a float dtype's range: mostly ordinary numbers, sometimes
 * the edges. */
static double pick_value(void)
{
    switch (rnd() % 16) {
    case 0:
        return 0.0;
    case 1:
        return -0.0;
    case 2:
        return 1e-310 * (rnd_unit() - 0.5); /* subnormal double */
    case 3:
        return 1e30 * (rnd_unit() - 0.5);
    case 4:
        return 1e-30 * (rnd_unit() - 0.5);
    default:
        return 8.0 * (rnd_unit() - 0.5);
    }
}

static void store(const struct tensor *t, size_t i, double v)
{
    unsigned char *p = (unsigned char *)t->data + i * tensor_dtype_size(t->dtype);
    switch (t->dtype) {
    case DT_FLOAT16: {
        /* A finite half derived from the value; NaN and inf as such. */
        uint16_t h = isnan(v)   ? 0x7e00
                     : isinf(v) ? 0x7c00
                                : (uint16_t)fmod(fabs(v) * 1000.0, 31744.0);
        if (signbit(v))
            h |= 0x8000;
        memcpy(p, &h, 2);
        return;
    }
    case DT_BFLOAT16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h = (uint16_t)(u >> 16);
        memcpy(p, &h, 2);
        return;
    }
    case DT_FLOAT32: {
        float f = (float)v;
        memcpy(p, &f, 4);
        return;
    }
    case DT_FLOAT64:
        memcpy(p, &v, 8);
        return;
    case DT_INT8:
        p[0] = (unsigned char)(int8_t)(long long)v;
        return;
    case DT_UINT8:
        p[0] = (unsigned char)(long long)v;
        return;
    case DT_BOOL:
        p[0] = (unsigned char)((long long)v & 1);
        return;
    case DT_INT16: {
        int16_t x = (int16_t)(long long)v;
        memcpy(p, &x, 2);
        return;
    }
    case DT_INT32: {
        int32_t x = (int32_t)(long long)v;
        memcpy(p, &x, 4);
        return;
    }
    case DT_UINT32: {
        uint32_t x = (uint32_t)(long long)v;
        memcpy(p, &x, 4);
        return;
    }
    case DT_INT64: {
        int64_t x = (int64_t)v;
        memcpy(p, &x, 8);
        return;
    }
    case DT_UINT64: {
        uint64_t x = (uint64_t)(long long)v;
        memcpy(p, &x, 8);
        return;
    }
    case DT_INVALID:
        return;
    }
}

/* Special bit patterns, written over an element of out and/or ref. */
static void special(const struct tensor *o, const struct tensor *r, size_t i)
{
    size_t sz = tensor_dtype_size(o->dtype);
    unsigned char *po = (unsigned char *)o->data + i * sz;
    unsigned char *pr = (unsigned char *)r->data + i * sz;
    switch (rnd() % 10) {
    case 0: /* poison in the output */
        memset(po, 0xFF, sz);
        return;
    case 1: /* poison bits in both (integer -1 that is right) */
        memset(po, 0xFF, sz);
        memset(pr, 0xFF, sz);
        return;
    case 2: /* NaN, canonical or with a payload, in either or both */
    case 3:
        if (is_float(o->dtype)) {
            double n = rnd() % 2 ? NAN : -NAN;
            store(rnd() % 2 ? o : r, i, n);
            if (rnd() % 2)
                store(rnd() % 2 ? r : o, i, NAN);
            if (o->dtype == DT_FLOAT32 && rnd() % 2) {
                uint32_t payload = 0x7fc00001u | (uint32_t)(rnd() & 0xffff);
                memcpy(rnd() % 2 ? po : pr, &payload, 4);
            }
        }
        return;
    case 4: /* infinities, matching or not */
        if (is_float(o->dtype)) {
            double inf = rnd() % 2 ? INFINITY : -INFINITY;
            store(r, i, inf);
            store(o, i, rnd() % 3 ? inf : rnd() % 2 ? -inf : 1.0);
        }
        return;
    case 5: /* -0 against +0 */
        store(o, i, -0.0);
        store(r, i, 0.0);
        return;
    case 6: /* output infinite where the reference is finite */
        if (is_float(o->dtype))
            store(o, i, INFINITY);
        return;
    default: /* bytes copied: exactly equal */
        memcpy(po, pr, sz);
        return;
    }
}

static void fill(const struct tensor *o, const struct tensor *r, const struct compare_tol *tol)
{
    double atol = tol ? tol->atol : compare_default_tol(r->dtype).atol;
    double rtol = tol ? tol->rtol : compare_default_tol(r->dtype).rtol;
    static const double edge[] = {0.0, 0.5, 0.999, 1.0, 1.001, 2.0, 1e6};
    unsigned density = (unsigned)(rnd() % 4); /* how often specials appear */
    for (size_t i = 0; i < r->count; i++) {
        double v = is_float(r->dtype) ? pick_value() : (double)(int64_t)(rnd() % 200) - 100;
        store(r, i, v);
        double k = edge[rnd() % 7];
        store(o, i, v + (rnd() % 2 ? k : -k) * (atol + rtol * fabs(v)));
        if (!is_float(r->dtype) && rnd() % 4 == 0)
            store(o, i, v + (double)(rnd() % 3) - 1);
        if (density && rnd() % (2u << (2 * density)) == 0)
            special(o, r, i);
    }
}

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof(a)) == 0 || (isnan(a) && isnan(b));
}

static void expect_same(const struct compare_report *a, const struct compare_report *b,
                        bool l2_exact, const char *what)
{
    bool l2 = same_double(a->rel_l2_err, b->rel_l2_err);
    if (!l2 && !l2_exact && isfinite(a->rel_l2_err) && isfinite(b->rel_l2_err))
        l2 = fabs(a->rel_l2_err - b->rel_l2_err) <= 1e-9 * fabs(b->rel_l2_err);
    bool ok = a->pass == b->pass && strcmp(a->reason, b->reason) == 0 && a->count == b->count &&
              a->mismatches == b->mismatches && a->unwritten == b->unwritten &&
              a->first_unwritten == b->first_unwritten &&
              same_double(a->max_abs_err, b->max_abs_err) &&
              same_double(a->max_rel_err, b->max_rel_err) && l2 && a->nreported == b->nreported;
    for (size_t k = 0; ok && k < a->nreported; k++)
        ok = a->first[k].index == b->first[k].index &&
             same_double(a->first[k].out, b->first[k].out) &&
             same_double(a->first[k].ref, b->first[k].ref);
    if (!ok)
        fail_msg("%s: reports differ: pass %d/%d, mismatches %zu/%zu, unwritten %zu/%zu "
                 "(first %lld/%lld), max_abs %.17g/%.17g, max_rel %.17g/%.17g, l2 %.17g/%.17g, "
                 "reason \"%s\" / \"%s\"",
                 what, a->pass, b->pass, a->mismatches, b->mismatches, a->unwritten, b->unwritten,
                 (long long)a->first_unwritten, (long long)b->first_unwritten, a->max_abs_err,
                 b->max_abs_err, a->max_rel_err, b->max_rel_err, a->rel_l2_err, b->rel_l2_err,
                 a->reason, b->reason);
}

static void check_one(enum tensor_dtype dt, size_t n, const struct compare_tol *tol)
{
    struct tensor o, r;
    struct kiln_err err;
    kiln_err_clear(&err);
    int64_t shape[1] = {(int64_t)n};
    assert_int_equal(tensor_alloc(&o, dt, 1, shape, SIZE_MAX, &err), KILN_OK);
    assert_int_equal(tensor_alloc(&r, dt, 1, shape, SIZE_MAX, &err), KILN_OK);
    fill(&o, &r, tol);
    struct compare_report fast, generic, old;
    assert_int_equal(compare_tensors(&o, &r, tol, &fast, &err), KILN_OK);
    assert_int_equal(compare_tensors_generic(&o, &r, tol, &generic, &err), KILN_OK);
    assert_int_equal(old_compare_tensors(&o, &r, tol, &old, &err), KILN_OK);
    char what[96];
    snprintf(what, sizeof(what), "%s n=%zu tol=%s", tensor_dtype_name(dt), n,
             tol ? "custom" : "default");
    expect_same(&fast, &generic, true, what);
    expect_same(&fast, &old, n <= CHUNK, what);
    tensor_free(&o);
    tensor_free(&r);
}

static void random_small_tensors(void **state)
{
    (void)state;
    rng_state = 0x9E3779B97F4A7C15ull;
    static const size_t sizes[] = {0, 1, 2, 7, 64, 1000, 4099};
    struct compare_tol zero = {0.0, 0.0}, loose = {1e-3, 0.5};
    for (int round = 0; round < 12; round++)
        for (size_t d = 0; d < sizeof(all_dtypes) / sizeof(all_dtypes[0]); d++)
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                check_one(all_dtypes[d], sizes[s], NULL);
                check_one(all_dtypes[d], sizes[s], round % 2 ? &zero : &loose);
            }
}

/* Several chunks, so the merge (and the threads) are exercised. */
static void random_chunked_tensors(void **state)
{
    (void)state;
    rng_state = 0xD1B54A32D192ED03ull;
    static const enum tensor_dtype dts[] = {DT_FLOAT32, DT_FLOAT64, DT_INT32, DT_UINT64,
                                            DT_FLOAT16};
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        check_one(dts[d], 2 * CHUNK + 12345, NULL);
        check_one(dts[d], CHUNK, NULL);
        check_one(dts[d], CHUNK + 1, NULL);
    }
}

/* A mismatch and an unwritten element only in a late chunk: the first ones
 * reported are the whole tensor's first, whatever thread found them. */
static void first_reports_come_from_the_right_chunk(void **state)
{
    (void)state;
    struct tensor o, r;
    struct kiln_err err;
    kiln_err_clear(&err);
    size_t n = 3 * CHUNK + 5;
    int64_t shape[1] = {(int64_t)n};
    assert_int_equal(tensor_alloc(&o, DT_FLOAT32, 1, shape, SIZE_MAX, &err), KILN_OK);
    assert_int_equal(tensor_alloc(&r, DT_FLOAT32, 1, shape, SIZE_MAX, &err), KILN_OK);
    float *po = o.data, *pr = r.data;
    for (size_t i = 0; i < n; i++)
        po[i] = pr[i] = (float)(i % 1000) + 1.0f;
    for (size_t k = 0; k < 10; k++)
        po[3 * CHUNK - 100 + 7 * k] += 1.0f;
    po[CHUNK + 3] += 1.0f;
    memset(&po[2 * CHUNK + 9], 0xFF, 4);
    memset(&po[3 * CHUNK + 1], 0xFF, 4);
    struct compare_report rep, old;
    assert_int_equal(compare_tensors(&o, &r, NULL, &rep, &err), KILN_OK);
    assert_int_equal(old_compare_tensors(&o, &r, NULL, &old, &err), KILN_OK);
    assert_int_equal(rep.mismatches, 11);
    assert_int_equal(rep.nreported, COMPARE_MAX_REPORTED);
    assert_int_equal(rep.first[0].index, CHUNK + 3);
    assert_int_equal(rep.first[1].index, 3 * CHUNK - 100);
    assert_int_equal(rep.unwritten, 2);
    assert_int_equal(rep.first_unwritten, 2 * CHUNK + 9);
    expect_same(&rep, &old, false, "late chunks");
    tensor_free(&o);
    tensor_free(&r);
}

/* The division compare.c skips for the maximum relative error: a quotient
 * one ulp above the maximum so far must still raise it. */
static void max_rel_err_one_ulp_above(void **state)
{
    (void)state;
    struct tensor o, r;
    struct kiln_err err;
    kiln_err_clear(&err);
    int64_t shape[1] = {3};
    assert_int_equal(tensor_alloc(&o, DT_FLOAT64, 1, shape, SIZE_MAX, &err), KILN_OK);
    assert_int_equal(tensor_alloc(&r, DT_FLOAT64, 1, shape, SIZE_MAX, &err), KILN_OK);
    double *po = o.data, *pr = r.data;
    pr[0] = pr[1] = pr[2] = 1.0;
    po[0] = 1.5;
    po[1] = 1.5 + 0x1p-52; /* |o - r| / |r| = 0.5 + 2^-52, one ulp above 0.5 */
    po[2] = 1.5;
    struct compare_report rep, generic, old;
    assert_int_equal(compare_tensors(&o, &r, NULL, &rep, &err), KILN_OK);
    assert_int_equal(compare_tensors_generic(&o, &r, NULL, &generic, &err), KILN_OK);
    assert_int_equal(old_compare_tensors(&o, &r, NULL, &old, &err), KILN_OK);
    assert_true(rep.max_rel_err == 0.5 + 0x1p-52);
    expect_same(&rep, &generic, true, "one ulp");
    expect_same(&rep, &old, true, "one ulp");
    tensor_free(&o);
    tensor_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_small_tensors),
        cmocka_unit_test(random_chunked_tensors),
        cmocka_unit_test(first_reports_come_from_the_right_chunk),
        cmocka_unit_test(max_rel_err_one_ulp_above),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
