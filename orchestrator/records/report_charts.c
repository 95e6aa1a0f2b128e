/* report_charts.c - latency per performance case with its spread
 * (report_impl.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_impl.h"

#define ROW_H 16

/* One candidate's timing of one case, pooled over its input sets. */
struct spread {
    double min, p10, median, p90, max;
    long long n;
};

/* The spread of case `cname` from the candidate's verdict.json: whiskers
 * min..max and box p10..p90 over all its input sets' samples' statistics,
 * median the summary's case_ms (geomean of the sets' medians). 0 when the
 * record has no timing for it. */
static int case_spread(const struct report_run *r, const json_t *cand, const char *cname,
                       struct spread *s)
{
    memset(s, 0, sizeof(*s));
    s->min = s->p10 = INFINITY;
    const json_t *vcases = json_object_get(rpt_verdict(r, rpt_str(cand, "id")), "cases");
    for (size_t i = 0; i < json_array_size(vcases); i++) {
        const json_t *c = json_array_get(vcases, i);
        const json_t *t = json_object_get(c, "timing");
        if (strcmp(rpt_str(c, "case"), cname) != 0 || !json_is_object(t) || rpt_num(t, "min") <= 0)
            continue;
        s->min = fmin(s->min, rpt_num(t, "min"));
        s->p10 = fmin(s->p10, rpt_num(t, "p10"));
        s->p90 = fmax(s->p90, rpt_num(t, "p90"));
        s->max = fmax(s->max, rpt_num(t, "max"));
        s->n += (long long)rpt_num(t, "n");
    }
    s->median = rpt_num(json_object_get(cand, "case_ms"), cname);
    if (s->n == 0) /* no verdict.json: the median alone */
        s->min = s->p10 = s->p90 = s->max = s->median;
    return s->median > 0 && s->min > 0;
}

static void spread_row(struct strbuf *sb, const struct rpt_axis *a, const struct spread *s,
                       const char *status, double y)
{
    char med[24], lo[24], hi[24];
    rpt_ms(med, sizeof(med), s->median);
    rpt_ms(lo, sizeof(lo), s->min);
    rpt_ms(hi, sizeof(hi), s->max);
    strbuf_puts(sb, "<title>median ");
    strbuf_printf(sb, "%s, min %s, max %s, %lld samples", med, lo, hi, s->n);
    if (strcmp(status, "pass") != 0) {
        strbuf_puts(sb, "; ");
        rpt_text(sb, status, 64);
    }
    strbuf_puts(sb, "</title>");
    double x0 = rpt_axis_pos(a, s->min), x1 = rpt_axis_pos(a, s->max);
    double b0 = rpt_axis_pos(a, s->p10), b1 = rpt_axis_pos(a, s->p90);
    double m = rpt_axis_pos(a, s->median), cy = y + ROW_H / 2.0;
    strbuf_printf(sb,
                  "<line class=\"whisker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                  "<line class=\"whisker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                  "<line class=\"whisker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                  x0, x1, cy, cy, x0, x0, cy - 4, cy + 4, x1, x1, cy - 4, cy + 4);
    strbuf_printf(sb,
                  "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"10\"/>"
                  "<line class=\"median\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                  strcmp(status, "pass") == 0 ? "box" : "boxbad", b0, cy - 5,
                  b1 - b0 > 1 ? b1 - b0 : 1, m, m, cy - 6, cy + 6);
}

/* A vertical marker across the rows (starting kernel, vendor baseline). */
static void marker(struct strbuf *sb, const struct rpt_axis *a, double ms, const char *cls,
                   const char *what, double y0, double y1)
{
    if (ms <= 0)
        return;
    char t[24];
    rpt_ms(t, sizeof(t), ms);
    double x = rpt_axis_pos(a, ms);
    strbuf_printf(sb,
                  "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"><title>%s "
                  "%s</title></line>\n",
                  cls, x, x, y0, y1, what, t);
}

static void case_chart(struct strbuf *sb, const struct report_run *r, const char *cname,
                       double label_w)
{
    const json_t *cands = json_object_get(r->summary, "candidates");
    size_t nr = json_array_size(cands);
    nr = nr < REPORT_MAX_ROWS ? nr : REPORT_MAX_ROWS;
    double ref = rpt_num(json_object_get(r->summary, "reference_ms"), cname);
    double base = rpt_num(json_object_get(json_object_get(r->summary, "baseline"), "ms"), cname);
    double lo = INFINITY, hi = 0;
    size_t rows = 0;
    for (size_t i = 0; i < nr; i++) {
        struct spread s;
        if (case_spread(r, json_array_get(cands, i), cname, &s)) {
            lo = fmin(lo, s.min);
            hi = fmax(hi, s.max);
            rows++;
        }
    }
    for (int k = 0; k < 2; k++) {
        double v = k ? base : ref;
        if (v > 0) {
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
    }
    const double top = 34, w = RPT_CHART_W;
    double axis_y = top + (double)(rows ? rows : 1) * ROW_H + 6, h = axis_y + 40;
    struct rpt_axis a;
    rpt_axis_init(&a, lo, hi, label_w + 8, w - 24);
    strbuf_printf(sb,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"case-chart\" width=\"%.0f\" "
                  "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n%s",
                  w, h, w, h, rpt_svg_style);
    struct strbuf title;
    strbuf_init(&title);
    strbuf_printf(&title, "case %s: latency per candidate (%s)", cname,
                  a.log ? "log axis" : "linear axis");
    rpt_svg_text(sb, 8, 16, w - 16, "class=\"title\"", title.data ? title.data : "");
    strbuf_free(&title);
    rpt_axis_draw(sb, &a, 0, axis_y, top - 6);
    marker(sb, &a, ref, "ref", "starting kernel median", top - 6, axis_y);
    marker(sb, &a, base, "base", "vendor baseline median", top - 6, axis_y);
    if (!rows)
        strbuf_printf(sb,
                      "<text class=\"dim\" x=\"%.1f\" y=\"%.1f\">no candidate has a "
                      "time for this case</text>\n",
                      label_w + 12, top + 12);
    double y = top;
    for (size_t i = 0; i < nr; i++) {
        const json_t *c = json_array_get(cands, i);
        struct spread s;
        if (!case_spread(r, c, cname, &s))
            continue;
        struct strbuf plain;
        strbuf_init(&plain);
        rpt_label(r, rpt_str(c, "id"), &plain);
        strbuf_puts(sb, "<g class=\"lrow\">");
        rpt_svg_text(sb, 8, y + 12, label_w - 8, "", plain.data ? plain.data : "");
        strbuf_free(&plain);
        spread_row(sb, &a, &s, rpt_str(c, "status"), y);
        strbuf_puts(sb, "</g>\n");
        y += ROW_H;
    }
    strbuf_printf(sb,
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">latency (%s)%s</text>\n"
                  "</svg>\n",
                  (a.px0 + a.px1) / 2, axis_y + 32, a.unit, a.log ? ", log scale" : "");
}

void rpt_latency_charts(struct strbuf *sb, const struct report_run *r)
{
    const json_t *cases = json_object_get(r->summary, "perf_cases");
    const json_t *cands = json_object_get(r->summary, "candidates");
    size_t nr = json_array_size(cands), nc = json_array_size(cases);
    double label_w = rpt_label_width(r, cands, nr < REPORT_MAX_ROWS ? nr : REPORT_MAX_ROWS);
    for (size_t j = 0; j < nc && j < REPORT_MAX_CASES; j++)
        case_chart(sb, r, rpt_case(cases, j), label_w);
}
