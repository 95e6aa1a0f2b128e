/*
 * harness_plan.h - the plan document (plan.json) the trusted parent writes
 * and the sandboxed harness reads: the signature, the launches, and per case
 * the shapes, scalar values, launch dimensions and input sets to run, plus
 * the timing options. Schema: harness/HARNESS.md section 2.
 *
 * The parent builds a `struct harness_plan` (zero it, fill it, add cases
 * with harness_plan_add_case) and serializes it with harness_plan_write().
 * The harness parses it with harness_plan_parse(), which is strict even
 * though the writer is trusted: unknown or duplicate keys, wrong types,
 * out-of-range numbers and references to unknown names are rejected.
 *
 * A baseline plan (`baseline` set, formats/harness_plan_baseline.c) names
 * a vendor operation per case instead of a signature and launches; the same
 * functions read, check and write it.
 *
 * Lifecycle: a parsed or built plan owns `cases`; release it with
 * harness_plan_free() (safe on a zeroed plan and after a failed parse).
 */
#ifndef KILN_HARNESS_PLAN_H
#define KILN_HARNESS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"

#define HARNESS_PLAN_VERSION            1
#define HARNESS_PLAN_MAX_BYTES          (4u << 20) /* whole plan.json */
#define HARNESS_PLAN_MAX_DEPTH          8          /* valid plans have depth 5 */
#define HARNESS_PLAN_MAX_ARGS           32         /* signature entries */
#define HARNESS_PLAN_MAX_LAUNCH         16
#define HARNESS_PLAN_MAX_CASES          64
#define HARNESS_PLAN_MAX_SETS           16
#define HARNESS_PLAN_MIN_TIMED_SETS     3  /* input sets per timed (performance) case */
#define HARNESS_PLAN_NAME_MAX           65 /* identifier bytes including the NUL */
#define HARNESS_PLAN_CASE_MAX           33 /* case and set names: [a-z0-9_]{1,32} */
#define HARNESS_PLAN_MAX_DIM            (INT64_C(1) << 40)
#define HARNESS_PLAN_MAX_CASE_BYTES     (UINT64_C(4) << 30) /* all tensors of a case */
#define HARNESS_PLAN_MAX_RUNS           100000 /* warmups, iterations, max_iterations */
#define HARNESS_PLAN_MAX_GUARD          (UINT64_C(16) << 20)
#define HARNESS_PLAN_DEFAULT_WARMUPS    10
#define HARNESS_PLAN_DEFAULT_ITERATIONS 100
#define HARNESS_PLAN_DEFAULT_GUARD      65536
/* The harness's own watchdog (HARNESS.md section 3): a case that runs
 * longer fails with `timeout`, well inside the sandbox's time limit. */
#define HARNESS_PLAN_DEFAULT_CASE_TIMEOUT_MS 60000
#define HARNESS_PLAN_MAX_TIMEOUT_MS          3600000

enum harness_backend { HB_CUDA = 0, HB_CPU = 1 };
/* Baseline mode (HARNESS.md section 7): instead of a candidate module the
 * plan names a vendor operation the harness times itself. */
enum harness_baseline {
    HBL_NONE = 0,
    HBL_MEMCPY = 1,
    HBL_CUBLAS_SGEMM = 2,
    HBL_CUBLASLT_BF16 = 3, /* cuBLASLt bf16 GEMM, fp32 compute, bf16 out; cpu: a C reference */
};
enum harness_role { HR_IN = 0, HR_OUT = 1, HR_INOUT = 2 };
enum harness_scalar { HS_INT32 = 0, HS_INT64 = 1, HS_FLOAT32 = 2, HS_FLOAT64 = 3 };

/* One signature argument: a tensor (dtype, role) or a scalar (type). */
struct harness_arg {
    char name[HARNESS_PLAN_NAME_MAX]; /* C identifier, unique */
    bool is_tensor;
    enum tensor_dtype dtype;  /* tensor */
    enum harness_role role;   /* tensor */
    enum harness_scalar type; /* scalar */
};

/* One launch: a kernel and the signature arguments it takes, in order. */
struct harness_launch {
    char kernel[HARNESS_PLAN_NAME_MAX]; /* C identifier, not kiln_-prefixed */
    int nargs;
    int args[HARNESS_PLAN_MAX_ARGS]; /* indexes into harness_plan.args */
};

/* Launch geometry of one launch in one case (cuda only). The parser checks
 * ranges CUDA can express; device limits (threads per block, shared memory)
 * are the device's to enforce, so an over-limit plan fails with CUDA's own
 * error name. */
struct harness_dims {
    uint32_t grid[3];  /* x 1 .. 2^31-1, y and z 1 .. 65535 */
    uint32_t block[3]; /* each 1 .. 1024 (z 1 .. 64) */
    uint32_t smem;     /* dynamic shared memory bytes */
};

union harness_value {
    int64_t i; /* int32, int64 */
    double f;  /* float32 (already rounded to float), float64 */
};

