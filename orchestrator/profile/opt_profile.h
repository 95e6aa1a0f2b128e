/*
 * opt_profile.h - `kiln optimize --profile` inside the loop: profile.h's
 * profiler applied to the current best, its records and its feedback.
 *
 * - The starting kernel is profiled when the loop starts (no best yet):
 *   reference/profile.json. Every later new best is profiled right after
 *   its verdict, while its scratch (plan, cubin, inputs) still exists:
 *   candidates/NNN/profile.json, and the same document in its history.json
 *   entry under "profile".
 * - opt_profile_text() is the current best's summary for the LLM prompt
 *   (NULL when there is none: not profiled, failed, unavailable); the tune
 *   and replay proposers ignore it.
 * - Unavailability (profile.h) is said once on stderr, "kiln: --profile:
 *   ... ; continuing without profile data", and recorded in run.json as
 *   "profile": {"requested": true, "available": false, "message": ...}.
 * - Resume replays finished candidates from their records: their profiles
 *   are read back, not re-run.
 *
 * Every function accepts op == NULL (profiling not requested) and then
 * does nothing. Lifecycle: opt_profile_open -> opt_profile_on_record*
 * (replayed records) -> opt_profile_go_live -> opt_profile_on_record* ->
 * opt_profile_close.
 */
#ifndef KILN_OPT_PROFILE_H
#define KILN_OPT_PROFILE_H

#include <jansson.h>
#include <stdbool.h>

#include "backend.h"
#include "error.h"
#include "runrec.h"

struct opt_profile;

/* NULL in *out unless `requested`. Nothing runs yet. */
enum kiln_rc opt_profile_open(bool requested, enum kiln_backend b, int gpu, const struct runrec *rr,
                              const char *work_dir, bool quiet, struct opt_profile **out,
                              struct kiln_err *err) KILN_NODISCARD;

/* Starts profiling for real; profiles the starting kernel (its evaluation
 * scratch `ref_dir`, its cubin `ref_cubin`) when `have_best` is false. */
enum kiln_rc opt_profile_go_live(struct opt_profile *op, bool have_best, const char *ref_dir,
                                 const char *ref_cubin, struct kiln_err *err) KILN_NODISCARD;

/* A candidate was recorded. When it is a new best: live, profile it
 * (scratch `cand_dir`, cubin `cubin`); replaying, read its profile.json
 * back. Returns the profile document for the history entry (caller owns
 * it) or NULL. */
json_t *opt_profile_on_record(struct opt_profile *op, const char *id, bool improved,
                              const char *cand_dir, const char *cubin);

/* The current best's metrics for the prompt, or NULL. */
const char *opt_profile_text(const struct opt_profile *op);

void opt_profile_close(struct opt_profile *op);

#endif
