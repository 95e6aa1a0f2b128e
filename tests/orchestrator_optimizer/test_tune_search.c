/* The tuner's successive-halving search (tune_search.h): invalid
 * configurations are never proposed, rungs shrink by eta and promote the
 * fastest, only the last rung is timed in full, and the plan depends on the
 * seed alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "tune_search.h"

/* 4 tunables, 6*5*4*4 = 480 configurations; valid when the "threads"
 * (idx0+1)*(idx1+1) <= 16 and idx2 + idx3 is even (a divisibility rule). */
static const size_t nv[] = {6, 5, 4, 4}, defaults[] = {1, 1, 0, 0};

static bool valid_rule(const size_t *idx, void *ctx)
{
    int *calls = ctx;
    if (calls)
        (*calls)++;
    return (idx[0] + 1) * (idx[1] + 1) <= 16 && (idx[2] + idx[3]) % 2 == 0;
}

/* A made-up time for a configuration: distinct for every one. */
static double time_of(const size_t *idx)
{
    return 1.0 + (double)((idx[0] * 7 + idx[1] * 3 + idx[2] * 11 + idx[3] * 5) % 37) +
           0.001 * (double)(idx[0] + 6 * (idx[1] + 5 * (idx[2] + 4 * idx[3])));
}

static struct tune_search *make(uint64_t seed, size_t budget)
{
    struct tune_search_opts o = TUNE_SEARCH_DEFAULTS;
    o.seed = seed;
    o.budget = budget;
    struct tune_search *s;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tune_search_new(nv, defaults, 4, valid_rule, NULL, &o, &s, &e), KILN_OK);
    return s;
}

static void prunes_before_proposing(void **state)
{
    (void)state;
    int calls = 0;
    struct tune_search_opts o = TUNE_SEARCH_DEFAULTS;
    struct tune_search *s;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tune_search_new(nv, defaults, 4, valid_rule, &calls, &o, &s, &e), KILN_OK);
    assert_int_equal(calls, 480); /* every configuration judged once, up front */
    assert_int_equal(tune_search_space(s), 480);
    size_t want = 0, idx[4];
    for (size_t a = 0; a < 6; a++)
        for (size_t b = 0; b < 5; b++)
            for (size_t c = 0; c < 4; c++)
                for (size_t d = 0; d < 4; d++)
                    want += (a + 1) * (b + 1) <= 16 && (c + d) % 2 == 0;
    assert_int_equal(tune_search_valid(s), want);
    int rung, iters, n = 0;
    while (tune_search_next(s, idx, &rung, &iters, &e) == KILN_OK) {
        assert_true(valid_rule(idx, NULL));
        tune_search_report(s, true, time_of(idx));
        n++;
    }
    assert_int_equal(n, tune_search_planned(s));
    tune_search_free(s);
}

static bool never(const size_t *idx, void *ctx)
{
    (void)idx;
    (void)ctx;
    return false;
}

static void refuses_empty_and_huge_spaces(void **state)
{
    (void)state;
    struct tune_search_opts o = TUNE_SEARCH_DEFAULTS;
    struct tune_search *s = (struct tune_search *)1;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tune_search_new(nv, defaults, 4, never, NULL, &o, &s, &e), KILN_E_REJECTED);
    assert_null(s);
    assert_string_equal(e.msg, "tuner: none of the 480 configurations meets the candidate's "
                               "require directives and the device's launch limits");
    size_t big[] = {64, 64, 64, 64}, z[] = {0, 0, 0, 0};
    assert_int_equal(tune_search_new(big, z, 4, NULL, NULL, &o, &s, &e), KILN_E_LIMIT);
    o.eta = 1;
    assert_int_equal(tune_search_new(nv, defaults, 4, NULL, NULL, &o, &s, &e), KILN_E_USAGE);
}

