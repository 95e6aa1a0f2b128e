#include "report.h"

#include <math.h>
#include <string.h>

#include "strbuf.h"

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : dflt;
}

/* Green for faster than the reference, red for slower, white for equal;
 * saturates at 8x either way. */
static void ratio_colour(double ratio, char *out, size_t cap)
{
    double t = log2(ratio) / 3.0;
    if (t > 1)
        t = 1;
    if (t < -1)
        t = -1;
    int r, g, b;
    if (t < 0) { /* faster */
        r = (int)(255 * (1 + t) + 40 * -t);
        g = 255 - (int)(80 * -t);
        b = (int)(255 * (1 + t) + 60 * -t);
    } else {
        r = 255 - (int)(35 * t);
        g = (int)(255 * (1 - t) + 60 * t);
        b = (int)(255 * (1 - t) + 60 * t);
    }
    snprintf(out, cap, "#%02x%02x%02x", r & 255, g & 255, b & 255);
}

enum kiln_rc report_heatmap_svg(const json_t *summary, char **out, struct kiln_err *err)
{
    const json_t *cases = json_object_get(summary, "perf_cases");
    const json_t *cands = json_object_get(summary, "candidates");
    const json_t *ref = json_object_get(summary, "reference_ms");
    if (!json_is_array(cases) || !json_is_array(cands))
        return kiln_fail(err, KILN_E_PARSE,
                         "summary.json: perf_cases and candidates must be arrays");
    size_t nc = json_array_size(cases), nr = json_array_size(cands);
    const int cw = 110, ch = 22, left = 150, top = 60;
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_printf(&sb,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%zu\" height=\"%zu\" "
                  "font-family=\"monospace\" font-size=\"12\">\n",
                  left + nc * cw + 20, top + nr * ch + 40);
    strbuf_puts(&sb, "<text x=\"4\" y=\"16\" font-weight=\"bold\">latency relative to the "
                     "reference kernel (green faster, red slower, grey failed)</text>\n");
    for (size_t j = 0; j < nc; j++) {
        strbuf_printf(&sb, "<text x=\"%zu\" y=\"%d\">", left + j * cw + 4, top - 8);
        strbuf_put_escaped(&sb, json_string_value(json_array_get(cases, j)));
        strbuf_puts(&sb, "</text>\n");
    }
    for (size_t i = 0; i < nr; i++) {
        const json_t *c = json_array_get(cands, i);
        const char *status = str_or(c, "status", "?");
        const json_t *case_ms = json_object_get(c, "case_ms");
        size_t y = top + i * ch;
        strbuf_printf(&sb, "<text x=\"4\" y=\"%zu\">", y + 15);
        strbuf_put_escaped(&sb, str_or(c, "id", "?"));
        strbuf_puts(&sb, "</text>\n");
        for (size_t j = 0; j < nc; j++) {
            const char *cname = json_string_value(json_array_get(cases, j));
            double ms = json_number_value(json_object_get(case_ms, cname ? cname : ""));
            double rms = json_number_value(json_object_get(ref, cname ? cname : ""));
            char fill[16] = "#bbbbbb", label[48] = "failed";
            int ok = strcmp(status, "pass") == 0 && ms > 0 && rms > 0;
            if (ok) {
                ratio_colour(ms / rms, fill, sizeof(fill));
                snprintf(label, sizeof(label), "%.3g ms (%.2fx)", ms, rms / ms);
            }
            strbuf_printf(&sb,
                          "<rect x=\"%zu\" y=\"%zu\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                          "stroke=\"#fff\"><title>",
                          left + j * cw, y, cw, ch, fill);
            strbuf_put_escaped(&sb, ok ? label : str_or(c, "reason", status));
            strbuf_printf(&sb, "</title></rect><text x=\"%zu\" y=\"%zu\">%s</text>\n",
                          left + j * cw + 4, y + 15, ok ? label : "\u2717 failed");
        }
    }
    strbuf_puts(&sb, "</svg>\n");
    return strbuf_finish(&sb, out, err);
}

