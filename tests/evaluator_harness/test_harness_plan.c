/* plan.json: the writer's output parses back to the same plan, and every
 * rule of the strict parser rejects a hostile document with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_fixture.h"

/* gcc 12+ at -O3 reports a dangling pointer into the strstr() result below
 * after inlining; the buffer lives until the free at the end of the test. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif

static char *saxpy_json(enum harness_backend backend)
{
    struct harness_plan p;
    struct kiln_err err;
    char *text = NULL;
    kiln_err_clear(&err);
    fx_saxpy_plan(&p, backend);
    assert_int_equal(harness_plan_write(&p, &text, &err), KILN_OK);
    harness_plan_free(&p);
    return text;
}

static void round_trip(void **state)
{
    (void)state;
    struct harness_plan a, b;
    struct kiln_err err;
    char *text = NULL, *again = NULL;
    kiln_err_clear(&err);
    fx_saxpy_plan(&a, HB_CUDA);
    a.adaptive = true;
    a.target_rse = 0.005;
    a.budget_ms = 2500;
    a.max_iterations = 1000;
    a.cases[1].value[1].f = (double)0.1f; /* a float32 value survives exactly */
    a.cases[1].dims[0].smem = 49152;
    a.case_timeout_ms = 5000;
    a.deadline_ms = 17000;
    assert_int_equal(harness_plan_write(&a, &text, &err), KILN_OK);
    assert_int_equal(harness_plan_parse(text, strlen(text), &b, &err), KILN_OK);
    assert_int_equal(b.backend, HB_CUDA);
    assert_int_equal(b.warmups, 4);
    assert_int_equal(b.iterations, 30);
    assert_true(b.adaptive);
    assert_true(b.target_rse == 0.005);
    assert_true(b.budget_ms == 2500);
    assert_int_equal(b.max_iterations, 1000);
    assert_true(b.l2_flush);
    assert_true(b.reload);
    assert_int_equal(b.guard_bytes, HARNESS_PLAN_DEFAULT_GUARD);
    assert_int_equal(b.case_timeout_ms, 5000);
    assert_int_equal(b.deadline_ms, 17000);
    assert_int_equal(b.nargs, 5);
    assert_string_equal(b.args[4].name, "out");
    assert_int_equal(b.args[4].role, HR_OUT);
    assert_int_equal(b.args[2].dtype, DT_FLOAT32);
    assert_int_equal(b.args[0].type, HS_INT64);
    assert_int_equal(b.nlaunches, 1);
    assert_string_equal(b.launches[0].kernel, "saxpy");
    assert_int_equal(b.launches[0].args[3], 3);
    assert_int_equal(b.ncases, 2);
    assert_string_equal(b.cases[1].name, "perf");
    assert_true(b.cases[1].timed);
    assert_false(b.cases[0].timed);
    assert_int_equal(b.cases[1].value[0].i, 4099);
    assert_true(b.cases[1].value[1].f == (double)0.1f);
    assert_int_equal(b.cases[1].ndim[2], 1);
    assert_int_equal(b.cases[1].shape[2][0], 4099);
    assert_int_equal(b.cases[1].dims[0].grid[0], 17);
    assert_int_equal(b.cases[1].dims[0].block[0], 256);
    assert_int_equal(b.cases[1].dims[0].smem, 49152);
    assert_int_equal(b.cases[1].nsets, 3);
    assert_string_equal(b.cases[1].sets[2], "s2");
    assert_int_equal(harness_case_tensor_bytes(&b, &b.cases[1], 4), 4099 * 4);
    /* Writing the parsed plan gives the same text. */
    assert_int_equal(harness_plan_write(&b, &again, &err), KILN_OK);
    assert_string_equal(text, again);
    free(text);
    free(again);
    harness_plan_free(&a);
    harness_plan_free(&b);
}

/* Replaces the first occurrence of `from` in the valid saxpy document and
 * expects the parse to fail with `rc` and a message containing `why`. */
static void expect_reject(enum harness_backend be, const char *from, const char *to,
                          enum kiln_rc rc, const char *why)
{
    char *text = saxpy_json(be);
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t off = (size_t)(at - text);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *doc = malloc(n);
    assert_non_null(doc);
    snprintf(doc, n, "%.*s%s%s", (int)off, text, to, text + off + strlen(from));
    struct harness_plan p;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc got = harness_plan_parse(doc, strlen(doc), &p, &err);
    if (got != rc || !strstr(err.msg, why))
        fail_msg("replacing \"%s\" by \"%s\": got rc %d \"%s\", wanted %d \"%s\"", from, to, got,
                 err.msg, rc, why);
    assert_null(p.cases);
    assert_int_equal(p.ncases, 0);
    free(doc);
    free(text);
}

