/* Verdicts (deciding, JSON round trip, strict reading) and ranking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank.h"
#include "verdict.h"

#define near(a, b) assert_true(fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1.0))

/* Adds a case whose single output passed, timed with the given median and
 * relative standard error. */
static struct verdict_case *add(struct verdict *v, const char *name, bool scored, double median,
                                double rse, double ref_median)
{
    struct verdict_case *c;
    struct kiln_err e = {0};
    assert_int_equal(verdict_add_case(v, name, 0, scored, &c, &e), KILN_OK);
    c->noutputs = 1;
    snprintf(c->outputs[0].name, sizeof(c->outputs[0].name), "out");
    c->outputs[0].cmp.pass = true;
    c->outputs[0].cmp.first_unwritten = -1;
    c->outputs[0].cmp.count = 16;
    c->timed = true;
    c->timing = (struct stats_summary){.n = 100,
                                       .median = median,
                                       .mean = median,
                                       .min = median,
                                       .max = median,
                                       .p10 = median,
                                       .p90 = median,
                                       .stddev = rse * median * 10.0,
                                       .rse = rse};
    c->ref_median_ms = ref_median;
    return c;
}

static void geomean_over_performance_cases_only(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "c1");
    add(&v, "tiny", false, 100.0, 0.01, 100.0); /* correctness only: must not count */
    add(&v, "a", true, 1.0, 0.01, 3.0);
    add(&v, "b", true, 4.0, 0.01, 12.0);
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_PASS);
    near(v.score_ms, 2.0);
    near(v.speedup_ref, 3.0);
    assert_true(v.speedup_vendor == 0.0);
    assert_false(v.needs_reverify);
    assert_true(v.cases[0].correct && v.cases[1].correct);
    assert_non_null(strstr(v.summary, "geomean 2 ms over 2 performance cases"));
    assert_non_null(strstr(v.summary, "3.00x the reference"));
    verdict_free(&v);
}

/* The summary counts cases, not their input sets (one verdict case each). */
static void summary_counts_cases_not_sets(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "c1");
    add(&v, "tiny", false, 100.0, 0.01, 100.0);
    for (int set = 0; set < 3; set++) {
        add(&v, "a", true, 1.0, 0.01, 3.0)->set = set;
        add(&v, "b", true, 4.0, 0.01, 12.0)->set = set;
    }
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_PASS);
    assert_non_null(strstr(v.summary, "pass: all 3 cases correct (7 input sets); geomean 2 ms "
                                      "over 2 performance cases (6 input sets)"));
    verdict_free(&v);
}

/* The vendor baseline: per case baseline / median, and the ratio of
 * geometric means only when every scored case has a baseline time. */
static void baseline_speedups(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "c1b");
    add(&v, "tiny", false, 100.0, 0.01, 0.0);
    struct verdict_case *a = add(&v, "a", true, 1.0, 0.01, 0.0);
    a->vendor_median_ms = 2.0;
    struct verdict_case *b = add(&v, "b", true, 4.0, 0.01, 0.0);
    b->vendor_median_ms = 2.0;
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_PASS);
    near(v.cases[1].speedup_vendor, 2.0);
    near(v.cases[2].speedup_vendor, 0.5);
    assert_true(v.cases[0].speedup_vendor == 0.0);
    near(v.speedup_vendor, 1.0); /* geomean 2 ms against 2 ms */
    assert_non_null(strstr(v.summary, "1.00x the vendor baseline"));
    char *text;
    struct kiln_err e = {0};
    assert_int_equal(verdict_to_text(&v, &text, &e), KILN_OK);
    assert_non_null(strstr(text, "\"baseline_ms\":2"));
    assert_non_null(strstr(text, "\"speedup_vs_baseline\":0.5"));
    assert_non_null(strstr(text, "\"baseline_ms\":null,\"speedup_vs_baseline\":null"));
    free(text);
    /* One scored case without a baseline: no overall ratio (JSON null). */
    v.cases[2].vendor_median_ms = 0.0;
    verdict_finish(&v, NULL);
    assert_true(v.speedup_vendor == 0.0);
    near(v.cases[1].speedup_vendor, 2.0);
    assert_int_equal(verdict_to_text(&v, &text, &e), KILN_OK);
    assert_non_null(strstr(text, "\"speedup_ref\":null,\"speedup_vs_baseline\":null"));
    assert_null(strstr(text, "vendor"));
    free(text);
    verdict_free(&v);
}