struct harness_case {
    char name[HARNESS_PLAN_CASE_MAX];
    bool timed; /* performance case: timed after the correctness runs */
    /* Indexed like harness_plan.args; only tensor entries are used. */
    int ndim[HARNESS_PLAN_MAX_ARGS];
    int64_t shape[HARNESS_PLAN_MAX_ARGS][TENSOR_MAX_DIMS];
    /* Indexed like harness_plan.args; only scalar entries are used. */
    union harness_value value[HARNESS_PLAN_MAX_ARGS];
    struct harness_dims dims[HARNESS_PLAN_MAX_LAUNCH]; /* cuda only */
    int nsets;
    char sets[HARNESS_PLAN_MAX_SETS][HARNESS_PLAN_CASE_MAX];
    /* Baseline mode only (then the fields above are unused and nsets is 0):
     * memcpy {bytes read plus written, -, -}; cublas_sgemm {m, n, k}. */
    int64_t baseline[3];
};

struct harness_plan {
    enum harness_backend backend;
    int warmups;       /* 0 .. MAX_RUNS, default 10 */
    int iterations;    /* 1 .. MAX_RUNS, default 100; the minimum when adaptive */
    bool adaptive;     /* stop on target_rse or budget_ms, at most max_iterations */
    double target_rse; /* relative standard error of the mean, 0 < x < 1 */
    double budget_ms;  /* wall time for one case's measured runs, > 0 */
    int max_iterations;
    bool l2_flush;        /* default true; false is the documented "hot" mode */
    bool reload;          /* reload the candidate module before every run */
    uint64_t guard_bytes; /* poisoned guard around each tensor, 256 .. 16 MiB */
    /* Watchdog: one case may take case_timeout_ms (100 .. MAX, default
     * 60 s); all of them together deadline_ms from the harness's start
     * (0: none; else 100 .. MAX). */
    int64_t case_timeout_ms;
    int64_t deadline_ms;
    int nargs;
    struct harness_arg args[HARNESS_PLAN_MAX_ARGS];
    int nlaunches;
    struct harness_launch launches[HARNESS_PLAN_MAX_LAUNCH];
    int ncases;
    struct harness_case *cases; /* owned */
    /* HBL_NONE: a candidate plan. Otherwise a baseline plan: no signature,
     * launches, reload or guard_bytes; every case is timed. */
    enum harness_baseline baseline;
};

/* Fills `plan` with the defaults above and no args, launches or cases. */
void harness_plan_init(struct harness_plan *plan);

/* Appends a zeroed case and returns it in *out (owned by the plan). */
enum kiln_rc harness_plan_add_case(struct harness_plan *plan, struct harness_case **out,
                                   struct kiln_err *err) KILN_NODISCARD;

/* Checks every rule the parser checks on an in-memory plan (the writer calls
 * it first, so a plan that is written can be read back). */
enum kiln_rc harness_plan_validate(const struct harness_plan *plan,
                                   struct kiln_err *err) KILN_NODISCARD;

/* Parses `len` bytes of plan.json. On failure `plan` is left empty. */
enum kiln_rc harness_plan_parse(const void *buf, size_t len, struct harness_plan *plan,
                                struct kiln_err *err) KILN_NODISCARD;

/* Reads and parses the file at `path` (O_NOFOLLOW, at most MAX_BYTES). */
enum kiln_rc harness_plan_read_file(const char *path, struct harness_plan *plan,
                                    struct kiln_err *err) KILN_NODISCARD;

/* Serializes a valid plan as a new NUL-terminated malloc'd string *out. */
enum kiln_rc harness_plan_write(const struct harness_plan *plan, char **out,
                                struct kiln_err *err) KILN_NODISCARD;

/* Bytes of tensor argument `arg` in case `c` (count * dtype size). The plan
 * must be valid (the product cannot overflow then). */
uint64_t harness_case_tensor_bytes(const struct harness_plan *plan, const struct harness_case *c,
                                   int arg);

/* "memcpy", "cublas_sgemm", "cublaslt_bf16"; NULL for HBL_NONE or a value
 * outside the enum. */
const char *harness_baseline_name(enum harness_baseline b);

/* Device bytes one case of a baseline plan allocates: memcpy, a source and
 * a destination of ceil(bytes / 2) each; cublas_sgemm, float32 A (m*k), B
 * (k*n) and C (m*n); cublaslt_bf16, the same in bfloat16 (2 bytes each;
 * the harness's fixed workspace is not counted). UINT64_MAX when that
 * overflows. A valid plan keeps it
 * at most HARNESS_PLAN_MAX_CASE_BYTES. */
uint64_t harness_baseline_case_bytes(enum harness_baseline b, const int64_t v[3]);

/* Whether `b` is a matrix product (m, n, k per case). */
bool harness_baseline_is_gemm(enum harness_baseline b);

/* Index of the argument named `name`, or -1. */
int harness_plan_find_arg(const struct harness_plan *plan, const char *name);

/* Frees what `plan` owns and empties it. */
void harness_plan_free(struct harness_plan *plan);

/* Case and set names become path components and timings.json names:
 * [a-z0-9_], 1 to HARNESS_PLAN_CASE_MAX-1 characters. */
bool harness_plan_name_ok(const char *s);

#endif
