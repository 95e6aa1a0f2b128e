/*
 * candidate.h - the launch-plan directives of a candidate source file
 * (evaluator/CANDIDATE.md is the format).
 *
 *   // kiln: tunable BLOCK {128, 256} = 256
 *   // kiln: launch saxpy grid(cdiv(n, BLOCK)) block(BLOCK) smem(0) args(n, a, x, y, out)
 *
 * The source is untrusted: candidate_parse() reads it as bytes with the caps
 * below and never executes or compiles anything. It checks the directives
 * alone; names that need the workload (argument names, collisions with
 * sizes) are checked by plan_resolve() in plan.h.
 *
 * Lifecycle: candidate_parse() allocates a `struct candidate` the caller
 * owns and frees with candidate_free(). Fields are read-only to callers.
 * Errors are `line N: ...` (1-based).
 */
#ifndef KILN_CANDIDATE_H
#define KILN_CANDIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "expr.h"

#define CAND_MAX_SRC      (1u << 20) /* whole file, bytes */
#define CAND_MAX_LINE     1024       /* a directive line, bytes without the newline */
#define CAND_MAX_TUNABLES 64
#define CAND_MAX_VALUES   64 /* values of one tunable */
#define CAND_MAX_LAUNCHES 16
#define CAND_MAX_ARGS     32
#define CAND_MAX_REQUIRES 32
#define CAND_NAME_MAX     64 /* identifiers: tunables, kernels, args */
/* "-D" NAME "=" int64 NUL */
#define CAND_DEFINE_MAX (2 + CAND_NAME_MAX + 1 + 20 + 1)

struct cand_tunable {
    char name[CAND_NAME_MAX + 1];
    int64_t values[CAND_MAX_VALUES]; /* distinct, in file order */
    size_t nvalues;                  /* 1 .. CAND_MAX_VALUES */
    int64_t def;                     /* the default, one of values */
    int line;
};

struct cand_launch {
    char kernel[CAND_NAME_MAX + 1];
    struct expr *grid[3];                        /* ngrid of them; CUDA only */
    struct expr *block[3];                       /* nblock of them; CUDA only */
    int ngrid, nblock;                           /* 1..3 for CUDA, 0 for CPU; missing dims are 1 */
    struct expr *smem;                           /* NULL: 0 bytes */
    char args[CAND_MAX_ARGS][CAND_NAME_MAX + 1]; /* distinct names */
    size_t nargs;                                /* 1 .. CAND_MAX_ARGS */
    int line;
};

/* `// kiln: require LHS OP RHS`: a condition every configuration must meet
 * (threads per block, shared memory, tile divisibility), over the tunables
 * only, so a search can drop a configuration before compiling it. */
enum cand_cmp { CAND_LE, CAND_LT, CAND_GE, CAND_GT, CAND_EQ, CAND_NE };

struct cand_require {
    struct expr *lhs, *rhs;
    enum cand_cmp op;
    int line;
};

struct candidate {
    enum kiln_backend backend;
    struct cand_require requires[CAND_MAX_REQUIRES];
    size_t nrequires;
    struct cand_tunable tunables[CAND_MAX_TUNABLES];
    size_t ntunables;
    struct cand_launch launches[CAND_MAX_LAUNCHES];
    size_t nlaunches; /* 1 .. CAND_MAX_LAUNCHES */
};

/* Parses the directives in `src` (`len` bytes, need not be NUL-terminated)
 * for `backend`. Returns KILN_E_PARSE for malformed directives, KILN_E_LIMIT
 * for caps, KILN_E_REJECTED for a NUL byte or a source with no launch. */
enum kiln_rc candidate_parse(const char *src, size_t len, enum kiln_backend backend,
                             struct candidate **out, struct kiln_err *err) KILN_NODISCARD;

/* Frees `c`; NULL is fine. */
void candidate_free(struct candidate *c);

/* Writes each tunable's default into values[0 .. c->ntunables). */
void candidate_default_config(const struct candidate *c, int64_t *values);

/* Index of tunable `name`, or -1. */
int candidate_tunable_index(const struct candidate *c, const char *name);

/* Checks values[i] is in tunable i's set, for every tunable, and that every
 * `require` holds on device `dev` (its DEVICE_* names; NULL: the H200's,
 * as when a candidate is parsed) (KILN_E_REJECTED naming the tunable and
 * value, or the require line and both sides' values, otherwise). */
struct device_limits; /* devlimits.h */
enum kiln_rc candidate_check_config(const struct candidate *c, const int64_t *values,
                                    const struct device_limits *dev,
                                    struct kiln_err *err) KILN_NODISCARD;

/* Fills defines[0 .. c->ntunables) with "-DNAME=value" for a checked
 * configuration (calls candidate_check_config first). */
enum kiln_rc candidate_defines(const struct candidate *c, const int64_t *values,
                               const struct device_limits *dev, char defines[][CAND_DEFINE_MAX],
                               struct kiln_err *err) KILN_NODISCARD;

#endif