static void wrong_output_makes_wrong_answer(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "c2");
    add(&v, "a", true, 1.0, 0.01, 3.0);
    struct verdict_case *c = add(&v, "b", true, 1.0, 0.01, 3.0);
    c->outputs[0].cmp.pass = false;
    snprintf(c->outputs[0].cmp.reason, sizeof(c->outputs[0].cmp.reason),
             "output not written: 3 of 16 elements still hold the poison pattern");
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_WRONG_ANSWER);
    assert_false(v.cases[1].correct);
    assert_true(v.cases[0].correct);
    assert_string_equal(v.detail, "case b (set 0): output out: output not written: 3 of 16 "
                                  "elements still hold the poison pattern");
    assert_non_null(strstr(v.summary, "wrong_answer: case b"));
    verdict_free(&v);

    verdict_init(&v, "c3");
    c = add(&v, "a", true, 1.0, 0.01, 3.0);
    c->inputs_modified = true;
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_WRONG_ANSWER);
    assert_non_null(strstr(v.detail, "inputs modified"));
    verdict_free(&v);
}

static void faster_than_the_floor_is_impossible(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "cheat");
    struct verdict_case *c = add(&v, "a", true, 0.5, 0.01, 5.0);
    c->floor_ms = stats_floor_ms(&STATS_CEILINGS_H200, 4.8e9, 0); /* 1 ms */
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_IMPOSSIBLE_TIMING);
    near(v.cases[0].sol, 2.0);
    assert_non_null(strstr(v.detail, "below the physics floor"));
    verdict_free(&v);

    /* At 80% of speed of light it is fine, and sol is reported. */
    verdict_init(&v, "good");
    c = add(&v, "a", true, 1.25, 0.01, 5.0);
    c->floor_ms = 1.0;
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_PASS);
    near(v.sol, 0.8);
    assert_non_null(strstr(v.summary, "80% of speed of light"));
    verdict_free(&v);

    /* Faster than the roofline of the workload's units (FP32 SIMT) but not
     * than the guard (the fastest path to its precision: 3xTF32) passes,
     * above 100% of the floor; below the guard it is impossible, and the
     * detail names the roofline's unit. */
    verdict_init(&v, "split");
    snprintf(v.floor_unit, sizeof(v.floor_unit), "fp32_simt");
    c = add(&v, "a", true, 0.5, 0.01, 5.0);
    c->floor_ms = 1.0;
    c->guard_ms = 0.125;
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_PASS);
    near(v.sol, 2.0);
    assert_non_null(strstr(v.summary, "200% of speed of light (FP32 SIMT peak)"));
    verdict_free(&v);
    verdict_init(&v, "cheat");
    snprintf(v.floor_unit, sizeof(v.floor_unit), "fp32_simt");
    c = add(&v, "a", true, 0.05, 0.001, 5.0);
    c->floor_ms = 1.0;
    c->guard_ms = 0.125;
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_IMPOSSIBLE_TIMING);
    assert_non_null(strstr(v.detail, "of the FP32 SIMT roofline"));
    verdict_free(&v);
}

static void tenfold_speedup_needs_reverify(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "fast");
    add(&v, "a", true, 1.0, 0.01, 2.0);
    add(&v, "b", true, 1.0, 0.01, 15.0); /* one case 15x */
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_PASS);
    assert_true(v.needs_reverify);
    assert_non_null(strstr(v.summary, "re-verification"));
    verdict_free(&v);
}

