/*
 * compile.h - stage "compile": one candidate source into a cubin (cuda:
 * `nvcc -cubin`, no host code, no relocatable device code) or a shared
 * object with kiln's trampoline (cpu: `cc -shared`), inside the `compile`
 * sandbox with no GPU. Diagnostics come back capped, in the compiler's own
 * order (compile_diag.c); ptxas
 * resource usage (registers, spills, shared memory) is parsed for feedback.
 *
 * A compile failure is not an error of this function: it returns KILN_OK
 * with res->ok false and the diagnostics (a `compile_error` verdict).
 *
 * cuda has two compilers: nvcc (the default; the `compile` sandbox, which
 * lets the driver start cicc and ptxas) and kiln-nvrtc (`--compiler nvrtc`:
 * NVRTC in one process, several times faster, in the narrower `nvrtc`
 * sandbox: no new processes, no exec after the first). Same options (arch,
 * -D flags, ptxas -v), same code in the cubin (bench/compile checks it).
 */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "error.h"

#define COMPILE_MAX_DEFINES 64
#define COMPILE_DIAG_MAX    (16u << 10) /* diagnostics kept for records and prompts */
#define COMPILE_MAX_KERNELS 16

enum compile_tool {
    COMPILE_NVCC = 0, /* cuda: nvcc -cubin (the default) */
    COMPILE_NVRTC,    /* cuda: kiln-nvrtc (NVRTC); ignored for cpu */
};

/* "nvcc" / "nvrtc" to a tool; false for anything else. */
bool compile_tool_from_name(const char *name, enum compile_tool *out);
const char *compile_tool_name(enum compile_tool t);

struct compile_request {
    enum kiln_backend backend;
    enum compile_tool tool;
    const char *nvrtc;  /* COMPILE_NVRTC: the kiln-nvrtc program (eval_program_path) */
    const char *source; /* the candidate file */
    size_t len;
    const char *trampoline;     /* cpu: kiln-generated C; NULL for cuda */
    const char *const *defines; /* "-DNAME=value" */
    size_t ndefines;
    const char *arch;     /* cuda: "sm_90"; NULL: GPUARCH_DEFAULT */
    const char *work_dir; /* created; holds src/ and out/ */
    long long timeout_ms; /* 0: the policy's default */
    /* How diagnostics name the source: the user's file ("mykernel.cu"), not
     * the sandbox's copy. NULL: "candidate.cu" / "candidate.c". Not part of
     * the request's hash: it changes no compiled byte. */
    const char *source_name;
};

struct compile_kernel_usage {
    char name[64];
    int registers;
    int smem_bytes;
    int stack_bytes;
    int spill_stores, spill_loads; /* bytes */
};

struct compile_result {
    bool ok;
    char artifact[PATH_MAX]; /* the cubin or .so when ok */
    char *diagnostics;       /* NUL-terminated, capped, the compiler's order; may be "" */
    double seconds;
    double started, finished; /* wall clock (Unix time, s) around the compile stage */
    char input_sha256[65];    /* compile_request_hash of what was compiled */
    struct compile_kernel_usage kernels[COMPILE_MAX_KERNELS];
    size_t nkernels;
};

enum kiln_rc compile_candidate(const struct compile_request *req, struct compile_result *res,
                               struct kiln_err *err) KILN_NODISCARD;

/* Diagnostics as the user should read them: a line that starts with the
 * sandbox's copy of the source ("/in/candidate.cu", or NVRTC's
 * "candidate.cu") starts with `shown` instead, and the sandbox's mount
 * points (/in/, /out/) are dropped from other lines' leading paths, so no
 * scratch path reaches a message. A new string (NULL: out of memory). */
char *compile_diagnostics_for_user(const char *diag, enum kiln_backend backend, const char *shown);

void compile_result_free(struct compile_result *res);

/* What a candidate of `backend` is compiled with, for reports: the
 * compiler and its flags without the sandbox's paths ("nvcc -cubin
 * -arch=sm_90 -O3 -Xptxas -v", "cc -std=c11 -O2 -fPIC -shared -Wall -lm");
 * -D flags are the candidate's configuration, reported apart. */
void compile_flags_describe(enum kiln_backend backend, enum compile_tool tool, const char *arch,
                            char *out, size_t cap);

/* SHA-256 (hex) over everything that decides the artifact: backend, tool,
 * arch, the -D flags, the source and the trampoline. A result is reused only for
 * a request with the same hash. */
void compile_request_hash(const struct compile_request *req, char hex[65]);

/* Parses `ptxas -v` output into res->kernels (exposed for tests). */
void compile_parse_ptxas(const char *text, struct compile_result *res);

/* Compiler output in the compiler's own order (a source line and its caret
 * stay under their error, nvcc's multi-line template errors whole), capped
 * at COMPILE_DIAG_MAX: over the cap, whole diagnostics are kept, errors
 * before warnings before the rest, still in their order, with a note of
 * what was dropped. A diagnostic is its header line ("f.c:3:5: error: ...",
 * "f.cu(3): error: ..."), gcc's context lines before it ("In function",
 * "In file included from") and every line after it up to the next header
 * (source, caret, notes, "detected during"). A malloc'd string, NULL when
 * out of memory. */
char *compile_cap_diagnostics(const char *text);

/* Where the first error's header line starts in `diag` (what follows is
 * its source, caret and notes, in order), or `diag` when it holds no
 * error: what a short summary (a verdict's detail, a prompt's feedback)
 * shows, highlighted by where it starts, never by reordering. */
const char *compile_first_error(const char *diag);

/*
 * The result as JSON (results/README.md, compile.json): it crosses from a
 * compile worker process to its parent (`kiln optimize --jobs`) and stays in
 * the run record. `artifact` is not in it: the reader knows where its own
 * compile directory is. The reader is strict (known keys and types, sizes
 * capped at COMPILE_JSON_MAX) because the file lies in a directory a
 * sandbox's output is extracted next to.
 */
#define COMPILE_JSON_MAX (8 * COMPILE_DIAG_MAX + (16u << 10))
/* compile.json's format version (results/README.md); absent in older runs. */
#define COMPILE_JSON_VERSION 1

enum kiln_rc compile_result_to_json(const struct compile_result *res, char **out,
                                    struct kiln_err *err) KILN_NODISCARD;

/* Fills *res (artifact left empty); free it with compile_result_free. */
enum kiln_rc compile_result_from_json(const char *text, size_t len, struct compile_result *res,
                                      struct kiln_err *err) KILN_NODISCARD;

#endif
