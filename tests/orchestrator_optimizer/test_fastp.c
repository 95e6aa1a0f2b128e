/* fast_p (KernelBench's metric) and the summary.json reader behind it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "fastp.h"

static struct fastp_problem prob(bool correct, double speedup)
{
    struct fastp_problem p;
    memset(&p, 0, sizeof(p));
    p.correct = correct;
    p.speedup = speedup;
    return p;
}

static void fraction_counts_correct_and_faster(void **state)
{
    (void)state;
    /* 5 problems: 2.5x, 1.5x, 0.8x correct, one correct without a
     * reference time, one wrong (its speedup must not count). */
    struct fastp_problem p[] = {prob(true, 2.5), prob(true, 1.5), prob(true, 0.8), prob(true, 0),
                                prob(false, 3.0)};
    assert_float_equal(fastp_fraction(p, 5, 0), 4.0 / 5, 1e-12); /* correctness rate */
    assert_float_equal(fastp_fraction(p, 5, 1), 2.0 / 5, 1e-12);
    assert_float_equal(fastp_fraction(p, 5, 1.5), 1.0 / 5, 1e-12); /* strictly greater */
    assert_float_equal(fastp_fraction(p, 5, 2), 1.0 / 5, 1e-12);
    assert_float_equal(fastp_fraction(p, 5, 3), 0, 1e-12);
    assert_float_equal(fastp_fraction(p, 0, 1), 0, 1e-12);
}

static enum kiln_rc parse(const char *doc, struct fastp_problem *out)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    return fastp_summary_parse(doc, strlen(doc), out, &e);
}

static void summary_versions_and_nulls(void **state)
{
    (void)state;
    struct fastp_problem p;
    /* An older run: no version, 0 for "no reference". */
    assert_int_equal(parse("{\"run\": \"run-001\", \"workload\": \"saxpy\", \"best\": "
                           "{\"candidate\": \"005\", \"speedup_vs_reference\": 0}}",
                           &p),
                     KILN_OK);
    assert_int_equal(p.version, 1);
    assert_true(p.correct);
    assert_string_equal(p.workload, "saxpy");
    assert_string_equal(p.best, "005");
    assert_float_equal(p.speedup, 0, 0);
    assert_int_equal(parse("{\"version\": 2, \"workload\": \"sgemm\", \"best\": "
                           "{\"candidate\": \"002\", \"speedup_vs_reference\": 1.75}}",
                           &p),
                     KILN_OK);
    assert_int_equal(p.version, 2);
    assert_float_equal(p.speedup, 1.75, 0);
    assert_int_equal(parse("{\"version\": 2, \"workload\": \"sgemm\", \"best\": null}", &p),
                     KILN_OK);
    assert_false(p.correct);
    assert_string_equal(p.best, "");
}

static struct fastp_problem timed(bool correct, double best_ms, double eager_ms, double compile_ms)
{
    struct fastp_problem p = prob(correct, 0);
    p.best_ms = best_ms;
    p.eager_ms = eager_ms;
    p.compile_ms = compile_ms;
    return p;
}

/* KernelBench's table from synthetic timings: fast_p against torch eager
 * and torch.compile, a problem without a torch time counting for fast_0
 * only, a wrong one never. */
static void fraction_against_torch(void **state)
{
    (void)state;
    struct fastp_problem p[] = {
        timed(true, 1.0, 2.5, 1.5), /* 2.5x eager, 1.5x compile */
        timed(true, 2.0, 3.0, 0),   /* 1.5x eager, no compile time */
        timed(true, 4.0, 2.0, 1.0), /* slower than both */
        timed(true, 1.0, 0, 0),     /* correct, no torch time */
        timed(false, 0, 9.0, 9.0),  /* wrong: its torch times count for nothing */
    };
    assert_float_equal(fastp_fraction_vs(p, 5, 0, FASTP_VS_EAGER), 4.0 / 5, 1e-12);
    assert_float_equal(fastp_fraction_vs(p, 5, 1, FASTP_VS_EAGER), 2.0 / 5, 1e-12);
    assert_float_equal(fastp_fraction_vs(p, 5, 2, FASTP_VS_EAGER), 1.0 / 5, 1e-12);
    assert_float_equal(fastp_fraction_vs(p, 5, 1, FASTP_VS_COMPILE), 1.0 / 5, 1e-12);
    assert_float_equal(fastp_fraction_vs(p, 5, 2, FASTP_VS_COMPILE), 0, 1e-12);
    assert_float_equal(fastp_speedup(&p[0], FASTP_VS_EAGER), 2.5, 1e-12);
    assert_float_equal(fastp_speedup(&p[2], FASTP_VS_COMPILE), 0.25, 1e-12);
    assert_float_equal(fastp_speedup(&p[4], FASTP_VS_EAGER), 0, 0);
    assert_int_equal(fastp_timed(p, 5, FASTP_VS_EAGER), 4);
    assert_int_equal(fastp_timed(p, 5, FASTP_VS_COMPILE), 3);
}

