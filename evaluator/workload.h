/*
 * workload.h - a workload directory: workload.json (workloads/README.md is
 * the format), its scripts and starting kernels, and what they imply per
 * case (concrete shapes, bytes, flops).
 *
 * A workload directory is untrusted. workload_load() reads each file once
 * (regular files only, never through a symlink, with size caps), keeps the
 * bytes in memory so later stages use exactly what was hashed, parses
 * workload.json strictly (unknown keys, wrong types, duplicates and caps are
 * errors naming the file and field, e.g. `workload.json: cases[2].sizes.n:
 * -4 is not in 1..2^40`; every section is read, so all of its problems are
 * said at once, not one per run) and evaluates every case up front, so a
 * loaded workload has no arithmetic left that can fail for its own cases.
 *
 * Lifecycle: workload_load() or workload_parse_json() allocates a `struct
 * workload` the caller owns and frees with workload_free(). Fields are
 * read-only to callers; pointers into it (cases, args) live as long as it.
 */
#ifndef KILN_WORKLOAD_H
#define KILN_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "compare.h"
#include "error.h"
#include "expr.h"
#include "digest.h"
#include "tensor.h"

#define WL_MAX_JSON                   (256u * 1024)
#define WL_MAX_SCRIPT                 (1u << 20) /* inputs.py, reference.py */
#define WL_MAX_KERNEL                 (1u << 20) /* kernel.cu, kernel.c */
#define WL_MAX_DESC                   4096
#define WL_NAME_MAX                   64 /* workload name, [a-z0-9_] */
#define WL_CASE_NAME_MAX              32 /* case names, [a-z0-9_] */
#define WL_MAX_SIZES                  16
#define WL_MAX_ARGS                   32
#define WL_MAX_CASES                  64
#define WL_MAX_HELD_OUT               16
#define WL_SIZE_MAX                   (INT64_C(1) << 40) /* every size is in 1 .. 2^40 */
#define WL_DIM_MAX                    (INT64_C(1) << 40) /* every tensor dimension too */
#define WL_MAX_DRAW                   16                 /* held_out.draw */
#define WL_MAX_WHERE                  16                 /* held_out.where */
#define WL_DRAWN_PREFIX               "ho_" /* names of drawn held-out cases; no declared case uses it */
#define WL_CASE_BYTES                 (UINT64_C(4) << 30)
#define WL_TOTAL_BYTES                (UINT64_C(32) << 30)
#define WL_PROBLEMS_MAX               4096 /* struct wl_problems: the text of every problem */
#define WL_MAX_SCRIPT_MEMORY_PER_BYTE 1024 /* scripts.memory_per_byte */
#define WL_SCRIPT_MEMORY_BASE         (INT64_C(3) << 29) /* python, numpy, torch themselves */

enum wl_arg_kind { WL_ARG_TENSOR, WL_ARG_SCALAR };
enum wl_role { WL_ROLE_IN, WL_ROLE_OUT, WL_ROLE_INOUT };
enum wl_scalar_type { WL_SCALAR_INT32, WL_SCALAR_INT64, WL_SCALAR_FLOAT32, WL_SCALAR_FLOAT64 };
enum wl_case_kind { WL_CASE_CORRECTNESS, WL_CASE_PERFORMANCE, WL_CASE_HELD_OUT };
/* A matrix-product baseline takes m, n, k (cuBLAS SGEMM; cuBLASLt bf16 with
 * fp32 compute); memcpy takes bytes. */
/* TORCH: the problem's torch Model of a workload `kiln import kernelbench`
 * wrote, eager and compiled (pipeline/torch_baseline.h). */
enum wl_baseline_kind {
    WL_BASELINE_NONE,
    WL_BASELINE_CUBLAS_SGEMM,
    WL_BASELINE_MEMCPY,
    WL_BASELINE_CUBLASLT_BF16,
    WL_BASELINE_TORCH,
};
/* Who wrote the workload: a person (no "provenance" key), or a model
 * ("provenance": "model-generated"), whose reference is then no independent
 * oracle: the same model may write the kernels it judges. */
enum wl_provenance { WL_PROVENANCE_AUTHOR = 0, WL_PROVENANCE_MODEL = 1 };

/* The files of a workload directory, in content-hash order. */
enum wl_file {
    WL_FILE_JSON,
    WL_FILE_INPUTS,
    WL_FILE_REFERENCE,
    WL_FILE_KERNEL_CU,
    WL_FILE_KERNEL_C,
    WL_FILE_COUNT
};