static void failure_outside_cases_wins(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "c");
    verdict_fail(&v, VERDICT_COMPILE_ERROR, "kernel.cu:3: error: expected ';'");
    verdict_fail(&v, VERDICT_TIMEOUT, "later");
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_COMPILE_ERROR);
    assert_string_equal(v.summary, "compile_error: kernel.cu:3: error: expected ';'");
    verdict_free(&v);

    /* Compiler output may quote hostile bytes: the JSON stays valid. */
    verdict_init(&v, "c\xc3");
    verdict_fail(&v, VERDICT_COMPILE_ERROR, "k.cu:1: \xff\xfe\x1b[2J bad");
    verdict_finish(&v, NULL);
    char *t;
    struct kiln_err e = {0};
    assert_int_equal(verdict_to_text(&v, &t, &e), KILN_OK);
    assert_non_null(strstr(t, "\"detail\":\"k.cu:1: ???[2J bad\""));
    assert_non_null(strstr(t, "\"candidate\":\"c?\""));
    free(t);
    verdict_free(&v);
}

static void status_names(void **state)
{
    (void)state;
    enum verdict_status s;
    for (int i = 0; i <= VERDICT_IMPOSSIBLE_TIMING; i++) {
        const char *n = verdict_status_name((enum verdict_status)i);
        assert_non_null(n);
        assert_true(verdict_status_from_name(n, &s));
        assert_int_equal(s, i);
    }
    assert_null(verdict_status_name((enum verdict_status)99));
    assert_false(verdict_status_from_name("passed", &s));
    assert_string_equal(verdict_status_name(VERDICT_REJECTED_OUTPUT), "rejected_output");
}

static void json_round_trip(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "c42");
    add(&v, "small", false, 0.01, 0.02, 0.03);
    struct verdict_case *c = add(&v, "big", true, 0.7412, 0.0003, 2.3);
    c->set = 3;
    c->floor_ms = 0.65;
    c->vendor_median_ms = 0.8;
    c->outputs[0].cmp.pass = false;
    c->outputs[0].cmp.mismatches = 2;
    c->outputs[0].cmp.nreported = 2;
    c->outputs[0].cmp.first[0] = (struct compare_mismatch){5, NAN, 1.5};
    c->outputs[0].cmp.first[1] = (struct compare_mismatch){9, -INFINITY, 0.1};
    c->outputs[0].cmp.max_abs_err = INFINITY;
    c->outputs[0].cmp.rel_l2_err = INFINITY;
    c->outputs[0].cmp.max_rel_err = 0.25;
    snprintf(c->outputs[0].cmp.reason, sizeof(c->outputs[0].cmp.reason), "2 differ \"q\"");
    snprintf(v.floor_unit, sizeof(v.floor_unit), "bf16_tensor");
    verdict_finish(&v, NULL);
    assert_int_equal(v.status, VERDICT_WRONG_ANSWER);

    char *text;
    struct kiln_err e = {0};
    assert_int_equal(verdict_to_text(&v, &text, &e), KILN_OK);
    struct verdict w;
    assert_int_equal(verdict_from_json(text, strlen(text), &w, &e), KILN_OK);
    assert_string_equal(w.candidate, "c42");
    assert_int_equal(w.status, v.status);
    assert_string_equal(w.detail, v.detail);
    assert_string_equal(w.summary, v.summary);
    assert_int_equal(w.ncases, 2);
    assert_true(w.score_ms == v.score_ms && w.sigma == v.sigma);
    assert_true(w.speedup_ref == v.speedup_ref && w.speedup_vendor == v.speedup_vendor);
    assert_true(w.sol == v.sol);
    assert_string_equal(w.floor_unit, "bf16_tensor");
    assert_string_equal(verdict_floor_label(&w), "BF16 tensor");
    const struct verdict_case *a = &v.cases[1], *b = &w.cases[1];
    assert_string_equal(b->name, "big");
    assert_int_equal(b->set, 3);
    assert_true(b->scored && !w.cases[0].scored);
    assert_int_equal(b->correct, a->correct);
    assert_string_equal(b->detail, a->detail);
    assert_true(b->timed);
    assert_memory_equal(&b->timing, &a->timing, sizeof(a->timing));
    assert_true(b->ref_median_ms == 2.3 && b->vendor_median_ms == 0.8 && b->floor_ms == 0.65);
    assert_true(b->sol == a->sol);
    assert_true(b->speedup_vendor == a->speedup_vendor && a->speedup_vendor == 0.8 / 0.7412);
    const struct compare_report *ra = &a->outputs[0].cmp, *rb = &b->outputs[0].cmp;
    assert_string_equal(b->outputs[0].name, "out");
    assert_string_equal(rb->reason, "2 differ \"q\"");
    assert_int_equal(rb->mismatches, 2);
    assert_int_equal(rb->nreported, 2);
    assert_int_equal(rb->first[0].index, 5);
    assert_true(isnan(rb->first[0].out));
    assert_true(rb->first[1].out == -INFINITY);
    assert_true(isinf(rb->max_abs_err) && isinf(rb->rel_l2_err));
    assert_true(rb->max_rel_err == ra->max_rel_err);
    assert_int_equal(rb->first_unwritten, -1);

    /* The written text is a fixed point. */
    char *text2;
    assert_int_equal(verdict_to_text(&w, &text2, &e), KILN_OK);
    assert_string_equal(text, text2);
    free(text);
    free(text2);
    verdict_free(&w);
    verdict_free(&v);
}