/* The torch columns as kiln optimize writes them into summary.json. */
static void summary_torch_baseline(void **state)
{
    (void)state;
    struct fastp_problem p;
    assert_int_equal(parse("{\"version\": 2, \"workload\": \"kb_19_relu\", \"best\": "
                           "{\"candidate\": \"001\", \"geomean_ms\": 0.5}, \"baseline\": "
                           "{\"kind\": \"torch\", \"geomean_ms\": 1.0, \"compile\": "
                           "{\"status\": \"unavailable\", \"geomean_ms\": null}}}",
                           &p),
                     KILN_OK);
    assert_float_equal(p.best_ms, 0.5, 0);
    assert_float_equal(p.eager_ms, 1.0, 0);
    assert_float_equal(p.compile_ms, 0, 0);
    assert_float_equal(fastp_speedup(&p, FASTP_VS_EAGER), 2.0, 1e-12);
    /* A vendor baseline of another kind is no torch time. */
    assert_int_equal(parse("{\"workload\": \"sgemm\", \"best\": {\"candidate\": \"1\", "
                           "\"geomean_ms\": 2}, \"baseline\": {\"kind\": \"cublas_sgemm\", "
                           "\"geomean_ms\": 1}}",
                           &p),
                     KILN_OK);
    assert_float_equal(p.eager_ms, 0, 0);
    assert_int_equal(parse("{\"workload\": \"a\", \"baseline\": [1]}", &p), KILN_E_PARSE);
    assert_int_equal(parse("{\"workload\": \"a\", \"baseline\": {\"kind\": \"torch\", "
                           "\"geomean_ms\": -1}}",
                           &p),
                     KILN_E_PARSE);
    assert_int_equal(parse("{\"workload\": \"a\", \"baseline\": {\"kind\": \"torch\", "
                           "\"compile\": 3}}",
                           &p),
                     KILN_E_PARSE);
}

static void summary_refusals(void **state)
{
    (void)state;
    struct fastp_problem p;
    assert_int_equal(parse("{\"version\": 3, \"workload\": \"saxpy\", \"best\": null}", &p),
                     KILN_E_UNSUPPORTED);
    assert_int_equal(parse("{\"version\": \"2\", \"workload\": \"saxpy\"}", &p), KILN_E_PARSE);
    assert_int_equal(parse("{\"version\": 2, \"workload\": \"../x\\n\"}", &p), KILN_E_PARSE);
    assert_int_equal(parse("{\"version\": 2, \"best\": null}", &p), KILN_E_PARSE);
    assert_int_equal(parse("{\"version\": 2, \"workload\": \"a\", \"best\": 1}", &p), KILN_E_PARSE);
    assert_int_equal(parse("{\"workload\": \"a\", \"best\": {\"candidate\": \"1\", "
                           "\"speedup_vs_reference\": -1}}",
                           &p),
                     KILN_E_PARSE);
    assert_int_equal(parse("[1]", &p), KILN_E_PARSE);
    assert_int_equal(parse("{\"workload\": \"a\", \"workload\": \"b\"}", &p), KILN_E_PARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fraction_counts_correct_and_faster),
        cmocka_unit_test(summary_versions_and_nulls),
        cmocka_unit_test(summary_refusals),
        cmocka_unit_test(fraction_against_torch),
        cmocka_unit_test(summary_torch_baseline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
