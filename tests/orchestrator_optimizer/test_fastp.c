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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
