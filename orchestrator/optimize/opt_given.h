/*
 * opt_given.h - `kiln optimize` with given data (given.h): checks
 * --input-cases and --reference before a run directory exists (a bad one is
 * a usage error, exit 2, and leaves nothing behind), keeps self-contained
 * copies in the run (given/inputs/, given/reference.py) so `kiln resume`
 * uses the same data, and records where they came from ("input_cases",
 * "reference_script" in run.json and summary.json: path as given, sha256,
 * copy).
 *
 * Lifecycle: zero it; opt_given_prepare (new run) -> opt_given_store, or
 * opt_given_load (resume); open the session on the copies, expecting the
 * recorded digests (opt_given_sha256); opt_given_add_json as often as
 * needed; opt_given_free.
 */
#ifndef KILN_OPT_GIVEN_H
#define KILN_OPT_GIVEN_H

#include <jansson.h>
#include <limits.h>

#include "backend.h"
#include "given.h"
#include "runrec.h"

struct opt_given {
    json_t *inputs, *reference; /* the records' objects; NULL when not given */
    char inputs_copy[PATH_MAX]; /* the run's copies, for the session; "" when none */
    char reference_copy[PATH_MAX];
    /* between prepare and store */
    struct given_inputs gi;
    bool have_gi;
    struct given_reference gr;
    bool have_gr;
    char scratch[PATH_MAX];
};

/* Loads and checks what the user gave (NULLs: nothing) for `wl` on
 * backend `b`. Any problem is KILN_E_USAGE. `wl` must outlive the store. */
enum kiln_rc opt_given_prepare(struct opt_given *g, const char *input_cases, const char *reference,
                               const struct workload *wl, enum kiln_backend b,
                               struct kiln_err *err) KILN_NODISCARD;

/* Writes the copies into the new run and fills the record objects. */
enum kiln_rc opt_given_store(struct opt_given *g, const struct runrec *rr,
                             struct kiln_err *err) KILN_NODISCARD;

/* Resume: takes the record objects from run.json and points at the copies. */
enum kiln_rc opt_given_load(struct opt_given *g, const struct runrec *rr, json_t *run_json,
                            struct kiln_err *err) KILN_NODISCARD;

/* The digest a record names (for eval_session_opts' expected digests);
 * NULL for no record. */
const char *opt_given_sha256(const json_t *record);

/* The path as the user gave it, for messages; NULL for no record. */
const char *opt_given_path(const json_t *record);

/* Sets "input_cases" and "reference_script" on `doc` (null when not given). */
void opt_given_add_json(const struct opt_given *g, json_t *doc);

void opt_given_free(struct opt_given *g);

#endif
