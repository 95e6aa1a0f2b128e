/* test_profile_data.c - the profile policy and image, finding ncu on fake
 * installs made here, the profiler's unavailability on the cpu backend,
 * and the profile block in the LLM prompt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsutil.h"
#include "image.h"
#include "policy.h"
#include "profile.h"
#include "proposer.h"
#include "sandbox.h"
#include "workload.h"

static char tmp[256];

static const char *src_dir(void)
{
    const char *s = getenv("KILN_SOURCE_DIR");
    return s && *s ? s : sandbox_data_dir();
}

/* A fake Nsight Compute install: DIR/ncu (executable) and DIR/target/. */
static void fake_install(const char *dir)
{
    char p[1024];
    struct kiln_err err;
    kiln_err_clear(&err);
    snprintf(p, sizeof(p), "%s/target/linux-desktop-glibc_2_11_3-x64", dir);
    assert_int_equal(fs_mkdirs(p, &err), KILN_OK);
    snprintf(p, sizeof(p), "%s/ncu", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    assert_int_equal(chmod(p, 0755), 0);
}

static int setup(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_make_tempdir("proftest", tmp, sizeof(tmp), &err), KILN_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    (void)(fs_remove_tree(tmp, &err) == KILN_OK);
    unsetenv("KILN_NCU");
    return 0;
}

static void test_policy(void **state)
{
    (void)state;
    struct sandbox_policy p;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(policy_load(src_dir(), "profile", &p, &err), KILN_OK);
    assert_int_equal(policy_compile(&p, &err), KILN_OK);
    assert_true(p.allow_gpu);
    assert_true(p.dev_shm);
    assert_true(p.limits.pids >= 256);
    policy_free(&p);
    /* Only the profile policy gets /dev/shm. */
    assert_int_equal(policy_load(src_dir(), "gpu-run", &p, &err), KILN_OK);
    assert_false(p.dev_shm);
    policy_free(&p);
}

static void test_find_ncu(void **state)
{
    (void)state;
    char root[4096], want[4096], dir[1024];
    /* KILN_NCU naming the program in an install directory. */
    snprintf(dir, sizeof(dir), "%s/opt/ncu-a", tmp);
    fake_install(dir);
    snprintf(want, sizeof(want), "%s/ncu", dir);
    setenv("KILN_NCU", want, 1);
    assert_int_equal(sandbox_find_ncu(root, sizeof(root)), 1);
    assert_non_null(realpath(dir, want));
    assert_string_equal(root, want);
    /* The CUDA toolkit's bin/ncu wrapper: the newest nsight-compute-*
     * beside bin/ (version order, not byte order). */
    struct kiln_err err;
    kiln_err_clear(&err);
    snprintf(dir, sizeof(dir), "%s/cuda/bin", tmp);
    assert_int_equal(fs_mkdirs(dir, &err), KILN_OK);
    snprintf(dir, sizeof(dir), "%s/cuda/bin/ncu", tmp);
    FILE *f = fopen(dir, "w");
    assert_non_null(f);
    fclose(f);
    chmod(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/cuda/nsight-compute-2025.9.0", tmp);
    fake_install(dir);
    snprintf(dir, sizeof(dir), "%s/cuda/nsight-compute-2025.10.1", tmp);
    fake_install(dir);
    snprintf(dir, sizeof(dir), "%s/cuda/nsight-compute-2026.1.0", tmp); /* not an install */
    assert_int_equal(fs_mkdirs(dir, &err), KILN_OK);
    snprintf(want, sizeof(want), "%s/cuda/bin/ncu", tmp);
    setenv("KILN_NCU", want, 1);
    assert_int_equal(sandbox_find_ncu(root, sizeof(root)), 1);
    assert_non_null(strstr(root, "/cuda/nsight-compute-2025.10.1"));
    /* An explicit KILN_NCU that is not ncu is not second-guessed. */
    snprintf(want, sizeof(want), "%s/nowhere/ncu", tmp);
    setenv("KILN_NCU", want, 1);
    assert_int_equal(sandbox_find_ncu(root, sizeof(root)), 0);
    char desc[1024];
    assert_false(profile_describe_host(desc, sizeof(desc)));
    assert_non_null(strstr(desc, "not found"));
    snprintf(want, sizeof(want), "%s/cuda/bin/ncu", tmp);
    setenv("KILN_NCU", want, 1);
    assert_true(profile_describe_host(desc, sizeof(desc)));
    assert_true(!strncmp(desc, "ncu 2025.10.1 at ", 17));
    assert_non_null(strstr(desc, "; counters: "));
}

static void test_image(void **state)
{
    (void)state;
    char dir[1024], real[4096];
    snprintf(dir, sizeof(dir), "%s/ncu-img", tmp);
    fake_install(dir);
    setenv("KILN_NCU", dir, 1);
    assert_non_null(realpath(dir, real));
    struct sandbox_image im;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(image_load(src_dir(), "profile", &im, &err), KILN_OK);
    bool found = false;
    for (size_t i = 0; i < im.n_binds; i++)
        found |= !strcmp(im.binds[i].path, real);
    assert_true(found);
    image_free(&im);
    /* Without ncu the image cannot be built, and says why. */
    snprintf(dir, sizeof(dir), "%s/absent", tmp);
    setenv("KILN_NCU", dir, 1);
    assert_int_not_equal(image_load(src_dir(), "profile", &im, &err), KILN_OK);
    assert_non_null(strstr(err.msg, "@ncu@ not found"));
}

static void test_cpu_unavailable(void **state)
{
    (void)state;
    struct profiler *p = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(profiler_open(KILN_BACKEND_CPU, 0, tmp, &p, &err), KILN_OK);
    assert_non_null(profiler_why(p));
    assert_non_null(strstr(profiler_why(p), "cpu backend"));
    struct profile_target t = {.name = "001", .cand_dir = tmp, .cubin = "/nonexistent"};
    struct profile_result *res = calloc(1, sizeof(*res));
    assert_non_null(res);
    assert_int_equal(profiler_run(p, &t, res, &err), KILN_OK);
    assert_int_equal(res->status, PROFILE_UNAVAILABLE);
    assert_string_equal(res->message, profiler_why(p));
    json_t *doc = profile_result_json(res, "001");
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "unavailable");
    json_decref(doc);
    free(res);
    profiler_close(p);
}

static void test_prompt_block(void **state)
{
    (void)state;
    char wdir[1024];
    snprintf(wdir, sizeof(wdir), "%s/workloads/saxpy", src_dir());
    struct workload *wl = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(workload_load(wdir, &wl, &err), KILN_OK);
    struct opt_state st = {.wl = wl,
                           .backend = KILN_BACKEND_CUDA,
                           .start_source = "// start\n",
                           .start_len = 9,
                           .iteration = 1,
                           .max_iterations = 3};
    char *p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_null(strstr(p, "Nsight Compute"));
    free(p);
    st.profile = "Nsight Compute on case big (2 profiled launches):\n- saxpy: 241.98 us";
    p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_non_null(strstr(p, "```\nNsight Compute on case big (2 profiled launches):\n- saxpy"));
    free(p);
    workload_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy),       cmocka_unit_test(test_find_ncu),
        cmocka_unit_test(test_image),        cmocka_unit_test(test_cpu_unavailable),
        cmocka_unit_test(test_prompt_block),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
