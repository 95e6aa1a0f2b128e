/*
 * kbprobe.h - what a KernelBench problem's code says about itself, learned
 * by running it in the `script` sandbox (never on the host): kbprobe.py
 * evaluates get_init_inputs(), get_inputs() and the Model at many sizes
 * (torch's meta device for shapes; small real runs where meta cannot) and
 * reports
 *   - the tensors' dtypes and the model's parameters;
 *   - the sizes: the problem's literal constants >= 8, one per distinct
 *     constant (those broadcasting ties stay one), and which constant each
 *     pins (`pins`);
 *   - every tensor dimension as an expression over the sizes, fitted and
 *     checked on random valid points ("" where none fits);
 *   - the cases: small and odd (correctness, every size distinct), held (a
 *     fixed held-out case, used when no ranges can be drawn), cpu and kb
 *     (performance: scaled to the cpu budget; the problem's own sizes, or
 *     all sizes scaled by one factor to fit the cuda budget);
 *   - held-out ranges and `where` constraints a kiln draw can use, or none;
 *   - cost.flops (matrix products and convolutions, as
 *     torch.utils.flop_counter counts them), the float64 reference's memory
 *     per tensor byte, and the tolerance (KernelBench's, atol lowered for
 *     small outputs).
 *
 * The report comes from untrusted code: kbprobe_parse reads it through
 * json_strict with caps, checks every name, count, dtype, dimension and
 * expression (each must give the case's dimensions in every case), and
 * never lets its text reach a generated file unchecked (names are
 * [A-Za-z_][A-Za-z0-9_]*, expressions [A-Za-z0-9_ +*-/()%=<>], parameter
 * names folded to an identifier).
 */
#ifndef KILN_KBPROBE_H
#define KILN_KBPROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "kbimport.h"

#define KBP_MAX_CASES   5 /* small, odd, held, cpu, kb: in that order */
#define KBP_MAX_PARAMS  24
#define KBP_MAX_TENSORS (KB_MAX_INPUTS + KBP_MAX_PARAMS + 1)
#define KBP_MAX_WHERE   16

enum kbp_role { KBP_IN, KBP_PARAM, KBP_OUT };

struct kbp_tensor {
    char name[KB_NAME_MAX + 1];   /* the signature's name (a safe identifier) */
    char source[KB_NAME_MAX + 1]; /* a parameter's dotted name, [A-Za-z0-9_.] */
    enum kbp_role role;
    char dtype[12];
    bool scalar; /* an input get_inputs() gives as a python number: a 0-d tensor */
    int ndims;
    char shape[KB_MAX_DIMS][KB_EXPR_MAX + 1]; /* per dimension; "" when none fits */
};

enum kbp_kind { KBP_CORRECTNESS, KBP_HELD, KBP_PERFORMANCE };

struct kbp_case {
    const char *name; /* one of kbp_case_names */
    enum kbp_kind kind;
    const char *backend;          /* "cpu" or "cuda" for a performance case, else NULL */
    int64_t values[KB_SIZES_MAX]; /* per size */
    int64_t dims[KBP_MAX_TENSORS][KB_MAX_DIMS];
};

/* How a performance case was scaled down ("" when it has the problem's
 * own sizes). */
struct kbp_scaled {
    double factor;
    long long bytes;
    bool host_bound; /* the host's memory for its float64 reference bound it */
    char sizes[400]; /* "dim 16384 -> 4096, ..." */
};

struct kb_probe {
    bool meta; /* shapes from the meta device (else from small real runs) */
    size_t nsizes;
    char size_names[KB_SIZES_MAX][KB_NAME_MAX + 1];
    size_t npins; /* the problem's constant pins[i].name takes size pins[i].size */
    struct {
        char name[KB_NAME_MAX + 1];
        size_t size;
    } pins[KB_MAX_CONSTS];
    size_t ntensors;
    struct kbp_tensor t[KBP_MAX_TENSORS]; /* inputs, parameters, then the output */
    size_t ninputs, nparams;
    size_t ncases;
    struct kbp_case cases[KBP_MAX_CASES];
    bool ranges; /* held-out ranges exist (else the fixed held case) */
    int64_t range[KB_SIZES_MAX][2];
    size_t nwhere;
    char where[KBP_MAX_WHERE][KB_EXPR_MAX + 1];
    char flops[KB_EXPR_MAX + 1]; /* "0" when torch counts none */
    int memory_per_byte;
    double atol, rtol;
    struct kbp_scaled scaled_cpu, scaled_kb;
};

extern const char *const kbp_case_names[KBP_MAX_CASES];

/* What the probe is asked: the budgets of the performance cases (0: no
 * such case) and the host's memory for a float64 reference. */
struct kbp_plan {
    long long cpu_bytes;
    long long cuda_bytes;
    long long host_memory;
    double tolerance; /* KernelBench's atol = rtol */
};

/* Runs kbprobe.py on the problem in the script sandbox and fills *out.
 * Input names come from p->inputs where the text parse found them
 * (in0, in1, ... otherwise). KILN_E_REJECTED with the probe's one-line
 * reason when the problem cannot be imported; KILN_E_SANDBOX etc. when the
 * sandbox could not run it. */
enum kiln_rc kbprobe_run(const struct kb_problem *p, const struct kbp_plan *plan,
                         long long timeout_ms, struct kb_probe *out,
                         struct kiln_err *err) KILN_NODISCARD;

/* Parses the probe's report (exposed for the tests and the fuzzer). */
enum kiln_rc kbprobe_parse(const char *json, size_t len, const struct kb_problem *p,
                           struct kb_probe *out, struct kiln_err *err) KILN_NODISCARD;

#endif