/* Geomean latency per iteration, and the best so far, as an SVG line plot. */
static void latency_plot(struct strbuf *sb, const json_t *history)
{
    size_t n = json_array_size(history);
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < n; i++) {
        double v = json_number_value(json_object_get(json_array_get(history, i), "geomean_ms"));
        if (v > 0) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    const int w = 640, h = 220, pad = 40;
    strbuf_printf(sb,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"monospace\" font-size=\"11\">\n",
                  w, h);
    if (hi <= 0 || n == 0) {
        strbuf_puts(sb, "<text x=\"10\" y=\"20\">no passing candidate to plot</text></svg>\n");
        return;
    }
    if (hi == lo)
        hi = lo * 1.1;
    strbuf_printf(sb,
                  "<text x=\"4\" y=\"14\">geomean latency (ms) per iteration: "
                  "%.4g .. %.4g; dots = candidates, line = best so far</text>\n",
                  lo, hi);
    double best = INFINITY;
    struct strbuf line;
    strbuf_init(&line);
    for (size_t i = 0; i < n; i++) {
        double v = json_number_value(json_object_get(json_array_get(history, i), "geomean_ms"));
        double x = pad + (n > 1 ? (double)i * (w - 2 * pad) / (double)(n - 1) : 0);
        if (v > 0) {
            double y = h - pad - (v - lo) / (hi - lo) * (h - 2 * pad);
            strbuf_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#36c\"/>\n", x, y);
            best = v < best ? v : best;
        } else {
            strbuf_printf(sb, "<text x=\"%.1f\" y=\"%d\" fill=\"#c33\">\u2717</text>\n", x - 3,
                          h - pad + 14);
        }
        if (best < INFINITY)
            strbuf_printf(&line, "%.1f,%.1f ", x,
                          h - pad - (best - lo) / (hi - lo) * (h - 2 * pad));
    }
    if (line.data)
        strbuf_printf(sb, "<polyline fill=\"none\" stroke=\"#393\" points=\"%s\"/>\n", line.data);
    strbuf_free(&line);
    strbuf_puts(sb, "</svg>\n");
}

/* The vendor baseline (summary.json "baseline"): kind, status or why it is
 * missing, and its median per performance case. Old records have none. */
static void baseline_section(struct strbuf *sb, const json_t *summary)
{
    const json_t *b = json_object_get(summary, "baseline");
    if (!json_is_object(b))
        return;
    strbuf_puts(sb, "<h2>Vendor baseline</h2>\n<p>");
    const char *kind = json_string_value(json_object_get(b, "kind"));
    if (!kind) {
        strbuf_puts(sb, "none declared by the workload</p>\n");
        return;
    }
    strbuf_put_escaped(sb, kind);
    strbuf_puts(sb, ": ");
    strbuf_put_escaped(sb, str_or(b, "status", "?"));
    const char *detail = str_or(b, "detail", "");
    if (*detail) {
        strbuf_puts(sb, " (");
        strbuf_put_escaped(sb, detail);
        strbuf_puts(sb, ")");
    }
    double g = json_number_value(json_object_get(b, "geomean_ms"));
    if (g > 0)
        strbuf_printf(sb, "; geomean %.4g ms", g);
    strbuf_puts(sb, "</p>\n");
    const json_t *ms = json_object_get(b, "ms");
    if (!json_is_object(ms) || json_object_size(ms) == 0)
        return;
    strbuf_puts(sb, "<table><tr><th>case</th><th>baseline ms</th></tr>\n");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)ms, key, v)
    {
        strbuf_puts(sb, "<tr><td>");
        strbuf_put_escaped(sb, key);
        strbuf_printf(sb, "</td><td>%.4g</td></tr>\n", json_number_value(v));
    }
    strbuf_puts(sb, "</table>\n");
}

/* A warning line for data a run was given (opt_given.h), if it was. */
static void given_note(struct strbuf *sb, const json_t *given, const char *what)
{
    if (!json_is_object(given))
        return;
    strbuf_puts(sb, "<p class=\"warn\">");
    strbuf_put_escaped(sb, what);
    strbuf_puts(sb, " ");
    strbuf_put_escaped(sb, str_or(given, "path", "?"));
    strbuf_puts(sb, " (sha256 ");
    strbuf_put_escaped(sb, str_or(given, "sha256", "?"));
    strbuf_puts(sb, ").</p>\n");
}

