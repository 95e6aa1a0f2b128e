/*
 * verdict.h - the judgement of one candidate: status, per-case comparison
 * and timing, the score, speedups, speed-of-light fraction, and a summary
 * for an LLM. JSON schema: VERDICT.md section 6.
 *
 * Lifecycle: verdict_init() -> verdict_add_case() for each case (fill the
 * returned case: outputs compared with compare_tensors, timing from
 * stats_compute, reference/vendor medians, floor from stats_floor_ms) ->
 * optionally verdict_fail() for a failure found outside the cases (compile
 * error, timeout, rejected timings.json) -> verdict_finish() decides the
 * status and writes the summary -> verdict_to_json() -> verdict_free().
 * The verdict owns its case array; everything else is inline.
 */
#ifndef KILN_VERDICT_H
#define KILN_VERDICT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "compare.h"
#include "failure_kind.h"
#include "error.h"
#include "stats.h"

#define VERDICT_VERSION     1
#define VERDICT_NAME_MAX    64
#define VERDICT_DETAIL_MAX  512
#define VERDICT_SUMMARY_MAX 1024
#define VERDICT_MAX_CASES   1024
#define VERDICT_MAX_OUTPUTS 8
#define VERDICT_MAX_JSON    (16u << 20)
#define VERDICT_MAX_DEPTH   7 /* root, cases, case, outputs, output, mismatches, mismatch */

/* Numbered: the names cross into run records (see verdict_status_name). */
enum verdict_status {
    VERDICT_PASS = 0,
    VERDICT_WRONG_ANSWER = 1,
    VERDICT_COMPILE_ERROR = 2,
    VERDICT_RUNTIME_ERROR = 3,
    VERDICT_TIMEOUT = 4,
    VERDICT_RESOURCE_LIMIT = 5,
    VERDICT_SANDBOX_VIOLATION = 6,
    VERDICT_REJECTED_OUTPUT = 7,
    VERDICT_IMPOSSIBLE_TIMING = 8,
    VERDICT_INCONSISTENT_TIMING = 9, /* held-out times do not fit the visible ones */
    /* Only kiln optimize's proposer side: nothing was compiled or run. */
    VERDICT_REPLY_REFUSED = 10, /* no candidate: the model call failed or its reply was refused */
    VERDICT_DUPLICATE = 11,     /* the same source and tunables as an earlier candidate */
};

struct verdict_output {
    char name[VERDICT_NAME_MAX];
    struct compare_report cmp;
};

struct verdict_case {
    char name[VERDICT_NAME_MAX];
    int set;
    bool scored;          /* a performance case (else correctness only) */
    bool inputs_modified; /* timings.json said fingerprint_ok: false */
    bool correct;         /* set by verdict_finish */
    char detail[VERDICT_DETAIL_MAX];
    size_t noutputs;
    struct verdict_output outputs[VERDICT_MAX_OUTPUTS];
    bool timed;                  /* `timing` holds a summary */
    struct stats_summary timing; /* ms */
    double ref_median_ms;        /* the reference kernel's median, 0: unknown */
    double vendor_median_ms;     /* the vendor baseline's median, 0: none ("baseline_ms") */
    double floor_ms;             /* physics floor (the roofline of the workload's units), 0: none */
    double guard_ms;             /* the impossible-timing floor (stats_guard_ms), 0: floor_ms;
                                    not serialized: verdict_finish runs before writing */
    double sol;                  /* floor_ms / median, 0 without a floor (verdict_finish) */
    double speedup_vendor;       /* vendor_median_ms / median, 0: none (verdict_finish) */
};

/* How a candidate's cases were timed: the plan's rule, recorded so a
 * reader knows whether two verdicts were timed to the same count or to the
 * same noise (each case's RSE reached is in its timing). */
struct verdict_timing_rule {
    bool known;    /* false: not recorded (a verdict written before the rule was) */
    bool adaptive; /* runs until the RSE of the mean is under target_rse, or budget_ms */
    int warmups, iterations, max_iterations; /* iterations: the minimum when adaptive */
    double target_rse, budget_ms;            /* adaptive only */
};

struct verdict {
    char candidate[VERDICT_NAME_MAX];
    enum verdict_status status;
    char detail[VERDICT_DETAIL_MAX];   /* why it is not a pass; empty on pass */
    char summary[VERDICT_SUMMARY_MAX]; /* for humans and LLMs */
    double score_ms;                   /* geometric mean of scored medians, 0: none */
    double sigma;                      /* standard error of ln(score_ms) */
    double speedup_ref;                /* reference geomean / score, 0: unknown */
    double speedup_vendor;             /* vendor geomean / score, 0: no baseline
                                          ("speedup_vs_baseline") */
    double sol;                        /* geometric mean of per-case sol, 0: no floors */
    char floor_unit[16];               /* the unit whose peak the floors' flop side used
                                          (gpu_unit_name: "fp32_simt", ...), "" none */
    bool needs_reverify;               /* > reverify_speedup faster than the reference */
    bool reverified;                   /* the caller re-verified it on fresh inputs */
    size_t ncases;
    struct verdict_case *cases; /* owned */
    struct verdict_timing_rule rule;
    /* speedup_ref against both sides' noise (verdict_judge_ref): "FAST",
     * "SLOW", "SAME" (within the noise) or "AMBIGUOUS"; "" when not judged
     * (verdict_finish clears it). Not in verdict.json: the summary says it. */
    char ref_call[12];
    double ref_noise_pct; /* the difference that would have counted, % */
    /* Timed in another timing session than the one being compared (kiln
     * resume: before an interruption) and not timed again: its figures are
     * not comparable, so it never ranks (rank.h). Not in verdict.json. */
    bool not_compared;
};

