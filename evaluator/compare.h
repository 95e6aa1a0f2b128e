/*
 * compare.h - output comparison against the reference, detection of
 * unwritten (still poisoned) outputs, and the weak-case guard (VERDICT.md
 * sections 2 and 3).
 *
 * Works on `struct tensor` values the caller owns (dtype, shape, count,
 * data); nothing here keeps a pointer to them. The report is a plain value.
 */
#ifndef KILN_COMPARE_H
#define KILN_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"

/* The harness fills every output byte with this before each run. */
#define KILN_POISON_BYTE 0xFF

#define COMPARE_MAX_REPORTED 8 /* mismatches listed by index */
#define COMPARE_REASON_MAX   256

/* numpy-style: |out - ref| <= atol + rtol * |ref| */
struct compare_tol {
    double rtol;
    double atol;
};

/* The per-dtype defaults of VERDICT.md (exact for integers and bool). */
struct compare_tol compare_default_tol(enum tensor_dtype dt);

struct compare_mismatch {
    size_t index; /* flat C-order index */
    double out, ref;
};

struct compare_report {
    bool pass;
    char reason[COMPARE_REASON_MAX]; /* empty on pass */
    size_t count;                    /* elements compared */
    size_t mismatches;               /* written elements out of tolerance */
    size_t unwritten;                /* elements still holding the poison */
    int64_t first_unwritten;         /* -1 when none */
    double max_abs_err;              /* over written elements; inf for non-finite */
    double max_rel_err;              /* over elements where ref != 0 */
    double rel_l2_err;               /* ||out-ref|| / ||ref|| */
    size_t nreported;
    struct compare_mismatch first[COMPARE_MAX_REPORTED];
};

/* Compares `out` with `ref` under `tol` (NULL: the dtype's default). The
 * outcome is in `rep` (a failed comparison still returns KILN_OK); an error
 * is returned only for tensors that cannot be read (no data, bad dtype). */
enum kiln_rc compare_tensors(const struct tensor *out, const struct tensor *ref,
                             const struct compare_tol *tol, struct compare_report *rep,
                             struct kiln_err *err) KILN_NODISCARD;

/* compare_tensors, element by element through one generic decoder for
 * every dtype: the reference implementation. compare_tensors takes typed
 * paths (float32, float64, 4- and 8-byte integers) that give the same
 * report to the bit; the tests hold them to that. */
enum kiln_rc compare_tensors_generic(const struct tensor *out, const struct tensor *ref,
                                     const struct compare_tol *tol, struct compare_report *rep,
                                     struct kiln_err *err) KILN_NODISCARD;

#define COMPARE_INDEX_MAX 200

/* Element `flat` (C order) of `t` as a message shows it: "28" for a 0-d or
 * 1-d tensor, "[1, 2, 3] (flat 28)" for an N-d one. */
void compare_index_text(const struct tensor *t, size_t flat, char *out, size_t cap);

/* Weak-case reasons, a bit set. */
enum compare_weak {
    COMPARE_WEAK_ALL_ZERO = 1u << 0,      /* every reference element is 0 */
    COMPARE_WEAK_ZERO_PASSES = 1u << 1,   /* a zero tensor passes the tolerance */
    COMPARE_WEAK_NEAR_CONSTANT = 1u << 2, /* one constant passes (never for 1 element) */
    COMPARE_WEAK_NON_FINITE = 1u << 3,    /* the reference holds NaN or Inf */
    COMPARE_WEAK_LOW_PRECISION = 1u << 4, /* a lower precision's output passes (below) */
};

/* Returns the weak-case reasons for reference output `ref` under `tol`
 * (NULL: default), 0 when the case is fit for scoring; when `why` is not
 * NULL it receives a one-line explanation. */
unsigned compare_weak_reference(const struct tensor *ref, const struct compare_tol *tol, char *why,
                                size_t why_len);

/* The tolerance guard against lower precision (VERDICT.md section 3): an
 * output accurate only to `bits` significand bits (fp8 e4m3: 4, bf16: 8,
 * tf32: 11) may be off by half an ulp of that precision, at least
 * 2^-(bits+1) of |ref| in every element. COMPARE_WEAK_LOW_PRECISION when
 * every element of `ref` perturbed so (ref * (1 + 2^-(bits+1))) still
 * passes `tol` (NULL:
 * the dtype's default), i.e. when a kernel computing in that precision
 * could pass; 0 when some element fails, or `bits` is outside 2 .. 52.
 * `why` (when not NULL) says which precision passes and why. */
unsigned compare_low_precision_passes(const struct tensor *ref, const struct compare_tol *tol,
                                      int bits, const char *precision, char *why, size_t why_len);

#endif
