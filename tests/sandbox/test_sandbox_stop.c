/* test_sandbox_stop.c - the user's stop (base/interrupt.h) ends a sandboxed
 * program at once and keeps new ones from starting (issue 35 item 7: one
 * Ctrl-C waited 31.7 s for the step in progress). The stop is raised from
 * a SIGALRM handler, as kiln's SIGINT handler raises it. No timing is
 * asserted: the program sleeps 60 s and would exit 0 if the stop were not
 * seen. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <cmocka.h>

#include "interrupt.h"
#include "sandbox.h"

static const char *src_dir(void)
{
    const char *s = getenv("KILN_SOURCE_DIR");
    return s && *s ? s : sandbox_data_dir();
}

static void on_alarm(int sig)
{
    (void)sig;
    interrupt_raise();
}

static enum kiln_rc run(char **argv, struct kiln_err *err)
{
    struct sandbox_spec spec = {.policy = "script",
                                .image = "minimal",
                                .argv = argv,
                                .stdin_fd = -1,
                                .tar_fd = -1,
                                .data_dir = src_dir()};
    struct sandbox_result res;
    kiln_err_clear(err);
    enum kiln_rc rc = sandbox_run(&spec, &res, err);
    sandbox_result_free(&res);
    return rc;
}

static void stop_ends_the_program_and_what_would_follow(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    /* Without the pipe nothing is ever raised: a run is a run. */
    char *quick[] = {"/bin/true", NULL};
    enum kiln_rc rc = run(quick, &err);
    if (rc == KILN_E_UNSUPPORTED) {
        printf("skipped: no sandbox on this host: %s\n", err.msg);
        skip();
    }
    assert_int_equal(rc, KILN_OK);
    assert_int_equal(interrupt_init(&err), KILN_OK);
    assert_false(interrupt_raised());
    struct sigaction sa = {.sa_handler = on_alarm};
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
    /* The stop comes while the program sleeps (or, on a very loaded host,
     * while its sandbox is set up: then it never starts). */
    struct itimerval at = {.it_value = {.tv_sec = 1}};
    assert_int_equal(setitimer(ITIMER_REAL, &at, NULL), 0);
    char *sleeper[] = {"/bin/sleep", "60", NULL};
    rc = run(sleeper, &err);
    assert_int_equal(rc, KILN_E_CANCELLED);
    assert_non_null(strstr(err.msg, "on the user's request"));
    assert_true(interrupt_raised());
    /* Once raised, nothing new starts. */
    rc = run(quick, &err);
    assert_int_equal(rc, KILN_E_CANCELLED);
    assert_non_null(strstr(err.msg, "not started: stopping on the user's request"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stop_ends_the_program_and_what_would_follow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