struct wl_arg {
    char name[EXPR_IDENT_MAX + 1];
    enum wl_arg_kind kind;
    /* kind == WL_ARG_TENSOR */
    enum tensor_dtype dtype;
    int ndim; /* 0 .. TENSOR_MAX_DIMS */
    struct expr *shape[TENSOR_MAX_DIMS];
    enum wl_role role;
    int tensor_index; /* position among the tensors only; -1 for scalars */
    /* kind == WL_ARG_SCALAR: `expr` (integer types only) or a fixed value */
    enum wl_scalar_type type;
    struct expr *expr; /* NULL when the value is fixed */
    int64_t ivalue;    /* fixed value of an int32/int64 scalar */
    double fvalue;     /* fixed value of a float32/float64 scalar */
};

struct wl_case {
    char name[WL_CASE_NAME_MAX + 1];
    enum wl_case_kind kind;
    int64_t sizes[WL_MAX_SIZES]; /* in the order of workload.size_names */
    unsigned backends;           /* mask of enum kiln_backend */
    uint64_t bytes;              /* sum over the tensors, computed at load */
    int64_t cost_bytes;          /* `cost.bytes` for this case */
    int64_t cost_flops;          /* `cost.flops` for this case */
};

/* A constraint between sizes that every drawn held-out case must meet:
 * `lhs OP rhs` with OP one of <=, <, >=, >, ==. */
enum wl_cmp { WL_CMP_LE, WL_CMP_LT, WL_CMP_GE, WL_CMP_GT, WL_CMP_EQ };
struct wl_where {
    struct expr *lhs, *rhs;
    enum wl_cmp cmp;
    char text[300]; /* as written, for messages */
};

/* How held-out cases are drawn (workloads/README.md, "held_out"): `draw`
 * cases anywhere in the ranges, plus one near each performance case (the
 * timed ones), all meeting `where` and the byte budget. draw == 0: the
 * workload lists only fixed held-out cases, which are public. */
struct wl_held_out_draw {
    int draw;
    /* Per size, in size_names order: a bound is a number, or an expression
     * (non-NULL) over the sizes listed before it, e.g. conv2d's p in
     * [h - r + 1, h + r - 1]; sizes are drawn in that order. */
    int64_t lo[WL_MAX_SIZES], hi[WL_MAX_SIZES];
    struct expr *lo_expr[WL_MAX_SIZES], *hi_expr[WL_MAX_SIZES];
    struct wl_where where[WL_MAX_WHERE];
    size_t nwhere;
    uint64_t max_bytes; /* 0: the largest visible case of the backend */
};

struct wl_tolerance {
    int arg; /* index into args, an out/inout tensor */
    bool has_atol, has_rtol;
    double atol, rtol;
};

struct wl_file_data {
    bool present;
    char *data; /* NUL-terminated copy; NULL when absent */
    size_t len;
};

struct workload {
    char name[WL_NAME_MAX + 1];
    char *description;
    char size_names[WL_MAX_SIZES][EXPR_IDENT_MAX + 1];
    size_t nsizes;
    struct wl_arg args[WL_MAX_ARGS];
    size_t nargs;
    size_t ntensors;
    struct wl_case cases[WL_MAX_CASES];
    size_t ncases;
    struct wl_case held_out[WL_MAX_HELD_OUT]; /* the fixed ones (held_out.include) */
    size_t nheld_out;
    struct wl_held_out_draw held_draw;
    struct wl_tolerance tolerances[WL_MAX_ARGS];
    size_t ntolerances;
    struct expr *cost_bytes, *cost_flops;
    enum wl_baseline_kind baseline;
    struct expr *baseline_expr[3]; /* sgemm, cublaslt_bf16: m, n, k; memcpy: bytes */
    /* "math": the units its flops may use (GPU_UNIT_MASK bits of
     * base/gpupeak.h); the roofline is the fastest one's peak. Without the
     * key, FP32 SIMT, and math_declared false: the tolerance guard against
     * lower precision (VERDICT.md section 3) runs only for declared math. */
    unsigned math;
    bool math_declared;
    char accept_weak[WL_MAX_CASES][WL_CASE_NAME_MAX + 1];
    size_t naccept_weak;
    unsigned backends; /* mask of enum kiln_backend, non-empty */
    enum wl_provenance provenance;
    /* "scripts": {"memory_per_byte": N}: the script sandbox's memory limit is
     * at least N times a case's tensor bytes (plus WL_SCRIPT_MEMORY_BASE),
     * for references that hold float64 copies and intermediates; 0: unset
     * (pipeline/inputs.c's default). */
    int script_memory_per_byte;
    /* Filled by workload_load (empty after workload_parse_json). */
    struct wl_file_data files[WL_FILE_COUNT];
    char hash[SHA256_HEX_LEN + 1]; /* content hash; "" when not loaded from a directory */
};

/* The concrete shape of one tensor argument for one case. */
struct wl_shape {
    int arg; /* index into workload.args */
    enum tensor_dtype dtype;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    uint64_t count;  /* product of shape */
    uint64_t nbytes; /* count * element size */
};

