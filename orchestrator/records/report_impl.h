/*
 * report_impl.h - what report.c and its charts (report_heatmap.c,
 * report_charts.c, report_progress.c) share (report_util.c): lenient
 * reads of the record's JSON, escaped and cut text, tunables as labels,
 * latency axes, the speedup colour scale.
 * Internal to the report; report.h is the contract.
 */
#ifndef KILN_REPORT_IMPL_H
#define KILN_REPORT_IMPL_H

#include <stddef.h>

#include "report.h"
#include "strbuf.h"

/* SVG text is monospace at RPT_FONT_PX; one character advances 0.6 em,
 * RPT_CHAR_PX with a margin, so a width in pixels holds a known number of
 * characters and text never runs out of its cell. */
#define RPT_FONT_PX 11
#define RPT_CHAR_PX 6.9
/* Longest text kept from the record in a table cell or a <title>. */
#define RPT_MAX_TEXT 600
/* The width charts are drawn for (the page is 1280 px wide at most). */
#define RPT_CHART_W 1180

/* o[key] as a string, "" when absent or not a string. */
const char *rpt_str(const json_t *o, const char *key);
/* o[key] as a finite number, 0 when absent, null, negative or not finite
 * (the record writes null or 0 for "does not apply"). */
double rpt_num(const json_t *o, const char *key);
/* `s` escaped, cut to at most `max` characters (ellipsis when cut). */
void rpt_text(struct strbuf *sb, const char *s, size_t max);
/* Candidate id's entry in summary.json's candidates, NULL when none. */
const json_t *rpt_candidate(const json_t *summary, const char *id);
/* Candidate id's verdict.json, NULL when the record has none. */
const json_t *rpt_verdict(const struct report_run *r, const char *id);
/* Appends candidate id's tunables from its verdict.json "config" as
 * "K=V" pairs separated by `sep` (unescaped: the caller escapes). */
void rpt_tunables(const struct report_run *r, const char *id, const char *sep,
                  struct strbuf *plain);
/* Appends "ID K=V K=V" (unescaped: the caller escapes) for candidate `id`:
 * its tunables from verdict.json "config", else its note. */
void rpt_label(const struct report_run *r, const char *id, struct strbuf *plain);
/* Pixels for a column of rpt_label()s of the first n candidates, cut at
 * 44 characters. */
double rpt_label_width(const struct report_run *r, const json_t *cands, size_t n);
/* Name of performance case j ("" when not a string). */
const char *rpt_case(const json_t *cases, size_t j);
/* An SVG <text> at (x, y) that fits `width` pixels: longer text is cut
 * with an ellipsis and the whole of it (up to RPT_MAX_TEXT) goes in a
 * <title>. `attrs` are extra attributes (trusted, may be ""). */
void rpt_svg_text(struct strbuf *sb, double x, double y, double width, const char *attrs,
                  const char *s);
/* "512 µs", "8.93 ms", "1.2 s": three significant digits and a unit. */
void rpt_ms(char *out, size_t cap, double ms);

/* A latency axis from px0 to px1: logarithmic when the data spans more
 * than 10x, labelled in µs below 1 ms, in s from 10 s. */
struct rpt_axis {
    double lo, hi, px0, px1, scale;
    int log;
    const char *unit;
};
void rpt_axis_init(struct rpt_axis *a, double lo_ms, double hi_ms, double px0, double px1);
double rpt_axis_pos(const struct rpt_axis *a, double ms);
/* Ticks, labels and grid lines: a horizontal axis at y = `at` with grid
 * up to y = `grid_to`, or (vertical) an axis at x = `at` with grid to x =
 * `grid_to`. */
void rpt_axis_draw(struct strbuf *sb, const struct rpt_axis *a, int vertical, double at,
                   double grid_to);

/* The style every report SVG uses (fonts, axes, grid, boxes), written
 * into each <svg> so heatmap.svg also stands alone. */
extern const char rpt_svg_style[];

/* Fill for a speedup (reference / candidate): blue faster, red slower,
 * light grey equal, saturating at 8x; *dark says whether text on it
 * should be dark. */
void rpt_speedup_colour(double speedup, char fill[8], int *dark);

/* The per-case latency charts (one SVG per performance case: spread per
 * candidate; report_charts.c). */
void rpt_latency_charts(struct strbuf *sb, const struct report_run *r);
/* The geomean per iteration: each point with its final status (summary.json
 * over history.json), a line through the fastest ranked candidate so far,
 * a ring (class "chosen") on the run's result, `best` (on the starting
 * kernel's line when it was kept), and rings (class "passed") on the
 * candidates best.passed_over lists, each with why (report_progress.c). */
void rpt_progress_chart(struct strbuf *sb, const struct report_run *r);
/* The environment block: GPU, driver, clocks, host, toolkit, kiln's
 * version, the run's date and command line (report_env.c). */
void rpt_environment(struct strbuf *sb, const struct report_run *r);

#endif
