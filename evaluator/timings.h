/*
 * timings.h - the one parser of timings.json, the sample record the
 * sandboxed harness writes (schema: VERDICT.md section 1). The document is
 * untrusted: sizes, counts, nesting, keys, types and every number are
 * checked, and any breach rejects the whole document.
 *
 * Lifecycle: timings_parse() fills a caller-owned `struct timings` that then
 * owns its arrays; release it with timings_free() (safe on a zeroed or
 * already-freed value, and after a failed parse).
 */
#ifndef KILN_TIMINGS_H
#define KILN_TIMINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define TIMINGS_VERSION           1
#define TIMINGS_MAX_BYTES         (32u << 20) /* whole document */
#define TIMINGS_MAX_DEPTH         4           /* valid documents have depth 3 */
#define TIMINGS_MAX_CASES         1024
#define TIMINGS_MAX_SAMPLES       100000  /* per case */
#define TIMINGS_MAX_TOTAL_SAMPLES 1000000 /* whole document */
#define TIMINGS_MAX_SAMPLE_MS     3.6e6   /* one hour */
#define TIMINGS_MAX_SET           65535
#define TIMINGS_MAX_WARMUP        1000000
#define TIMINGS_NAME_MAX          64 /* case name bytes including the NUL */

struct timings_case {
    char name[TIMINGS_NAME_MAX]; /* [A-Za-z0-9_.-]{1,63} */
    int set;                     /* 0 .. TIMINGS_MAX_SET */
    double *samples_ms;          /* owned; nsamples values, each finite, > 0 */
    size_t nsamples;
    bool fingerprint_ok; /* inputs unchanged by the timed calls */
    int warmup;          /* -1 when the harness did not say */
    int l2_flush;        /* -1 unknown, 0 no, 1 yes */
};

struct timings {
    struct timings_case *cases; /* owned */
    size_t ncases;
};

/* Parses `len` bytes at `buf`. On failure `out` is left empty and `err`
 * holds KILN_E_PARSE / KILN_E_LIMIT / KILN_E_REJECTED with the field named. */
enum kiln_rc timings_parse(const void *buf, size_t len, struct timings *out,
                           struct kiln_err *err) KILN_NODISCARD;

/* Frees what `t` owns and empties it. */
void timings_free(struct timings *t);

/* The case named `name` in input set `set`, or NULL. */
const struct timings_case *timings_find(const struct timings *t, const char *name, int set);

#endif