/* Loads the workload in directory `dir`: workload.json, inputs.py,
 * reference.py and, when there, the starting kernel of each backend
 * (kernel.cu / kernel.c; optional: without one candidates are still judged
 * against the reference, but no speedup vs a start exists and the tuner has
 * nothing to tune), and computes the content hash. */
enum kiln_rc workload_load(const char *dir, struct workload **out,
                           struct kiln_err *err) KILN_NODISCARD;

/* Every problem of a workload.json, not only the first (one run of
 * `kiln workload check` names them all): `n` of them, and in `text` as
 * many whole lines as fit, one per problem, without the file name
 * ("cases[0].sizes.n: -4 is not in 1..2^40\n"). */
struct wl_problems {
    size_t n;
    char text[WL_PROBLEMS_MAX];
};

/* As workload_load; when workload.json has problems, all of them go into
 * *probs (n 0 otherwise, and when the failure is not workload.json's
 * content: a missing file, bad JSON). The error's message holds as many as
 * fit ("DIR/workload.json: 3 problems:" and a line each, "... and N more").
 * NULL: not wanted. */
enum kiln_rc workload_load_problems(const char *dir, struct workload **out,
                                    struct wl_problems *probs, struct kiln_err *err) KILN_NODISCARD;

/* Parses and validates workload.json text (`len` bytes, at most WL_MAX_JSON)
 * without touching the filesystem. `dirname` prefixes messages
 * ("DIR/workload.json: ..."); NULL gives "workload.json: ...". */
enum kiln_rc workload_parse_json(const char *text, size_t len, const char *dirname,
                                 struct workload **out, struct kiln_err *err) KILN_NODISCARD;

/* workload_parse_json with every problem into *probs (workload_load_problems). */
enum kiln_rc workload_parse_json_problems(const char *text, size_t len, const char *dirname,
                                          struct workload **out, struct wl_problems *probs,
                                          struct kiln_err *err) KILN_NODISCARD;

/* Frees `w`; NULL is fine. */
void workload_free(struct workload *w);

/* Visible or held-out case called `name`; NULL when there is none. */
const struct wl_case *workload_case_by_name(const struct workload *w, const char *name);

/* Index of signature argument `name`, or -1. */
int workload_arg_index(const struct workload *w, const char *name);

/* Index of size `name`, or -1. */
int workload_size_index(const struct workload *w, const char *name);

/* Fills vars[0 .. w->nsizes) with the case's size bindings (names point
 * into `w`) for expr_eval. */
void workload_case_vars(const struct workload *w, const struct wl_case *c,
                        struct expr_var vars[WL_MAX_SIZES]);

/* Concrete shapes of every tensor argument for case `c`, in signature order:
 * shapes[0 .. w->ntensors). */
enum kiln_rc workload_case_shapes(const struct workload *w, const struct wl_case *c,
                                  struct wl_shape shapes[WL_MAX_ARGS],
                                  struct kiln_err *err) KILN_NODISCARD;

/* Total tensor bytes and the cost expressions (bytes moved, flops) for `c`. */
enum kiln_rc workload_case_cost(const struct workload *w, const struct wl_case *c,
                                uint64_t *tensor_bytes, int64_t *cost_bytes, int64_t *cost_flops,
                                struct kiln_err *err) KILN_NODISCARD;

/* Value of integer scalar argument `arg` for case `c` (its expr, or its
 * fixed value). KILN_E_USAGE when `arg` is not an integer scalar. */
enum kiln_rc workload_case_int_scalar(const struct workload *w, const struct wl_case *c, int arg,
                                      int64_t *value, struct kiln_err *err) KILN_NODISCARD;

/* True when case `c` meets every `where` constraint of the held-out draw
 * (false also when one cannot be evaluated for it). */
bool workload_where_holds(const struct workload *w, const struct wl_case *c);

/* The held-out draw's range of size `k` given the sizes before it in `c`
 * (a bound below 1 counts as 1); false when a bound cannot be evaluated. */
bool workload_draw_bounds(const struct workload *w, const struct wl_case *c, size_t k, int64_t *lo,
                          int64_t *hi);

/* Name used in messages: "cuda"/"cpu" etc. live in backend.h; this gives
 * the workload-facing file name of `f` ("workload.json", "kernel.cu"). */
const char *workload_file_name(enum wl_file f);

/* The starting kernel's file of backend `b` (WL_FILE_KERNEL_CU / _C). */
enum wl_file workload_kernel_file(enum kiln_backend b);

/* The workload's starting kernel for backend `b`; NULL when it has none. */
const struct wl_file_data *workload_start_kernel(const struct workload *w, enum kiln_backend b);

/* Whether `k` is a matrix-product baseline (m, n, k). */
bool workload_baseline_is_gemm(enum wl_baseline_kind k);

/* The tolerance output argument `arg` is judged with (a verdict rule): the
 * dtype's default (compare.h) with the workload's overrides applied. */
struct compare_tol workload_tolerance(const struct workload *wl, int arg);

#endif
