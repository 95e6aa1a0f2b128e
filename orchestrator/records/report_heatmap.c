/* report_heatmap.c - candidates x performance cases, coloured by speedup
 * against the starting kernel (report.h). */
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_impl.h"

#define ROW_H    20
#define TOP      58
#define LEGEND_H 64

/* The speedups the legend shows, one swatch each. */
static const double legend_steps[] = {0.125, 0.25, 0.5, 1, 2, 4, 8};
static const char *const legend_names[] = {"1/8x", "1/4x", "1/2x", "1x", "2x", "4x", "8x"};

static void legend(struct strbuf *sb, double y)
{
    strbuf_printf(sb, "<g id=\"heatmap-legend\"><text x=\"8\" y=\"%.1f\">slower</text>\n", y + 14);
    for (size_t i = 0; i < sizeof(legend_steps) / sizeof(*legend_steps); i++) {
        char fill[8];
        int dark;
        rpt_speedup_colour(legend_steps[i], fill, &dark);
        strbuf_printf(sb,
                      "<rect x=\"%zu\" y=\"%.1f\" width=\"48\" height=\"18\" fill=\"%s\"/>"
                      "<text x=\"%zu\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                      60 + i * 48, y, fill, 84 + i * 48, y + 32, legend_names[i]);
    }
    strbuf_printf(sb,
                  "<text x=\"402\" y=\"%.1f\">faster</text><rect class=\"fail\" x=\"460\" "
                  "y=\"%.1f\" width=\"20\" height=\"18\"/><text x=\"486\" y=\"%.1f\">failed "
                  "(status)</text>\n",
                  y + 14, y, y + 14);
    strbuf_printf(sb,
                  "<text class=\"dim\" x=\"8\" y=\"%.1f\">speedup = starting kernel's median / "
                  "candidate's, per case</text></g>\n",
                  y + 50);
}

/* One cell: a pass's speedup on its colour, or the failure's status. */
static void cell(struct strbuf *sb, const json_t *cand, const char *cname, double ref_ms, double x,
                 double y, double cw)
{
    const char *status = rpt_str(cand, "status");
    double ms = rpt_num(json_object_get(cand, "case_ms"), cname);
    char fill[8] = "", text[32], tip[96], ref[24], got[24];
    int dark = 1;
    int pass = strcmp(status, "pass") == 0;
    /* A pass of an earlier timing session (a resumed run) not timed again:
     * its times divided by this session's start would mix sessions. */
    bool compared = !json_is_false(json_object_get(cand, "compared"));
    if (pass && !compared) {
        snprintf(text, sizeof(text), "not compared");
        snprintf(tip, sizeof(tip), "timed before an interruption (session %lld), not again",
                 (long long)json_integer_value(json_object_get(cand, "timing_session")));
    } else if (pass && ms > 0 && ref_ms > 0) {
        double s = ref_ms / ms;
        rpt_speedup_colour(s, fill, &dark);
        snprintf(text, sizeof(text), s < 10 ? "%.2fx" : s < 100 ? "%.1fx" : "%.0fx", s);
        rpt_ms(got, sizeof(got), ms);
        rpt_ms(ref, sizeof(ref), ref_ms);
        snprintf(tip, sizeof(tip), "%s: %s vs %s, %s", cname, got, ref, text);
    } else {
        snprintf(text, sizeof(text), "%s", pass ? "n/a" : "");
        snprintf(tip, sizeof(tip), "%s", pass ? "no time for this case" : "");
    }
    strbuf_puts(sb, "<g class=\"cell\">");
    strbuf_printf(sb,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" stroke=\"#fff\"%s%s%s>"
                  "<title>",
                  x, y, cw, ROW_H, *fill ? " fill=\"" : " class=\"fail\"", fill, *fill ? "\"" : "");
    if (pass) {
        rpt_text(sb, tip, RPT_MAX_TEXT);
    } else { /* status (stage): reason */
        rpt_text(sb, status, 64);
        strbuf_puts(sb, " (");
        rpt_text(sb, rpt_str(cand, "stage"), 64);
        strbuf_puts(sb, "): ");
        rpt_text(sb, rpt_str(cand, "reason"), RPT_MAX_TEXT);
    }
    strbuf_puts(sb, "</title></rect>");
    rpt_svg_text(sb, x + 4, y + 14, cw - 8, dark ? "" : "class=\"light\"", pass ? text : status);
    strbuf_puts(sb, "</g>\n");
}

enum kiln_rc report_heatmap_svg(const struct report_run *r, char **out, struct kiln_err *err)
{
    const json_t *cases = json_object_get(r->summary, "perf_cases");
    const json_t *cands = json_object_get(r->summary, "candidates");
    const json_t *ref = json_object_get(r->summary, "reference_ms");
    if (!json_is_array(cases) || !json_is_array(cands))
        return kiln_fail(err, KILN_E_PARSE,
                         "summary.json: perf_cases and candidates must be arrays; regenerate "
                         "the record or check it against results/README.md");
    size_t nc = json_array_size(cases), nr = json_array_size(cands);
    size_t more_rows = nr > REPORT_MAX_ROWS ? nr - REPORT_MAX_ROWS : 0;
    size_t more_cases = nc > REPORT_MAX_CASES ? nc - REPORT_MAX_CASES : 0;
    nr -= more_rows;
    nc -= more_cases;
    double label_w = rpt_label_width(r, cands, nr);
    double cw = nc ? (RPT_CHART_W - label_w - 10) / (double)nc : 100;
    cw = cw < 72 ? 72 : cw > 150 ? 150 : cw;
    double grid_w = label_w + (double)nc * cw + 10;
    double w = grid_w > 600 ? grid_w : 600;
    double legend_y = TOP + (double)nr * ROW_H + (more_rows || more_cases ? 34 : 16);
    double h = legend_y + LEGEND_H;
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_printf(&sb,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"heatmap-svg\" width=\"%.0f\" "
                  "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
                  "aria-label=\"speedup heatmap\">\n%s",
                  w, h, w, h, rpt_svg_style);
    /* Older records lack "starting_kernel": they always had one. */
    bool no_start = json_is_null(json_object_get(r->summary, "starting_kernel"));
    rpt_svg_text(&sb, 8, 18, w - 16, "class=\"title\"",
                 no_start ? "Speedup vs the starting kernel: no starting kernel: speedups are "
                            "not computed"
                          : "Speedup vs the starting kernel, per candidate and performance case");
    rpt_svg_text(&sb, 8, TOP - 8, label_w - 12, "class=\"dim\"", "candidate");
    for (size_t j = 0; j < nc; j++)
        rpt_svg_text(&sb, label_w + (double)j * cw + 4, TOP - 8, cw - 8, "class=\"colhead\"",
                     rpt_case(cases, j));
    for (size_t i = 0; i < nr; i++) {
        const json_t *c = json_array_get(cands, i);
        double y = TOP + (double)i * ROW_H;
        struct strbuf plain;
        strbuf_init(&plain);
        rpt_label(r, rpt_str(c, "id"), &plain);
        strbuf_printf(&sb,
                      "<g class=\"row\"><g class=\"cell lab\"><rect x=\"4\" y=\"%.1f\" "
                      "width=\"%.1f\" height=\"%d\" fill=\"none\"/>",
                      y, label_w - 8, ROW_H);
        rpt_svg_text(&sb, 8, y + 14, label_w - 16, "", plain.data ? plain.data : "");
        strbuf_puts(&sb, "</g>\n");
        strbuf_free(&plain);
        for (size_t j = 0; j < nc; j++) {
            const char *cname = rpt_case(cases, j);
            cell(&sb, c, cname, rpt_num(ref, cname), label_w + (double)j * cw, y, cw);
        }
        strbuf_puts(&sb, "</g>\n");
    }
    if (more_rows || more_cases)
        strbuf_printf(&sb,
                      "<text class=\"dim\" x=\"8\" y=\"%.1f\">not shown: %zu more candidates, "
                      "%zu more cases (summary.json has them all)</text>\n",
                      TOP + (double)nr * ROW_H + 18, more_rows, more_cases);
    legend(&sb, legend_y);
    strbuf_puts(&sb, "</svg>\n");
    return strbuf_finish(&sb, out, err);
}
