/* cli_common.h's parsers: whether each took the option (*taken), what it
 * stored, and each usage error as KILN_E_USAGE with its message in the
 * error buffer (nothing printed: the command prints it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "evaluate.h"

/* cli.c's cli_find reads the command table (commands.c): none here. */
const struct kiln_cmd kiln_commands[] = {{NULL, NULL, NULL, NULL}};

static void output_option_says_whether_it_took_the_option(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    enum cli_output out = CLI_OUT_TEXT;
    bool taken = true;
    assert_int_equal(cli_output_option('x', &out, &taken, &err), KILN_OK);
    assert_false(taken);
    assert_int_equal(out, CLI_OUT_TEXT);
    assert_int_equal(cli_output_option(CLI_OPT_JSON, &out, &taken, &err), KILN_OK);
    assert_true(taken);
    assert_int_equal(out, CLI_OUT_JSON);
    /* The same format twice is fine; NULL: the caller does not ask. */
    assert_int_equal(cli_output_option(CLI_OPT_JSON, &out, NULL, &err), KILN_OK);
    assert_string_equal(err.msg, "");
}

static void output_option_refuses_a_second_format(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    enum cli_output out = CLI_OUT_CSV;
    bool taken = false;
    assert_int_equal(cli_output_option(CLI_OPT_QUIET, &out, &taken, &err), KILN_E_USAGE);
    assert_true(taken);
    assert_int_equal(out, CLI_OUT_CSV);
    assert_string_equal(err.msg, "--csv and --quiet exclude each other: choose one output format");
}

static void common_option_stores_what_it_takes(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    struct cli_common o = {0};
    bool taken = false;
    assert_int_equal(cli_common_option(CLI_OPT_SEED, "42", &o, &taken, &err), KILN_OK);
    assert_true(taken);
    assert_true(o.seed_set);
    assert_int_equal(o.seed, 42);
    assert_int_equal(cli_common_option(CLI_OPT_UNTIL_RSE, "0.5%", &o, &taken, &err), KILN_OK);
    assert_true(o.adaptive);
    assert_true(o.target_rse > 0.0049 && o.target_rse < 0.0051);
    assert_int_equal(cli_common_option(CLI_OPT_EXECUTOR, "slurm", &o, NULL, &err), KILN_OK);
    assert_int_equal(o.executor, CLI_EXEC_SLURM);
    assert_int_equal(cli_common_option(CLI_OPT_JSON, NULL, &o, &taken, &err), KILN_OK);
    assert_false(taken);
    assert_string_equal(err.msg, "");
}

static void common_option_bad_values_are_usage_errors(void **state)
{
    (void)state;
    static const struct {
        int opt;
        const char *arg, *msg;
    } cases[] = {
        {CLI_OPT_SEED, "-1", "--seed needs a number 0..2^52, got '-1'"},
        {CLI_OPT_TIMEOUT, "0", "--timeout needs 1..86400 seconds, got '0'"},
        {CLI_OPT_UNTIL_RSE, "60%",
         "--until-rse needs a relative standard error in (0, 50%] such as 0.5% or 0.005, or off, "
         "got '60%'"},
        {CLI_OPT_TIME_BUDGET, "x", "--time-budget needs seconds in (0, 3600], got 'x'"},
        {CLI_OPT_EXECUTOR, "k8s", "unknown executor 'k8s' (local or slurm)"},
        {CLI_OPT_SLURM_ARRAY_LIMIT, "0",
         "--slurm-array-limit needs 1..10000 tasks at once, got '0'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct kiln_err err = KILN_ERR_INIT;
        struct cli_common o = {0};
        bool taken = false;
        assert_int_equal(cli_common_option(cases[i].opt, cases[i].arg, &o, &taken, &err),
                         KILN_E_USAGE);
        assert_true(taken);
        assert_string_equal(err.msg, cases[i].msg);
    }
}

static void common_check_names_the_disagreement(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    struct cli_common o = {0};
    assert_int_equal(cli_common_check(&o, &err), KILN_OK);
    o.executor = CLI_EXEC_SLURM;
    assert_int_equal(cli_common_check(&o, &err), KILN_E_USAGE);
    assert_string_equal(err.msg, "--executor slurm needs --spool DIR (a directory the compute "
                                 "nodes share with this host)");
    kiln_err_clear(&err);
    o = (struct cli_common){.budget_ms = 1000};
    assert_int_equal(cli_common_check(&o, &err), KILN_E_USAGE);
    assert_string_equal(err.msg,
                        "--time-budget bounds adaptive timing: give --until-rse R with it");
}

/* --warmups 0 means none (EVAL_NO_WARMUPS: 0 in a session is "the
 * default"); --iterations starts at 1; both stop at 100000. */
static void run_count_ranges_and_no_warmups(void **state)
{
    (void)state;
    int w = 7, it = 7;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(cli_run_count('W', "0", &w, &it, &e), KILN_OK);
    assert_int_equal(w, EVAL_NO_WARMUPS);
    assert_int_equal(cli_run_count('W', "100000", &w, &it, &e), KILN_OK);
    assert_int_equal(w, 100000);
    assert_int_equal(cli_run_count('i', "3", &w, &it, &e), KILN_OK);
    assert_int_equal(it, 3);
    assert_int_equal(cli_run_count('i', "0", &w, &it, &e), KILN_E_USAGE);
    assert_string_equal(e.msg, "--iterations needs a number, got '0'");
    kiln_err_clear(&e);
    assert_int_equal(cli_run_count('W', "100001", &w, &it, &e), KILN_E_USAGE);
    assert_string_equal(e.msg, "--warmups needs a number, got '100001'");
    assert_int_equal(w, 100000);
    assert_int_equal(it, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(output_option_says_whether_it_took_the_option),
        cmocka_unit_test(output_option_refuses_a_second_format),
        cmocka_unit_test(common_option_stores_what_it_takes),
        cmocka_unit_test(common_option_bad_values_are_usage_errors),
        cmocka_unit_test(common_check_names_the_disagreement),
        cmocka_unit_test(run_count_ranges_and_no_warmups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
