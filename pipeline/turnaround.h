/*
 * turnaround.h - where one candidate's evaluation time went: the parent's
 * own stages (compile, sandbox, tar, ingest, verify) and the phases the
 * harness reports in status.json, filled by eval_candidate (evaluate.c);
 * for `kiln eval`, also the session's work around the candidate (the
 * inputs, the starting kernel, the vendor baseline, the held-out check),
 * with `total` the wall time of the whole evaluation. Shown by `kiln eval`
 * (one line, and "turnaround_s" in --json) and kept in each run record's
 * verdict.json. evaluator/VERDICT.md section 8 defines every part.
 *
 * The parts (every field but the aggregates harness and run, and total)
 * add up to total: `other` is what none of them accounts for.
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
    /* kiln eval's session work (0 where none, as for a run's candidates). */
    double inputs;   /* the visible inputs and references generated */
    double start;    /* the starting kernel evaluated (its speedup reference) */
    double baseline; /* the vendor baseline timed */
    double held_out; /* the held-out check: its inputs and the candidate's run */
    double total;    /* wall time: eval_candidate from start to verdict; kiln eval's whole run */
};

/* `other`: total minus every part (never below 0). */
double eval_turnaround_other(const struct eval_turnaround *t);

/* The "turnaround_s" object: every part above by name; the harness's
 * phases are null when it did not report them. NULL when out of memory. */
json_t *eval_turnaround_json(const struct eval_turnaround *t);

/* "compile 0.281 s, inputs 1.2 s, ..., other 0.050 s, total 3.104 s"
 * (harness phases left out when not reported, kiln eval's session parts
 * when 0). */
void eval_turnaround_line(const struct eval_turnaround *t, char *buf, size_t cap);

#endif
