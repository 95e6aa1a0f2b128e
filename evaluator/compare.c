/*
 * compare.c - output comparison, poison detection and the weak-case guard.
 *
 * Elements are decoded here rather than through tensor_get_f64 so this file
 * only depends on struct tensor's fields; the decoding is the same.
 *
 * Speed (big outputs are compared in the parent for every input set):
 * typed loops for float32, float64 and 4- and 8-byte integers next to the
 * generic one, both built on the same per-element step, so they agree to
 * the bit (tests/evaluator_verdict/test_compare_equiv.c holds them to it
 * and to the implementation before them); fixed-size chunks accumulated
 * on as many threads as the process may use, merged in index order.
 */
#include "compare.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The per-element helpers are forced inline into each typed loop. */
#define ACC_INLINE static inline __attribute__((always_inline))

static size_t dtype_size(enum tensor_dtype dt)
{
    switch (dt) {
    case DT_INT8:
    case DT_UINT8:
    case DT_BOOL:
        return 1;
    case DT_FLOAT16:
    case DT_BFLOAT16:
    case DT_INT16:
        return 2;
    case DT_FLOAT32:
    case DT_INT32:
    case DT_UINT32:
        return 4;
    case DT_FLOAT64:
    case DT_INT64:
    case DT_UINT64:
        return 8;
    case DT_INVALID:
        return 0;
    }
    return 0;
}

static const char *dtype_label(enum tensor_dtype dt)
{
    switch (dt) {
    case DT_FLOAT16:
        return "float16";
    case DT_BFLOAT16:
        return "bfloat16";
    case DT_FLOAT32:
        return "float32";
    case DT_FLOAT64:
        return "float64";
    case DT_INT8:
        return "int8";
    case DT_INT16:
        return "int16";
    case DT_INT32:
        return "int32";
    case DT_INT64:
        return "int64";
    case DT_UINT8:
        return "uint8";
    case DT_UINT32:
        return "uint32";
    case DT_UINT64:
        return "uint64";
    case DT_BOOL:
        return "bool";
    case DT_INVALID:
        return "invalid";
    }
    return "invalid";
}

static bool dtype_is_float(enum tensor_dtype dt)
{
    return dt == DT_FLOAT16 || dt == DT_BFLOAT16 || dt == DT_FLOAT32 || dt == DT_FLOAT64;
}

static double half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp((double)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

static double elem_f64(enum tensor_dtype dt, const unsigned char *p)
{
    switch (dt) {
    case DT_FLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return half_to_double(h);
    }
    case DT_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case DT_FLOAT32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case DT_FLOAT64: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    case DT_INT8:
        return (double)(int8_t)p[0];
    case DT_UINT8:
        return (double)p[0];
    case DT_BOOL:
        return p[0] ? 1.0 : 0.0;
    case DT_INT16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case DT_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case DT_UINT32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case DT_INT64: {
        int64_t v;
        memcpy(&v, p, 8);
        return (double)v;
    }
    case DT_UINT64: {
        uint64_t v;
        memcpy(&v, p, 8);
        return (double)v;
    }
    case DT_INVALID:
        return NAN;
    }
    return NAN;
}

struct compare_tol compare_default_tol(enum tensor_dtype dt)
{
    switch (dt) {
    case DT_FLOAT64:
        return (struct compare_tol){.rtol = 1e-9, .atol = 1e-12};
    case DT_FLOAT32:
        return (struct compare_tol){.rtol = 1e-4, .atol = 1e-5};
    case DT_FLOAT16:
        return (struct compare_tol){.rtol = 1e-2, .atol = 1e-3};
    case DT_BFLOAT16:
        return (struct compare_tol){.rtol = 2e-2, .atol = 1e-2};
    case DT_INT8:
    case DT_INT16:
    case DT_INT32:
    case DT_INT64:
    case DT_UINT8:
    case DT_UINT32:
    case DT_UINT64:
    case DT_BOOL:
    case DT_INVALID:
        return (struct compare_tol){.rtol = 0.0, .atol = 0.0};
    }
    return (struct compare_tol){.rtol = 0.0, .atol = 0.0};
}

static bool is_poison(const unsigned char *p, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (p[i] != KILN_POISON_BYTE)
            return false;
    }
    return true;
}

/* The error of one element: infinite when only one side is non-finite or
 * the non-finite values differ, 0 when both are the same non-finite. */
