/*
 * tensor.h - an in-memory tensor: dtype, shape and C-order data. The common
 * value passed between the .npy reader/writer, the comparison and the
 * harnesses. Data is little-endian, as on every host kiln supports.
 */
#ifndef KILN_TENSOR_H
#define KILN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TENSOR_MAX_DIMS 8

enum tensor_dtype {
    DT_INVALID = 0,
    DT_FLOAT16,  /* npy '<f2' */
    DT_BFLOAT16, /* npy '<V2' with kiln's convention, see npy.h */
    DT_FLOAT32,  /* '<f4' */
    DT_FLOAT64,  /* '<f8' */
    DT_INT8,     /* '|i1' */
    DT_INT16,    /* '<i2' */
    DT_INT32,    /* '<i4' */
    DT_INT64,    /* '<i8' */
    DT_UINT8,    /* '|u1' */
    DT_UINT32,   /* '<u4' */
    DT_UINT64,   /* '<u8' */
    DT_BOOL,     /* '|b1' */
};

struct tensor {
    enum tensor_dtype dtype;
    int ndim; /* 0 .. TENSOR_MAX_DIMS (0: a scalar) */
    int64_t shape[TENSOR_MAX_DIMS];
    size_t count;  /* product of shape, 1 for ndim 0 */
    size_t nbytes; /* count * tensor_dtype_size(dtype) */
    void *data;    /* owned: free with tensor_free */
};

/* Bytes per element, 0 for DT_INVALID. */
size_t tensor_dtype_size(enum tensor_dtype dt);

/* Workload-facing name ("float32", "bfloat16"), NULL for DT_INVALID. */
const char *tensor_dtype_name(enum tensor_dtype dt);

/* Inverse of tensor_dtype_name; DT_INVALID when unknown. */
enum tensor_dtype tensor_dtype_from_name(const char *name);

/* Allocates a zero-filled tensor; checks count and byte overflow and
 * `max_bytes` (KILN_E_LIMIT). Extents must be >= 0 and ndim within
 * 0..TENSOR_MAX_DIMS (KILN_E_USAGE). data is never NULL on success, even
 * for zero elements. On failure `t` is left empty (data NULL). */
enum kiln_rc tensor_alloc(struct tensor *t, enum tensor_dtype dt, int ndim, const int64_t *shape,
                          size_t max_bytes, struct kiln_err *err) KILN_NODISCARD;

/* Frees t->data and resets `t`. Safe on an empty tensor. */
void tensor_free(struct tensor *t);

/* Element i as double (float16/bfloat16 decoded; bool 0/1). `i` must be
 * below t->count (not checked: callers loop over count). */
double tensor_get_f64(const struct tensor *t, size_t i);

/* Writes "(3, 4)" ("()" for a scalar, "(3,)" for one dimension, as numpy
 * prints shapes) into buf, truncating to `size` bytes. */
void tensor_shape_format(int ndim, const int64_t *shape, char *buf, size_t size);

/*
 * Checks `t` against what the workload signature declares: dtype, number of
 * dimensions and every extent. `what` names the tensor in the message, e.g.
 * `x.npy: shape (3, 4), signature says (3, 5)` or `x.npy: float64,
 * signature says float32`. Fails with
 * KILN_E_REJECTED (the tensor came from untrusted code).
 */
enum kiln_rc tensor_check_shape(const struct tensor *t, const char *what, enum tensor_dtype dt,
                                int ndim, const int64_t *shape,
                                struct kiln_err *err) KILN_NODISCARD;

#endif
