/*
 * kbprobe.h - what a KernelBench problem's code says about itself, learned
 * by running it in the `script` sandbox (never on the host): kbprobe.py
 * evaluates get_init_inputs(), get_inputs() and the Model at each case's
 * sizes (torch's meta device for shapes; small real runs where meta cannot)
 * and reports the tensors' dtypes and shapes, the model's parameters, and
 * the constants of every case (the problem's own sizes for the performance
 * case, its largest constants halved where they do not fit the budget).
 *
 * The report comes from untrusted code: kbprobe_run reads it through
 * json_strict with caps, checks every name, count, dtype and dimension, and
 * never lets its text reach a generated file unchecked (names are
 * [A-Za-z_][A-Za-z0-9_]*, parameter names folded to that charset).
 */
#ifndef KILN_KBPROBE_H
#define KILN_KBPROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "kbimport.h"

#define KBP_CASES       4 /* small, odd, held, kb: in that order */
#define KBP_MAX_PARAMS  24
#define KBP_MAX_TENSORS (KB_MAX_INPUTS + KBP_MAX_PARAMS + 1)

enum kbp_role { KBP_IN, KBP_PARAM, KBP_OUT };

struct kbp_tensor {
    char name[KB_NAME_MAX + 1];   /* the signature's name (a safe identifier) */
    char source[KB_NAME_MAX + 1]; /* a parameter's dotted name, folded to [A-Za-z0-9_.] */
    enum kbp_role role;
    char dtype[12];
    bool scalar; /* an input get_inputs() gives as a python number: a 0-d tensor */
    int ndims;
    int64_t dims[KBP_CASES][KB_MAX_DIMS];
};

struct kb_probe {
    bool meta; /* shapes from the meta device (else from small real runs) */
    size_t nconsts;
    char const_names[KB_MAX_CONSTS][KB_NAME_MAX + 1];
    int64_t consts[KBP_CASES][KB_MAX_CONSTS];
    size_t ntensors;
    struct kbp_tensor t[KBP_MAX_TENSORS]; /* inputs, parameters, then the output */
    size_t ninputs, nparams;
    char scaled[512]; /* "dim 16384 -> 4096, ..." ("" when the perf case is the problem's) */
};

extern const char *const kbp_case_names[KBP_CASES];

/* Runs kbprobe.py on the problem in the script sandbox and fills *out.
 * Input names come from p->inputs where the text parse found them
 * (in0, in1, ... otherwise). KILN_E_REJECTED with the probe's one-line
 * reason when the problem cannot be imported; KILN_E_SANDBOX etc. when the
 * sandbox could not run it. */
enum kiln_rc kbprobe_run(const struct kb_problem *p, long long timeout_ms, struct kb_probe *out,
                         struct kiln_err *err) KILN_NODISCARD;

/* Parses the probe's report (exposed for the tests and the fuzzer). */
enum kiln_rc kbprobe_parse(const char *json, size_t len, const struct kb_problem *p,
                           struct kb_probe *out, struct kiln_err *err) KILN_NODISCARD;

#endif
