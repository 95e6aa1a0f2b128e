/* base/beneath.h: paths under a directory someone else may have written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "beneath.h"
#include "fsutil.h"

struct dirs {
    char run[PATH_MAX], outside[PATH_MAX];
};

static int setup(void **state)
{
    struct dirs *d = calloc(1, sizeof(*d));
    struct kiln_err e;
    kiln_err_clear(&e);
    if (!d || fs_make_tempdir("beneath-run", d->run, sizeof(d->run), &e) != KILN_OK ||
        fs_make_tempdir("beneath-out", d->outside, sizeof(d->outside), &e) != KILN_OK)
        return -1;
    *state = d;
    return 0;
}

static int teardown(void **state)
{
    struct dirs *d = *state;
    struct kiln_err e;
    kiln_err_clear(&e);
    (void)(fs_remove_tree(d->run, &e) == KILN_OK);
    (void)(fs_remove_tree(d->outside, &e) == KILN_OK);
    free(d);
    return 0;
}

static void at(char *out, const char *a, const char *b)
{
    snprintf(out, PATH_MAX, "%s/%s", a, b);
}

static void write_read_round_trip(void **state)
{
    struct dirs *d = *state;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(beneath_write_atomic(d->run, "candidates/001/verdict.json", "{}", 2, &e),
                     KILN_OK);
    char *text;
    size_t len;
    assert_int_equal(beneath_read_file(d->run, "candidates/001/verdict.json", 100, &text, &len, &e),
                     KILN_OK);
    assert_int_equal(len, 2);
    assert_string_equal(text, "{}");
    free(text);
    assert_int_equal(beneath_read_file(d->run, "candidates/001/verdict.json", 1, &text, &len, &e),
                     KILN_E_LIMIT);
    kiln_err_clear(&e);
    assert_int_equal(beneath_read_file(d->run, "absent.json", 100, &text, &len, &e),
                     KILN_E_NOTFOUND);
}

/* The audit's case: candidates/NNN a symlink to a directory outside. */
static void symlinked_directory_is_refused(void **state)
{
    struct dirs *d = *state;
    char p[PATH_MAX], victim[PATH_MAX];
    at(p, d->run, "candidates");
    assert_int_equal(mkdir(p, 0755), 0);
    at(p, d->run, "candidates/007");
    assert_int_equal(symlink(d->outside, p), 0);
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(beneath_write_atomic(d->run, "candidates/007/verdict.json", "x", 1, &e),
                     KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "symbolic link"));
    at(victim, d->outside, "verdict.json");
    assert_int_not_equal(access(victim, F_OK), 0); /* nothing written outside */
    /* Reading through it is refused too. */
    assert_int_equal(fs_write_atomic(victim, "secret", 6, &e), KILN_OK);
    char *text = NULL;
    size_t len;
    kiln_err_clear(&e);
    assert_int_equal(beneath_read_file(d->run, "candidates/007/verdict.json", 100, &text, &len, &e),
                     KILN_E_REJECTED);
    assert_null(text);
    kiln_err_clear(&e);
    assert_int_equal(beneath_check_dir(d->run, "candidates/007", &e), KILN_E_REJECTED);
}

/* A symlinked file is replaced by a write, never written through, and a
 * read of it is refused. */
static void symlinked_file_is_not_followed(void **state)
{
    struct dirs *d = *state;
    char p[PATH_MAX], victim[PATH_MAX];
    at(victim, d->outside, "bashrc");
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(fs_write_atomic(victim, "original", 8, &e), KILN_OK);
    at(p, d->run, "history.json");
    assert_int_equal(symlink(victim, p), 0);
    char *text = NULL;
    size_t len;
    assert_int_equal(beneath_read_file(d->run, "history.json", 100, &text, &len, &e),
                     KILN_E_REJECTED);
    kiln_err_clear(&e);
    assert_int_equal(beneath_write_atomic(d->run, "history.json", "[]", 2, &e), KILN_OK);
    assert_int_equal(fs_read_file(victim, 100, &text, &len, &e), KILN_OK);
    assert_string_equal(text, "original");
    free(text);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

static void escaping_paths_are_refused(void **state)
{
    struct dirs *d = *state;
    const char *bad[] = {"../x", "a/../../x", "/etc/passwd", "", "a//b", "./a", "a/", "a/."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct kiln_err e;
        kiln_err_clear(&e);
        assert_int_equal(beneath_write_atomic(d->run, bad[i], "x", 1, &e), KILN_E_REJECTED);
    }
}

static void tree_check_finds_a_deep_link(void **state)
{
    struct dirs *d = *state;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(beneath_write_atomic(d->run, "work/inputs/abc/ok", "weak 0\n", 7, &e),
                     KILN_OK);
    assert_int_equal(beneath_check_tree(d->run, "work", &e), KILN_OK);
    char p[PATH_MAX];
    at(p, d->run, "work/inputs/abc/in");
    assert_int_equal(symlink(d->outside, p), 0);
    assert_int_equal(beneath_check_tree(d->run, "work", &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "work/inputs/abc/in is a symbolic link"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(write_read_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(symlinked_directory_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(symlinked_file_is_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(escaping_paths_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(tree_check_finds_a_deep_link, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