ACC_INLINE double elem_abs_err(double o, double r)
{
    if (isnan(r))
        return isnan(o) ? 0.0 : INFINITY;
    if (isinf(r))
        return o == r ? 0.0 : INFINITY;
    if (!isfinite(o))
        return INFINITY;
    return fabs(o - r);
}

ACC_INLINE bool elem_close(double o, double r, double abs_err, const struct compare_tol *tol)
{
    if (!isfinite(r) || !isfinite(o))
        return abs_err == 0.0;
    return abs_err <= tol->atol + tol->rtol * fabs(r);
}

/* Scaled sum of squares (LAPACK's dnrm2 idea) so large values do not
 * overflow the norm. */
struct ssq {
    double scale, sum;
};

ACC_INLINE void ssq_add(struct ssq *s, double x)
{
    x = fabs(x);
    if (x == 0.0)
        return;
    if (s->scale < x) {
        s->sum = 1.0 + s->sum * (s->scale / x) * (s->scale / x);
        s->scale = x;
    } else {
        s->sum += (x / s->scale) * (x / s->scale);
    }
}

static double ssq_norm(const struct ssq *s)
{
    return s->scale * sqrt(s->sum);
}

static enum kiln_rc check_readable(const struct tensor *t, const char *what, struct kiln_err *err)
{
    size_t sz = dtype_size(t->dtype);
    if (sz == 0)
        return kiln_fail(err, KILN_E_INTERNAL, "compare: %s has an invalid dtype", what);
    if (t->count > 0 && !t->data)
        return kiln_fail(err, KILN_E_INTERNAL, "compare: %s has no data", what);
    if (t->count > SIZE_MAX / sz || t->nbytes != t->count * sz)
        return kiln_fail(err, KILN_E_INTERNAL,
                         "compare: %s holds %zu bytes, not %zu elements of %zu bytes", what,
                         t->nbytes, t->count, sz);
    return KILN_OK;
}

/* What the element loop accumulates over one chunk of elements, one
 * element at a time in index order, by every path (so the typed paths and
 * the generic one agree to the bit). Each loop works on a local copy, so
 * the compiler keeps the running values in registers. */
struct acc {
    const struct compare_tol *tol;
    size_t nreported, mismatches, unwritten;
    int64_t first_unwritten;
    double max_abs_err, max_rel_err;
    struct ssq diff, norm;
    bool l2_inf;
    struct compare_mismatch first[COMPARE_MAX_REPORTED];
};

ACC_INLINE void acc_unwritten(struct acc *a, size_t i)
{
    if (a->unwritten++ == 0)
        a->first_unwritten = (int64_t)i;
}

/* One written element: o and r decoded, `exact` -1 to judge by the
 * tolerance, else 0/1 (the exact-bits verdict of integer dtypes). */
ACC_INLINE void acc_elem(struct acc *a, size_t i, double o, double r, int exact)
{
    double ae = elem_abs_err(o, r);
    bool ok = exact < 0 ? elem_close(o, r, ae, a->tol) : exact == 1;
    if (ae > a->max_abs_err || isnan(ae))
        a->max_abs_err = ae;
    if (r != 0.0 && isfinite(r)) {
        /* Skips the division when ae/|r| cannot exceed the maximum so far:
         * thr < max*|r| exactly (two roundings of at most 2^-53 each,
         * times 1 - 2^-50, no underflow above 2^-1000), so ae <= thr gives
         * ae/|r| < max and the rounded quotient is not above it. */
        double ar = fabs(r);
        double thr = a->max_rel_err * ar * (1.0 - 0x1p-50);
        if (!(isfinite(thr) && thr >= 0x1p-1000 && ae <= thr)) {
            double re = ae / ar;
            if (re > a->max_rel_err)
                a->max_rel_err = re;
        }
    }
    if (isinf(ae))
        a->l2_inf = true;
    else
        ssq_add(&a->diff, ae);
    if (isfinite(r))
        ssq_add(&a->norm, r);
    if (!ok) {
        if (a->nreported < COMPARE_MAX_REPORTED)
            a->first[a->nreported++] = (struct compare_mismatch){i, o, r};
        a->mismatches++;
    }
}

/* Any dtype, element by element through elem_f64: the reference
 * implementation the typed paths below must match. */
