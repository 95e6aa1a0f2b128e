/* Plan resolution: concrete launches for the saxpy example, and each way a
 * plan can break the workload's names or the device's limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "candidate.h"
#include "fixtures.h"
#include "plan.h"
#include "workload.h"

static struct workload *wl;
static struct resolved_plan plan_buf;
static const struct device_limits h200 = DEVICE_LIMITS_H200;

static int setup(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    return workload_parse_json(saxpy_json, strlen(saxpy_json), NULL, &wl, &e) == KILN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    workload_free(wl);
    return 0;
}

static struct candidate *cand(const char *src, enum kiln_backend b)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    struct candidate *c = NULL;
    if (candidate_parse(src, strlen(src), b, &c, &e) != KILN_OK)
        fail_msg("candidate: %s", e.msg);
    return c;
}

/* Resolves `src` for case `case_name` with defaults; expects `msg`. */
static void resolve_bad(const char *src, const char *case_name, enum kiln_rc want, const char *msg)
{
    struct candidate *c = cand(src, KILN_BACKEND_CUDA);
    int64_t v[CAND_MAX_TUNABLES];
    candidate_default_config(c, v);
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(
        plan_resolve(c, wl, workload_case_by_name(wl, case_name), v, &h200, &plan_buf, &e), want);
    assert_string_equal(e.msg, msg);
    candidate_free(c);
}

static void saxpy_resolves(void **state)
{
    (void)state;
    struct candidate *c =
        cand("// kiln: tunable BLOCK {128, 256, 512, 1024} = 256\n"
             "// kiln: tunable ITEMS {1, 2, 4} = 1\n"
             "// kiln: launch saxpy grid(cdiv(n, BLOCK * ITEMS)) block(BLOCK) smem(BLOCK * 4) "
             "args(n, a, x, y, out)\n"
             "// kiln: launch fix grid(1, 2) block(32, 4, 2) args(out)\n",
             KILN_BACKEND_CUDA);
    int64_t v[CAND_MAX_TUNABLES] = {1024, 4};
    struct kiln_err e;
    kiln_err_clear(&e);
    const struct wl_case *prime = workload_case_by_name(wl, "prime");
    assert_int_equal(plan_resolve(c, wl, prime, v, &h200, &plan_buf, &e), KILN_OK);
    assert_int_equal(plan_buf.nlaunches, 2);
    const struct plan_launch *l = &plan_buf.launches[0];
    assert_string_equal(l->kernel, "saxpy");
    assert_int_equal(l->grid[0], 245); /* ceil(1000003 / 4096) */
    assert_int_equal(l->grid[1], 1);
    assert_int_equal(l->block[0], 1024);
    assert_int_equal(l->smem, 4096);
    assert_int_equal(l->nargs, 5);
    assert_int_equal(l->args[0].kind, PLAN_ARG_SCALAR);
    assert_int_equal(l->args[0].type, WL_SCALAR_INT64);
    assert_int_equal(l->args[0].value.i64, 1000003);
    assert_int_equal(l->args[1].type, WL_SCALAR_FLOAT32);
    assert_true(l->args[1].value.f32 == 2.5f);
    assert_int_equal(l->args[2].kind, PLAN_ARG_TENSOR);
    assert_int_equal(l->args[2].tensor_index, 0);
    assert_int_equal(l->args[4].tensor_index, 2);
    assert_int_equal(l->args[4].arg, 4);
    const struct plan_launch *f = &plan_buf.launches[1];
    assert_int_equal(f->grid[1], 2);
    assert_int_equal(f->block[2], 2);
    assert_int_equal(f->smem, 0);
    assert_int_equal(plan_check_all(c, wl, v, &h200, &e), KILN_OK);
    /* A value outside the tunable's set never resolves. */
    v[1] = 3;
    assert_int_equal(plan_resolve(c, wl, prime, v, &h200, &plan_buf, &e), KILN_E_REJECTED);
    assert_string_equal(e.msg, "tunable ITEMS: 3 is not one of its values (line 2)");
    candidate_free(c);

    c = cand("// kiln: launch saxpy args(n, a, x, y, out)\n", KILN_BACKEND_CPU);
    kiln_err_clear(&e);
    assert_int_equal(plan_resolve(c, wl, prime, NULL, &h200, &plan_buf, &e), KILN_OK);
    assert_int_equal(plan_buf.launches[0].grid[0], 1);
    assert_int_equal(plan_buf.launches[0].block[2], 1);
    candidate_free(c);
}

