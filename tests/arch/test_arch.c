/* Every GPU architecture from Turing on (issue #30): architecture names and
 * the toolkit's list, the launch limits of a T4, an A100 and an H200 (as
 * CUDA's table gives them) accepting and refusing the right plans, the
 * probe's strict parser, require directives reading DEVICE_*, and how a
 * session picks its target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../evaluator_parsers/fixtures.h"
#include "candidate.h"
#include "gpuarch.h"
#include "gpupeak.h"
#include "plan.h"
#include "session.h"

static void names_and_the_toolkit_list(void **state)
{
    (void)state;
    struct kiln_err e;
    int cc = 0;
    kiln_err_clear(&e);
    assert_int_equal(gpuarch_parse("sm_86", &cc, &e), KILN_OK);
    assert_int_equal(cc, 86);
    assert_int_equal(gpuarch_parse("sm_121", &cc, &e), KILN_OK);
    assert_int_equal(cc, 121);
    const char *bad[] = {"sm_70", "sm_9", "sm_90a", "compute_90", "9.0", "", "sm_", "sm_1000"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        kiln_err_clear(&e);
        assert_int_equal(gpuarch_parse(bad[i], &cc, &e), KILN_E_USAGE);
        assert_non_null(strstr(e.msg, "from 7.5 on"));
    }
    /* The list this toolkit supports holds every GPU MODE runner's. */
    const int runners[] = {75, 80, 86, 89, 90, 100, 120};
    for (size_t i = 0; i < sizeof(runners) / sizeof(*runners); i++)
        assert_true(gpuarch_is_supported(runners[i]));
    assert_false(gpuarch_is_supported(95));
    kiln_err_clear(&e);
    assert_int_equal(gpuarch_check("sm_95", "--arch", &cc, &e), KILN_E_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "sm_75 sm_80"));
    /* SASS runs on its own major version at the same or a higher minor. */
    assert_true(gpuarch_runs_on(80, 86));
    assert_false(gpuarch_runs_on(86, 80));
    assert_false(gpuarch_runs_on(80, 90));
    assert_true(gpuarch_runs_on(120, 121));
}

static void the_table_of_a_t4_an_a100_and_an_h200(void **state)
{
    (void)state;
    struct device_limits t4, a100, h200;
    const struct device_limits h200_macro = DEVICE_LIMITS_H200;
    assert_true(devlimits_for_arch(75, &t4));
    assert_true(devlimits_for_arch(80, &a100));
    assert_true(devlimits_for_arch(90, &h200));
    assert_int_equal(t4.max_smem_optin, 64 * 1024);
    assert_int_equal(a100.max_smem_optin, 163 * 1024);
    assert_int_equal(h200.max_smem_optin, 227 * 1024);
    assert_int_equal(t4.max_threads_per_sm, 1024);
    assert_int_equal(a100.max_threads_per_sm, 2048);
    assert_int_equal(h200.cc, h200_macro.cc);
    assert_int_equal(h200.max_smem_optin, h200_macro.max_smem_optin);
    assert_int_equal(h200.max_smem_per_sm, h200_macro.max_smem_per_sm);
    assert_int_equal(h200.max_threads_per_sm, h200_macro.max_threads_per_sm);
    assert_int_equal(h200.max_regs_per_block, h200_macro.max_regs_per_block);
    assert_int_equal(h200.max_grid[1], h200_macro.max_grid[1]);
    assert_false(h200.queried);
    /* An architecture with no row: the smallest row's limits, said. */
    struct device_limits x;
    assert_false(devlimits_for_arch(130, &x));
    assert_int_equal(x.max_smem_optin, t4.max_smem_optin);
    assert_int_equal(x.cc, 130);
}

/* saxpy with BLOCK threads and SMEM bytes of dynamic shared memory. */
static enum kiln_rc resolve_on(const struct device_limits *lim, int block, long smem,
                               struct kiln_err *e)
{
    char src[512];
    snprintf(src, sizeof(src),
             "// kiln: launch saxpy grid(cdiv(n, %d)) block(%d) smem(%ld) args(n, a, x, y, out)\n",
             block, block, smem);
    struct workload *wl = NULL;
    struct candidate *c = NULL;
    kiln_err_clear(e);
    assert_int_equal(workload_parse_json(saxpy_json, strlen(saxpy_json), NULL, &wl, e), KILN_OK);
    assert_int_equal(candidate_parse(src, strlen(src), KILN_BACKEND_CUDA, &c, e), KILN_OK);
    int64_t v[CAND_MAX_TUNABLES];
    candidate_default_config(c, v);
    enum kiln_rc rc = plan_check_all(c, wl, v, lim, e);
    candidate_free(c);
    workload_free(wl);
    return rc;
}

