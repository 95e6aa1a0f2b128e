/*
 * eval_rows.h - the one row schema of `kiln eval`'s per-case outputs: the
 * `rows` of `--json`, the `--csv` and `--markdown` tables derive from it,
 * so a column has one name and one meaning in all three (evaluator/
 * VERDICT.md, "kiln eval rows"). One row per case and input set, the
 * visible cases first (check "visible"), then the held-out check's
 * ("held_out"), with nvbench's columns: sizes, samples, noise, throughput.
 */
#ifndef KILN_EVAL_ROWS_H
#define KILN_EVAL_ROWS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "heldout.h"
#include "verdict.h"
#include "workload.h"

/* Bumped when a column is added, removed or changes meaning. */
#define EVAL_ROWS_VERSION 2

/* What every row was judged in: written once (markdown, JSON) or as the
 * last columns of every CSV row, so a row read alone still says it. */
struct eval_rows_context {
    const struct workload *wl;
    const char *candidate_sha256;
    uint64_t seed;
    const char *device;                     /* "cpu (Intel(R) Xeon(R) ...)" or the GPU's line */
    const char *compile_flags;              /* compile_flags_describe */
    const char *config;                     /* the tunables as "NAME=V ..." ("" for none) */
    const struct heldout_set *held_draw;    /* the drawn held-out cases' sizes; NULL */
    const struct verdict_timing_rule *rule; /* how the visible cases were timed */
    /* The starting kernel's verdict of the same session: each speedup over
     * it is judged against both sides' noise (verdict_case_ref_call); NULL
     * when it was not timed. */
    const struct verdict *reference;
};

/* The row columns, in order, NULL-ended; then the CSV's context columns. */
extern const char *const eval_row_columns[];
extern const char *const eval_row_context_columns[];

/* The rows of `v` and (when not NULL) `held` as a JSON array of objects
 * keyed by eval_row_columns; null where a value is unknown. NULL when out
 * of memory. */
json_t *eval_rows_json(const struct eval_rows_context *ctx, const struct verdict *v,
                       const struct verdict *held);

/* The context as a JSON object keyed by eval_row_context_columns. */
json_t *eval_rows_context_json(const struct eval_rows_context *ctx);

enum eval_rows_format { EVAL_ROWS_CSV, EVAL_ROWS_MARKDOWN };

/* `rows` (from eval_rows_json) as a table on `f`. CSV: one header row, one
 * row per row, the context columns last on every row, an empty field where
 * unknown. Markdown: one context line, a blank line, then the table with
 * "-" where unknown. */
void eval_rows_print(FILE *f, enum eval_rows_format fmt, const struct eval_rows_context *ctx,
                     const json_t *rows);

/* The CPU model from /proc/cpuinfo ("" when it says none). */
void eval_cpu_model(char *out, size_t cap);

#endif
