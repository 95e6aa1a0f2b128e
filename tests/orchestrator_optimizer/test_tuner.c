#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "tuner.h"

/* A synthetic landscape over 3 tunables with its optimum at (5, 1, 3). */
static double cost(const size_t *i)
{
    double a = (double)i[0] - 5, b = (double)i[1] - 1, c = (double)i[2] - 3;
    return a * a + 2 * b * b + 0.5 * c * c + 1;
}

static void starts_at_defaults_and_never_repeats(void **state)
{
    (void)state;
    struct tuner_dim dims[] = {{3, 1}, {2, 0}};
    struct tuner *t;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tuner_new(dims, 2, 7, &t, &e), KILN_OK);
    size_t seen[6][2], idx[2];
    for (int k = 0; k < 6; k++) {
        assert_int_equal(tuner_next(t, idx, &e), KILN_OK);
        if (k == 0) {
            assert_int_equal(idx[0], 1);
            assert_int_equal(idx[1], 0);
        }
        for (int j = 0; j < k; j++)
            assert_false(seen[j][0] == idx[0] && seen[j][1] == idx[1]);
        memcpy(seen[k], idx, sizeof(idx));
        tuner_report(t, k % 2 ? TUNER_BETTER : TUNER_NOT_BETTER);
    }
    assert_int_equal(tuner_next(t, idx, &e), KILN_E_NOTFOUND);
    tuner_free(t);
}

static void descends_to_the_optimum_within_budget(void **state)
{
    (void)state;
    struct tuner_dim dims[] = {{8, 0}, {4, 3}, {6, 0}};
    struct tuner *t;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tuner_new(dims, 3, 42, &t, &e), KILN_OK);
    double best = 1e30;
    int evals = 0;
    size_t idx[3];
    while (evals < 40 && tuner_next(t, idx, &e) == KILN_OK) {
        double c = cost(idx);
        evals++;
        tuner_report(t, c < best ? TUNER_BETTER : TUNER_NOT_BETTER);
        if (c < best)
            best = c;
    }
    assert_true(best == 1.0); /* found (5, 1, 3) in 40 of 192 points */
    const size_t *b = tuner_best(t);
    assert_int_equal(b[0], 5);
    assert_int_equal(b[1], 1);
    assert_int_equal(b[2], 3);
    tuner_free(t);
}

static void failures_never_become_incumbent(void **state)
{
    (void)state;
    struct tuner_dim dims[] = {{4, 0}};
    struct tuner *t;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tuner_new(dims, 1, 1, &t, &e), KILN_OK);
    size_t idx[1];
    assert_int_equal(tuner_next(t, idx, &e), KILN_OK);
    tuner_report(t, TUNER_FAILED);
    assert_null(tuner_best(t));
    assert_int_equal(tuner_next(t, idx, &e), KILN_OK); /* a restart */
    tuner_report(t, TUNER_NOT_BETTER);
    assert_non_null(tuner_best(t)); /* the first pass is the incumbent */
    tuner_free(t);
}

/* kiln optimize --jobs: several proposals before any report; each report
 * goes to the oldest outstanding proposal. */
static void looks_ahead_and_reports_in_proposal_order(void **state)
{
    (void)state;
    struct tuner_dim dims[] = {{5, 2}};
    struct tuner *t;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tuner_new(dims, 1, 3, &t, &e), KILN_OK);
    size_t a[1], b[1], c[1], d[1];
    assert_int_equal(tuner_next(t, a, &e), KILN_OK);
    assert_int_equal(a[0], 2);
    tuner_report(t, TUNER_NOT_BETTER); /* the first pass: incumbent and centre */
    assert_int_equal(tuner_next(t, b, &e), KILN_OK);
    assert_int_equal(tuner_next(t, c, &e), KILN_OK);
    assert_int_equal(tuner_next(t, d, &e), KILN_OK);
    assert_int_equal(b[0], 1); /* both neighbours of the centre... */
    assert_int_equal(c[0], 3);
    assert_true(d[0] == 0 || d[0] == 4); /* ...then a restart: all distinct */
    tuner_report(t, TUNER_FAILED);       /* b */
    tuner_report(t, TUNER_BETTER);       /* c */
    assert_int_equal(tuner_best(t)[0], 3);
    tuner_report(t, TUNER_NOT_BETTER); /* d: passed, not better */
    assert_int_equal(tuner_best(t)[0], 3);
    size_t f[1];
    assert_int_equal(tuner_next(t, f, &e), KILN_OK);
    assert_int_equal(f[0], d[0] == 0 ? 4 : 0); /* the last one left */
    assert_int_equal(tuner_next(t, f, &e), KILN_E_NOTFOUND);
    tuner_free(t);
}

static void caps_outstanding_proposals(void **state)
{
    (void)state;
    struct tuner_dim dims[] = {{TUNER_MAX_PENDING + 4, 0}};
    struct tuner *t;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tuner_new(dims, 1, 5, &t, &e), KILN_OK);
    size_t idx[1];
    for (int i = 0; i < TUNER_MAX_PENDING; i++)
        assert_int_equal(tuner_next(t, idx, &e), KILN_OK);
    assert_int_equal(tuner_next(t, idx, &e), KILN_E_LIMIT);
    tuner_report(t, TUNER_NOT_BETTER);
    assert_int_equal(tuner_next(t, idx, &e), KILN_OK);
    tuner_free(t);
}

static void rejects_bad_dims(void **state)
{
    (void)state;
    struct tuner_dim dims[] = {{2, 2}};
    struct tuner *t;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(tuner_new(dims, 1, 1, &t, &e), KILN_E_USAGE);
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(starts_at_defaults_and_never_repeats),
        cmocka_unit_test(descends_to_the_optimum_within_budget),
        cmocka_unit_test(failures_never_become_incumbent),
        cmocka_unit_test(looks_ahead_and_reports_in_proposal_order),
        cmocka_unit_test(caps_outstanding_proposals),
        cmocka_unit_test(rejects_bad_dims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
