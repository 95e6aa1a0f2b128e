#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static json_t *summary(void)
{
    json_error_t je;
    json_t *s =
        json_loads("{\"run\":\"run-001\",\"workload\":\"saxpy\",\"backend\":\"cpu\","
                   "\"reference_generated_by_model\":true,"
                   "\"perf_cases\":[\"big\",\"huge\"],\"reference_ms\":{\"big\":2.0,\"huge\":4.0},"
                   "\"best\":{\"candidate\":\"002\",\"geomean_ms\":1.0},"
                   "\"candidates\":["
                   "{\"id\":\"001\",\"status\":\"pass\",\"geomean_ms\":2.83,\"case_ms\":{\"big\":2."
                   "0,\"huge\":4.0}},"
                   "{\"id\":\"002\",\"status\":\"pass\",\"geomean_ms\":1.0,\"case_ms\":{\"big\":0."
                   "5,\"huge\":2.0},\"speedup_vs_baseline\":1.25},"
                   "{\"id\":\"003\",\"status\":\"wrong_answer\",\"stage\":\"verify\","
                   "\"reason\":\"<script>alert(1)</script>\"}],"
                   "\"baseline\":{\"kind\":\"memcpy\",\"status\":\"ok\",\"detail\":\"<b>\","
                   "\"ms\":{\"big\":0.625,\"huge\":2.5},\"geomean_ms\":1.25}}",
                   0, &je);
    assert_non_null(s);
    return s;
}

static void heatmap_marks_speedups_and_failures(void **state)
{
    (void)state;
    json_t *s = summary();
    char *svg = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_heatmap_svg(s, &svg, &e), KILN_OK);
    assert_non_null(strstr(svg, "0.5 ms (4.00x)"));
    assert_non_null(strstr(svg, "2 ms (1.00x)"));
    assert_non_null(strstr(svg, "failed"));
    assert_null(strstr(svg, "<script>"));
    assert_non_null(strstr(svg, "&lt;script&gt;"));
    free(svg);
    json_decref(s);
}

static void html_is_self_contained_and_escaped(void **state)
{
    (void)state;
    json_t *s = summary();
    json_error_t je;
    json_t *h =
        json_loads("[{\"geomean_ms\":2.83},{\"geomean_ms\":1.0},{\"status\":\"x\"}]", 0, &je);
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(s, h, "__global__ void k() { if (a < b) {} }", &html, &e),
                     KILN_OK);
    assert_non_null(strstr(html, "not an independent oracle"));
    assert_non_null(strstr(html, "a &lt; b"));
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "http://www.w3.org/1999/xhtml\" src")); /* no external loads */
    assert_null(strstr(html, " src="));
    assert_non_null(strstr(html, "<polyline"));
    /* The vendor baseline: its section, escaped, and the candidates' ratio. */
    assert_non_null(
        strstr(html, "<h2>Vendor baseline</h2>\n<p>memcpy: ok (&lt;b&gt;); geomean 1.25 ms"));
    assert_non_null(strstr(html, "<td>huge</td><td>2.5</td>"));
    assert_non_null(strstr(html, "<td>1.25x</td>"));
    assert_null(strstr(html, "<b>"));
    free(html);
    json_decref(h);
    json_decref(s);
}

/* Given data (opt_given.h) is flagged on the page, its path escaped. */
static void html_warns_about_given_data(void **state)
{
    (void)state;
    json_t *s = summary(), *h = json_array();
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_html(s, h, NULL, &html, &e), KILN_OK);
    assert_null(strstr(html, "--input-cases"));
    assert_null(strstr(html, "--reference"));
    free(html);
    json_object_set_new(s, "input_cases",
                        json_pack("{s:s, s:s}", "path", "<x>.tar", "sha256", "abc123"));
    json_object_set_new(s, "reference_script",
                        json_pack("{s:s, s:s}", "path", "my_ref.py", "sha256", "def456"));
    assert_int_equal(report_html(s, h, NULL, &html, &e), KILN_OK);
    assert_non_null(strstr(html, "given with --input-cases &lt;x&gt;.tar (sha256 abc123)"));
    assert_non_null(strstr(html, "given with --reference my_ref.py (sha256 def456)"));
    free(html);
    json_decref(h);
    json_decref(s);
}

static void rejects_malformed_summary(void **state)
{
    (void)state;
    json_t *s = json_object();
    char *svg = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(report_heatmap_svg(s, &svg, &e), KILN_E_PARSE);
    assert_null(svg);
    json_decref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heatmap_marks_speedups_and_failures),
        cmocka_unit_test(html_is_self_contained_and_escaped),
        cmocka_unit_test(html_warns_about_given_data),
        cmocka_unit_test(rejects_malformed_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
