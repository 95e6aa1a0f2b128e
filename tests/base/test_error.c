#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "error.h"

static void first_failure_wins(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(kiln_fail(&e, KILN_E_PARSE, "bad %s", "thing"), KILN_E_PARSE);
    assert_int_equal(kiln_fail(&e, KILN_E_IO, "later"), KILN_E_IO);
    assert_int_equal(e.rc, KILN_E_PARSE);
    assert_string_equal(e.msg, "bad thing");
}

static void errno_is_appended(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    errno = ENOENT;
    kiln_fail_errno(&e, KILN_E_IO, "opening %s", "/x");
    assert_string_equal(e.msg, "opening /x: No such file or directory");
}

static void prefix_adds_context(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    kiln_fail(&e, KILN_E_LIMIT, "too big");
    kiln_err_prefix(&e, "loading %s", "w.json");
    assert_string_equal(e.msg, "loading w.json: too big");
}

static void every_code_has_a_name(void **state)
{
    (void)state;
    for (int rc = KILN_OK; rc <= KILN_E_CANCELLED; rc++)
        assert_string_not_equal(kiln_strerror((enum kiln_rc)rc), "unknown error code");
    assert_string_equal(kiln_strerror((enum kiln_rc)999), "unknown error code");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_failure_wins),
        cmocka_unit_test(errno_is_appended),
        cmocka_unit_test(prefix_adds_context),
        cmocka_unit_test(every_code_has_a_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
