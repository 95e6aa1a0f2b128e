/* report_progress.c - the geomean per iteration, with the run's result
 * marked (report_impl.h).
 *
 * history.json is written as each candidate is judged; summary.json holds
 * the final state. A candidate the held-out check failed at the end is a
 * pass in history.json but not in summary.json, and the result (`best`)
 * is chosen by rank and noise rules, not by the lowest geomean: so each
 * point takes its status from summary.json, the line follows only
 * candidates that ranked, and the result and the faster candidates passed
 * over are marked, with why in their tooltips. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_impl.h"

/* Candidate id's place in summary.json's ranking: 0 unranked, -1 when the
 * ranking does not list it or there is none (an older or partial record:
 * every pass counts). */
static json_int_t place_of(const json_t *summary, const char *id)
{
    const json_t *rank = json_object_get(summary, "ranking");
    if (!json_is_array(rank))
        return -1;
    for (size_t i = 0; i < json_array_size(rank); i++)
        if (strcmp(rpt_str(json_array_get(rank, i), "candidate"), id) == 0)
            return json_integer_value(json_object_get(json_array_get(rank, i), "place"));
    return -1;
}

/* Why candidate id was passed over (best.passed_over), NULL when it was not. */
static const char *passed_over(const json_t *summary, const char *id)
{
    const json_t *po = json_object_get(json_object_get(summary, "best"), "passed_over");
    for (size_t i = 0; i < json_array_size(po); i++)
        if (strcmp(rpt_str(json_array_get(po, i), "candidate"), id) == 0)
            return rpt_str(json_array_get(po, i), "reason");
    return NULL;
}

/* One iteration as the chart draws it: summary.json's final status and
 * reason where it has the candidate, else history.json's. */
struct point {
    const char *id, *status, *reason;
    double ms;
    int pass, ranked;
    int stale; /* a pass timed in an earlier session of a resumed run, not again: not drawn */
};

static struct point point_of(const struct report_run *r, const json_t *e)
{
    struct point p = {.id = rpt_str(e, "candidate")};
    const json_t *c = rpt_candidate(r->summary, p.id);
    const json_t *from = c ? c : e;
    p.status = rpt_str(from, "status");
    p.reason = rpt_str(from, "reason");
    /* summary.json's time: the final session's, like the start's line
     * (history.json keeps each candidate's time when it was judged). */
    p.ms = rpt_num(from, "geomean_ms");
    p.stale = c && json_is_false(json_object_get(c, "compared"));
    p.pass = strcmp(p.status, "pass") == 0 && p.ms > 0;
    p.ranked = p.pass && place_of(r->summary, p.id) != 0;
    return p;
}

static void point_title(struct strbuf *sb, const struct point *p, const json_t *e)
{
    strbuf_puts(sb, "<title>");
    rpt_text(sb, p->id, 16);
    strbuf_puts(sb, " ");
    rpt_text(sb, rpt_str(e, "note"), 200);
    strbuf_puts(sb, ": ");
    rpt_text(sb, p->status, 64);
    if (!p->pass || !p->ranked) {
        strbuf_puts(sb, " ");
        rpt_text(sb, p->reason, RPT_MAX_TEXT);
    }
    strbuf_puts(sb, "</title>");
}

/* A ring around the result (class "chosen") or around a faster candidate
 * passed over (class "passed"), with the one line saying why. */
static void ring(struct strbuf *sb, double x, double y, const char *cls, const char *what,
                 const char *id, const char *why)
{
    strbuf_printf(sb, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\"><title>%s ", cls, x, y,
                  strcmp(cls, "chosen") == 0 ? "7.5" : "6", what);
    rpt_text(sb, id, 32);
    strbuf_puts(sb, ": ");
    rpt_text(sb, why, RPT_MAX_TEXT);
    strbuf_puts(sb, "</title></circle>\n");
}

