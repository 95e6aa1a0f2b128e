/* test_profile_data.c - the profile policy and image, finding ncu on fake
 * installs made here, the profiler's unavailability on the cpu backend,
 * and the profile block in the LLM prompt. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsutil.h"
#include "harness_plan.h"
#include "hostpaths.h"
#include "hostvars.h"
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
    assert_int_equal(hostpaths_ncu(root, sizeof(root)), 1);
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
    assert_int_equal(hostpaths_ncu(root, sizeof(root)), 1);
    assert_non_null(strstr(root, "/cuda/nsight-compute-2025.10.1"));
    /* An explicit KILN_NCU that is not ncu is not second-guessed. */
    snprintf(want, sizeof(want), "%s/nowhere/ncu", tmp);
    setenv("KILN_NCU", want, 1);
    assert_int_equal(hostpaths_ncu(root, sizeof(root)), 0);
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
    /* The caller (the pipeline) finds ncu and hands its path to the image. */
    static struct hostvars hv;
    assert_int_equal(hostvars_for_image(src_dir(), "profile", &hv, &err), KILN_OK);
    assert_int_equal(image_load(src_dir(), "profile", hv.vars, &im, &err), KILN_OK);
    bool found = false;
    for (size_t i = 0; i < im.n_binds; i++)
        found |= !strcmp(im.binds[i].path, real);
    assert_true(found);
    image_free(&im);
    /* Without ncu the image cannot be built, and says why. */
    snprintf(dir, sizeof(dir), "%s/absent", tmp);
    setenv("KILN_NCU", dir, 1);
    assert_int_equal(hostvars_for_image(src_dir(), "profile", &hv, &err), KILN_OK);
    assert_int_not_equal(image_load(src_dir(), "profile", hv.vars, &im, &err), KILN_OK);
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

/* A stand-in ncu (a shell script in a fake install) run by the profiler in
 * the profile sandbox without a GPU: the whole path from the candidate's
 * plan to profile.json, and ncu's refusal. The script checks the command
 * line and what it finds in /in, then prints the canned output. */
static void write_file(const char *path, const char *text, int mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, (mode_t)mode), 0);
}

static void make_candidate(const char *cand)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    char p[1024];
    snprintf(p, sizeof(p), "%s/cases/big/s0", cand);
    assert_int_equal(fs_mkdirs(p, &err), KILN_OK);
    struct harness_plan hp;
    harness_plan_init(&hp);
    hp.backend = HB_CUDA;
    hp.nargs = 2;
    snprintf(hp.args[0].name, sizeof(hp.args[0].name), "n");
    hp.args[0].type = HS_INT64;
    snprintf(hp.args[1].name, sizeof(hp.args[1].name), "out");
    hp.args[1].is_tensor = true;
    hp.args[1].dtype = DT_FLOAT32;
    hp.args[1].role = HR_OUT;
    hp.nlaunches = 1;
    snprintf(hp.launches[0].kernel, sizeof(hp.launches[0].kernel), "saxpy");
    hp.launches[0].nargs = 2;
    hp.launches[0].args[0] = 0;
    hp.launches[0].args[1] = 1;
    const char *names[] = {"small", "big"};
    for (int c = 0; c < 2; c++) {
        struct harness_case *hc;
        assert_int_equal(harness_plan_add_case(&hp, &hc, &err), KILN_OK);
        snprintf(hc->name, sizeof(hc->name), "%s", names[c]);
        hc->timed = true;
        hc->ndim[1] = 1;
        hc->shape[1][0] = c ? 4096 : 16;
        hc->value[0].i = hc->shape[1][0];
        for (int d = 0; d < 3; d++)
            hc->dims[0].grid[d] = hc->dims[0].block[d] = 1;
        hc->nsets = 3;
        for (int s = 0; s < 3; s++)
            snprintf(hc->sets[s], sizeof(hc->sets[s]), "s%d", s);
    }
    char *text = NULL;
    assert_int_equal(harness_plan_write(&hp, &text, &err), KILN_OK);
    snprintf(p, sizeof(p), "%s/plan.json", cand);
    write_file(p, text, 0644);
    free(text);
    harness_plan_free(&hp);
    snprintf(p, sizeof(p), "%s/candidate.cubin", cand);
    write_file(p, "not really a cubin", 0644);
}

static const char fake_ncu[] =
    "#!/bin/sh\n"
    "want='--csv --print-units base --print-metric-name name --cache-control all "
    "--clock-control none --metrics '\n"
    "case \"$*\" in \"$want\"*' -k regex:^(saxpy)$ -c 2 /in/kiln-harness /in/plan.json --out "
    "/tmp') ;;\n"
    "*) echo \"unexpected command line: $*\" >&2; exit 3 ;; esac\n"
    "[ -x /in/kiln-harness ] && [ -r /in/candidate.cubin ] && [ -d /in/cases/big/s0 ] || exit 4\n"
    "grep -Eq '\"name\": ?\"big\"' /in/plan.json && ! grep -q '\"small\"' /in/plan.json || exit 5\n"
    "grep -Eq '\"timed\": ?false' /in/plan.json || exit 6\n"
    "echo shared >/dev/shm/x || exit 7\n"
    "cat \"$(dirname \"$0\")/canned.txt\"\n";

