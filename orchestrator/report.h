/*
 * report.h - renders a run's heatmap.svg and report.html from its records
 * (summary.json, history.json, best.cu). Pure: documents in, text out, so
 * `kiln report` can regenerate them from an archived run at any time.
 *
 * summary.json and history.json follow the schemas in results/README.md.
 * Everything taken from the records (candidate ids, reasons, sources) is
 * escaped: records can hold text an LLM or a candidate wrote.
 */
#ifndef KILN_REPORT_H
#define KILN_REPORT_H

#include <jansson.h>

#include "error.h"

/* Candidates x performance cases, coloured by latency relative to the
 * reference (the starting kernel); failures marked. *out is malloc'd. */
enum kiln_rc report_heatmap_svg(const json_t *summary, char **out,
                                struct kiln_err *err) KILN_NODISCARD;

/* One self-contained HTML file (no external resources). `best_source` may
 * be NULL when no candidate passed. *out is malloc'd. */
enum kiln_rc report_html(const json_t *summary, const json_t *history, const char *best_source,
                         char **out, struct kiln_err *err) KILN_NODISCARD;

#endif