static void hostile_documents(void **state)
{
    (void)state;
    expect_reject(HB_CUDA, "\"kiln_plan\":1", "\"kiln_plan\":2", KILN_E_REJECTED, "kiln_plan");
    expect_reject(HB_CUDA, "\"kiln_plan\":1", "\"kiln_plan\":1,\"extra\":1", KILN_E_PARSE,
                  "unknown key \"extra\"");
    expect_reject(HB_CUDA, "\"kiln_plan\":1", "\"kiln_plan\":1,\"kiln_plan\":1", KILN_E_PARSE,
                  "duplicate");
    expect_reject(HB_CUDA, "\"backend\":\"cuda\"", "\"backend\":\"rocm\"", KILN_E_REJECTED,
                  "backend");
    expect_reject(HB_CUDA, "\"warmups\":4", "\"warmups\":-1", KILN_E_REJECTED, "warmups");
    expect_reject(HB_CUDA, "\"iterations\":30", "\"iterations\":0", KILN_E_REJECTED, "iterations");
    expect_reject(HB_CUDA, "\"iterations\":30", "\"iterations\":1e3", KILN_E_PARSE, "integer");
    expect_reject(HB_CUDA, "\"guard_bytes\":65536", "\"guard_bytes\":1000", KILN_E_REJECTED,
                  "multiple of 256");
    expect_reject(HB_CUDA, "\"case_timeout_ms\":60000", "\"case_timeout_ms\":99", KILN_E_REJECTED,
                  "case_timeout_ms");
    expect_reject(HB_CUDA, "\"case_timeout_ms\":60000", "\"case_timeout_ms\":3600001",
                  KILN_E_REJECTED, "case_timeout_ms");
    expect_reject(HB_CUDA, "\"case_timeout_ms\":60000",
                  "\"case_timeout_ms\":60000,\"deadline_ms\":50", KILN_E_REJECTED, "deadline_ms");
    expect_reject(HB_CUDA, "\"dtype\":\"float32\"", "\"dtype\":\"complex64\"", KILN_E_REJECTED,
                  "unknown dtype");
    expect_reject(HB_CUDA, "\"role\":\"in\"", "\"role\":\"scratch\"", KILN_E_REJECTED,
                  "unknown role");
    expect_reject(HB_CUDA, "\"type\":\"int64\"", "\"type\":\"int128\"", KILN_E_REJECTED,
                  "unknown type");
    expect_reject(HB_CUDA, "\"name\":\"n\"", "\"name\":\"a\"", KILN_E_REJECTED, "listed twice");
    expect_reject(HB_CUDA, "\"name\":\"n\"", "\"name\":\"1n\"", KILN_E_REJECTED, "identifier");
    expect_reject(HB_CUDA, "\"kernel\":\"saxpy\"", "\"kernel\":\"kiln_fingerprint\"",
                  KILN_E_REJECTED, "non-kiln_");
    expect_reject(HB_CUDA, "\"args\":[\"n\"", "\"args\":[\"nope\"", KILN_E_REJECTED,
                  "not a signature name");
    expect_reject(HB_CUDA, "\"name\":\"small\"", "\"name\":\"../x\"", KILN_E_REJECTED, "[a-z0-9_]");
    expect_reject(HB_CUDA, "\"name\":\"perf\"", "\"name\":\"small\"", KILN_E_REJECTED,
                  "listed twice");
    expect_reject(HB_CUDA, "\"sets\":[\"s0\",\"s1\",\"s2\"]", "\"sets\":[\"s0\",\"s1\"]",
                  KILN_E_REJECTED, "input sets");
    expect_reject(HB_CUDA, "\"sets\":[\"s0\",\"s1\",\"s2\"]", "\"sets\":[\"s0\",\"s1\",\"s1\"]",
                  KILN_E_REJECTED, "listed twice");
    expect_reject(HB_CUDA, "\"sets\":[\"s0\"]", "\"sets\":[\"..\"]", KILN_E_REJECTED, "[a-z0-9_]");
    expect_reject(HB_CUDA, "\"x\":[1001]", "\"x\":[-1]", KILN_E_REJECTED, "dim 0");
    expect_reject(HB_CUDA, "\"x\":[1001]", "\"x\":[1099511627776,1099511627776]", KILN_E_LIMIT,
                  "4 GiB");
    expect_reject(HB_CUDA, "\"x\":[1001]", "\"x\":[1,1,1,1,1,1,1,1,1]", KILN_E_PARSE, "at most 8");
    expect_reject(HB_CUDA, "\"x\":[1001]", "\"x\":[1001],\"zz\":[1]", KILN_E_REJECTED,
                  "unknown arguments");
    expect_reject(HB_CUDA, "\"n\":1001", "\"n\":1001.5", KILN_E_PARSE, "integer");
    expect_reject(HB_CUDA, "\"a\":2.5", "\"a\":1e39", KILN_E_REJECTED, "float32 range");
    expect_reject(HB_CUDA, "\"grid\":[4,1,1]", "\"grid\":[0,1,1]", KILN_E_REJECTED, "grid");
    expect_reject(HB_CUDA, "\"grid\":[4,1,1]", "\"grid\":[4,65536,1]", KILN_E_REJECTED, "grid");
    expect_reject(HB_CUDA, "\"block\":[256,1,1]", "\"block\":[256,1]", KILN_E_PARSE, "3 integers");
    expect_reject(HB_CUDA, "\"block\":[256,1,1]", "\"block\":[2048,1,1]", KILN_E_REJECTED, "block");
    expect_reject(HB_CUDA, "\"smem\":0", "\"smem\":4294967296", KILN_E_REJECTED, "smem");
    expect_reject(HB_CPU, "\"sets\"", "\"dims\":[],\"sets\"", KILN_E_PARSE, "cuda-only");
    expect_reject(HB_CUDA, "\"reload\":true", "\"reload\":1", KILN_E_PARSE, "boolean");
    expect_reject(HB_CUDA, "\"l2_flush\":true", "\"l2_flush\":true,\"adaptive\":{}", KILN_E_PARSE,
                  "numbers");
    expect_reject(HB_CUDA, "\"l2_flush\":true",
                  "\"l2_flush\":true,\"adaptive\":{\"target_rse\":2,\"budget_ms\":1,"
                  "\"max_iterations\":100}",
                  KILN_E_REJECTED, "target_rse");
    expect_reject(HB_CUDA, "\"role\":\"out\"", "\"role\":\"in\"", KILN_E_REJECTED,
                  "no tensor has role out");
}