static void halving_order(void **state)
{
    (void)state;
    struct tune_search *s = make(7, 40);
    /* 27 short runs, the 9 fastest again, the 3 fastest of those in full. */
    assert_int_equal(tune_search_rungs(s), 3);
    assert_int_equal(tune_search_planned(s), 39);
    size_t idx[4];
    int rung, iters;
    struct kiln_err e;
    kiln_err_clear(&e);
    double rung0[27], rung1[9];
    for (int i = 0; i < 27; i++) {
        assert_int_equal(tune_search_next(s, idx, &rung, &iters, &e), KILN_OK);
        assert_int_equal(rung, 0);
        assert_int_equal(iters, 20);
        if (i == 0) /* the defaults come first */
            assert_memory_equal(idx, defaults, sizeof(idx));
        rung0[i] = time_of(idx);
        /* One failure: it is never promoted however fast it would be. */
        tune_search_report(s, i != 3, i == 3 ? 0.0001 : rung0[i]);
    }
    rung0[3] = 1e9;
    /* Rung 1: exactly the 9 fastest passing, fastest first. */
    double sorted[27];
    memcpy(sorted, rung0, sizeof(sorted));
    for (int i = 0; i < 27; i++)
        for (int j = i + 1; j < 27; j++)
            if (sorted[j] < sorted[i]) {
                double t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
    for (int i = 0; i < 9; i++) {
        assert_int_equal(tune_search_next(s, idx, &rung, &iters, &e), KILN_OK);
        assert_int_equal(rung, 1);
        assert_int_equal(iters, 20);
        assert_true(time_of(idx) == sorted[i]);
        /* Re-timed: the order changes (reverse), and rung 2 must follow it. */
        rung1[i] = 100.0 - i;
        tune_search_report(s, true, rung1[i]);
    }
    size_t last[3][4];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tune_search_next(s, idx, &rung, &iters, &e), KILN_OK);
        assert_int_equal(rung, 2);
        assert_int_equal(iters, 0); /* the survivors are timed in full */
        assert_true(time_of(idx) == sorted[8 - i]);
        memcpy(last[i], idx, sizeof(idx));
        tune_search_report(s, true, 5.0 + i);
    }
    assert_int_equal(tune_search_next(s, idx, &rung, &iters, &e), KILN_E_NOTFOUND);
    double ms;
    assert_true(tune_search_best(s, idx, &ms));
    assert_memory_equal(idx, last[0], sizeof(idx));
    assert_true(ms == 5.0);
    tune_search_free(s);
}

static void small_space_is_exhaustive_in_full(void **state)
{
    (void)state;
    struct tune_search *s = make(1, 1000);
    assert_int_equal(tune_search_rungs(s), 1);
    assert_int_equal(tune_search_planned(s), tune_search_valid(s));
    size_t idx[4], seen = 0;
    int rung, iters;
    struct kiln_err e;
    kiln_err_clear(&e);
    while (tune_search_next(s, idx, &rung, &iters, &e) == KILN_OK) {
        assert_int_equal(iters, 0);
        tune_search_report(s, true, time_of(idx));
        seen++;
    }
    assert_int_equal(seen, tune_search_valid(s));
    tune_search_free(s);
}

static void deterministic_under_a_seed(void **state)
{
    (void)state;
    size_t a[39][4], b[39][4], c[39][4];
    struct tune_search *runs[3] = {make(42, 40), make(42, 40), make(43, 40)};
    size_t(*out[3])[4] = {a, b, c};
    struct kiln_err e;
    kiln_err_clear(&e);
    for (int r = 0; r < 3; r++) {
        int rung, iters;
        for (int i = 0; i < 39; i++) {
            assert_int_equal(tune_search_next(runs[r], out[r][i], &rung, &iters, &e), KILN_OK);
            tune_search_report(runs[r], true, time_of(out[r][i]));
        }
        tune_search_free(runs[r]);
    }
    assert_memory_equal(a, b, sizeof(a));
    assert_memory_not_equal(a, c, sizeof(a)); /* another seed, another sample */
}

static void lookahead_waits_between_rungs(void **state)
{
    (void)state;
    struct tune_search *s = make(5, 40), *ref = make(5, 40);
    size_t idx[4], want[4];
    int rung, iters;
    struct kiln_err e;
    kiln_err_clear(&e);
    /* Four in flight, as `--jobs 4` asks: propose ahead, report in order.
     * The first of each rung waits until the rung before is reported, and the
     * sequence is the one a caller without lookahead gets. */
    double t[64];
    int proposed = 0, reported = 0, waits = 0;
    while (proposed < 39) {
        enum kiln_rc rc = tune_search_next(s, idx, &rung, &iters, &e);
        if (rc == KILN_E_LIMIT) {
            assert_true(proposed == 27 || proposed == 36); /* rungs 1 and 2 */
            waits++;
            tune_search_report(s, true, t[reported++]);
            continue;
        }
        assert_int_equal(rc, KILN_OK);
        assert_int_equal(tune_search_next(ref, want, &rung, &iters, &e), KILN_OK);
        tune_search_report(ref, true, time_of(want));
        assert_memory_equal(idx, want, sizeof(idx));
        t[proposed++] = time_of(idx);
        if (proposed - reported == 4)
            tune_search_report(s, true, t[reported++]);
    }
    assert_int_equal(waits, 6); /* 3 reports outstanding at each rung's start */
    tune_search_free(s);
    tune_search_free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prunes_before_proposing),
        cmocka_unit_test(refuses_empty_and_huge_spaces),
        cmocka_unit_test(halving_order),
        cmocka_unit_test(small_space_is_exhaustive_in_full),
        cmocka_unit_test(deterministic_under_a_seed),
        cmocka_unit_test(lookahead_waits_between_rungs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