static void expect_bad_verdict(const char *doc, enum kiln_rc want)
{
    struct verdict w;
    struct kiln_err e = {0};
    enum kiln_rc rc = verdict_from_json(doc, strlen(doc), &w, &e);
    if (rc != want)
        fail_msg("verdict %.100s: got %d (%s), wanted %d", doc, rc, e.msg, want);
    assert_null(w.cases);
    assert_int_equal(w.ncases, 0);
}

static void strict_reading(void **state)
{
    (void)state;
    struct verdict v;
    verdict_init(&v, "c");
    add(&v, "a", true, 1.0, 0.01, 2.0);
    verdict_finish(&v, NULL);
    char *text;
    struct kiln_err e = {0};
    assert_int_equal(verdict_to_text(&v, &text, &e), KILN_OK);
    verdict_free(&v);

    /* Mutations of a valid document, each of which must be refused. */
    struct {
        const char *from, *to;
        enum kiln_rc rc;
    } muts[] = {
        {"\"status\":\"pass\"", "\"status\":\"passed\"", KILN_E_PARSE},
        {"\"status\":\"pass\"", "\"status\":1", KILN_E_PARSE},
        {"\"version\":1", "\"version\":2", KILN_E_UNSUPPORTED}, /* "use a newer kiln" */
        {"\"version\":1", "\"version\":0", KILN_E_REJECTED},
        {"\"version\":1", "\"version\":1,\"x\":1", KILN_E_PARSE},
        {"\"reverified\":false", "\"reverified\":0", KILN_E_PARSE},
        {"\"n\":100", "\"n\":0", KILN_E_REJECTED},
        {"\"n\":100", "\"n\":[[[[100]]]]", KILN_E_LIMIT},
        {"\"median\":1.0", "\"median\":-1", KILN_E_REJECTED},
        {"\"median\":1.0", "\"median\":\"nan\"", KILN_E_REJECTED},
        {"\"median\":1.0", "\"median\":\"fast\"", KILN_E_PARSE},
        {"\"mismatches\":0", "\"mismatches\":17", KILN_E_REJECTED},
        {"\"candidate\":\"c\"", "\"candidate\":\"c\",\"candidate\":\"d\"", KILN_E_PARSE},
        {"\"floor_unit\":null", "\"floor_unit\":\"bf16\"", KILN_E_PARSE},
        {"\"floor_unit\":null", "\"floor_unit\":3", KILN_E_PARSE},
    };
    for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
        char *at = strstr(text, muts[i].from);
        if (!at)
            fail_msg("fixture lacks %s: %s", muts[i].from, text);
        char buf[8192];
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - text), text, muts[i].to,
                 at + strlen(muts[i].from));
        expect_bad_verdict(buf, muts[i].rc);
    }
    /* A verdict written before floor_unit existed still reads. */
    char *at = strstr(text, ",\"floor_unit\":null");
    if (!at)
        at = strstr(text, "\"floor_unit\":null,");
    assert_non_null(at);
    char old[8192];
    snprintf(old, sizeof(old), "%.*s%s", (int)(at - text), text,
             at + strlen(",\"floor_unit\":null"));
    struct verdict w;
    assert_int_equal(verdict_from_json(old, strlen(old), &w, &e), KILN_OK);
    assert_string_equal(w.floor_unit, "");
    verdict_free(&w);
    free(text);
    expect_bad_verdict("{}", KILN_E_PARSE);
    expect_bad_verdict("", KILN_E_PARSE);
    expect_bad_verdict("[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]", KILN_E_LIMIT);
}