static void loop_generic(const struct tensor *out, const struct tensor *ref, size_t lo, size_t hi,
                         struct acc *acc)
{
    struct acc l = *acc, *a = &l;
    size_t sz = dtype_size(ref->dtype);
    bool is_float = dtype_is_float(ref->dtype);
    bool exact_bits = !is_float && a->tol->atol == 0.0 && a->tol->rtol == 0.0;
    const unsigned char *po = out->data, *pr = ref->data;
    for (size_t i = lo; i < hi; i++) {
        const unsigned char *eo = po + i * sz, *er = pr + i * sz;
        /* -1 is a legitimate integer result: poison only counts where the
         * reference differs from it. Bool 0xFF is never valid. */
        if (is_poison(eo, sz) && (is_float || ref->dtype == DT_BOOL || memcmp(eo, er, sz))) {
            acc_unwritten(a, i);
            continue;
        }
        int exact = -1;
        if (exact_bits)
            exact = ref->dtype == DT_BOOL ? (eo[0] != 0) == (er[0] != 0) && eo[0] <= 1
                                          : memcmp(eo, er, sz) == 0;
        acc_elem(a, i, elem_f64(ref->dtype, eo), elem_f64(ref->dtype, er), exact);
    }
    *acc = l;
}

/* float32: every byte 0xFF is poison; compared as doubles, as elem_f64. */
static void loop_f32(const struct tensor *out, const struct tensor *ref, size_t lo, size_t hi,
                     struct acc *acc)
{
    struct acc l = *acc, *a = &l;
    const unsigned char *po = out->data, *pr = ref->data;
    for (size_t i = lo; i < hi; i++) {
        uint32_t bits;
        float o, r;
        memcpy(&bits, po + 4 * i, 4);
        if (bits == UINT32_MAX) {
            acc_unwritten(a, i);
            continue;
        }
        memcpy(&o, po + 4 * i, 4);
        memcpy(&r, pr + 4 * i, 4);
        acc_elem(a, i, (double)o, (double)r, -1);
    }
    *acc = l;
}

static void loop_f64(const struct tensor *out, const struct tensor *ref, size_t lo, size_t hi,
                     struct acc *acc)
{
    struct acc l = *acc, *a = &l;
    const unsigned char *po = out->data, *pr = ref->data;
    for (size_t i = lo; i < hi; i++) {
        uint64_t bits;
        double o, r;
        memcpy(&bits, po + 8 * i, 8);
        if (bits == UINT64_MAX) {
            acc_unwritten(a, i);
            continue;
        }
        memcpy(&o, po + 8 * i, 8);
        memcpy(&r, pr + 8 * i, 8);
        acc_elem(a, i, o, r, -1);
    }
    *acc = l;
}

/* 4- and 8-byte integers: all-ones is poison unless the reference holds
 * the same bits; exact bits unless the workload set a tolerance. */
#define LOOP_INT(name, T, U)                                                                       \
    static void name(const struct tensor *out, const struct tensor *ref, size_t lo, size_t hi,     \
                     struct acc *acc)                                                              \
    {                                                                                              \
        struct acc l = *acc, *a = &l;                                                              \
        bool exact_bits = a->tol->atol == 0.0 && a->tol->rtol == 0.0;                              \
        const unsigned char *po = out->data, *pr = ref->data;                                      \
        for (size_t i = lo; i < hi; i++) {                                                         \
            U ob, rb;                                                                              \
            memcpy(&ob, po + sizeof(T) * i, sizeof(T));                                            \
            memcpy(&rb, pr + sizeof(T) * i, sizeof(T));                                            \
            if (ob == (U) ~(U)0 && ob != rb) {                                                     \
                acc_unwritten(a, i);                                                               \
                continue;                                                                          \
            }                                                                                      \
            T o, r;                                                                                \
            memcpy(&o, &ob, sizeof(T));                                                            \
            memcpy(&r, &rb, sizeof(T));                                                            \
            acc_elem(a, i, (double)o, (double)r, exact_bits ? ob == rb : -1);                      \
        }                                                                                          \
        *acc = l;                                                                                  \
    }

LOOP_INT(loop_i32, int32_t, uint32_t)
LOOP_INT(loop_u32, uint32_t, uint32_t)
LOOP_INT(loop_i64, int64_t, uint64_t)
LOOP_INT(loop_u64, uint64_t, uint64_t)

/* ---- chunks, spread over threads ---- */

/* Elements per chunk. Fixed, so the report does not depend on how many
 * threads ran: chunks are accumulated alone and merged in index order. */
#define COMPARE_CHUNK       ((size_t)1 << 20)
#define COMPARE_MAX_THREADS 16

struct job {
    const struct tensor *out, *ref;
    bool typed;
    size_t nchunks;
    atomic_size_t next;
    struct acc *accs; /* one per chunk, initialized */
};

