/* "Did you mean" (base/suggest.h): the distance, the threshold, the ties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "json_strict.h"
#include "suggest.h"

static void distance_counts_edits_and_swaps(void **state)
{
    (void)state;
    assert_int_equal(suggest_distance("", ""), 0);
    assert_int_equal(suggest_distance("abc", ""), 3);
    assert_int_equal(suggest_distance("", "abc"), 3);
    assert_int_equal(suggest_distance("optimise", "optimize"), 1); /* substitution */
    assert_int_equal(suggest_distance("max-iteration", "max-iterations"), 1);
    assert_int_equal(suggest_distance("evla", "eval"), 1); /* adjacent swap: one edit */
    assert_int_equal(suggest_distance("kitten", "sitting"), 3);
    assert_int_equal(suggest_distance("ca", "abc"), 3); /* OSA, not full Damerau (2) */
    char longer[SUGGEST_MAX_LEN + 2];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_int_equal(suggest_distance(longer, "a"), SIZE_MAX);
}

static void offers_only_close_names(void **state)
{
    (void)state;
    static const char *const cmds[] = {"eval", "optimize", "doctor", "workloads", NULL};
    assert_string_equal(suggest_among("optimise", cmds), "optimize");
    assert_string_equal(suggest_among("evla", cmds), "eval");
    assert_string_equal(suggest_among("doctr", cmds), "doctor");
    /* One edit for short words, len/3 for longer ones; nothing far off. */
    assert_null(suggest_among("ev", cmds));
    assert_null(suggest_among("serve", cmds));
    assert_null(suggest_among("optim", cmds));
    /* An exact match is not a suggestion. */
    assert_null(suggest_among("eval", cmds));
    assert_null(suggest_among("x", NULL));
}

static void keeps_the_closest_then_the_first(void **state)
{
    (void)state;
    static const char *const names[] = {"saxpy", "saxpz", "sax", NULL};
    struct suggest s;
    suggest_init(&s, "saxpy2");
    for (const char *const *n = names; *n; n++)
        suggest_consider(&s, *n);
    assert_string_equal(s.best, "saxpy");
    assert_int_equal(s.best_dist, 1);
    static const char *const tie[] = {"abcd", "abce", NULL};
    assert_string_equal(suggest_among("abcf", tie), "abcd");
}

static void json_keys_say_did_you_mean(void **state)
{
    (void)state;
    static const char *const allowed[] = {"name", "inputs", "outputs", NULL};
    json_t *j = json_pack("{s:i}", "ouputs", 1);
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(json_strict_keys(j, "workload.json", allowed, NULL, &e), KILN_E_PARSE);
    assert_string_equal(e.msg, "workload.json: unknown key \"ouputs\"; did you mean \"outputs\"?");
    json_decref(j);
    j = json_pack("{s:i}", "zzz", 1);
    kiln_err_clear(&e);
    assert_int_equal(json_strict_keys(j, "workload.json", allowed, NULL, &e), KILN_E_PARSE);
    assert_string_equal(e.msg, "workload.json: unknown key \"zzz\"");
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(distance_counts_edits_and_swaps),
        cmocka_unit_test(offers_only_close_names),
        cmocka_unit_test(keeps_the_closest_then_the_first),
        cmocka_unit_test(json_keys_say_did_you_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