/* A passing verdict with a given score and noise, for ranking. */
static struct verdict scored(const char *name, double ms, double sigma)
{
    struct verdict v;
    verdict_init(&v, name);
    v.score_ms = ms;
    v.sigma = sigma;
    return v;
}

static void ranking_ties_keep_the_earlier(void **state)
{
    (void)state;
    /* b is 1% faster than a but both have 2% noise: a keeps first place. */
    struct verdict v[2] = {scored("a", 1.00, 0.02), scored("b", 0.99, 0.02)};
    struct rank_entry *r;
    struct kiln_err e = {0};
    assert_int_equal(rank_verdicts(v, 2, NULL, &r, &e), KILN_OK);
    assert_int_equal(r[0].index, 0);
    assert_int_equal(r[0].place, 1);
    assert_int_equal(r[1].index, 1);
    assert_int_equal(r[1].place, 2);
    assert_non_null(strstr(r[1].reason, "within noise of a"));
    free(r);
}

static void ranking_clear_winner(void **state)
{
    (void)state;
    /* b is 30% faster with 1% noise: it wins though submitted later. */
    struct verdict v[2] = {scored("a", 1.00, 0.01), scored("b", 0.70, 0.01)};
    struct rank_entry *r;
    struct kiln_err e = {0};
    assert_int_equal(rank_verdicts(v, 2, NULL, &r, &e), KILN_OK);
    assert_int_equal(r[0].index, 1);
    assert_int_equal(r[1].index, 0);
    assert_non_null(strstr(r[0].reason, "fastest"));
    assert_non_null(strstr(r[1].reason, "slower than b beyond noise"));
    free(r);
}

static void ranking_puts_failures_and_flags_last(void **state)
{
    (void)state;
    struct verdict v[5] = {scored("bad", 0.1, 0.01), scored("ok", 1.0, 0.01),
                           scored("flag", 0.05, 0.01), scored("better", 0.5, 0.01),
                           scored("floor", 0.01, 0.01)};
    verdict_fail(&v[0], VERDICT_WRONG_ANSWER, "case a: output not written");
    v[2].needs_reverify = true;
    v[2].speedup_ref = 20.0;
    verdict_fail(&v[4], VERDICT_IMPOSSIBLE_TIMING, "below the floor");
    struct rank_entry *r;
    struct kiln_err e = {0};
    assert_int_equal(rank_verdicts(v, 5, NULL, &r, &e), KILN_OK);
    size_t want[5] = {3, 1, 2, 0, 4};
    int places[5] = {1, 2, 0, 0, 0};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r[i].index, want[i]);
        assert_int_equal(r[i].place, places[i]);
    }
    assert_non_null(strstr(r[2].reason, "needs re-verification"));
    assert_string_equal(r[3].reason, "wrong_answer: case a: output not written");
    assert_string_equal(r[4].reason, "impossible_timing: below the floor");
    free(r);

    /* Once re-verified it ranks first. */
    v[2].reverified = true;
    assert_int_equal(rank_verdicts(v, 5, NULL, &r, &e), KILN_OK);
    assert_int_equal(r[0].index, 2);
    assert_int_equal(r[0].place, 1);
    free(r);
}

/* The quick start's 0.90x BEST: the top-ranked candidate was slower than the
 * starting kernel and was still reported as the result. */
static void slower_best_keeps_the_start(void **state)
{
    (void)state;
    struct verdict start = scored("start", 1.00, 0.01);
    struct verdict v[2] = {scored("001", 1.11, 0.01), scored("002", 1.30, 0.01)};
    struct rank_pick pick;
    rank_pick_best(v, 2, 0, &start, NULL, &pick);
    assert_int_equal(pick.best, -1);
    assert_true(pick.start_kept);
    assert_non_null(strstr(pick.why, "starting kernel kept: every candidate was slower"));
    assert_non_null(strstr(pick.why, "001, was 0.90x"));
    char line[RANK_REASON_MAX];
    assert_false(rank_passed_over(v, 2, 0, &pick, &start, NULL, line, sizeof(line)));
}

