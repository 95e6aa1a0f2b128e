/*
 * turnaround.h - where one candidate's evaluation time went: the parent's
 * own stages (compile, sandbox, tar, ingest, verify) and the phases the
 * harness reports in status.json. Filled by eval_candidate (evaluate.c);
 * shown by `kiln eval` (one line, and "turnaround_s" in --json) and kept in
 * each run record's verdict.json. evaluator/VERDICT.md section 8 defines
 * every part.
 *
 * The harness's phases come from inside the sandbox: untrusted numbers,
 * range-checked by hstatus_parse and used for this report only.
 */
#ifndef KILN_TURNAROUND_H
#define KILN_TURNAROUND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Seconds. */
struct eval_turnaround {
    double compile; /* the compile sandbox, wall */
    double run;     /* the harness step: sandbox, harness, tar stream, ingest */
    double sandbox; /* of run: set-up, process start and exit (run - harness - tar - ingest) */
    /* The harness's phases (status.json "phases_s"); valid when `harness_phases`. */
    double context, layout, read, upload, correctness, timing, outputs;
    double harness; /* the harness's own total */
    bool harness_phases;
    double tar;    /* /out packed and streamed to the parent, after the program ended */
    double ingest; /* the stream checked by tar_ingest */
    double verify; /* status.json and timings.json parsed, outputs compared, statistics */
    double total;  /* eval_candidate from start to verdict */
};

/* The "turnaround_s" object: every part above by name; the harness's
 * phases are null when it did not report them. NULL when out of memory. */
json_t *eval_turnaround_json(const struct eval_turnaround *t);

/* "compile 0.281 s, sandbox 0.012 s, context 0.251 s, ..., total 3.104 s"
 * (harness phases left out when not reported). */
void eval_turnaround_line(const struct eval_turnaround *t, char *buf, size_t cap);

#endif
