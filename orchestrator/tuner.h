/*
 * tuner.h - the embedded tuner's search over a candidate's tunables: a
 * coordinate descent from the declared defaults that moves only on an
 * improvement the caller judged significant (beyond measured noise), with
 * random restarts from unvisited points once a sweep finds nothing. It never
 * proposes a configuration twice.
 *
 * Lifecycle: tuner_new -> (tuner_next -> evaluate -> tuner_report)* -> tuner_free.
 * The tuner is pure logic: it never runs anything, so it is deterministic for
 * a seed and its state could be rebuilt by replaying reports (resume).
 */
#ifndef KILN_TUNER_H
#define KILN_TUNER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TUNER_MAX_DIMS    64
#define TUNER_MAX_PENDING 64 /* proposed and not yet reported (kiln optimize --jobs) */

struct tuner_dim {
    size_t n_values;   /* how many values this tunable may take (>= 1) */
    size_t default_at; /* index of the declared default */
};

enum tuner_outcome {
    TUNER_FAILED,     /* the configuration did not pass */
    TUNER_NOT_BETTER, /* passed, but not faster than the incumbent beyond noise */
    TUNER_BETTER,     /* passed and faster than the incumbent beyond noise */
};

struct tuner;

/* A tuner over `n_dims` dimensions; `seed` drives the restarts. */
enum kiln_rc tuner_new(const struct tuner_dim *dims, size_t n_dims, uint64_t seed,
                       struct tuner **out, struct kiln_err *err) KILN_NODISCARD;

/* The next configuration to try, as one value index per dimension. The
 * first is the all-defaults point. Returns KILN_E_NOTFOUND once every
 * configuration has been proposed, KILN_E_LIMIT when TUNER_MAX_PENDING are
 * outstanding. A caller may ask again before reporting (looking ahead, as
 * `kiln optimize --jobs N` does): it gets distinct untried configurations
 * around the incumbent as known so far. */
enum kiln_rc tuner_next(struct tuner *t, size_t *idx_out, struct kiln_err *err) KILN_NODISCARD;

/* Reports how the oldest configuration returned by tuner_next and not yet
 * reported did: reports come in proposal order (with one outstanding, that
 * is the last one returned). */
void tuner_report(struct tuner *t, enum tuner_outcome outcome);

/* Marks a configuration as already evaluated (resume, or one the caller
 * tried itself) so it is never proposed. */
enum kiln_rc tuner_mark_visited(struct tuner *t, const size_t *idx, struct kiln_err *err);

/* The incumbent (best so far); NULL before any configuration passed. */
const size_t *tuner_best(const struct tuner *t);

void tuner_free(struct tuner *t);

#endif
