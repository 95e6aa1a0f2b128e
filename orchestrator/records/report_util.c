/* report_util.c - helpers the report's sections share (report_impl.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_impl.h"
#include "text.h"

const char rpt_svg_style[] =
    "<style>text{font-family:'DejaVu Sans Mono',monospace;font-size:11px;fill:#222}"
    ".title{font-weight:bold;font-size:12px}.grid{stroke:#e4e4e4}.axis{stroke:#666}"
    ".tick{fill:#444}.dim{fill:#777}.light{fill:#fff}.fail{fill:#d9d9d9}"
    ".box{fill:#9ecae1;stroke:#2166ac}.boxbad{fill:#e0e0e0;stroke:#888}"
    ".whisker{stroke:#2166ac}.median{stroke:#08306b;stroke-width:2.5}"
    ".ref{stroke:#b2182b;stroke-width:1.5;stroke-dasharray:4 "
    "3}.base{stroke:#6a3d9a;stroke-dasharray:1 3;"
    "stroke-width:2}.best{stroke:#1b7837;stroke-width:2;fill:none}"
    ".chosen{fill:none;stroke:#1b7837;stroke-width:2.5}"
    ".passed{fill:none;stroke:#e08214;stroke-width:2}</style>\n";

const char *rpt_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

double rpt_num(const json_t *o, const char *key)
{
    double v = json_number_value(json_object_get(o, key));
    return isfinite(v) && v > 0 ? v : 0;
}

void rpt_text(struct strbuf *sb, const char *s, size_t max)
{
    (void)text_put_markup(sb, s, max);
}

const json_t *rpt_candidate(const json_t *summary, const char *id)
{
    const json_t *cands = json_object_get(summary, "candidates");
    for (size_t i = 0; i < json_array_size(cands); i++)
        if (strcmp(rpt_str(json_array_get(cands, i), "id"), id) == 0)
            return json_array_get(cands, i);
    return NULL;
}

const json_t *rpt_verdict(const struct report_run *r, const char *id)
{
    const json_t *v = json_object_get(r->verdicts, id);
    return json_is_object(v) ? v : NULL;
}

/* One tunable value as text; other JSON kinds (not written by kiln) as "?". */
static void put_value(struct strbuf *plain, const json_t *v)
{
    if (json_is_integer(v))
        strbuf_printf(plain, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        strbuf_printf(plain, "%g", json_real_value(v));
    else if (json_is_string(v))
        strbuf_puts(plain, json_string_value(v));
    else if (json_is_boolean(v))
        strbuf_puts(plain, json_is_true(v) ? "true" : "false");
    else
        strbuf_puts(plain, "?");
}

void rpt_tunables(const struct report_run *r, const char *id, const char *sep, struct strbuf *plain)
{
    const json_t *config = json_object_get(rpt_verdict(r, id), "config");
    const char *key, *between = "";
    const json_t *val;
    json_object_foreach((json_t *)config, key, val)
    {
        strbuf_printf(plain, "%s%s=", between, key);
        put_value(plain, val);
        between = sep;
    }
}

void rpt_label(const struct report_run *r, const char *id, struct strbuf *plain)
{
    strbuf_puts(plain, id);
    const json_t *v = rpt_verdict(r, id);
    if (json_object_size(json_object_get(v, "config")) > 0) {
        strbuf_puts(plain, " ");
        rpt_tunables(r, id, " ", plain);
    } else if (*rpt_str(v, "note")) {
        strbuf_printf(plain, " %s", rpt_str(v, "note"));
    }
}

const char *rpt_case(const json_t *cases, size_t j)
{
    const char *s = json_string_value(json_array_get(cases, j));
    return s ? s : "";
}

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; s && *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

double rpt_label_width(const struct report_run *r, const json_t *cands, size_t n)
{
    size_t widest = 8;
    for (size_t i = 0; i < n; i++) {
        struct strbuf plain;
        strbuf_init(&plain);
        rpt_label(r, rpt_str(json_array_get(cands, i), "id"), &plain);
        size_t k = utf8_chars(plain.data);
        widest = k > widest ? k : widest;
        strbuf_free(&plain);
    }
    return 16 + (double)(widest < 44 ? widest : 44) * RPT_CHAR_PX;
}

void rpt_svg_text(struct strbuf *sb, double x, double y, double width, const char *attrs,
                  const char *s)
{
    size_t fit = width > RPT_CHAR_PX ? (size_t)(width / RPT_CHAR_PX) : 1;
    strbuf_printf(sb, "<text x=\"%.1f\" y=\"%.1f\"%s%s>", x, y, *attrs ? " " : "", attrs);
    struct strbuf cut;
    strbuf_init(&cut);
    /* All of it when it fits, else one character less and the ellipsis. */
    int was_cut = utf8_chars(s) > fit;
    (void)text_put_markup(&cut, s, was_cut && fit > 1 ? fit - 1 : fit);
    if (was_cut) {
        strbuf_puts(sb, "<title>");
        rpt_text(sb, s, RPT_MAX_TEXT);
        strbuf_puts(sb, "</title>");
    }
    strbuf_puts(sb, cut.data ? cut.data : "");
    strbuf_free(&cut);
    strbuf_puts(sb, "</text>");
}

void rpt_ms(char *out, size_t cap, double ms)
{
    if (ms < 1)
        snprintf(out, cap, "%.3g \u00b5s", ms * 1000);
    else if (ms < 10000)
        snprintf(out, cap, "%.3g ms", ms);
    else
        snprintf(out, cap, "%.3g s", ms / 1000);
}

/* 1, 2 or 5 times a power of ten, near span / 5: a linear axis's step. */
static double nice_step(double span)
{
    double raw = span / 5, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

void rpt_axis_init(struct rpt_axis *a, double lo, double hi, double px0, double px1)
{
    /* Times outside 1 ps .. 11 days are not measurements; clamping keeps
     * the tick loops short and the arithmetic finite. */
    hi = hi > 0 ? fmin(fmax(hi, 1e-9), 1e9) : 1;
    lo = lo > 0 ? fmin(fmax(lo, 1e-9), hi) : hi;
    if (hi <= lo * 1.0001) {
        lo *= 0.9;
        hi *= 1.1;
    }
    a->px0 = px0;
    a->px1 = px1;
    a->log = hi / lo > 10;
    if (a->log) {
        a->lo = lo / 1.2;
        a->hi = hi * 1.2;
    } else {
        double step = nice_step(hi - lo);
        a->lo = floor(lo / step) * step;
        a->hi = ceil(hi / step) * step;
        if (a->lo >= lo)
            a->lo -= step;
        if (a->lo < 0)
            a->lo = 0;
    }
    a->scale = a->hi < 1 ? 1000 : a->hi >= 10000 ? 0.001 : 1;
    a->unit = a->hi < 1 ? "\u00b5s" : a->hi >= 10000 ? "s" : "ms";
}

double rpt_axis_pos(const struct rpt_axis *a, double ms)
{
    double t = a->log ? (log(ms) - log(a->lo)) / (log(a->hi) - log(a->lo))
                      : (ms - a->lo) / (a->hi - a->lo);
    if (!(t >= 0))
        t = 0;
    if (t > 1)
        t = 1;
    return a->px0 + t * (a->px1 - a->px0);
}

/* One tick: its grid line and, unless too close to the last label, its
 * label. */
static void tick(struct strbuf *sb, const struct rpt_axis *a, int vertical, double at,
                 double grid_to, double ms, double *last_label)
{
    double p = rpt_axis_pos(a, ms);
    if (vertical)
        strbuf_printf(sb, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                      at, grid_to, p, p);
    else
        strbuf_printf(sb, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                      p, p, at, grid_to);
    double gap = vertical ? 14 : 48;
    if (fabs(p - *last_label) < gap)
        return;
    *last_label = p;
    if (vertical)
        strbuf_printf(sb,
                      "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                      at - 5, p + 4, ms * a->scale);
    else
        strbuf_printf(
            sb, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", p,
            at + 14, ms * a->scale);
}

void rpt_axis_draw(struct strbuf *sb, const struct rpt_axis *a, int vertical, double at,
                   double grid_to)
{
    double last = -1e9;
    if (vertical)
        strbuf_printf(sb,
                      "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
                      at, at, a->px0, a->px1);
    else
        strbuf_printf(sb,
                      "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>\n",
                      a->px0, a->px1, at, at);
    if (a->log) {
        for (int k = (int)floor(log10(a->lo)); k <= (int)ceil(log10(a->hi)); k++) {
            static const double mult[] = {1, 2, 5};
            for (size_t m = 0; m < 3; m++) {
                double v = mult[m] * pow(10, k);
                if (v >= a->lo && v <= a->hi)
                    tick(sb, a, vertical, at, grid_to, v, &last);
            }
        }
        return;
    }
    double step = nice_step(a->hi - a->lo);
    for (double v = a->lo; v <= a->hi + step * 1e-6; v += step)
        tick(sb, a, vertical, at, grid_to, fabs(v) < step * 1e-9 ? 0 : v, &last);
}

void rpt_speedup_colour(double speedup, char fill[8], int *dark)
{
    /* Light grey at 1x so a small change already shows a visible tint:
     * the distance from 1x is taken to the power 0.6. */
    static const double mid[3] = {236, 236, 236}, fast[3] = {33, 102, 172}, slow[3] = {178, 24, 43};
    double t = log2(speedup) / 3;
    t = t > 1 ? 1 : t < -1 ? -1 : t;
    double u = pow(fabs(t), 0.6);
    const double *end = t >= 0 ? fast : slow;
    int c[3];
    for (int i = 0; i < 3; i++)
        c[i] = (int)lround(mid[i] + u * (end[i] - mid[i]));
    snprintf(fill, 8, "#%02x%02x%02x", c[0] & 255, c[1] & 255, c[2] & 255);
    *dark = u < 0.55;
}
