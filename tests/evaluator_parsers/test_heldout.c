/* test_heldout.c - held-out cases drawn from a seed (evaluator/heldout.h):
 * every built-in workload draws valid, unseen cases within its budget; the
 * draw is a function of the seed; hostile specs fail with a message; the
 * timing rule flags a candidate fast only on the visible cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "heldout.h"
#include "workload.h"

static const char *const builtin[] = {"saxpy",     "reduce_sum", "softmax_rows", "layernorm",
                                      "transpose", "sgemm",      "conv2d"};

static struct workload *load_builtin(const char *name)
{
    const char *src = getenv("KILN_SOURCE_DIR");
    if (!src)
        fail_msg("KILN_SOURCE_DIR is not set (run through ctest)");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/workloads/%s", src, name);
    struct workload *w = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (workload_load(dir, &w, &e) != KILN_OK)
        fail_msg("%s: %s", name, e.msg);
    return w;
}

static bool same(const struct workload *w, const struct wl_case *a, const struct wl_case *b)
{
    return memcmp(a->sizes, b->sizes, w->nsizes * sizeof(a->sizes[0])) == 0;
}

/* The first item: held-out sizes must be ones nobody saw. Every
 * built-in workload declares ranges, and each draw gives cases that no
 * visible or fixed case has, that meet the constraints, that fit the
 * budget of the largest visible case, and that differ between seeds. */
static void builtin_draws_are_unseen_and_valid(void **state)
{
    (void)state;
    static struct heldout_set h, h2;
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
        struct workload *w = load_builtin(builtin[i]);
        if (w->held_draw.draw < 1)
            fail_msg("%s: held_out declares no ranges (its held-out sizes would be public)",
                     builtin[i]);
        for (unsigned b = 1; b <= KILN_BACKEND_CPU; b <<= 1) {
            if (!(w->backends & b))
                continue;
            uint64_t biggest = 0;
            for (size_t c = 0; c < w->ncases; c++)
                if ((w->cases[c].backends & b) && w->cases[c].bytes > biggest)
                    biggest = w->cases[c].bytes;
            size_t differ = 0;
            for (uint64_t seed = 1; seed <= 20; seed++) {
                struct kiln_err e;
                kiln_err_clear(&e);
                if (heldout_draw(w, b, seed, &h, &e) != KILN_OK)
                    fail_msg("%s seed %llu: %s", builtin[i], (unsigned long long)seed, e.msg);
                size_t timed = 0;
                for (size_t k = h.nincluded; k < h.n; k++) {
                    const struct wl_case *d = &h.cases[k];
                    timed += d->kind == WL_CASE_PERFORMANCE;
                    assert_true(workload_where_holds(w, d));
                    assert_true(d->bytes <= biggest);
                    assert_int_equal(d->backends, b);
                    assert_true(strncmp(d->name, WL_DRAWN_PREFIX, 3) == 0);
                    for (size_t c = 0; c < w->ncases; c++)
                        if (same(w, d, &w->cases[c]))
                            fail_msg("%s: drawn %s has the sizes of visible case %s", builtin[i],
                                     d->name, w->cases[c].name);
                    for (size_t c = 0; c < k; c++)
                        assert_false(same(w, d, &h.cases[c]));
                }
                assert_true(timed >= 1 && timed <= HELDOUT_MAX_TIMED);
                assert_int_equal(h.n - h.nincluded - timed, (size_t)w->held_draw.draw);
                /* The same seed draws the same cases; the next seed others. */
                assert_int_equal(heldout_draw(w, b, seed, &h2, &e), KILN_OK);
                assert_memory_equal(&h, &h2, sizeof(h));
                assert_int_equal(heldout_draw(w, b, seed + 1000, &h2, &e), KILN_OK);
                differ += !same(w, &h.cases[h.nincluded], &h2.cases[h2.nincluded]);
            }
            assert_true(differ >= 15);
        }
        workload_free(w);
    }
}

static const char base_json[] =
    "{\"name\": \"t\", \"description\": \"d\", \"sizes\": [\"n\", \"m\"],"
    " \"signature\": [{\"name\": \"x\", \"kind\": \"tensor\", \"dtype\": \"float32\","
    " \"shape\": [\"n\", \"m\"], \"role\": \"in\"}, {\"name\": \"y\", \"kind\": \"tensor\","
    " \"dtype\": \"float32\", \"shape\": [\"n\", \"m\"], \"role\": \"out\"}],"
    " \"cases\": [{\"name\": \"a\", \"kind\": \"performance\", \"sizes\": {\"n\": 50, \"m\": "
    "100}}],"
    " \"held_out\": %s, \"tolerance\": {}, \"cost\": {\"bytes\": \"8*n*m\", \"flops\": \"n*m\"},"
    " \"backends\": [\"cpu\"]}";

static enum kiln_rc parse_with(const char *held, struct workload **w, struct kiln_err *e)
{
    char text[4096];
    snprintf(text, sizeof(text), base_json, held);
    kiln_err_clear(e);
    return workload_parse_json(text, strlen(text), NULL, w, e);
}

