#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    return doc;
}

static json_t *summary(void)
{
    return parse(
        "{\"run\":\"run-001\",\"workload\":\"saxpy\",\"backend\":\"cpu\","
        "\"reference_generated_by_model\":true,"
        "\"perf_cases\":[\"big\",\"huge\"],\"reference_ms\":{\"big\":2.0,\"huge\":4.0},"
        "\"reference_geomean_ms\":2.83,"
        "\"best\":{\"candidate\":\"002\",\"geomean_ms\":1.0,\"speedup_vs_reference\":2.83,"
        "\"speedup_vs_baseline\":1.25,\"fraction_of_floor\":0.5,\"held_out\":\"pass\"},"
        "\"candidates\":["
        "{\"id\":\"001\",\"status\":\"pass\",\"geomean_ms\":2.83,\"case_ms\":{\"big\":2.0,"
        "\"huge\":4.0}},"
        "{\"id\":\"002\",\"status\":\"pass\",\"geomean_ms\":1.0,\"case_ms\":{\"big\":0.5,"
        "\"huge\":2.0},\"speedup_vs_baseline\":1.25},"
        "{\"id\":\"003\",\"status\":\"wrong_answer\",\"stage\":\"verify\","
        "\"reason\":\"<script>alert(1)</script>\"}],"
        "\"ranking\":[{\"candidate\":\"002\",\"place\":1,\"status\":\"pass\",\"reason\":"
        "\"fastest\"},"
        "{\"candidate\":\"001\",\"place\":2,\"status\":\"pass\",\"reason\":\"slower\"},"
        "{\"candidate\":\"003\",\"place\":0,\"status\":\"wrong_answer\",\"reason\":\"<b>x</b>\"}],"
        "\"baseline\":{\"kind\":\"memcpy\",\"status\":\"ok\",\"detail\":\"<b>\","
        "\"ms\":{\"big\":0.625,\"huge\":2.5},\"geomean_ms\":1.25}}");
}

/* verdict.json of 002: tunables and timing spread per case. */
static json_t *verdicts(void)
{
    return parse("{\"002\":{\"config\":{\"BLOCK\":256,\"ITEMS\":4},\"note\":\"n\",\"sol\":0.5,"
                 "\"cases\":[{\"case\":\"big\",\"timing\":{\"n\":5,\"median\":0.5,\"min\":0.01,"
                 "\"max\":0.9,\"p10\":0.4,\"p90\":0.6}}]}}");
}

static void heatmap_marks_speedups_and_failures(void **state)
{
    (void)state;
    json_t *s = summary(), *v = verdicts();
    struct report_run r = {.summary = s, .verdicts = v};
    char *svg = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_heatmap_svg(&r, &svg, &e), KILN_OK);
    assert_non_null(strstr(svg, ">4.00x</text>"));
    assert_non_null(strstr(svg, "big: 500 \u00b5s vs 2 ms, 4.00x"));
    assert_non_null(strstr(svg, ">1.00x</text>"));
    assert_non_null(strstr(svg, ">002 BLOCK=256 ITEMS=4</text>")); /* tunables label the row */
    assert_non_null(strstr(svg, "wrong_answer (verify): &lt;script&gt;"));
    assert_non_null(strstr(svg, "id=\"heatmap-legend\""));
    assert_null(strstr(svg, "<script>"));
    free(svg);
    json_decref(v);
    json_decref(s);
}

/* A label longer than its cell is cut with an ellipsis, whole in <title>. */
static void heatmap_cuts_long_labels(void **state)
{
    (void)state;
    json_t *s = summary(), *v = verdicts();
    char long_value[301];
    memset(long_value, 'y', 300);
    long_value[300] = '\0';
    json_object_set_new(json_object_get(json_object_get(v, "002"), "config"), "TILE",
                        json_string(long_value));
    struct report_run r = {.summary = s, .verdicts = v};
    char *svg = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_heatmap_svg(&r, &svg, &e), KILN_OK);
    assert_non_null(strstr(svg, "yyy\u2026</text>"));
    assert_non_null(strstr(svg, long_value)); /* in the <title> */
    free(svg);
    json_decref(v);
    json_decref(s);
}