static void run_chunk(const struct job *j, size_t c)
{
    size_t lo = c * COMPARE_CHUNK;
    size_t hi = lo + COMPARE_CHUNK < j->ref->count ? lo + COMPARE_CHUNK : j->ref->count;
    struct acc *a = &j->accs[c];
    switch (j->typed ? j->ref->dtype : DT_INVALID) {
    case DT_FLOAT32:
        loop_f32(j->out, j->ref, lo, hi, a);
        return;
    case DT_FLOAT64:
        loop_f64(j->out, j->ref, lo, hi, a);
        return;
    case DT_INT32:
        loop_i32(j->out, j->ref, lo, hi, a);
        return;
    case DT_UINT32:
        loop_u32(j->out, j->ref, lo, hi, a);
        return;
    case DT_INT64:
        loop_i64(j->out, j->ref, lo, hi, a);
        return;
    case DT_UINT64:
        loop_u64(j->out, j->ref, lo, hi, a);
        return;
    case DT_FLOAT16:
    case DT_BFLOAT16:
    case DT_INT8:
    case DT_INT16:
    case DT_UINT8:
    case DT_BOOL:
    case DT_INVALID:
        loop_generic(j->out, j->ref, lo, hi, a);
        return;
    }
}

static void *worker(void *arg)
{
    struct job *j = arg;
    for (;;) {
        size_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->nchunks)
            return NULL;
        run_chunk(j, c);
    }
}

/* The CPUs this process may run on, at most COMPARE_MAX_THREADS. */
static int thread_budget(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return n < 1 ? 1 : n > COMPARE_MAX_THREADS ? COMPARE_MAX_THREADS : n;
}

/* Every chunk, by this thread and helpers; a helper that cannot be started
 * leaves its share to the others. */
static void run_chunks(struct job *j)
{
    pthread_t th[COMPARE_MAX_THREADS];
    int want = thread_budget(), started = 0;
    if ((size_t)want > j->nchunks)
        want = (int)j->nchunks;
    for (int t = 1; t < want; t++)
        if (pthread_create(&th[started], NULL, worker, j) == 0)
            started++;
    worker(j);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}

/* Folds chunk b's sum of squares into a: the same scaled form as ssq_add. */
static void ssq_merge(struct ssq *a, const struct ssq *b)
{
    if (b->scale == 0.0)
        return;
    if (a->scale < b->scale) {
        a->sum = b->sum + a->sum * (a->scale / b->scale) * (a->scale / b->scale);
        a->scale = b->scale;
    } else {
        a->sum += b->sum * (b->scale / a->scale) * (b->scale / a->scale);
    }
}

/* Chunk results in index order into the report: counts add, maxima and
 * the first mismatches and unwritten index are those of the whole. */
static void merge(struct compare_report *rep, const struct acc *accs, size_t n, bool *l2_inf,
                  struct ssq *diff, struct ssq *norm)
{
    for (size_t c = 0; c < n; c++) {
        const struct acc *a = &accs[c];
        for (size_t k = 0; k < a->nreported && rep->nreported < COMPARE_MAX_REPORTED; k++)
            rep->first[rep->nreported++] = a->first[k];
        rep->mismatches += a->mismatches;
        if (a->unwritten && rep->unwritten == 0)
            rep->first_unwritten = a->first_unwritten;
        rep->unwritten += a->unwritten;
        if (a->max_abs_err > rep->max_abs_err || isnan(a->max_abs_err))
            rep->max_abs_err = a->max_abs_err;
        if (a->max_rel_err > rep->max_rel_err)
            rep->max_rel_err = a->max_rel_err;
        *l2_inf |= a->l2_inf;
        if (c == 0) {
            *diff = a->diff;
            *norm = a->norm;
        } else {
            ssq_merge(diff, &a->diff);
            ssq_merge(norm, &a->norm);
        }
    }
}