static void draw_spec_parsing(void **state)
{
    (void)state;
    struct workload *w = NULL;
    struct kiln_err e;
    assert_int_equal(
        parse_with("{\"draw\": 2, \"sizes\": {\"n\": [1, 200], \"m\": [\"n\", \"2*n\"]},"
                   " \"where\": [\"m % 2 == 0\"]}",
                   &w, &e),
        KILN_OK);
    static struct heldout_set h;
    assert_int_equal(heldout_draw(w, KILN_BACKEND_CPU, 7, &h, &e), KILN_OK);
    for (size_t i = 0; i < h.n; i++) {
        assert_true(h.cases[i].sizes[1] >= h.cases[i].sizes[0]);
        assert_true(h.cases[i].sizes[1] <= 2 * h.cases[i].sizes[0]);
        assert_int_equal(h.cases[i].sizes[1] % 2, 0);
    }
    workload_free(w);
    static const struct {
        const char *held, *msg;
    } bad[] = {
        {"{\"draw\": 0, \"sizes\": {\"n\": [1, 2], \"m\": [1, 2]}}", "held_out.draw: 0 is not in"},
        {"{\"draw\": 1, \"sizes\": {\"n\": [1, 2]}}", "missing a range for size \"m\""},
        {"{\"draw\": 1, \"sizes\": {\"n\": [5, 2], \"m\": [1, 2]}}", "is empty"},
        {"{\"draw\": 1, \"sizes\": {\"n\": [\"m\", 9], \"m\": [1, 2]}}",
         "only sizes listed before"},
        {"{\"draw\": 1, \"sizes\": {\"n\": [1, 9], \"m\": [1, 9]}, \"where\": [\"n m\"]}",
         "must be two size expressions"},
        {"{\"draw\": 1, \"sizes\": {\"n\": [1, 9], \"m\": [1, 9]}, \"where\": [\"n < m < 3\"]}",
         "must be two size expressions"},
        /* Only sizes the budget (the visible case: 50 x 100) cannot hold. */
        {"{\"draw\": 1, \"sizes\": {\"n\": [1000, 2000], \"m\": [1000, 2000]}}",
         "no valid cpu case"},
        {"{\"draw\": 1, \"sizes\": {\"n\": [1, 9], \"m\": [1, 9]}, \"include\": [{\"name\": "
         "\"ho_x\", \"sizes\": {\"n\": 1, \"m\": 1}}]}",
         "are kept for the held-out cases kiln draws"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        w = NULL;
        assert_int_not_equal(parse_with(bad[i].held, &w, &e), KILN_OK);
        if (!strstr(e.msg, bad[i].msg))
            fail_msg("%s: message '%s' lacks '%s'", bad[i].held, e.msg, bad[i].msg);
        assert_null(w);
    }
}

/* The timing rule (VERDICT.md section 9) on made-up verdicts. */
static void add_timed(struct verdict *v, const char *name, int set, double ms)
{
    struct verdict_case *c;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(verdict_add_case(v, name, set, true, &c, &e), KILN_OK);
    c->timed = true;
    c->timing = (struct stats_summary){.n = 10, .median = ms, .mean = ms, .min = ms, .max = ms};
}

static void timing_rule(void **state)
{
    (void)state;
    struct workload *w = NULL;
    struct kiln_err e;
    assert_int_equal(
        parse_with("{\"draw\": 1, \"sizes\": {\"n\": [1, 200], \"m\": [1, 200]}}", &w, &e),
        KILN_OK);
    static struct heldout_set h;
    assert_int_equal(heldout_draw(w, KILN_BACKEND_CPU, 3, &h, &e), KILN_OK);
    size_t near = h.n;
    for (size_t i = 0; i < h.n; i++)
        if (h.near[i] == 0)
            near = i;
    assert_true(near < h.n);
    /* Work ratio of the near case to "a" by bytes (8*n*m both). */
    double ratio = (double)(h.cases[near].sizes[0] * h.cases[near].sizes[1]) / (100.0 * 50.0);
    struct verdict vis, held;
    char why[VERDICT_DETAIL_MAX] = "";
    verdict_init(&vis, "c");
    verdict_init(&held, "c");
    for (int s = 0; s < 3; s++)
        add_timed(&vis, "a", s, 1.0);
    /* Consistent: the held-out time scales with the work (and noise). */
    for (int s = 0; s < 3; s++)
        add_timed(&held, h.cases[near].name, s, 1.5 * ratio);
    assert_false(heldout_timing_inconsistent(w, &h, &vis, &held, NULL, why, sizeof(why)));
    verdict_free(&held);
    verdict_init(&held, "c");
    /* Fast only on the visible cases: 10x slower than the work predicts. */
    for (int s = 0; s < 3; s++)
        add_timed(&held, h.cases[near].name, s, 10.0 * ratio);
    assert_true(heldout_timing_inconsistent(w, &h, &vis, &held, NULL, why, sizeof(why)));
    assert_non_null(strstr(why, h.cases[near].name));
    assert_non_null(strstr(why, "visible case a"));
    /* Too few samples for an interval: the rule says nothing. */
    for (size_t i = 0; i < held.ncases; i++)
        held.cases[i].timing.n = 2;
    assert_false(heldout_timing_inconsistent(w, &h, &vis, &held, NULL, why, sizeof(why)));
    verdict_free(&vis);
    verdict_free(&held);
    workload_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builtin_draws_are_unseen_and_valid),
        cmocka_unit_test(draw_spec_parsing),
        cmocka_unit_test(timing_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
