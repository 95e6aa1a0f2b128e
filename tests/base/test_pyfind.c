/* test_pyfind.c - pyfind_numpy() probes python once per interpreter
 * identity: a second call with the same interpreter runs nothing; a
 * changed interpreter (rewritten, touched) or another KILN_PYTHON is
 * probed again. The "python" here is a shell script counting its runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsutil.h"
#include "pyfind.h"

static char dir[256];

static void write_python(const char *path, const char *prefix, const char *count)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\necho run >> %s\nprintf '%%s\\n' /x/bin/python3 %s /base 3.11.2 "
            "1.24.2\n",
            count, prefix);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static int runs(const char *count)
{
    FILE *f = fopen(count, "r");
    if (!f)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void test_memo(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_make_tempdir("pyfind", dir, sizeof(dir), &err), KILN_OK);
    char py[512], py2[512], count[512];
    snprintf(py, sizeof(py), "%s/python3", dir);
    snprintf(py2, sizeof(py2), "%s/other-python3", dir);
    snprintf(count, sizeof(count), "%s/count", dir);
    write_python(py, "/prefix-a", count);
    setenv("KILN_PYTHON", py, 1);
    struct pyfind a;
    assert_int_equal(pyfind_numpy(&a, &err), KILN_OK);
    assert_string_equal(a.prefix, "/prefix-a");
    assert_string_equal(a.numpy_version, "1.24.2");
    assert_int_equal(runs(count), 1);
    /* Same interpreter: remembered, nothing runs. */
    assert_int_equal(pyfind_numpy(&a, &err), KILN_OK);
    assert_int_equal(pyfind_numpy(&a, &err), KILN_OK);
    assert_string_equal(a.prefix, "/prefix-a");
    assert_int_equal(runs(count), 1);
    /* The interpreter replaced (another inode, size, times): probed again. */
    assert_int_equal(unlink(py), 0);
    write_python(py, "/prefix-bb", count);
    assert_int_equal(pyfind_numpy(&a, &err), KILN_OK);
    assert_string_equal(a.prefix, "/prefix-bb");
    assert_int_equal(runs(count), 2);
    /* Only its times changed (same size, same inode): probed again. */
    struct timeval tv[2] = {{1000000000, 0}, {1000000000, 0}};
    assert_int_equal(utimes(py, tv), 0);
    assert_int_equal(pyfind_numpy(&a, &err), KILN_OK);
    assert_int_equal(runs(count), 3);
    /* Another KILN_PYTHON: its own answer. */
    write_python(py2, "/prefix-c", count);
    setenv("KILN_PYTHON", py2, 1);
    assert_int_equal(pyfind_numpy(&a, &err), KILN_OK);
    assert_string_equal(a.prefix, "/prefix-c");
    assert_int_equal(runs(count), 4);
    /* A failure is not remembered, and names the interpreter. */
    snprintf(py2, sizeof(py2), "%s/absent-python3", dir);
    setenv("KILN_PYTHON", py2, 1);
    assert_int_equal(pyfind_numpy(&a, &err), KILN_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "absent-python3"));
    unsetenv("KILN_PYTHON");
    kiln_err_clear(&err);
    assert_int_equal(fs_remove_tree(dir, &err), KILN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_memo)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
