/*
 * kbimport.h - `kiln import kernelbench`: a KernelBench level-1 or level-2
 * problem (a python file with a torch `Model`, `get_inputs()` and
 * `get_init_inputs()`) turned into a kiln workload directory.
 *
 * The problem file is untrusted text and is never executed on the host.
 * kbimport_parse() reads it as bytes with the caps below and extracts only
 * what must be known before anything runs: the module-level integer
 * constants (`N = 2048`) and, where get_inputs() is plain enough
 * (`A = torch.randn(M, K)` ... `return [A, B]`), the names of its tensors
 * (in0, in1, ... otherwise). Everything else - the tensors' shapes and
 * dtypes, the model's parameters, the output - is learned by running the
 * problem in the `script` sandbox (kbprobe.h).
 *
 * The generated inputs.py and reference.py embed the problem's source and
 * run it inside the `script` sandbox, where torch must exist: without it
 * they stop with an error naming the missing module and the fix.
 *
 * Lifecycle: kbimport_parse() fills a `struct kb_problem` the caller frees
 * with kbimport_free(); kbprobe_run() learns the rest; kbimport_write()
 * writes the directory.
 */
#ifndef KILN_KBIMPORT_H
#define KILN_KBIMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define KB_MAX_SRC    (1u << 20) /* the problem file, bytes */
#define KB_MAX_LINE   4096
#define KB_MAX_CONSTS 64
#define KB_MAX_INPUTS 16
#define KB_MAX_DIMS   8
#define KB_NAME_MAX   64
#define KB_EXPR_MAX   256
#define KB_SIZES_MAX  16 /* workload.json: at most 16 sizes */

struct kb_const {
    char name[KB_NAME_MAX + 1];
    int64_t value;
    int line;
};

struct kb_input {
    char name[KB_NAME_MAX + 1]; /* the variable in get_inputs, or in0, in1, ... */
    char dims[KB_MAX_DIMS][KB_EXPR_MAX + 1];
    int ndims;
    int line;
};

struct kb_problem {
    struct kb_const consts[KB_MAX_CONSTS];
    size_t nconsts;
    struct kb_input inputs[KB_MAX_INPUTS]; /* in get_inputs' return order */
    size_t ninputs;
    char *source; /* the file, NUL-terminated (embedded in the scripts) */
    size_t len;
};

/* Parses `src` (`len` bytes). KILN_E_PARSE / KILN_E_LIMIT / KILN_E_REJECTED
 * with `line N: ...` and what to change. */
enum kiln_rc kbimport_parse(const char *src, size_t len, struct kb_problem *out,
                            struct kiln_err *err) KILN_NODISCARD;

void kbimport_free(struct kb_problem *p);

struct kb_options {
    const char *name;   /* workload name ([a-z0-9_]{1,64}) */
    const char *origin; /* where the problem came from, for the description */
    const char *flops;  /* cost.flops expression; NULL: the probe's count */
    const char *kernel; /* a starting kernel's bytes, or NULL */
    size_t kernel_len;
    const char *kernel_file; /* "kernel.cu" or "kernel.c" (NULL: kernel.cu) */
    const char *budget_why;  /* what bounds the cuda performance case ("kiln's 4 GiB ...") */
};

struct kb_probe;

/* Writes workload.json, inputs.py, reference.py (and the starting kernel
 * when given) into `dir`, which must not exist yet (created 0755), from the
 * problem and what the probe learned (kbwrite.c). The kernel's signature:
 * the sizes (int64), the inputs of get_inputs() in order, the model's
 * parameters in named_parameters() order, then `out`. The cases: small and
 * odd (correctness), cpu and/or kb (each backend's performance case), and
 * held-out ranges with their constraints (or, where a dimension has no
 * expression over the sizes, the fixed held case). */
enum kiln_rc kbimport_write(const struct kb_problem *p, const struct kb_probe *pr,
                            const struct kb_options *o, const char *dir,
                            struct kiln_err *err) KILN_NODISCARD;

/* `in` with every byte outside [A-Za-z0-9_./-] replaced by '_', cut to
 * cap - 1: untrusted text (a file name) as it may appear in generated
 * files. */
void kbimport_safe_text(const char *in, char *out, size_t cap);

#endif
