/*
 * compare_old.c - evaluator/compare.c as it was before the typed, chunked
 * and threaded paths (commit a03aa61), verbatim but for the names
 * (old_compare_*) and this comment: the baseline test_compare_equiv holds
 * the new comparison to. Do not "fix" it; it is the old behaviour.
 *
 * Original header:
 * compare.c - output comparison, poison detection and the weak-case guard.
 *
 * Elements are decoded here rather than through tensor_get_f64 so this file
 * only depends on struct tensor's fields; the decoding is the same.
 */
#include "compare_old.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

struct compare_tol old_compare_default_tol(enum tensor_dtype dt)
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
static double elem_abs_err(double o, double r)
{
    if (isnan(r))
        return isnan(o) ? 0.0 : INFINITY;
    if (isinf(r))
        return o == r ? 0.0 : INFINITY;
    if (!isfinite(o))
        return INFINITY;
    return fabs(o - r);
}

static bool elem_close(double o, double r, double abs_err, const struct compare_tol *tol)
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

static void ssq_add(struct ssq *s, double x)
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

enum kiln_rc old_compare_tensors(const struct tensor *out, const struct tensor *ref,
                                 const struct compare_tol *tol, struct compare_report *rep,
                                 struct kiln_err *err)
{
    memset(rep, 0, sizeof(*rep));
    rep->first_unwritten = -1;
    enum kiln_rc rc = check_readable(out, "the output", err);
    if (rc == KILN_OK)
        rc = check_readable(ref, "the reference", err);
    if (rc)
        return rc;
    struct compare_tol def = old_compare_default_tol(ref->dtype);
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

    size_t sz = dtype_size(ref->dtype);
    bool is_float = dtype_is_float(ref->dtype);
    bool exact_bits = !is_float && tol->atol == 0.0 && tol->rtol == 0.0;
    const unsigned char *po = out->data, *pr = ref->data;
    struct ssq diff = {0.0, 1.0}, norm = {0.0, 1.0};
    bool l2_inf = false;
    rep->count = ref->count;
    for (size_t i = 0; i < ref->count; i++) {
        const unsigned char *eo = po + i * sz, *er = pr + i * sz;
        /* -1 is a legitimate integer result: poison only counts where the
         * reference differs from it. Bool 0xFF is never valid. */
        if (is_poison(eo, sz) && (is_float || ref->dtype == DT_BOOL || memcmp(eo, er, sz))) {
            if (rep->unwritten++ == 0)
                rep->first_unwritten = (int64_t)i;
            continue;
        }
        double o = elem_f64(ref->dtype, eo), r = elem_f64(ref->dtype, er);
        double ae = elem_abs_err(o, r);
        bool ok;
        if (exact_bits)
            ok = ref->dtype == DT_BOOL ? (eo[0] != 0) == (er[0] != 0) && eo[0] <= 1
                                       : memcmp(eo, er, sz) == 0;
        else
            ok = elem_close(o, r, ae, tol);
        if (ae > rep->max_abs_err || isnan(ae))
            rep->max_abs_err = ae;
        if (r != 0.0 && isfinite(r)) {
            double re = ae / fabs(r);
            if (re > rep->max_rel_err)
                rep->max_rel_err = re;
        }
        if (isinf(ae))
            l2_inf = true;
        else
            ssq_add(&diff, ae);
        if (isfinite(r))
            ssq_add(&norm, r);
        if (!ok) {
            if (rep->nreported < COMPARE_MAX_REPORTED)
                rep->first[rep->nreported++] = (struct compare_mismatch){i, o, r};
            rep->mismatches++;
        }
    }
    double dn = ssq_norm(&diff), rn = ssq_norm(&norm);
    if (l2_inf)
        rep->rel_l2_err = INFINITY;
    else if (rn == 0.0)
        rep->rel_l2_err = dn == 0.0 ? 0.0 : INFINITY;
    else
        rep->rel_l2_err = dn / rn;

    rep->pass = rep->unwritten == 0 && rep->mismatches == 0;
    if (rep->unwritten) {
        rep->pass = false;
        snprintf(rep->reason, sizeof(rep->reason),
                 "output not written: %zu of %zu elements still hold the poison pattern "
                 "(0x%02X bytes), first at index %lld",
                 rep->unwritten, rep->count, KILN_POISON_BYTE, (long long)rep->first_unwritten);
    } else if (rep->mismatches) {
        const struct compare_mismatch *m = &rep->first[0];
        snprintf(rep->reason, sizeof(rep->reason),
                 "%zu of %zu elements differ; first at index %zu: %g vs reference %g "
                 "(atol %g, rtol %g)",
                 rep->mismatches, rep->count, m->index, m->out, m->ref, tol->atol, tol->rtol);
    }
    return KILN_OK;
}

unsigned old_compare_weak_reference(const struct tensor *ref, const struct compare_tol *tol,
                                    char *why, size_t why_len)
{
    struct compare_tol def = old_compare_default_tol(ref->dtype);
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
    bool near_constant = false;
    if (!non_finite) {
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
