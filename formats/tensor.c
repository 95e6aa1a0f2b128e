/*
 * tensor.c - dtype table, checked allocation and element decoding.
 */
#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One table so names and sizes cannot drift apart; indexed by the enum. */
static const struct {
    const char *name;
    size_t size;
} dtype_table[] = {
    [DT_INVALID] = {NULL, 0},      [DT_FLOAT16] = {"float16", 2}, [DT_BFLOAT16] = {"bfloat16", 2},
    [DT_FLOAT32] = {"float32", 4}, [DT_FLOAT64] = {"float64", 8}, [DT_INT8] = {"int8", 1},
    [DT_INT16] = {"int16", 2},     [DT_INT32] = {"int32", 4},     [DT_INT64] = {"int64", 8},
    [DT_UINT8] = {"uint8", 1},     [DT_UINT32] = {"uint32", 4},   [DT_UINT64] = {"uint64", 8},
    [DT_BOOL] = {"bool", 1},
};

#define DTYPE_COUNT (sizeof(dtype_table) / sizeof(dtype_table[0]))

static int dtype_valid(enum tensor_dtype dt)
{
    return (unsigned)dt > DT_INVALID && (unsigned)dt < DTYPE_COUNT;
}

size_t tensor_dtype_size(enum tensor_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].size : 0;
}

const char *tensor_dtype_name(enum tensor_dtype dt)
{
    return dtype_valid(dt) ? dtype_table[dt].name : NULL;
}

enum tensor_dtype tensor_dtype_from_name(const char *name)
{
    if (!name)
        return DT_INVALID;
    for (size_t i = 1; i < DTYPE_COUNT; i++) {
        if (strcmp(dtype_table[i].name, name) == 0)
            return (enum tensor_dtype)i;
    }
    return DT_INVALID;
}

enum kiln_rc tensor_alloc(struct tensor *t, enum tensor_dtype dt, int ndim, const int64_t *shape,
                          size_t max_bytes, struct kiln_err *err)
{
    memset(t, 0, sizeof(*t));
    if (!dtype_valid(dt))
        return kiln_fail(err, KILN_E_USAGE, "tensor_alloc: invalid dtype %d", (int)dt);
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS)
        return kiln_fail(err, KILN_E_USAGE, "tensor: %d dimensions (kiln supports 0 to %d)", ndim,
                         TENSOR_MAX_DIMS);
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return kiln_fail(err, KILN_E_USAGE, "tensor: negative extent %lld in dimension %d",
                             (long long)shape[i], i);
        if ((uint64_t)shape[i] > SIZE_MAX ||
            __builtin_mul_overflow(count, (size_t)shape[i], &count))
            return kiln_fail(err, KILN_E_LIMIT, "tensor: element count overflows");
    }
    size_t nbytes;
    if (__builtin_mul_overflow(count, dtype_table[dt].size, &nbytes))
        return kiln_fail(err, KILN_E_LIMIT, "tensor: byte size overflows");
    if (nbytes > max_bytes)
        return kiln_fail(err, KILN_E_LIMIT, "tensor: %zu bytes, over the %zu-byte limit", nbytes,
                         max_bytes);
    /* One byte for empty tensors so data is never NULL on success. */
    void *data = calloc(nbytes ? nbytes : 1, 1);
    if (!data)
        return kiln_fail(err, KILN_E_NOMEM, "tensor: cannot allocate %zu bytes", nbytes);
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->count = count;
    t->nbytes = nbytes;
    t->data = data;
    return KILN_OK;
}

void tensor_free(struct tensor *t)
{
    if (!t)
        return;
    free(t->data);
    memset(t, 0, sizeof(*t));
}

/* IEEE half: 1 sign, 5 exponent, 10 mantissa bits. */
static double half_to_f64(uint16_t h)
{
    int sign = h >> 15;
    int exp = (h >> 10) & 0x1f;
    int mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)mant, -24); /* subnormal (or zero) */
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp((double)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

/* bfloat16 is the upper half of a float32. */
static double bf16_to_f64(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

double tensor_get_f64(const struct tensor *t, size_t i)
{
    const unsigned char *p = (const unsigned char *)t->data + i * tensor_dtype_size(t->dtype);
    /* memcpy: the data buffer carries no alignment promise per element type. */
    switch (t->dtype) {
    case DT_FLOAT16: {
        uint16_t v;
        memcpy(&v, p, sizeof(v));
        return half_to_f64(v);
    }
    case DT_BFLOAT16: {
        uint16_t v;
        memcpy(&v, p, sizeof(v));
        return bf16_to_f64(v);
    }
    case DT_FLOAT32: {
        float v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case DT_FLOAT64: {
        double v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case DT_INT8:
        return (int8_t)p[0];
    case DT_INT16: {
        int16_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case DT_INT32: {
        int32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case DT_INT64: {
        int64_t v;
        memcpy(&v, p, sizeof(v));
        return (double)v;
    }
    case DT_UINT8:
        return p[0];
    case DT_UINT32: {
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    case DT_UINT64: {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        return (double)v;
    }
    case DT_BOOL:
        return p[0] ? 1.0 : 0.0;
    case DT_INVALID:
        break;
    }
    return NAN;
}

void tensor_shape_format(int ndim, const int64_t *shape, char *buf, size_t size)
{
    if (size == 0)
        return;
    size_t used = 0;
    int n = snprintf(buf, size, "(");
    for (int i = 0; n >= 0 && i < ndim; i++) {
        used += (size_t)n;
        if (used >= size)
            return;
        n = snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    }
    if (n < 0)
        return;
    used += (size_t)n;
    if (used < size)
        snprintf(buf + used, size - used, ndim == 1 ? ",)" : ")");
}

enum kiln_rc tensor_check_shape(const struct tensor *t, const char *what, enum tensor_dtype dt,
                                int ndim, const int64_t *shape, struct kiln_err *err)
{
    if (t->dtype != dt) {
        const char *have = tensor_dtype_name(t->dtype);
        const char *want = tensor_dtype_name(dt);
        return kiln_fail(err, KILN_E_REJECTED, "%s: got %s, the signature says %s", what,
                         have ? have : "invalid", want ? want : "invalid");
    }
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    if (same)
        return KILN_OK;
    char have[160], want[160];
    tensor_shape_format(t->ndim, t->shape, have, sizeof(have));
    tensor_shape_format(ndim, shape, want, sizeof(want));
    return kiln_fail(err, KILN_E_REJECTED, "%s: got shape %s, the signature says %s", what, have,
                     want);
}
