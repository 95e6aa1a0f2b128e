/* sandbox/cgroup.h: the parent's move into a cgroup says which cgroup,
 * why and how to fix it. A plain directory stands in for the cgroup: the
 * move is a write of the pid to its cgroup.procs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "fsutil.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    assert_int_equal(fs_make_tempdir("cgtest", dir, sizeof(dir), &err), KILN_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    unlink(p);
    rmdir(dir);
    return 0;
}

static struct sandbox_cgroup fake_v2(void)
{
    struct sandbox_cgroup cg;
    memset(&cg, 0, sizeof(cg));
    cg.version = 2;
    snprintf(cg.mem_dir, sizeof(cg.mem_dir), "%s", dir);
    snprintf(cg.pids_dir, sizeof(cg.pids_dir), "%s", dir);
    return cg;
}

static void attach_writes_the_pid(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    struct sandbox_cgroup cg = fake_v2();
    struct kiln_err err = KILN_ERR_INIT;
    assert_int_equal(cgroup_attach(&cg, 4242, &err), KILN_OK);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(fs_read_file(p, 64, &text, &len, &err), KILN_OK);
    assert_string_equal(text, "4242"); /* once: v2's one directory */
    free(text);
}

static void attach_failure_names_cgroup_and_fix(void **state)
{
    (void)state;
    struct sandbox_cgroup cg = fake_v2(); /* no cgroup.procs: ENOENT */
    struct kiln_err err = KILN_ERR_INIT;
    assert_int_equal(cgroup_attach(&cg, 4242, &err), KILN_E_SANDBOX);
    char want[1024];
    snprintf(want, sizeof(want),
             "moving pid 4242 into cgroup %s: writing cgroup.procs: No such file or directory "
             "(kiln must be able to write the cgroups it creates: run it as root or in a "
             "delegated cgroup, systemd-run --user -p Delegate=yes)",
             dir);
    assert_string_equal(err.msg, want);
}

static void attach_without_cgroup_does_nothing(void **state)
{
    (void)state;
    struct sandbox_cgroup cg;
    memset(&cg, 0, sizeof(cg));
    struct kiln_err err = KILN_ERR_INIT;
    assert_int_equal(cgroup_attach(&cg, 4242, &err), KILN_OK);
    assert_false(cgroup_can_join_self(&cg));
    cg.version = 1;
    assert_true(cgroup_can_join_self(&cg));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(attach_writes_the_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(attach_failure_names_cgroup_and_fix, setup, teardown),
        cmocka_unit_test(attach_without_cgroup_does_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
