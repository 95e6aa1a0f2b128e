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

static void init_is_empty(void **state)
{
    (void)state;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(e.rc, KILN_OK);
    assert_string_equal(e.msg, "");
    kiln_fail(&e, KILN_E_PARSE, "first");
    kiln_fail(&e, KILN_E_IO, "second");
    assert_int_equal(e.rc, KILN_E_PARSE);
    assert_string_equal(e.msg, "first");
}

/* What an uninitialised local may hold: no known code, no terminator. */
static void fill_garbage(struct kiln_err *e)
{
    memset(e, 0xfe, sizeof(*e));
}

static void garbage_does_not_swallow_the_failure(void **state)
{
    (void)state;
    struct kiln_err e;
    fill_garbage(&e);
    assert_int_equal(kiln_fail(&e, KILN_E_IO, "disk %s", "full"), KILN_E_IO);
    assert_int_equal(e.rc, KILN_E_IO);
    assert_string_equal(e.msg, "disk full");
    fill_garbage(&e);
    errno = ENOENT;
    kiln_fail_errno(&e, KILN_E_NOTFOUND, "opening");
    assert_int_equal(e.rc, KILN_E_NOTFOUND);
    assert_string_equal(e.msg, "opening: No such file or directory");
    /* A known code, a message with no end: not an earlier failure either. */
    fill_garbage(&e);
    e.rc = KILN_E_PARSE;
    kiln_fail(&e, KILN_E_LIMIT, "too big");
    assert_int_equal(e.rc, KILN_E_LIMIT);
    assert_string_equal(e.msg, "too big");
}

static void prefix_never_reads_an_unterminated_message(void **state)
{
    (void)state;
    struct kiln_err e;
    fill_garbage(&e);
    e.rc = KILN_E_IO;
    kiln_err_prefix(&e, "loading %s", "w.json");
    assert_non_null(memchr(e.msg, '\0', sizeof(e.msg)));
    assert_string_equal(e.msg, "loading w.json: ");
}

static void last_code_is_the_last(void **state)
{
    (void)state;
    assert_string_not_equal(kiln_strerror(KILN_RC_LAST), "unknown error code");
    assert_string_equal(kiln_strerror((enum kiln_rc)(KILN_RC_LAST + 1)), "unknown error code");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_failure_wins),
        cmocka_unit_test(errno_is_appended),
        cmocka_unit_test(prefix_adds_context),
        cmocka_unit_test(init_is_empty),
        cmocka_unit_test(garbage_does_not_swallow_the_failure),
        cmocka_unit_test(prefix_never_reads_an_unterminated_message),
        cmocka_unit_test(last_code_is_the_last),
        cmocka_unit_test(every_code_has_a_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
