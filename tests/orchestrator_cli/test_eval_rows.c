/* kiln eval's one row schema (eval_rows.h) on synthetic verdicts (issue 35
 * items 2 and 3): every speedup over the start carries its call against
 * both sides' noise (FAST, SLOW, SAME, AMBIGUOUS), never a bare ratio;
 * with --until-rse each row says whether its case reached the target; the
 * same in --json's rows, --csv and --markdown. No timing is measured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_rows.h"

static struct workload *wl;

/* A correct, timed case: `n` samples with median `ms` and the given rse. */
static void add_case(struct verdict *v, const char *name, int set, double ms, double rse,
                     double ref_ms)
{
    struct verdict_case *c;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(verdict_add_case(v, name, set, true, &c, &e), KILN_OK);
    c->noutputs = 1;
    snprintf(c->outputs[0].name, sizeof(c->outputs[0].name), "out");
    c->outputs[0].cmp.pass = true;
    c->outputs[0].cmp.first_unwritten = -1;
    c->timed = true;
    c->timing = (struct stats_summary){.n = 10,
                                       .median = ms,
                                       .mean = ms,
                                       .min = ms,
                                       .max = ms,
                                       .stddev = rse * ms * 3.1623,
                                       .rse = rse};
    c->ref_median_ms = ref_ms;
}

static int setup(void **state)
{
    (void)state;
    struct kiln_err e = KILN_ERR_INIT;
    return workload_load(KILN_SOURCE_DIR "/workloads/saxpy", &wl, &e) == KILN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    workload_free(wl);
    return 0;
}

/* The start (cpu_4m 10 ms, cpu_3m 8 ms, 20% noise on cpu_4m) and a
 * candidate: cpu_4m 1.37x within that noise, cpu_3m 2x with 0.1%. */
static void make(struct verdict *start, struct verdict *cand, bool adaptive)
{
    verdict_init(start, "reference");
    add_case(start, "cpu_4m", 0, 10.0, 0.20, 0.0);
    add_case(start, "cpu_3m", 0, 8.0, 0.001, 0.0);
    verdict_finish(start, NULL);
    verdict_init(cand, "candidate");
    add_case(cand, "cpu_4m", 0, 10.0 / 1.37, 0.20, 10.0);
    add_case(cand, "cpu_3m", 0, 4.0, 0.001, 8.0);
    if (adaptive)
        cand->rule = (struct verdict_timing_rule){.known = true,
                                                  .adaptive = true,
                                                  .iterations = 10,
                                                  .max_iterations = 100,
                                                  .target_rse = 0.005,
                                                  .budget_ms = 2000};
    verdict_finish(cand, NULL);
    verdict_judge_ref(cand, start);
}

static const char *str(const json_t *row, const char *k)
{
    return json_string_value(json_object_get(row, k));
}

static void rows_carry_the_call_and_the_target(void **state)
{
    (void)state;
    struct verdict start, cand;
    make(&start, &cand, true);
    struct eval_rows_context ctx = {.wl = wl, .rule = &cand.rule, .reference = &start};
    json_t *rows = eval_rows_json(&ctx, &cand, NULL);
    assert_int_equal(json_array_size(rows), 2);
    const json_t *a = json_array_get(rows, 0), *b = json_array_get(rows, 1);
    assert_string_equal(str(a, "speedup_vs_reference_call"), "SAME");
    assert_string_equal(str(b, "speedup_vs_reference_call"), "FAST");
    assert_string_equal(str(a, "rse_target"), "not reached");
    assert_string_equal(str(b, "rse_target"), "reached");
    /* The summary line says both (over both cases, 1.66x is beyond the noise). */
    assert_non_null(strstr(cand.summary, "x the reference (FAST: beyond the measured noise"));
    assert_non_null(strstr(cand.summary, "timing target not reached (rse 20.00% in case cpu_4m"));
    json_decref(rows);
    /* No start timed in the session: no speedup, no call (null, never a bare ratio). */
    ctx.reference = NULL;
    rows = eval_rows_json(&ctx, &cand, NULL);
    assert_true(
        json_is_null(json_object_get(json_array_get(rows, 0), "speedup_vs_reference_call")));
    json_decref(rows);
    verdict_free(&start);
    verdict_free(&cand);
}

/* What `fmt` prints for the candidate's rows. */
static char *printed(enum eval_rows_format fmt, bool adaptive)
{
    struct verdict start, cand;
    make(&start, &cand, adaptive);
    struct eval_rows_context ctx = {.wl = wl, .rule = &cand.rule, .reference = &start};
    json_t *rows = eval_rows_json(&ctx, &cand, NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    eval_rows_print(f, fmt, &ctx, rows);
    fclose(f);
    json_decref(rows);
    verdict_free(&start);
    verdict_free(&cand);
    return text;
}

static void csv_and_markdown_say_it_too(void **state)
{
    (void)state;
    char *csv = printed(EVAL_ROWS_CSV, true);
    assert_non_null(strstr(csv, ",noise_pct,rse_target,"));
    assert_non_null(strstr(csv, ",speedup_vs_reference,speedup_vs_reference_call,"));
    assert_non_null(strstr(csv, ",not reached,"));
    assert_non_null(strstr(csv, ",1.37,SAME,"));
    assert_non_null(strstr(csv, ",2,FAST,"));
    free(csv);
    char *md = printed(EVAL_ROWS_MARKDOWN, true);
    assert_non_null(strstr(md, "kiln eval rows v2:"));
    assert_non_null(strstr(md, " | not reached | "));
    assert_non_null(strstr(md, " | 1.37 | SAME | "));
    free(md);
    /* A fixed count has no target: the column is empty, not "reached". */
    md = printed(EVAL_ROWS_MARKDOWN, false);
    assert_null(strstr(md, "reached"));
    free(md);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_carry_the_call_and_the_target),
        cmocka_unit_test(csv_and_markdown_say_it_too),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