static void test_fake_ncu(void **state)
{
    (void)state;
    char root[1024], p[1200], cand[1024], hdir[1024], cwd[512];
    /* Image binds are made after the sandbox covers the host's /tmp, so the
     * stand-in install lives under the test's working directory. */
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    if (!strncmp(cwd, "/tmp/", 5) || !strcmp(cwd, "/tmp")) {
        print_message("skipped: the build directory is under /tmp, which the sandbox covers\n");
        skip();
    }
    snprintf(root, sizeof(root), "%s/fake-ncu-XXXXXX", cwd);
    assert_non_null(mkdtemp(root));
    assert_int_equal(chmod(root, 0755), 0);
    fake_install(root);
    snprintf(p, sizeof(p), "%s/ncu", root);
    write_file(p, fake_ncu, 0755);
    setenv("KILN_NCU", root, 1);
    snprintf(hdir, sizeof(hdir), "%s/harness", tmp);
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_mkdirs(hdir, &err), KILN_OK);
    snprintf(p, sizeof(p), "%s/kiln-harness-cuda", hdir);
    write_file(p, "#!/bin/sh\nexit 0\n", 0755);
    setenv("KILN_HARNESS_DIR", hdir, 1);
    snprintf(cand, sizeof(cand), "%s/cand", tmp);
    make_candidate(cand);
    snprintf(p, sizeof(p), "%s/canned.txt", root);
    write_file(p,
               "==PROF== Connected to process 2 (/in/kiln-harness)\n"
               "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
               "\"0\",\"saxpy\",\"gpu__time_duration.sum\",\"nsecond\",\"2,000\"\n"
               "\"0\",\"saxpy\",\"launch__registers_per_thread\",\"register/thread\",\"16\"\n"
               "\"1\",\"saxpy\",\"gpu__time_duration.sum\",\"nsecond\",\"4,000\"\n",
               0644);
    struct profiler *pr = NULL;
    assert_int_equal(profiler_open(KILN_BACKEND_CUDA, -1, tmp, &pr, &err), KILN_OK);
    assert_null(profiler_why(pr));
    struct profile_target t = {.name = "003", .cand_dir = cand, .cubin = ""};
    char cubin[1200];
    snprintf(cubin, sizeof(cubin), "%s/candidate.cubin", cand);
    t.cubin = cubin;
    struct profile_result *res = calloc(1, sizeof(*res));
    assert_non_null(res);
    assert_int_equal(profiler_run(pr, &t, res, &err), KILN_OK);
    if (res->status != PROFILE_OK)
        fail_msg("status %d: %s", res->status, res->message);
    assert_string_equal(res->case_name, "big");
    assert_int_equal(res->launches, 2);
    assert_float_equal(res->report.kernels[0].value[NCU_DURATION], 3000, 1e-9);
    assert_non_null(strstr(res->summary, "- saxpy: 3.00 us; 16 registers/thread"));
    json_t *doc = profile_result_json(res, "003");
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(doc, "case")), "big");
    json_decref(doc);

    /* ncu's refusal of the counters: unavailable from then on. */
    snprintf(p, sizeof(p), "%s/canned.txt", root);
    write_file(p,
               "==PROF== Connected to process 2 (/in/kiln-harness)\n"
               "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
               "NVIDIA GPU Performance Counters on the target device 0.\n",
               0644);
    assert_int_equal(profiler_run(pr, &t, res, &err), KILN_OK);
    assert_int_equal(res->status, PROFILE_UNAVAILABLE);
    assert_non_null(strstr(res->message, "ERR_NVGPUCTRPERM"));
    assert_non_null(profiler_why(pr));
    profiler_close(pr);

    /* Garbage twice in a row: failed, then given up. */
    write_file(p, "\"ID\",\"Kernel Name\"\n", 0644);
    assert_int_equal(profiler_open(KILN_BACKEND_CUDA, -1, tmp, &pr, &err), KILN_OK);
    assert_int_equal(profiler_run(pr, &t, res, &err), KILN_OK);
    assert_int_equal(res->status, PROFILE_FAILED);
    assert_non_null(strstr(res->message, "ncu's output was rejected"));
    assert_int_equal(profiler_run(pr, &t, res, &err), KILN_OK);
    assert_int_equal(res->status, PROFILE_UNAVAILABLE);
    assert_non_null(strstr(res->message, "failed 2 times in a row"));
    profiler_close(pr);
    free(res);
    unsetenv("KILN_HARNESS_DIR");
    assert_int_equal(fs_remove_tree(root, &err), KILN_OK);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as kiln's main does */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy),       cmocka_unit_test(test_find_ncu),
        cmocka_unit_test(test_image),        cmocka_unit_test(test_cpu_unavailable),
        cmocka_unit_test(test_prompt_block), cmocka_unit_test(test_fake_ncu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