static void plans_against_each_gpu(void **state)
{
    (void)state;
    struct device_limits t4, a100, h200;
    (void)devlimits_for_arch(75, &t4);
    (void)devlimits_for_arch(80, &a100);
    (void)devlimits_for_arch(90, &h200);
    struct kiln_err e;
    /* 100 KiB of shared memory: too much for a T4, fine on an A100. */
    assert_int_equal(resolve_on(&t4, 256, 100 * 1024, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "opt-in limit; sm_75, from CUDA's table"));
    assert_int_equal(resolve_on(&a100, 256, 100 * 1024, &e), KILN_OK);
    /* 200 KiB: only the H200. */
    assert_int_equal(resolve_on(&a100, 256, 200 * 1024, &e), KILN_E_REJECTED);
    assert_int_equal(resolve_on(&h200, 256, 200 * 1024, &e), KILN_OK);
    assert_int_equal(resolve_on(&h200, 256, 228 * 1024, &e), KILN_E_REJECTED);
    /* 1024 threads a block: every one; 2048: none. */
    assert_int_equal(resolve_on(&t4, 1024, 0, &e), KILN_OK);
    assert_int_equal(resolve_on(&h200, 2048, 0, &e), KILN_E_REJECTED);
}

static void requires_read_the_device(void **state)
{
    (void)state;
    /* ASYNC=1 (cp.async) only from sm_80 on; the shared memory a tile
     * needs within the device's opt-in limit. */
    const char *src = "// kiln: tunable ASYNC {0, 1} = 0\n"
                      "// kiln: tunable TILE {64, 128} = 64\n"
                      "// kiln: require ASYNC * (80 - min(DEVICE_CC, 80)) == 0\n"
                      "// kiln: require TILE * TILE * 8 <= DEVICE_SMEM_OPTIN\n"
                      "// kiln: launch saxpy grid(cdiv(n, 256)) block(256) args(n, a, x, y, out)\n";
    struct kiln_err e;
    kiln_err_clear(&e);
    struct candidate *c = NULL;
    assert_int_equal(candidate_parse(src, strlen(src), KILN_BACKEND_CUDA, &c, &e), KILN_OK);
    struct device_limits t4, a100;
    (void)devlimits_for_arch(75, &t4);
    (void)devlimits_for_arch(80, &a100);
    const int64_t async[] = {1, 64}, big[] = {0, 128};
    assert_int_equal(candidate_check_config(c, async, &a100, &e), KILN_OK);
    assert_int_equal(candidate_check_config(c, async, &t4, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "(device: sm_75, from CUDA's table"));
    kiln_err_clear(&e);
    assert_int_equal(candidate_check_config(c, big, &a100, &e), KILN_OK);
    assert_int_equal(candidate_check_config(c, big, &t4, &e), KILN_E_REJECTED);
    candidate_free(c);
    /* An architecture floor (gemm_bf16's bf16 mma.sync) is said as one. */
    const char *floor = "// kiln: tunable T {1, 2} = 1\n"
                        "// kiln: require DEVICE_CC >= 80\n"
                        "// kiln: launch saxpy grid(1) block(32) args(n, a, x, y, out)\n";
    assert_int_equal(candidate_parse(floor, strlen(floor), KILN_BACKEND_CUDA, &c, &e), KILN_OK);
    const int64_t one[] = {1};
    kiln_err_clear(&e);
    assert_int_equal(candidate_check_config(c, one, &a100, &e), KILN_OK);
    assert_int_equal(candidate_check_config(c, one, &t4, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "DEVICE_CC >= 80 is 75 >= 80"));
    assert_non_null(strstr(e.msg, "; the kernel needs sm_80 or newer"));
    kiln_err_clear(&e);
    candidate_free(c);
    /* A tunable may not take a DEVICE_ name, and a require may not name an
     * unknown one. */
    const char *bad[] = {"// kiln: tunable DEVICE_X {1, 2} = 1\n",
                         "// kiln: tunable A {1, 2} = 1\n// kiln: require A <= DEVICE_SMEM\n"};
    for (size_t i = 0; i < 2; i++) {
        kiln_err_clear(&e);
        assert_int_not_equal(candidate_parse(bad[i], strlen(bad[i]), KILN_BACKEND_CUDA, &c, &e),
                             KILN_OK);
    }
}