static void best_within_noise_of_the_start_keeps_it(void **state)
{
    (void)state;
    /* 2% faster with 3% noise each: not an improvement. */
    struct verdict start = scored("start", 1.00, 0.03);
    struct verdict v[1] = {scored("001", 0.98, 0.03)};
    struct rank_pick pick;
    rank_pick_best(v, 1, 0, &start, NULL, &pick);
    assert_int_equal(pick.best, -1);
    assert_true(pick.start_kept);
    assert_non_null(strstr(pick.why, "no candidate beat it beyond measured noise (+-"));
    char line[RANK_REASON_MAX];
    assert_true(rank_passed_over(v, 1, 0, &pick, &start, NULL, line, sizeof(line)));
    assert_non_null(strstr(line, "001 was 1.02x faster than the starting kernel but within "
                                 "measured noise"));
}

static void faster_best_wins_and_passed_over_are_explained(void **state)
{
    (void)state;
    struct verdict start = scored("start", 1.00, 0.01);
    struct verdict v[4] = {scored("001", 0.80, 0.01), scored("002", 0.50, 0.01),
                           scored("003", 0.79, 0.01), scored("004", 0.05, 0.01)};
    verdict_fail(&v[1], VERDICT_WRONG_ANSWER,
                 "held-out check (fresh inputs, unseen sizes) failed: wrong output on ho_near1");
    v[3].needs_reverify = true;
    v[3].speedup_ref = 20.0;
    struct rank_pick pick;
    rank_pick_best(v, 4, 0, &start, NULL, &pick);
    assert_int_equal(pick.best, 0);
    assert_false(pick.start_kept);
    assert_non_null(strstr(pick.why, "001: 1.25x the starting kernel, beyond measured noise"));
    char line[RANK_REASON_MAX + VERDICT_DETAIL_MAX];
    assert_false(rank_passed_over(v, 4, 0, &pick, &start, NULL, line, sizeof(line)));
    assert_true(rank_passed_over(v, 4, 1, &pick, &start, NULL, line, sizeof(line)));
    assert_string_equal(line, "002 was 1.60x faster than 001 but failed (wrong_answer): held-out "
                              "check (fresh inputs, unseen sizes) failed: wrong output on "
                              "ho_near1");
    assert_true(rank_passed_over(v, 4, 2, &pick, &start, NULL, line, sizeof(line)));
    assert_non_null(strstr(line, "within measured noise"));
    assert_non_null(strstr(line, "a tie keeps the earlier candidate"));
    assert_true(rank_passed_over(v, 4, 3, &pick, &start, NULL, line, sizeof(line)));
    assert_non_null(strstr(line, "flagged for re-verification (20.0x the reference)"));
}

/* Geomeans over different timed sets do not compare: against the start the
 * per-case ratio (speedup_ref, the table's "vs start") decides. */
static void start_compared_on_the_same_cases(void **state)
{
    (void)state;
    struct verdict start = scored("start", 4.99, 0.01);
    struct verdict v[1] = {scored("001", 5.30, 0.01)};
    v[0].speedup_ref = 1.20;
    struct rank_pick pick;
    rank_pick_best(v, 1, 0, &start, NULL, &pick);
    assert_int_equal(pick.best, 0);
    assert_non_null(strstr(pick.why, "001: 1.20x the starting kernel"));
}

static void no_start_time_or_no_pass(void **state)
{
    (void)state;
    struct verdict v[1] = {scored("001", 1.5, 0.01)};
    struct rank_pick pick;
    rank_pick_best(v, 1, 0, NULL, NULL, &pick);
    assert_int_equal(pick.best, 0);
    rank_pick_best(v, 1, -1, NULL, NULL, &pick);
    assert_int_equal(pick.best, -1);
    assert_false(pick.start_kept);
    assert_string_equal(pick.why, "no candidate passed every check");
}

