/* What the service may remember of a community workload check
 * (checkcache.c): a script that runs out of time is a problem of the
 * workload but load_dependent (a loaded host can cause it, so the worker
 * does not remember it), and so is one killed by a SIGKILL kiln did not
 * send; a script that fails is not. Runs the real check
 * (inputs.py in the script sandbox) on a copy of the test workload with
 * inputs.py replaced; skips (77) where the sandbox cannot run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fsutil.h"
#include "wlcheck.h"
#include "workload.h"

static char dir[4096];

/* The test workload in dir/wl with this inputs.py; the check's result. */
static void check_with(const char *inputs_py, struct wlcheck_result *res)
{
    static const char *const files[] = {"workload.json", "reference.py", "kernel.c", "kernel.cu"};
    const char *src = getenv("KILN_SOURCE_DIR");
    char wl[4200], p[4400], cache[4200];
    struct kiln_err e;
    kiln_err_clear(&e);
    snprintf(wl, sizeof(wl), "%s/wl", dir);
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    if (fs_remove_tree(wl, &e) != KILN_OK || fs_mkdirs(wl, &e) != KILN_OK)
        fail_msg("%s", e.msg);
    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        char *data = NULL;
        size_t len = 0;
        snprintf(p, sizeof(p), "%s/tests/service_api/workloads/saxpy/%s", src ? src : ".",
                 files[i]);
        if (fs_read_file(p, 1 << 20, &data, &len, &e) != KILN_OK)
            fail_msg("%s", e.msg);
        snprintf(p, sizeof(p), "%s/%s", wl, files[i]);
        enum kiln_rc rc = fs_write_atomic(p, data, len, &e);
        free(data);
        if (rc != KILN_OK)
            fail_msg("%s", e.msg);
    }
    snprintf(p, sizeof(p), "%s/inputs.py", wl);
    if (fs_write_atomic(p, inputs_py, strlen(inputs_py), &e) != KILN_OK)
        fail_msg("%s", e.msg);
    struct workload *w = NULL;
    if (workload_load(wl, &w, &e) != KILN_OK)
        fail_msg("%s", e.msg);
    struct wlcheck_opts o = {
        .backends = KILN_BACKEND_CPU, .cache_dir = cache, .seed = 7, .script_timeout_ms = 2000};
    wlcheck_run(w, &o, res);
    workload_free(w);
}

/* Checks the workload with this inputs.py: the check must fail as the
 * workload's problem (never the host's), naming `says` when not NULL, and
 * be load_dependent or not as told. */
static void expect_problem(const char *inputs_py, bool load_dependent, const char *says)
{
    struct wlcheck_result *res = malloc(sizeof(*res));
    assert_non_null(res);
    check_with(inputs_py, res);
    assert_int_equal(res->environment, KILN_OK);
    assert_true(res->nproblems > 0);
    if (says)
        assert_non_null(strstr(res->problems, says));
    assert_int_equal(res->load_dependent, load_dependent);
    free(res);
}

static void test_timeout_is_load_dependent(void **state)
{
    (void)state;
    expect_problem("import time\ntime.sleep(60)\n", true, NULL);
}

/* A SIGKILL kiln did not send looks the same whoever sent it: here the
 * script itself, standing in for the host's OOM killer or an operator. */
static void test_sigkill_is_load_dependent(void **state)
{
    (void)state;
    expect_problem("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", true, NULL);
}

static void test_failure_is_not(void **state)
{
    (void)state;
    expect_problem("raise SystemExit('inputs.py is broken on purpose')\n", false,
                   "broken on purpose");
}

int main(void)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_make_tempdir("check-timeout", dir, sizeof(dir), &e) != KILN_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    chmod(dir, 0755); /* the sandbox reads the workload as another uid */
    /* The sandbox must run scripts here, or there is nothing to judge. */
    struct wlcheck_result *probe = malloc(sizeof(*probe));
    if (!probe)
        return 1;
    check_with("raise SystemExit(1)\n", probe);
    if (probe->environment != KILN_OK) {
        printf("SKIP: the script sandbox cannot run here: %s\n", probe->problems);
        free(probe);
        if (fs_remove_tree(dir, &e) != KILN_OK)
            fprintf(stderr, "%s\n", e.msg);
        return 77;
    }
    free(probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeout_is_load_dependent),
        cmocka_unit_test(test_sigkill_is_load_dependent),
        cmocka_unit_test(test_failure_is_not),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (fs_remove_tree(dir, &e) != KILN_OK)
        fprintf(stderr, "%s\n", e.msg);
    return failed;
}