static void hostile_bytes(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    char deep[200];
    kiln_err_clear(&err);
    memset(deep, '[', sizeof(deep));
    assert_int_equal(harness_plan_parse(deep, sizeof(deep), &p, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "nested"));

    kiln_err_clear(&err);
    const char nul[] = "{\"kiln_plan\":1}\0";
    assert_int_equal(harness_plan_parse(nul, sizeof(nul), &p, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "NUL"));

    kiln_err_clear(&err);
    assert_int_equal(harness_plan_parse("[]", 2, &p, &err), KILN_E_PARSE);
    kiln_err_clear(&err);
    assert_int_equal(harness_plan_parse("{", 1, &p, &err), KILN_E_PARSE);
    kiln_err_clear(&err);
    assert_int_equal(harness_plan_parse("", 0, &p, &err), KILN_E_PARSE);

    kiln_err_clear(&err);
    char *big = malloc(HARNESS_PLAN_MAX_BYTES + 1);
    assert_non_null(big);
    memset(big, ' ', HARNESS_PLAN_MAX_BYTES + 1);
    assert_int_equal(harness_plan_parse(big, HARNESS_PLAN_MAX_BYTES + 1, &p, &err), KILN_E_LIMIT);
    free(big);

    /* A string with brackets inside is not nesting. */
    kiln_err_clear(&err);
    char *text = saxpy_json(HB_CPU);
    assert_int_equal(harness_plan_parse(text, strlen(text), &p, &err), KILN_OK);
    harness_plan_free(&p);
    free(text);
}

static void writer_refuses_invalid_plans(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    char *text = (char *)"sentinel";
    kiln_err_clear(&err);
    fx_saxpy_plan(&p, HB_CUDA);
    p.cases[1].nsets = 2;
    assert_int_equal(harness_plan_write(&p, &text, &err), KILN_E_REJECTED);
    assert_null(text);
    harness_plan_free(&p);
    harness_plan_free(&p); /* safe twice */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(hostile_documents),
        cmocka_unit_test(hostile_bytes),
        cmocka_unit_test(writer_refuses_invalid_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