/* Issue 35 item 2: a speedup over the start is never stated bare. The
 * unchanged start against itself, 1.37x by chance with 15% noise a side:
 * SAME, and the summary says so; 1.5x with 1% noise: FAST; no interval
 * (fewer than 3 samples): AMBIGUOUS. Per case, against the start's sets of
 * that case, pooled. */
static void speedup_judged_against_the_noise(void **state)
{
    (void)state;
    struct verdict start, v;
    verdict_init(&start, "start");
    add(&start, "a", true, 1.37, 0.12, 0.0);
    verdict_finish(&start, NULL);
    verdict_init(&v, "c1");
    add(&v, "a", true, 1.0, 0.12, 1.37);
    verdict_finish(&v, NULL);
    near(v.speedup_ref, 1.37);
    assert_string_equal(v.ref_call, "");
    verdict_judge_ref(&v, &start);
    assert_string_equal(v.ref_call, "SAME");
    double need = 1.96 * sqrt(2.0) * 1.2533141373155001 * 0.12;
    near(v.ref_noise_pct, 100.0 * expm1(need));
    assert_non_null(strstr(v.summary, "1.37x the reference (SAME: within the measured noise, +-"));
    double pct;
    assert_string_equal(verdict_case_ref_call(&v.cases[0], &start, &pct), "SAME");
    near(pct, v.ref_noise_pct);
    /* Quieter: the same ratio beyond the noise. */
    start.cases[0].timing.rse = v.cases[0].timing.rse = 0.01;
    verdict_finish(&start, NULL);
    verdict_finish(&v, NULL);
    assert_string_equal(v.ref_call, ""); /* finish clears it: new figures, judged again */
    verdict_judge_ref(&v, &start);
    assert_string_equal(v.ref_call, "FAST");
    assert_non_null(strstr(v.summary, "(FAST: beyond the measured noise, +-"));
    v.cases[0].ref_median_ms = 0.5;
    assert_string_equal(verdict_case_ref_call(&v.cases[0], &start, &pct), "SLOW");
    /* Two samples give no interval: nothing can be said. */
    v.cases[0].timing.n = 2;
    assert_string_equal(verdict_case_ref_call(&v.cases[0], &start, &pct), "AMBIGUOUS");
    /* No start of the session, no judgement. */
    assert_string_equal(verdict_case_ref_call(&v.cases[0], NULL, &pct), "");
    verdict_free(&v);
    verdict_free(&start);
}

/* Issue 35 item 3: --until-rse's target is judged on each case's samples
 * pooled over its sets (the harness's stopping rule), from the sets'
 * summaries; a missed target is said in the summary. Synthetic samples. */
static void rse_target_pooled_over_sets(void **state)
{
    (void)state;
    static const double set0[] = {1.0, 1.2, 0.9, 1.1}, set1[] = {2.0, 2.5, 1.5};
    const double *sets[] = {set0, set1};
    size_t ns[] = {4, 3};
    struct verdict v;
    verdict_init(&v, "c1");
    double all[7], sum = 0, ss = 0;
    size_t n = 0;
    for (int s = 0; s < 2; s++) {
        struct verdict_case *c = add(&v, "a", true, 1.0, 0.0, 0.0);
        c->set = s;
        struct kiln_err e = {0};
        assert_int_equal(stats_compute(sets[s], ns[s], &c->timing, &e), KILN_OK);
        for (size_t i = 0; i < ns[s]; i++)
            sum += all[n++] = sets[s][i];
    }
    double mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (all[i] - mean) * (all[i] - mean);
    double want = sqrt(ss / (double)(n - 1)) / sqrt((double)n) / mean;
    near(verdict_case_rse(&v, "a"), want);
    assert_true(verdict_case_rse(&v, "nope") < 0);
    /* A fixed count has no target: met, and nothing said. */
    verdict_finish(&v, NULL);
    assert_true(verdict_rse_target_met(&v, NULL, NULL));
    assert_null(strstr(v.summary, "target"));
    v.rule = (struct verdict_timing_rule){.known = true,
                                          .adaptive = true,
                                          .iterations = 3,
                                          .max_iterations = 30,
                                          .target_rse = 0.005,
                                          .budget_ms = 2000};
    verdict_finish(&v, NULL);
    double worst = 0;
    const char *wc = NULL;
    assert_false(verdict_rse_target_met(&v, &worst, &wc));
    near(worst, want);
    assert_string_equal(wc, "a");
    char text[160];
    snprintf(text, sizeof(text), "timing target not reached (rse %.2f%% in case a, target 0.5%%)",
             100 * want);
    assert_non_null(strstr(v.summary, text));
    v.rule.target_rse = 0.5;
    verdict_finish(&v, NULL);
    assert_true(verdict_rse_target_met(&v, NULL, NULL));
    assert_null(strstr(v.summary, "target"));
    verdict_free(&v);
}