static void the_probe_parser_is_strict(void **state)
{
    (void)state;
    const char *good =
        "sm_count=40 sm_clock_khz=1590000 cc=7.5 mem_clock_khz=5001000 "
        "bus_width_bits=256\n"
        "limits threads_per_block=1024 block=1024,1024,64 grid=2147483647,65535,65535 "
        "smem_optin=65536 smem_per_sm=65536 regs_per_block=65536 regs_per_sm=65536 "
        "threads_per_sm=1024\n"
        "copy mb_per_s=300000\n";
    struct gpu_props p;
    struct device_limits l;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(devprobe_parse(good, &p, &l, &e), KILN_OK);
    assert_int_equal(l.cc, 75);
    assert_true(l.queried);
    assert_int_equal(l.max_smem_optin, 65536);
    assert_int_equal(l.max_grid[0], 2147483647);
    assert_int_equal(p.copy_mb_per_s, 300000);
    char bad[1024];
    const char *const cuts[][2] = {{"smem_optin=65536", "smem_optin=+65536"},
                                   {"smem_optin=65536", "smem_optin=0"},
                                   {"threads_per_sm=1024\n", "threads_per_sm=1024\nextra\n"},
                                   {"copy mb_per_s=300000\n", ""},
                                   {"=300000\n", "=300000\nextra\n"},
                                   {"=300000", "=-1"},
                                   {"=300000", "=0300000"},
                                   {"=300000", "=100000001"},
                                   {"\nlimits", " limits"},
                                   {"block=1024,1024,64", "block=1024,1024"}};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(*cuts); i++) {
        const char *at = strstr(good, cuts[i][0]);
        assert_non_null(at);
        snprintf(bad, sizeof(bad), "%.*s%s%s", (int)(at - good), good, cuts[i][1],
                 at + strlen(cuts[i][0]));
        kiln_err_clear(&e);
        assert_int_equal(devprobe_parse(bad, &p, &l, &e), KILN_E_PARSE);
    }
}

static void a_session_picks_its_target(void **state)
{
    (void)state;
    struct eval_target t;
    struct kiln_err e;
    struct device_limits a10g;
    (void)devlimits_for_arch(86, &a10g);
    a10g.queried = true;
    /* The GPU's own, with its queried limits. */
    kiln_err_clear(&e);
    assert_int_equal(eval_target_resolve(NULL, &a10g, 0, &t, &e), KILN_OK);
    assert_string_equal(t.arch, "sm_86");
    assert_string_equal(t.source, "the GPU");
    assert_true(t.limits.queried);
    /* --arch sm_80 runs on an sm_86 GPU; its limits stay the GPU's. */
    assert_int_equal(eval_target_resolve("sm_80", &a10g, 0, &t, &e), KILN_OK);
    assert_string_equal(t.arch, "sm_80");
    assert_int_equal(t.limits.cc, 80);
    assert_int_equal(t.limits.max_smem_optin, a10g.max_smem_optin);
    /* --arch sm_90 does not. */
    assert_int_equal(eval_target_resolve("sm_90", &a10g, 3, &t, &e), KILN_E_USAGE);
    assert_non_null(strstr(e.msg, "GPU 3 is sm_86"));
    /* No GPU to ask: --arch with its table, or the default, said so. */
    kiln_err_clear(&e);
    assert_int_equal(eval_target_resolve("sm_75", NULL, 0, &t, &e), KILN_OK);
    assert_string_equal(t.source, "--arch");
    assert_int_equal(t.limits.max_smem_optin, 65536);
    assert_false(t.limits.queried);
    assert_int_equal(eval_target_resolve(NULL, NULL, 0, &t, &e), KILN_OK);
    assert_string_equal(t.arch, "sm_90");
    assert_string_equal(t.source, "the default");
    /* A GPU newer than the toolkit: named, with the supported ones. */
    struct device_limits future = a10g;
    future.cc = 130;
    assert_int_equal(eval_target_resolve(NULL, &future, 0, &t, &e), KILN_E_UNSUPPORTED);
    assert_non_null(strstr(e.msg, "the GPU is sm_130"));
    /* What the records say. */
    (void)devlimits_for_arch(90, &a10g);
    kiln_err_clear(&e);
    assert_int_equal(eval_target_resolve("sm_90", NULL, 0, &t, &e), KILN_OK);
    json_t *j = eval_target_json(&t);
    char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(text, "{\"arch\":\"sm_90\",\"from\":\"--arch\",\"limits\":\"table\","
                              "\"smem_optin\":232448}");
    free(text);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_the_toolkit_list),
        cmocka_unit_test(the_table_of_a_t4_an_a100_and_an_h200),
        cmocka_unit_test(plans_against_each_gpu),
        cmocka_unit_test(requires_read_the_device),
        cmocka_unit_test(the_probe_parser_is_strict),
        cmocka_unit_test(a_session_picks_its_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
