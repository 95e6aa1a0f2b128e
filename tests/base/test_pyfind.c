/* test_pyfind.c - pyfind_numpy() probes python once per interpreter
 * identity: a second call with the same interpreter runs nothing; a
 * changed interpreter (rewritten, touched) or another KILN_PYTHON is
 * probed again; across processes through the record in
 * $XDG_RUNTIME_DIR/kiln. The "python" here is a shell script counting its
 * runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsutil.h"
#include "pyfind.h"

static char dir[256];

/* A "python" printing what the probe reads: sys.executable `exe`, then
 * the prefixes and versions. */
static void write_python_exe(const char *path, const char *exe, const char *prefix,
                             const char *count)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho run >> %s\nprintf '%%s\\n' %s %s /base 3.11.2 1.24.2\n", count, exe,
            prefix);
    fclose(f);
    assert_int_equal(chmod(path, 0755), 0);
}

static void write_python(const char *path, const char *prefix, const char *count)
{
    write_python_exe(path, "/x/bin/python3", prefix, count);
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
    setenv("XDG_RUNTIME_DIR", dir, 1); /* the cross-process record stays in here */
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
    unsetenv("XDG_RUNTIME_DIR");
    kiln_err_clear(&err);
    assert_int_equal(fs_remove_tree(dir, &err), KILN_OK);
}

/* pyfind_numpy() in a fresh process (forked before this process probed
 * this interpreter, so without its in-process memo): 0 when it found
 * `prefix`. */
static int probe_in_child(const char *prefix)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct kiln_err err;
        struct pyfind f;
        kiln_err_clear(&err);
        _exit(pyfind_numpy(&f, &err) != KILN_OK ? 1 : strcmp(f.prefix, prefix) ? 2 : 0);
    }
    int st = -1;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_disk_memo(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    char d[256], run[512], kdir[600], py[512], count[512];
    assert_int_equal(fs_make_tempdir("pyfind-disk", d, sizeof(d), &err), KILN_OK);
    snprintf(run, sizeof(run), "%s/run", d);
    snprintf(kdir, sizeof(kdir), "%s/kiln", run);
    snprintf(py, sizeof(py), "%s/python3", d);
    snprintf(count, sizeof(count), "%s/count", d);
    assert_int_equal(mkdir(run, 0700), 0);
    setenv("XDG_RUNTIME_DIR", run, 1);
    write_python_exe(py, py, "/prefix-d", count);
    setenv("KILN_PYTHON", py, 1);
    /* The first process probes and leaves the record; the next one reads it. */
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(runs(count), 1);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(runs(count), 1);
    /* Another environment (a wrapper may read it): probed. */
    setenv("KILN_TEST_PYFIND", "1", 1);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(runs(count), 2);
    /* A directory others can write: its record is not used, nor written. */
    assert_int_equal(chmod(kdir, 0777), 0);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(runs(count), 4);
    assert_int_equal(chmod(kdir, 0700), 0);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(runs(count), 4);
    /* The interpreter touched: probed again. */
    struct timeval tv[2] = {{1000000000, 0}, {1000000000, 0}};
    assert_int_equal(utimes(py, tv), 0);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(probe_in_child("/prefix-d"), 0);
    assert_int_equal(runs(count), 5);
    unsetenv("KILN_TEST_PYFIND");
    unsetenv("KILN_PYTHON");
    unsetenv("XDG_RUNTIME_DIR");
    assert_int_equal(fs_remove_tree(d, &err), KILN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_memo),
                                       cmocka_unit_test(test_disk_memo)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