static void axes(struct strbuf *sb, const struct rpt_axis *a, size_t n, double left, double right,
                 double bottom, double step)
{
    strbuf_printf(sb,
                  "<text class=\"title\" x=\"8\" y=\"16\">geomean latency (%s%s) per "
                  "iteration</text>\n",
                  a->unit, a->log ? ", log scale" : "");
    rpt_axis_draw(sb, a, 1, left, right);
    size_t every = n / 20 + 1;
    /* The iteration axis, and the latency axis carried down to it. */
    strbuf_printf(sb,
                  "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                  "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
                  left, right, bottom, bottom, left, left, a->px0, bottom);
    for (size_t i = 0; i < n; i += every)
        strbuf_printf(
            sb, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%zu</text>\n",
            left + 10 + (double)i * step, bottom + 14, i + 1);
    strbuf_printf(sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">iteration</text>\n",
                  (left + right) / 2, bottom + 34);
}

void rpt_progress_chart(struct strbuf *sb, const struct report_run *r)
{
    const json_t *hist = r->history, *best = json_object_get(r->summary, "best");
    const char *chosen = rpt_str(best, "candidate"), *why = rpt_str(best, "why");
    size_t n = json_array_size(hist);
    double lo = INFINITY, hi = 0, ref = rpt_num(r->summary, "reference_geomean_ms");
    for (size_t i = 0; i < n; i++) {
        struct point p = point_of(r, json_array_get(hist, i));
        if (p.pass) {
            lo = fmin(lo, p.ms);
            hi = fmax(hi, p.ms);
        }
    }
    if (ref > 0) {
        lo = fmin(lo, ref);
        hi = fmax(hi, ref);
    }
    const double w = RPT_CHART_W, h = 280, left = 80, right = w - 24, top = 34, bottom = 230;
    strbuf_printf(sb,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"progress-svg\" width=\"%.0f\" "
                  "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n%s",
                  w, h, w, h, rpt_svg_style);
    if (n == 0 || hi <= 0) {
        strbuf_puts(sb, "<text x=\"8\" y=\"20\">no iteration with a time to plot</text></svg>\n");
        return;
    }
    struct rpt_axis a;
    /* The fastest point sits above the iteration axis, clear of the
     * failures' x drawn on it. */
    rpt_axis_init(&a, lo, hi, bottom - 16, top);
    double step = n > 1 ? (right - left - 20) / (double)(n - 1) : 0;
    axes(sb, &a, n, left, right, bottom, step);
    if (ref > 0) {
        double y = rpt_axis_pos(&a, ref);
        strbuf_printf(sb,
                      "<line class=\"ref\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\">"
                      "<title>starting kernel</title></line>\n",
                      left, right, y, y);
        if (strcmp(chosen, "start") == 0)
            ring(sb, left + 10, y, "chosen", "the result:", "the starting kernel", why);
    }
    struct strbuf line;
    strbuf_init(&line);
    double fastest = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(hist, i);
        struct point p = point_of(r, e);
        double x = left + 10 + (double)i * step, y = rpt_axis_pos(&a, p.ms);
        if (p.stale) {
            continue;
        } else if (p.pass) {
            strbuf_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#2166ac\">", x, y);
            point_title(sb, &p, e);
            strbuf_puts(sb, "</circle>\n");
        } else {
            strbuf_printf(sb,
                          "<text x=\"%.1f\" y=\"%.1f\" fill=\"#b2182b\" text-anchor=\"middle\">"
                          "\u00d7",
                          x, bottom - 4);
            point_title(sb, &p, e);
            strbuf_puts(sb, "</text>\n");
        }
        if (p.ranked)
            fastest = fmin(fastest, p.ms);
        if (fastest < INFINITY)
            strbuf_printf(&line, "%.1f,%.1f ", x, rpt_axis_pos(&a, fastest));
        const char *po = passed_over(r->summary, p.id);
        double ry = p.pass ? y : bottom - 8;
        if (*p.id && strcmp(p.id, chosen) == 0)
            ring(sb, x, ry, "chosen", "the result:", p.id, why);
        else if (po)
            ring(sb, x, ry, "passed", "passed over:", p.id, po);
    }
    if (line.data)
        strbuf_printf(sb, "<polyline class=\"best\" points=\"%s\"/>\n", line.data);
    strbuf_free(&line);
    strbuf_puts(sb, "</svg>\n");
}