static enum kiln_rc compare_impl(const struct tensor *out, const struct tensor *ref,
                                 const struct compare_tol *tol, struct compare_report *rep,
                                 bool typed, struct kiln_err *err)
{
    memset(rep, 0, sizeof(*rep));
    rep->first_unwritten = -1;
    enum kiln_rc rc = check_readable(out, "the output", err);
    if (rc == KILN_OK)
        rc = check_readable(ref, "the reference", err);
    if (rc)
        return rc;
    struct compare_tol def = compare_default_tol(ref->dtype);
    if (!tol)
        tol = &def;
    if (out->dtype != ref->dtype) {
        rep->pass = false;
        snprintf(rep->reason, sizeof(rep->reason), "dtype mismatch: output %s, reference %s",
                 dtype_label(out->dtype), dtype_label(ref->dtype));
        return KILN_OK;
    }
    bool same_shape = out->ndim == ref->ndim && out->count == ref->count;
    for (int d = 0; same_shape && d < out->ndim && d < TENSOR_MAX_DIMS; d++)
        same_shape = out->shape[d] == ref->shape[d];
    if (!same_shape) {
        rep->pass = false;
        snprintf(rep->reason, sizeof(rep->reason),
                 "shape mismatch: output has %zu elements in %d dims, reference %zu in %d",
                 out->count, out->ndim, ref->count, ref->ndim);
        return KILN_OK;
    }

    rep->count = ref->count;
    struct job j = {.out = out, .ref = ref, .typed = typed};
    j.nchunks = ref->count ? (ref->count - 1) / COMPARE_CHUNK + 1 : 1;
    atomic_init(&j.next, 0);
    j.accs = malloc(j.nchunks * sizeof(*j.accs));
    if (!j.accs)
        return kiln_fail(err, KILN_E_NOMEM, "compare: out of memory for %zu chunks", j.nchunks);
    for (size_t c = 0; c < j.nchunks; c++)
        j.accs[c] =
            (struct acc){.tol = tol, .first_unwritten = -1, .diff = {0.0, 1.0}, .norm = {0.0, 1.0}};
    if (ref->count)
        run_chunks(&j);
    bool l2_inf = false;
    struct ssq diff = {0.0, 1.0}, norm = {0.0, 1.0};
    merge(rep, j.accs, j.nchunks, &l2_inf, &diff, &norm);
    free(j.accs);
    double dn = ssq_norm(&diff), rn = ssq_norm(&norm);
    if (l2_inf)
        rep->rel_l2_err = INFINITY;
    else if (rn == 0.0)
        rep->rel_l2_err = dn == 0.0 ? 0.0 : INFINITY;
    else
        rep->rel_l2_err = dn / rn;

    rep->pass = rep->unwritten == 0 && rep->mismatches == 0;
    char at[COMPARE_INDEX_MAX];
    if (rep->unwritten) {
        rep->pass = false;
        compare_index_text(ref, (size_t)rep->first_unwritten, at, sizeof(at));
        snprintf(rep->reason, sizeof(rep->reason),
                 "output not written: %zu of %zu elements still hold the poison pattern "
                 "(0x%02X bytes), first at index %s",
                 rep->unwritten, rep->count, KILN_POISON_BYTE, at);
    } else if (rep->mismatches) {
        const struct compare_mismatch *m = &rep->first[0];
        compare_index_text(ref, m->index, at, sizeof(at));
        snprintf(rep->reason, sizeof(rep->reason),
                 "%zu of %zu elements differ; first at index %s: %g vs reference %g "
                 "(atol %g, rtol %g)",
                 rep->mismatches, rep->count, at, m->out, m->ref, tol->atol, tol->rtol);
    }
    return KILN_OK;
}

void compare_index_text(const struct tensor *t, size_t flat, char *out, size_t cap)
{
    if (t->ndim <= 1 || t->ndim > TENSOR_MAX_DIMS) {
        snprintf(out, cap, "%zu", flat);
        return;
    }
    size_t idx[TENSOR_MAX_DIMS], rest = flat;
    for (int d = t->ndim - 1; d >= 0; d--) {
        size_t n = t->shape[d] > 0 ? (size_t)t->shape[d] : 1;
        idx[d] = rest % n;
        rest /= n;
    }
    size_t at = 0;
    for (int d = 0; d < t->ndim && at < cap; d++)
        at += (size_t)snprintf(out + at, cap - at, "%s%zu", d ? ", " : "[", idx[d]);
    if (at < cap)
        snprintf(out + at, cap - at, "] (flat %zu)", flat);
}

enum kiln_rc compare_tensors(const struct tensor *out, const struct tensor *ref,
                             const struct compare_tol *tol, struct compare_report *rep,
                             struct kiln_err *err)
{
    return compare_impl(out, ref, tol, rep, true, err);
}

enum kiln_rc compare_tensors_generic(const struct tensor *out, const struct tensor *ref,
                                     const struct compare_tol *tol, struct compare_report *rep,
                                     struct kiln_err *err)
{
    return compare_impl(out, ref, tol, rep, false, err);
}