static void html_is_self_contained_and_escaped(void **state)
{
    (void)state;
    json_t *s = summary(), *v = verdicts();
    json_t *h = parse("[{\"geomean_ms\":2.83,\"status\":\"pass\"},{\"geomean_ms\":1.0,"
                      "\"status\":\"pass\"},{\"status\":\"x\"}]");
    json_t *run = parse("{\"command\":[\"optimize\",\"saxpy\",\"--note=it's\"],"
                        "\"started\":\"2026-12-03T10:00:00Z\",\"kiln\":{\"version\":\"0.1.0\","
                        "\"revision\":\"abc\"},\"gpu\":{\"model\":\"NVIDIA H200\"}}");
    struct report_run r = {s, h, run, NULL, v, "__global__ void k() { if (a < b) {} }"};
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    assert_non_null(strstr(html, "not an independent oracle"));
    assert_non_null(strstr(html, "a &lt; b"));
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, " src="));
    assert_non_null(strstr(html, "<polyline"));
    assert_non_null(strstr(html, "backend cpu on NVIDIA H200"));
    /* The exact command line, quoted as a shell would read it back. */
    assert_non_null(strstr(html, "kiln optimize saxpy &#39;--note=it&#39;\\&#39;&#39;s&#39;"));
    /* Best candidate as rows: tunables key=value, roofline, vendor. */
    assert_non_null(strstr(html, "BLOCK=256\nITEMS=4"));
    assert_non_null(strstr(html, "50% of the physics floor"));
    assert_non_null(strstr(html, "1.25x (vendor baseline 1.25 ms)"));
    /* The ranking: place, vs vendor, roofline, held-out, reason. */
    assert_non_null(strstr(html, "<td class=\"num\">1</td><td class=\"mono\">002 BLOCK=256"));
    assert_non_null(strstr(html, "<td class=\"num\">50%</td><td>pass</td><td>fastest</td>"));
    assert_non_null(strstr(html, "&lt;b&gt;x&lt;/b&gt;"));
    /* The spread on big spans 0.01..2 ms: a log axis. */
    assert_non_null(strstr(html, "latency (ms), log scale"));
    assert_non_null(strstr(html, "memcpy: ok (&lt;b&gt;); geomean 1.25 ms"));
    assert_null(strstr(html, "<b>"));
    free(html);
    json_decref(run);
    json_decref(h);
    json_decref(v);
    json_decref(s);
}

/* The unit the floor was measured against (issue 36), from the best's
 * verdict.json floor_unit: named beside the roofline figure and in the
 * ranking's note; a verdict without one (cpu, older runs) names none. */
static void html_names_the_floor_unit(void **state)
{
    (void)state;
    json_t *s = summary();
    json_t *v = parse("{\"002\":{\"config\":{},\"sol\":0.5,\"floor_unit\":\"bf16_tensor\","
                      "\"cases\":[]}}");
    json_t *h = parse("[{\"geomean_ms\":1.0,\"status\":\"pass\"}]");
    json_t *run = parse("{\"command\":[\"optimize\",\"gemm_bf16\"]}");
    struct report_run r = {s, h, run, NULL, v, "x"};
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    assert_non_null(strstr(html, "50% of the physics floor&#39;s speed (BF16 tensor peak)"));
    assert_non_null(strstr(html, "the floor is the BF16 tensor peak or the DRAM bandwidth"));
    free(html);
    json_decref(v);
    v = verdicts();
    r.verdicts = v;
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    assert_null(strstr(html, " peak"));
    free(html);
    json_decref(run);
    json_decref(h);
    json_decref(v);
    json_decref(s);
}

/* Given data (opt_given.h) is flagged on the page, its path escaped. */
static void html_warns_about_given_data(void **state)
{
    (void)state;
    json_t *s = summary(), *h = json_array();
    struct report_run r = {.summary = s, .history = h};
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    assert_null(strstr(html, "--input-cases"));
    assert_null(strstr(html, "--reference"));
    free(html);
    json_object_set_new(s, "input_cases",
                        json_pack("{s:s, s:s}", "path", "<x>.tar", "sha256", "abc123"));
    json_object_set_new(s, "reference_script",
                        json_pack("{s:s, s:s}", "path", "my_ref.py", "sha256", "def456"));
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    assert_non_null(strstr(html, "given with --input-cases &lt;x&gt;.tar (sha256 abc123)"));
    assert_non_null(strstr(html, "given with --reference my_ref.py (sha256 def456)"));
    free(html);
    json_decref(h);
    json_decref(s);
}

