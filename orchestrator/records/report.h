/*
 * report.h - renders a run's heatmap.svg and report.html from its records
 * (results/README.md). Pure: documents in, text out, so `kiln report` can
 * regenerate them from an archived run at any time.
 *
 * The page is HTML with inline SVG and CSS: no script, no external
 * resource, readable at 1280 px and printed. Every string taken from the
 * records (workload and case names, notes, reasons, tunables, sources) is
 * escaped with text_put_markup() and cut to a bounded length: records hold
 * text a model or a candidate wrote. At most REPORT_MAX_ROWS candidates
 * and REPORT_MAX_CASES performance cases are drawn; the page says how
 * many more there were.
 */
#ifndef KILN_REPORT_H
#define KILN_REPORT_H

#include <jansson.h>

#include "error.h"

#define REPORT_MAX_ROWS  300
#define REPORT_MAX_CASES 48

/* One run record as the report reads it. Only `summary` is required (it
 * must have the arrays perf_cases and candidates); the rest may be NULL
 * (older or partial records) and their sections then say so. */
struct report_run {
    const json_t *summary;     /* summary.json */
    const json_t *history;     /* history.json (array) */
    const json_t *run;         /* run.json: command line, versions, GPU */
    const json_t *environment; /* environment.json (before/after_timing) */
    const json_t *verdicts;    /* object: candidate id -> its verdict.json */
    const char *best_source;   /* best.cu / best.c; NULL when none passed */
};

/* Candidates (rows, labelled with id and tunables) x performance cases
 * (columns), coloured by speedup against the starting kernel on a
 * diverging scale with its legend; failures marked with their status.
 * A standalone SVG document. *out is malloc'd. */
enum kiln_rc report_heatmap_svg(const struct report_run *run, char **out,
                                struct kiln_err *err) KILN_NODISCARD;

/* The whole page: notices (model-written reference, given data), best
 * candidate, ranking, heatmap, per-case latency with spread, progress per
 * iteration, vendor baseline, environment, best kernel. *out is malloc'd. */
enum kiln_rc report_html(const struct report_run *run, char **out,
                         struct kiln_err *err) KILN_NODISCARD;

/* Regenerates heatmap.svg and report.html of a run from its records. */
struct runrec;
enum kiln_rc report_write_run(const struct runrec *rr, struct kiln_err *err) KILN_NODISCARD;

#endif