/* "pass", "wrong_answer", ...; NULL for a value outside the enum. */
/* The status a failure the harness reported earns (VERDICT.md): a changed
 * input, guard, fingerprint or slack, or other bits on the same inputs, is
 * a wrong answer; running past the case's limit a timeout; anything else
 * (a module, launch or device error) a runtime error. */
enum verdict_status verdict_status_of_failure(enum failure_kind k);

const char *verdict_status_name(enum verdict_status s);

/* Inverse of verdict_status_name; false when `name` is unknown. */
bool verdict_status_from_name(const char *name, enum verdict_status *out);

/* Empties `v` for `candidate` (truncated to VERDICT_NAME_MAX-1 bytes). */
void verdict_init(struct verdict *v, const char *candidate);

/* Appends a zeroed case named `name`; *out points into v (valid until the
 * next verdict_add_case). */
enum kiln_rc verdict_add_case(struct verdict *v, const char *name, int set, bool scored,
                              struct verdict_case **out, struct kiln_err *err) KILN_NODISCARD;

/* Records a failure that is not a case's (compile error, timeout, ...). The
 * first non-pass status wins, as with kiln_fail. */
void verdict_fail(struct verdict *v, enum verdict_status s, const char *fmt, ...) KILN_PRINTF(3, 4);

/* The rule verdict_finish sets `correct` by, usable before it ran: inputs
 * unmodified, at least one output compared, every compared output passed. */
bool verdict_case_correct(const struct verdict_case *c);

/* Decides each case's `correct`, the status (a status from verdict_fail
 * stays; then wrong_answer, then impossible_timing), score, speedups, sol,
 * needs_reverify and the summary. `ceil` NULL: STATS_CEILINGS_H200. */
void verdict_finish(struct verdict *v, const struct stats_ceilings *ceil);

/* Judges v's speedup_ref against the noise of both sides (perfcmp.h's
 * perfcmp_speedup_call): `ref` is the starting kernel's verdict of the
 * same timing session (its score's sigma). Sets ref_call and
 * ref_noise_pct, and rewrites the summary so that a ratio within the noise
 * is never stated bare ("1.37x the reference (SAME: within the measured
 * noise, +-31.0%)"). Nothing without a speedup or a timed `ref`. */
void verdict_judge_ref(struct verdict *v, const struct verdict *ref);

/* One case's speedup over the reference (ref_median_ms / median) judged
 * the same way, against `ref`'s sets of that case (the pooled sigma of
 * their medians' logs); "" (and *noise_pct 0) when there is none. */
const char *verdict_case_ref_call(const struct verdict_case *c, const struct verdict *ref,
                                  double *noise_pct);

/* The relative standard error of the mean of case `name`'s samples, all
 * its timed sets pooled (what --until-rse stops on: the harness's rule),
 * from the sets' n, mean and stddev; INFINITY when fewer than 2 samples, a
 * negative value when the case was not timed. */
double verdict_case_rse(const struct verdict *v, const char *name);

/* Adaptive timing (rule.adaptive): whether every timed, scored case
 * reached rule.target_rse (verdict_case_rse below it). *worst gets the
 * largest case RSE and *worst_case its name (may be NULL). True for a fixed
 * rule or when nothing was timed. */
bool verdict_rse_target_met(const struct verdict *v, double *worst, const char **worst_case);
/* floor_unit for people: "FP32 SIMT" for "fp32_simt"; "" without one. */
const char *verdict_floor_label(const struct verdict *v);

/* Rewrites v->summary from the fields (verdict_finish calls it). */
void verdict_summarize(struct verdict *v);

/* Frees the cases and empties `v`. */
void verdict_free(struct verdict *v);

/* A new JSON object for `v` (caller json_decref's it). */
enum kiln_rc verdict_to_json(const struct verdict *v, json_t **out,
                             struct kiln_err *err) KILN_NODISCARD;

/* summary.json's "case_ms": per performance case that was timed, the
 * geometric mean of its input sets' medians (ms). NULL when out of memory. */
json_t *verdict_case_ms_json(const struct verdict *v);

/* The same as compact text, malloc'd, NUL-terminated. */
enum kiln_rc verdict_to_text(const struct verdict *v, char **out,
                             struct kiln_err *err) KILN_NODISCARD;

/* Reads a verdict back from `len` bytes of JSON text, strictly (every key
 * required, no unknown keys, types and ranges checked, VERDICT_MAX_* caps).
 * On failure `out` is left empty. */
enum kiln_rc verdict_from_json(const void *buf, size_t len, struct verdict *out,
                               struct kiln_err *err) KILN_NODISCARD;

#endif