/* A run whose fastest candidate (002) failed the held-out check at the
 * end: history.json still records it as a pass, summary.json does not,
 * and the result is 001 (best.why, best.passed_over). */
static json_t *passed_over_summary(void)
{
    return parse(
        "{\"run\":\"run-001\",\"workload\":\"saxpy\",\"backend\":\"cpu\","
        "\"perf_cases\":[\"big\"],\"reference_ms\":{\"big\":4.0},\"reference_geomean_ms\":4.0,"
        "\"best\":{\"candidate\":\"001\",\"geomean_ms\":2.0,\"speedup_vs_reference\":2.0,"
        "\"held_out\":\"pass\",\"summary\":\"pass, re-verified\","
        "\"why\":\"001: 2.00x the starting kernel, beyond measured noise (+-3.0%)\","
        "\"passed_over\":[{\"candidate\":\"002\",\"reason\":\"002 was 2.00x faster than 001 "
        "but failed (wrong_answer): held-out check failed: out[0] differs\"}]},"
        "\"best_candidate\":{\"candidate\":\"001\"},"
        "\"candidates\":["
        "{\"id\":\"001\",\"status\":\"pass\",\"stage\":\"pass\",\"geomean_ms\":2.0,"
        "\"case_ms\":{\"big\":2.0}},"
        "{\"id\":\"002\",\"status\":\"wrong_answer\",\"stage\":\"held_out\",\"reason\":"
        "\"held-out check failed: out[0] differs\",\"geomean_ms\":null,\"case_ms\":{}},"
        "{\"id\":\"003\",\"status\":\"pass\",\"stage\":\"pass\",\"geomean_ms\":2.5,"
        "\"case_ms\":{\"big\":2.5}}],"
        "\"ranking\":[{\"candidate\":\"001\",\"place\":1,\"status\":\"pass\",\"reason\":\"a\"},"
        "{\"candidate\":\"003\",\"place\":2,\"status\":\"pass\",\"reason\":\"b\"},"
        "{\"candidate\":\"002\",\"place\":0,\"status\":\"wrong_answer\",\"reason\":\"c\"}]}");
}

static json_t *passed_over_history(void)
{
    return parse("[{\"candidate\":\"001\",\"status\":\"pass\",\"geomean_ms\":2.0},"
                 "{\"candidate\":\"002\",\"status\":\"pass\",\"geomean_ms\":1.0},"
                 "{\"candidate\":\"003\",\"status\":\"pass\",\"geomean_ms\":2.5}]");
}

/* The y of the last point of the progress chart's line. */
static double line_end_y(const char *html)
{
    const char *p = strstr(html, "<polyline class=\"best\" points=\"");
    assert_non_null(p);
    const char *end = strchr(p + 31, '"');
    assert_non_null(end);
    const char *last = end - 1;
    while (last > p && *last == ' ')
        last--;
    while (last > p && *last != ' ' && *last != '"')
        last--;
    double x, y;
    assert_int_equal(sscanf(last + 1, "%lf,%lf", &x, &y), 2);
    return y;
}

/* The centre of the ring marking the result. */
static void chosen_at(const char *html, double *x, double *y)
{
    const char *p = strstr(html, "<circle class=\"chosen\"");
    assert_non_null(p);
    assert_int_equal(sscanf(p, "<circle class=\"chosen\" cx=\"%lf\" cy=\"%lf\"", x, y), 2);
}

static void progress_marks_the_result_not_the_fastest(void **state)
{
    (void)state;
    json_t *s = passed_over_summary(), *h = passed_over_history();
    struct report_run r = {.summary = s, .history = h};
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    /* The line ends at the result (001), not at 002's 1.0 ms. */
    double cx, cy;
    chosen_at(html, &cx, &cy);
    assert_true(fabs(line_end_y(html) - cy) < 0.05);
    assert_non_null(strstr(html, "<title>the result: 001: 001: 2.00x the starting kernel"));
    /* 002 drawn as the failure summary.json says it is, ringed with why. */
    assert_non_null(strstr(html, "\u00d7<title>002 : wrong_answer held-out check failed"));
    assert_non_null(strstr(html, "<circle class=\"passed\""));
    assert_non_null(strstr(html, "<title>passed over: 002: 002 was 2.00x faster than 001 but"));
    /* The best section says why this one and why not the faster one. */
    assert_non_null(strstr(html, "<th>why this one</th><td>001: 2.00x the starting kernel"));
    assert_non_null(strstr(html, "<li class=\"passed-over\">002 was 2.00x faster than 001 but "
                                 "failed (wrong_answer): held-out check failed"));
    assert_non_null(strstr(html, "<td>pass</td><td>a</td>")); /* 001's held-out column */
    free(html);
    json_decref(h);
    json_decref(s);
}

