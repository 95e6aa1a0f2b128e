/*
 * cand_source.h - what a candidate's code says beyond its directives, read
 * from its C or CUDA text (untrusted, never compiled here): the parameter
 * lists of the functions its launches call, checked against the types the
 * workload's signature passes, and which tunables the code uses.
 *
 * The harness passes each argument as the signature's type (CANDIDATE.md,
 * "Scalar argument types": int64 as long long, float32 as float, a tensor
 * as a pointer). A kernel declaring `int n` for an int64 `n` compiles, and
 * then reads half of the argument, or (a float for a double, a scalar for
 * a pointer) garbage; a CUDA kernel's later parameters move. Nothing else
 * catches it: the cubin and the trampoline are built apart.
 *
 * The reading is a small lexer (comments, strings, character literals and
 * preprocessor lines skipped), not a compiler: it judges only what it can
 * be sure of. A parameter whose type it does not know (a typedef of the
 * candidate's, a macro, a reference, a template) is not judged; a function
 * defined more than once (#if branches) is not judged.
 */
#ifndef KILN_CAND_SOURCE_H
#define KILN_CAND_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "candidate.h"
#include "error.h"
#include "workload.h"

/*
 * KILN_OK when every launch's function, where its definition is found
 * once, takes as many parameters as its args() passes, each of the kind
 * and size the signature gives it; else KILN_E_REJECTED with "line N:
 * ..." naming the function, the parameter as written, what the launch
 * passes and the declaration to write instead:
 *   line 5: saxpy's parameter 1 `int n` is a 4-byte integer, but args()
 *   passes n, an int64 in the workload's signature: declare it `long long n`
 */
enum kiln_rc cand_source_check_params(const char *src, size_t len, const struct candidate *c,
                                      const struct workload *w,
                                      struct kiln_err *err) KILN_NODISCARD;

/*
 * used[t] for each tunable t of `c`: whether its name appears in the code
 * (a preprocessor line counts: `#if VEC == 4` uses VEC; a comment, a
 * string and a `// kiln:` directive do not). An unused tunable multiplies
 * the tuner's configurations for nothing.
 */
void cand_source_tunables_used(const char *src, size_t len, const struct candidate *c, bool *used);

#endif