static void device_limits_and_names(void **state)
{
    (void)state;
    resolve_bad("// kiln: launch saxpy grid(1) block(2048) args(x)\n", "big", KILN_E_REJECTED,
                "launch 1 (saxpy), case big: block x = 2048 is not in 1..1024");
    resolve_bad("// kiln: launch a grid(1) block(1) args(x)\n"
                "// kiln: launch b grid(1) block(64, 32) args(x)\n",
                "n1", KILN_E_REJECTED,
                "launch 2 (b), case n1: block 2048 threads exceeds the device limit 1024");
    resolve_bad("// kiln: launch k grid(1) block(1, 1, 65) args(x)\n", "n1", KILN_E_REJECTED,
                "launch 1 (k), case n1: block z = 65 is not in 1..64");
    resolve_bad("// kiln: launch k grid(n - 1) block(1) args(x)\n", "n1", KILN_E_REJECTED,
                "launch 1 (k), case n1: grid x = 0 is not in 1..2147483647");
    resolve_bad("// kiln: launch k grid(1, n) block(1) args(x)\n", "prime", KILN_E_REJECTED,
                "launch 1 (k), case prime: grid y = 1000003 is not in 1..65535");
    resolve_bad("// kiln: launch k grid(n * 16) block(1) args(x)\n", "big", KILN_E_REJECTED,
                "launch 1 (k), case big: grid x = 4294967296 is not in 1..2147483647");
    resolve_bad("// kiln: launch k grid(1) block(1) smem(232449) args(x)\n", "n1", KILN_E_REJECTED,
                "launch 1 (k), case n1: smem 232449 bytes is not in 0..232448 (the device's "
                "opt-in limit; sm_90, from CUDA's table (no GPU queried))");
    resolve_bad("// kiln: launch k grid(1) block(1) smem(-1) args(x)\n", "n1", KILN_E_REJECTED,
                "launch 1 (k), case n1: smem -1 bytes is not in 0..232448 (the device's opt-in "
                "limit; sm_90, from CUDA's table (no GPU queried))");
    resolve_bad("// kiln: launch k grid(cdiv(n, 0)) block(1) args(x)\n", "n1", KILN_E_REJECTED,
                "launch 1 (k), case n1: grid x: \"cdiv(n, 0)\": column 1: division by zero");
    resolve_bad("// kiln: launch k grid(n * n * n * n) block(1) args(x)\n", "big", KILN_E_REJECTED,
                "launch 1 (k), case big: grid x: \"n * n * n * n\": column 7: multiplication "
                "overflows int64");
    resolve_bad("// kiln: launch k grid(m) block(1) args(x)\n", "n1", KILN_E_REJECTED,
                "launch 1 (k), case n1: grid x: \"m\": column 1: unknown name 'm'");
    resolve_bad("// kiln: launch k grid(1) block(1) args(x, z)\n", "n1", KILN_E_REJECTED,
                "line 1: launch 1 (k): args() names z, which is not in the signature of "
                "workload saxpy");
    resolve_bad("// kiln: tunable n {1} = 1\n// kiln: launch k grid(1) block(1) args(x)\n", "n1",
                KILN_E_REJECTED, "line 1: tunable n has the name of a workload size; rename it");
    resolve_bad("// kiln: tunable out {1} = 1\n// kiln: launch k grid(1) block(1) args(x)\n", "n1",
                KILN_E_REJECTED,
                "line 1: tunable out has the name of a workload argument; rename it");
    /* plan_check_all reaches held-out cases too: grid y is 65536 only when
     * n is a multiple of 7340033, the held-out size. */
    struct candidate *c =
        cand("// kiln: launch k grid(1, 65535 + 1 - min(1, n % 7340033)) block(1) args(x)\n",
             KILN_BACKEND_CUDA);
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(
        plan_resolve(c, wl, workload_case_by_name(wl, "prime"), NULL, &h200, &plan_buf, &e),
        KILN_OK);
    assert_int_equal(plan_check_all(c, wl, NULL, &h200, &e), KILN_E_REJECTED);
    assert_string_equal(e.msg, "launch 1 (k), case held: grid y = 65536 is not in 1..65535");
    candidate_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(saxpy_resolves),
        cmocka_unit_test(device_limits_and_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