/* The starting kernel kept: the ring is on its line, and the candidate that
 * passed the held-out check (best_candidate) shows that it passed it. */
static void progress_marks_the_start_when_kept(void **state)
{
    (void)state;
    json_t *s = passed_over_summary(), *h = passed_over_history();
    json_t *best = json_pack(
        "{s:s, s:f, s:f, s:n, s:s, s:s, s:[{s:s, s:s}]}", "candidate", "start", "geomean_ms", 4.0,
        "speedup_vs_reference", 1.0, "held_out", "summary", "kept", "why",
        "starting kernel kept: no candidate beat it beyond measured noise", "passed_over",
        "candidate", "001", "reason", "001 was 2.00x faster than the starting kernel but ...");
    assert_non_null(best);
    json_object_set_new(s, "best", best);
    struct report_run r = {.summary = s, .history = h};
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    double cx, cy;
    chosen_at(html, &cx, &cy);
    char ref_line[96];
    snprintf(ref_line, sizeof(ref_line), "y1=\"%.1f\" y2=\"%.1f\"><title>starting kernel", cy, cy);
    assert_non_null(strstr(html, ref_line));
    assert_non_null(strstr(html, "the result: the starting kernel: starting kernel kept"));
    assert_non_null(strstr(html, "<title>passed over: 001: 001 was 2.00x faster"));
    assert_non_null(strstr(html, "<td>start: the starting kernel, kept</td>"));
    assert_non_null(strstr(html, "<td>pass</td><td>a</td>")); /* 001 passed the held-out check */
    free(html);
    json_decref(h);
    json_decref(s);
}

/* A cpu run's environment: one GPU row saying none was used, not seven
 * rows of "unavailable"; the compiler is cc. */
static void environment_of_a_cpu_run(void **state)
{
    (void)state;
    json_t *s = summary(), *h = json_array();
    json_t *run = parse("{\"backend\":\"cpu\",\"compiler\":\"nvcc\",\"proposer\":\"tune\"}");
    json_t *env = parse("{\"before_timing\":{\"gpu_model\":\"unavailable\",\"gpu_uuid\":"
                        "\"unavailable\",\"cc\":\"cc 12\"},\"after_timing\":{\"gpu_model\":"
                        "\"unavailable\",\"cc\":\"cc 12\"}}");
    struct report_run r = {.summary = s, .history = h, .run = run, .environment = env};
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(&r, &html, &e), KILN_OK);
    assert_non_null(strstr(html, "<td colspan=\"2\">cpu, compiler cc, proposer tune</td>"));
    assert_non_null(strstr(html, "<tr><th>GPU</th><td colspan=\"2\">none used (cpu backend)"));
    assert_null(strstr(html, "<th>GPU UUID</th>"));
    assert_null(strstr(html, "unavailable"));
    assert_non_null(strstr(html, "<tr><th>cc</th><td>cc 12</td><td>cc 12</td></tr>"));
    free(html);
    json_decref(env);
    json_decref(run);
    json_decref(h);
    json_decref(s);
}

static void rejects_malformed_summary(void **state)
{
    (void)state;
    json_t *s = json_object();
    struct report_run r = {.summary = s};
    char *svg = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_heatmap_svg(&r, &svg, &e), KILN_E_PARSE);
    assert_null(svg);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heatmap_marks_speedups_and_failures),
        cmocka_unit_test(heatmap_cuts_long_labels),
        cmocka_unit_test(html_is_self_contained_and_escaped),
        cmocka_unit_test(html_names_the_floor_unit),
        cmocka_unit_test(html_warns_about_given_data),
        cmocka_unit_test(progress_marks_the_result_not_the_fastest),
        cmocka_unit_test(progress_marks_the_start_when_kept),
        cmocka_unit_test(environment_of_a_cpu_run),
        cmocka_unit_test(rejects_malformed_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