/* Issue 35 item 10: a tie within noise is marked on the one ranked below;
 * item 1: a pass not compared (timed in another session) never ranks. */
static void ranking_marks_ties_and_leaves_out_the_uncompared(void **state)
{
    (void)state;
    struct verdict v[4] = {scored("001", 2.01, 0.02), scored("002", 1.94, 0.02),
                           scored("003", 1.00, 0.01), scored("004", 0.50, 0.01)};
    v[3].not_compared = true;
    struct rank_entry *r;
    struct kiln_err e = {0};
    assert_int_equal(rank_verdicts(v, 4, NULL, &r, &e), KILN_OK);
    size_t want[4] = {2, 0, 1, 3};
    int places[4] = {1, 2, 3, 0};
    bool ties[4] = {false, false, true, false};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[i].index, want[i]);
        assert_int_equal(r[i].place, places[i]);
        assert_int_equal(r[i].tie, ties[i]);
    }
    assert_non_null(strstr(r[2].reason, "within noise of 001"));
    assert_non_null(strstr(r[3].reason, "not compared: timed in an earlier session"));
    free(r);
    /* The best is never slower than the start; speedups compare across
     * sessions (each over its own session's start). */
    struct verdict start = scored("start", 1.00, 0.01);
    v[0].speedup_ref = 0.5;
    assert_int_equal(rank_vs_start(&v[0], &start, NULL), -1);
    v[2].speedup_ref = 1.0;
    assert_int_equal(rank_vs_start(&v[2], &start, NULL), 0);
    v[3].speedup_ref = 2.0;
    assert_int_equal(rank_vs_start(&v[3], &start, NULL), 1);
    assert_int_equal(rank_compare(&v[2], &v[3], NULL), 1);
    assert_int_equal(rank_compare(&v[3], &v[0], NULL), -1);
    struct rank_pick pick = {.best = 2};
    char line[RANK_REASON_MAX];
    assert_false(rank_passed_over(v, 4, 3, &pick, &start, NULL, line, sizeof(line)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(geomean_over_performance_cases_only),
        cmocka_unit_test(summary_counts_cases_not_sets),
        cmocka_unit_test(baseline_speedups),
        cmocka_unit_test(wrong_output_makes_wrong_answer),
        cmocka_unit_test(faster_than_the_floor_is_impossible),
        cmocka_unit_test(tenfold_speedup_needs_reverify),
        cmocka_unit_test(failure_outside_cases_wins),
        cmocka_unit_test(status_names),
        cmocka_unit_test(json_round_trip),
        cmocka_unit_test(strict_reading),
        cmocka_unit_test(ranking_ties_keep_the_earlier),
        cmocka_unit_test(ranking_clear_winner),
        cmocka_unit_test(ranking_puts_failures_and_flags_last),
        cmocka_unit_test(slower_best_keeps_the_start),
        cmocka_unit_test(best_within_noise_of_the_start_keeps_it),
        cmocka_unit_test(faster_best_wins_and_passed_over_are_explained),
        cmocka_unit_test(start_compared_on_the_same_cases),
        cmocka_unit_test(no_start_time_or_no_pass),
        cmocka_unit_test(speedup_judged_against_the_noise),
        cmocka_unit_test(rse_target_pooled_over_sets),
        cmocka_unit_test(ranking_marks_ties_and_leaves_out_the_uncompared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