unsigned compare_weak_reference(const struct tensor *ref, const struct compare_tol *tol, char *why,
                                size_t why_len)
{
    struct compare_tol def = compare_default_tol(ref->dtype);
    if (!tol)
        tol = &def;
    size_t sz = dtype_size(ref->dtype);
    if (sz == 0 || !ref->data || ref->count == 0) {
        if (why && why_len)
            snprintf(why, why_len, "reference is empty or unreadable");
        return COMPARE_WEAK_ALL_ZERO;
    }
    const unsigned char *p = ref->data;
    bool all_zero = true, zero_passes = true, non_finite = false;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < ref->count; i++) {
        double r = elem_f64(ref->dtype, p + i * sz);
        if (!isfinite(r)) {
            non_finite = true;
            continue;
        }
        if (r != 0.0)
            all_zero = false;
        if (!(fabs(r) <= tol->atol + tol->rtol * fabs(r)))
            zero_passes = false;
        if (r < lo)
            lo = r;
        if (r > hi)
            hi = r;
    }
    /* The constant that best fits a tensor in the max-error sense is the
     * midpoint; if even that fails somewhere, no constant passes. */
    /* One element (a 0-d output, a loss) is always "constant": only the
     * zero test above says something about it. */
    bool near_constant = false;
    if (!non_finite && ref->count > 1) {
        double c = lo + (hi - lo) / 2.0;
        near_constant = true;
        for (size_t i = 0; near_constant && i < ref->count; i++) {
            double r = elem_f64(ref->dtype, p + i * sz);
            near_constant = fabs(c - r) <= tol->atol + tol->rtol * fabs(r);
        }
    }
    unsigned flags = 0;
    if (non_finite)
        flags |= COMPARE_WEAK_NON_FINITE;
    if (all_zero && !non_finite)
        flags |= COMPARE_WEAK_ALL_ZERO;
    if (zero_passes && !non_finite)
        flags |= COMPARE_WEAK_ZERO_PASSES;
    if (near_constant)
        flags |= COMPARE_WEAK_NEAR_CONSTANT;
    if (why && why_len) {
        if (flags & COMPARE_WEAK_NON_FINITE)
            snprintf(why, why_len, "the reference holds NaN or Inf");
        else if (flags & COMPARE_WEAK_ALL_ZERO)
            snprintf(why, why_len, "the reference is all zeros: an untouched zeroed output passes");
        else if (flags & COMPARE_WEAK_ZERO_PASSES)
            snprintf(why, why_len,
                     "the reference is so small (max |ref| %g) that a zero tensor passes atol %g",
                     fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi), tol->atol);
        else if (flags & COMPARE_WEAK_NEAR_CONSTANT)
            snprintf(why, why_len,
                     "the reference is near-constant (%g .. %g): the constant %g passes the "
                     "tolerance everywhere",
                     lo, hi, lo + (hi - lo) / 2.0);
        else
            why[0] = '\0';
    }
    return flags;
}

unsigned compare_low_precision_passes(const struct tensor *ref, const struct compare_tol *tol,
                                      int bits, const char *precision, char *why, size_t why_len)
{
    struct compare_tol def = compare_default_tol(ref->dtype);
    if (!tol)
        tol = &def;
    size_t sz = dtype_size(ref->dtype);
    if (bits < 2 || bits > 52 || sz == 0 || !ref->data || !dtype_is_float(ref->dtype))
        return 0;
    /* Half an ulp of a `bits`-bit significand is 2^-(bits+1) relative at
     * the finest. The synthetic output ref * (1 + e) fails at an element exactly when
     * e |r| > atol + rtol |r|: the comparison's own rule, element by
     * element, without building the tensor. */
    double e = ldexp(1.0, -(bits + 1)), largest = 0.0;
    const unsigned char *p = ref->data;
    for (size_t i = 0; i < ref->count; i++) {
        double r = fabs(elem_f64(ref->dtype, p + i * sz));
        if (!isfinite(r))
            continue;
        if (e * r > tol->atol + tol->rtol * r)
            return 0;
        if (r > largest)
            largest = r;
    }
    if (why && why_len)
        snprintf(why, why_len,
                 "an output accurate only to %s (off by 2^-%d) passes atol %g, rtol %g "
                 "(max |ref| %g): a kernel computing in it would pass",
                 precision ? precision : "a lower precision", bits + 1, tol->atol, tol->rtol,
                 largest);
    return COMPARE_WEAK_LOW_PRECISION;
}