enum kiln_rc report_html(const json_t *summary, const json_t *history, const char *best_source,
                         char **out, struct kiln_err *err)
{
    char *heat = NULL;
    enum kiln_rc rc = report_heatmap_svg(summary, &heat, err);
    if (rc != KILN_OK)
        return rc;
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_puts(&sb, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kiln run ");
    strbuf_put_escaped(&sb, str_or(summary, "run", ""));
    strbuf_puts(&sb, "</title><style>body{font-family:sans-serif;margin:2em;max-width:70em}"
                     "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
                     "text-align:left}pre{background:#f6f6f6;padding:1em;overflow:auto}"
                     ".warn{background:#fee;border:1px solid #c33;padding:.5em}</style>"
                     "</head><body>\n<h1>kiln run ");
    strbuf_put_escaped(&sb, str_or(summary, "run", ""));
    strbuf_puts(&sb, ": ");
    strbuf_put_escaped(&sb, str_or(summary, "workload", "?"));
    strbuf_puts(&sb, " (");
    strbuf_put_escaped(&sb, str_or(summary, "backend", "?"));
    strbuf_puts(&sb, ")</h1>\n");
    if (json_is_true(json_object_get(summary, "reference_generated_by_model")))
        strbuf_puts(&sb, "<p class=\"warn\">Reference generated by the model: not an independent "
                         "oracle.</p>\n");
    given_note(&sb, json_object_get(summary, "input_cases"),
               "Input cases not generated by the workload: given with --input-cases");
    given_note(&sb, json_object_get(summary, "reference_script"),
               "Reference not the workload's reference.py: given with --reference");
    const json_t *best = json_object_get(summary, "best");
    if (json_is_object(best)) {
        strbuf_puts(&sb, "<h2>Best candidate</h2><table>");
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)best, key, v)
        {
            strbuf_puts(&sb, "<tr><th>");
            strbuf_put_escaped(&sb, key);
            strbuf_puts(&sb, "</th><td>");
            char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            strbuf_put_escaped(&sb, txt ? txt : "?");
            free(txt);
            strbuf_puts(&sb, "</td></tr>");
        }
        strbuf_puts(&sb, "</table>\n");
    } else {
        strbuf_puts(&sb, "<p>No candidate passed.</p>\n");
    }
    baseline_section(&sb, summary);
    strbuf_puts(&sb, "<h2>Heatmap</h2>\n");
    strbuf_puts(&sb, heat);
    free(heat);
    strbuf_puts(&sb, "<h2>Latency per iteration</h2>\n");
    latency_plot(&sb, history);
    strbuf_puts(&sb, "<h2>Candidates</h2><table><tr><th>id</th><th>status</th><th>stage</th>"
                     "<th>geomean ms</th><th>vs baseline</th><th>why</th></tr>\n");
    const json_t *cands = json_object_get(summary, "candidates");
    for (size_t i = 0; i < json_array_size(cands); i++) {
        const json_t *c = json_array_get(cands, i);
        strbuf_puts(&sb, "<tr><td>");
        strbuf_put_escaped(&sb, str_or(c, "id", "?"));
        strbuf_puts(&sb, "</td><td>");
        strbuf_put_escaped(&sb, str_or(c, "status", "?"));
        strbuf_puts(&sb, "</td><td>");
        strbuf_put_escaped(&sb, str_or(c, "stage", ""));
        double g = json_number_value(json_object_get(c, "geomean_ms"));
        if (g > 0)
            strbuf_printf(&sb, "</td><td>%.4g</td><td>", g);
        else
            strbuf_puts(&sb, "</td><td>-</td><td>");
        double vb = json_number_value(json_object_get(c, "speedup_vs_baseline"));
        if (vb > 0)
            strbuf_printf(&sb, "%.2fx</td><td>", vb);
        else
            strbuf_puts(&sb, "-</td><td>");
        strbuf_put_escaped(&sb, str_or(c, "reason", ""));
        strbuf_puts(&sb, "</td></tr>\n");
    }
    strbuf_puts(&sb, "</table>\n<h2>Best kernel</h2>\n");
    if (best_source) {
        strbuf_puts(&sb, "<pre>");
        strbuf_put_escaped(&sb, best_source);
        strbuf_puts(&sb, "</pre>\n");
    } else {
        strbuf_puts(&sb, "<p>none</p>\n");
    }
    strbuf_puts(&sb, "</body></html>\n");
    return strbuf_finish(&sb, out, err);
}
