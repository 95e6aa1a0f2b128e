/* fs_self_path: the running program's path and directory, the one reader
 * of /proc/self/exe (kiln finds its harnesses, kiln-full and docs.db by it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

static void path_and_directory(void **state)
{
    (void)state;
    char path[4096], dir[4096];
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(fs_self_path(false, path, sizeof(path), &e), KILN_OK);
    assert_int_equal(fs_self_path(true, dir, sizeof(dir), &e), KILN_OK);
    assert_true(path[0] == '/');
    assert_non_null(strstr(path, "test_self_path"));
    assert_int_equal(access(path, X_OK), 0);
    size_t n = strlen(dir);
    assert_memory_equal(path, dir, n);
    assert_true(path[n] == '/' && strchr(path + n + 1, '/') == NULL);
}

static void too_small_a_buffer_is_an_error(void **state)
{
    (void)state;
    char small[4];
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(fs_self_path(false, small, sizeof(small), &e), KILN_E_LIMIT);
    assert_non_null(strstr(e.msg, "longer than"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(path_and_directory),
        cmocka_unit_test(too_small_a_buffer_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
