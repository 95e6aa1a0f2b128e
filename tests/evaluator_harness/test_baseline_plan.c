/* Baseline plans (HARNESS.md section 7): the writer's output parses back to
 * the same plan, the buffer sizes are computed without overflow, and the
 * strict parser rejects every hostile variation with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_plan.h"

static void add(struct harness_plan *p, const char *name, int64_t a, int64_t b, int64_t c)
{
    struct harness_case *hc;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(harness_plan_add_case(p, &hc, &err), KILN_OK);
    snprintf(hc->name, sizeof(hc->name), "%s", name);
    hc->timed = true;
    hc->baseline[0] = a;
    hc->baseline[1] = b;
    hc->baseline[2] = c;
}

static char *write_ok(const struct harness_plan *p)
{
    char *text = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = harness_plan_write(p, &text, &err);
    if (rc != KILN_OK)
        fail_msg("write: %s", err.msg);
    return text;
}

static void memcpy_round_trip(void **state)
{
    (void)state;
    struct harness_plan a, b;
    struct kiln_err err;
    kiln_err_clear(&err);
    harness_plan_init(&a);
    a.baseline = HBL_MEMCPY;
    a.warmups = 3;
    a.iterations = 7;
    add(&a, "big", 3221225472, 0, 0);
    add(&a, "odd", 7, 0, 0);
    char *text = write_ok(&a);
    /* No candidate-only key reaches the document. */
    assert_null(strstr(text, "signature"));
    assert_null(strstr(text, "launches"));
    assert_null(strstr(text, "guard_bytes"));
    assert_null(strstr(text, "reload"));
    assert_non_null(strstr(text, "\"baseline\":\"memcpy\""));
    assert_non_null(strstr(text, "{\"name\":\"odd\",\"bytes\":7}"));
    assert_int_equal(harness_plan_parse(text, strlen(text), &b, &err), KILN_OK);
    assert_int_equal(b.baseline, HBL_MEMCPY);
    assert_int_equal(b.backend, HB_CUDA);
    assert_int_equal(b.warmups, 3);
    assert_int_equal(b.iterations, 7);
    assert_int_equal(b.ncases, 2);
    assert_int_equal(b.nargs, 0);
    assert_int_equal(b.nlaunches, 0);
    assert_string_equal(b.cases[0].name, "big");
    assert_true(b.cases[0].timed);
    assert_int_equal(b.cases[0].nsets, 0);
    assert_int_equal(b.cases[0].baseline[0], 3221225472);
    assert_int_equal(b.cases[1].baseline[0], 7);
    char *again = write_ok(&b);
    assert_string_equal(text, again);
    free(text);
    free(again);
    harness_plan_free(&a);
    harness_plan_free(&b);
}

static void sgemm_round_trip(void **state)
{
    (void)state;
    struct harness_plan a, b;
    struct kiln_err err;
    kiln_err_clear(&err);
    harness_plan_init(&a);
    a.baseline = HBL_CUBLAS_SGEMM;
    a.backend = HB_CPU; /* the plan allows it; the cpu harness answers "unavailable" */
    a.l2_flush = false;
    a.adaptive = true;
    a.target_rse = 0.01;
    a.budget_ms = 500;
    a.max_iterations = 300;
    add(&a, "sq4096", 4096, 4096, 4096);
    add(&a, "odd_big", 4099, 3001, 2053);
    char *text = write_ok(&a);
    assert_non_null(strstr(text, "{\"name\":\"odd_big\",\"m\":4099,\"n\":3001,\"k\":2053}"));
    assert_int_equal(harness_plan_parse(text, strlen(text), &b, &err), KILN_OK);
    assert_int_equal(b.baseline, HBL_CUBLAS_SGEMM);
    assert_int_equal(b.backend, HB_CPU);
    assert_false(b.l2_flush);
    assert_true(b.adaptive);
    assert_int_equal(b.max_iterations, 300);
    assert_int_equal(b.cases[1].baseline[0], 4099);
    assert_int_equal(b.cases[1].baseline[1], 3001);
    assert_int_equal(b.cases[1].baseline[2], 2053);
    char *again = write_ok(&b);
    assert_string_equal(text, again);
    free(text);
    free(again);
    harness_plan_free(&b);
    /* cublaslt_bf16 plans carry the same m, n, k per case. */
    a.baseline = HBL_CUBLASLT_BF16;
    text = write_ok(&a);
    assert_non_null(strstr(text, "\"baseline\":\"cublaslt_bf16\""));
    assert_int_equal(harness_plan_parse(text, strlen(text), &b, &err), KILN_OK);
    assert_int_equal(b.baseline, HBL_CUBLASLT_BF16);
    assert_int_equal(b.cases[1].baseline[2], 2053);
    free(text);
    harness_plan_free(&a);
    harness_plan_free(&b);
}

static void buffer_bytes(void **state)
{
    (void)state;
    const int64_t odd[3] = {7, 0, 0}, even[3] = {12, 0, 0}, neg[3] = {-1, 0, 0};
    assert_int_equal(harness_baseline_case_bytes(HBL_MEMCPY, odd), 8);
    assert_int_equal(harness_baseline_case_bytes(HBL_MEMCPY, even), 12);
    assert_true(harness_baseline_case_bytes(HBL_MEMCPY, neg) == UINT64_MAX);
    const int64_t g[3] = {2, 3, 4}; /* A 2x4, B 4x3, C 2x3 */
    assert_int_equal(harness_baseline_case_bytes(HBL_CUBLAS_SGEMM, g), 4 * (8 + 12 + 6));
    const int64_t huge[3] = {INT64_MAX, INT64_MAX, INT64_MAX};
    assert_true(harness_baseline_case_bytes(HBL_CUBLAS_SGEMM, huge) == UINT64_MAX);
    assert_true(harness_baseline_case_bytes(HBL_NONE, g) == UINT64_MAX);
    assert_string_equal(harness_baseline_name(HBL_MEMCPY), "memcpy");
    assert_string_equal(harness_baseline_name(HBL_CUBLAS_SGEMM), "cublas_sgemm");
    /* cublaslt_bf16: the same three matrices in 2-byte bfloat16 */
    assert_int_equal(harness_baseline_case_bytes(HBL_CUBLASLT_BF16, g), 2 * (8 + 12 + 6));
    assert_true(harness_baseline_case_bytes(HBL_CUBLASLT_BF16, huge) == UINT64_MAX);
    assert_string_equal(harness_baseline_name(HBL_CUBLASLT_BF16), "cublaslt_bf16");
    assert_true(harness_baseline_is_gemm(HBL_CUBLASLT_BF16));
    assert_false(harness_baseline_is_gemm(HBL_MEMCPY));
    assert_null(harness_baseline_name(HBL_NONE));
    assert_null(harness_baseline_name((enum harness_baseline)7));
}

static const char *const memcpy_doc =
    "{\"kiln_plan\":1,\"backend\":\"cuda\",\"warmups\":10,\"iterations\":100,\"l2_flush\":true,"
    "\"baseline\":\"memcpy\",\"cases\":[{\"name\":\"big\",\"bytes\":1024},"
    "{\"name\":\"small\",\"bytes\":8}]}";
static const char *const sgemm_doc =
    "{\"kiln_plan\":1,\"backend\":\"cuda\",\"baseline\":\"cublas_sgemm\","
    "\"cases\":[{\"name\":\"sq\",\"m\":64,\"n\":32,\"k\":16}]}";

/* Replaces the first `from` in `doc` by `to`; the parse must fail with `rc`
 * and a message containing `why`, leaving the plan empty. */
static void expect_reject(const char *doc, const char *from, const char *to, enum kiln_rc rc,
                          const char *why)
{
    const char *at = strstr(doc, from);
    assert_non_null(at);
    size_t off = (size_t)(at - doc);
    size_t n = strlen(doc) - strlen(from) + strlen(to) + 1;
    char *bad = malloc(n);
    assert_non_null(bad);
    snprintf(bad, n, "%.*s%s%s", (int)off, doc, to, doc + off + strlen(from));
    struct harness_plan p;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc got = harness_plan_parse(bad, strlen(bad), &p, &err);
    if (got != rc || !strstr(err.msg, why))
        fail_msg("replacing \"%s\" by \"%s\": got rc %d \"%s\", wanted %d \"%s\"", from, to, got,
                 err.msg, rc, why);
    assert_null(p.cases);
    assert_int_equal(p.ncases, 0);
    assert_int_equal(p.baseline, HBL_NONE);
    free(bad);
}

static void hostile_documents(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    kiln_err_clear(&err);
    /* The two documents themselves are fine. */
    assert_int_equal(harness_plan_parse(memcpy_doc, strlen(memcpy_doc), &p, &err), KILN_OK);
    harness_plan_free(&p);
    assert_int_equal(harness_plan_parse(sgemm_doc, strlen(sgemm_doc), &p, &err), KILN_OK);
    harness_plan_free(&p);

    expect_reject(memcpy_doc, "\"memcpy\"", "\"cudnn\"", KILN_E_REJECTED, "must be \"memcpy\"");
    expect_reject(memcpy_doc, "\"memcpy\"", "1", KILN_E_REJECTED, "must be \"memcpy\"");
    expect_reject(memcpy_doc, "\"memcpy\"", "null", KILN_E_REJECTED, "must be \"memcpy\"");
    /* A baseline plan carries no candidate parts. */
    expect_reject(memcpy_doc, "\"l2_flush\":true", "\"l2_flush\":true,\"signature\":[]",
                  KILN_E_PARSE, "\"signature\" has no place");
    expect_reject(memcpy_doc, "\"l2_flush\":true", "\"l2_flush\":true,\"launches\":[]",
                  KILN_E_PARSE, "\"launches\" has no place");
    expect_reject(memcpy_doc, "\"l2_flush\":true", "\"l2_flush\":true,\"reload\":false",
                  KILN_E_PARSE, "\"reload\" has no place");
    expect_reject(memcpy_doc, "\"l2_flush\":true", "\"l2_flush\":true,\"guard_bytes\":256",
                  KILN_E_PARSE, "\"guard_bytes\" has no place");
    expect_reject(memcpy_doc, "\"l2_flush\":true", "\"l2_flush\":true,\"extra\":1", KILN_E_PARSE,
                  "unknown key \"extra\"");
    /* The shared top-level rules still apply. */
    expect_reject(memcpy_doc, "\"iterations\":100", "\"iterations\":0", KILN_E_REJECTED,
                  "iterations");
    expect_reject(memcpy_doc, "\"backend\":\"cuda\"", "\"backend\":\"tpu\"", KILN_E_REJECTED,
                  "backend");
    /* Cases. */
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"bytes\":0", KILN_E_REJECTED, ">= 1");
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"bytes\":-5", KILN_E_REJECTED, ">= 1");
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"bytes\":1024.5", KILN_E_PARSE, "integer");
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"bytes\":\"1024\"", KILN_E_PARSE, "integer");
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"bytes\":4294967297", KILN_E_LIMIT, "4 GiB");
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"m\":1024", KILN_E_PARSE,
                  "unknown key \"m\" for memcpy");
    expect_reject(memcpy_doc, ",\"bytes\":1024", "", KILN_E_PARSE, "memcpy needs \"bytes\"");
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"bytes\":1024,\"timed\":true", KILN_E_PARSE,
                  "unknown key \"timed\"");
    expect_reject(memcpy_doc, "\"bytes\":1024", "\"bytes\":1024,\"sets\":[]", KILN_E_PARSE,
                  "unknown key \"sets\"");
    expect_reject(memcpy_doc, "\"name\":\"small\"", "\"name\":\"big\"", KILN_E_REJECTED,
                  "listed twice");
    expect_reject(memcpy_doc, "\"name\":\"small\"", "\"name\":\"../x\"", KILN_E_REJECTED,
                  "[a-z0-9_]");
    expect_reject(memcpy_doc, "\"name\":\"small\"", "\"name\":7", KILN_E_PARSE, "short string");
    expect_reject(memcpy_doc, "\"name\":\"small\",", "", KILN_E_PARSE, "short string");
    expect_reject(memcpy_doc, "{\"name\":\"small\",\"bytes\":8}", "[]", KILN_E_PARSE,
                  "must be an object");
    expect_reject(memcpy_doc, "\"cases\":[", "\"cases\":[],\"x\":[", KILN_E_PARSE,
                  "unknown key \"x\"");
    expect_reject(sgemm_doc, "\"m\":64", "\"m\":0", KILN_E_REJECTED, "1 .. 2^31-1");
    expect_reject(sgemm_doc, "\"k\":16", "\"k\":2147483648", KILN_E_REJECTED, "1 .. 2^31-1");
    expect_reject(sgemm_doc, ",\"k\":16", "", KILN_E_PARSE, "needs \"m\", \"n\" and \"k\"");
    expect_reject(sgemm_doc, "\"k\":16", "\"bytes\":16", KILN_E_PARSE,
                  "unknown key \"bytes\" for cublas_sgemm");
    expect_reject(sgemm_doc, "\"m\":64", "\"m\":64,\"m\":64", KILN_E_PARSE, "duplicate");
    /* 4 * (m k + k n + m n) floats over 4 GiB, each dimension in range. */
    expect_reject(sgemm_doc, "\"m\":64,\"n\":32,\"k\":16", "\"m\":32768,\"n\":32768,\"k\":32768",
                  KILN_E_LIMIT, "4 GiB");
    expect_reject(sgemm_doc, "\"cases\":[", "\"cases\":[],\"y\":[", KILN_E_PARSE,
                  "unknown key \"y\"");
    expect_reject(sgemm_doc, "[{\"name\":\"sq\",\"m\":64,\"n\":32,\"k\":16}]", "[]", KILN_E_PARSE,
                  "1 ..");
}

static void writer_refuses_invalid_baseline_plans(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    char *text = (char *)"sentinel";
    kiln_err_clear(&err);
    harness_plan_init(&p);
    p.baseline = HBL_CUBLAS_SGEMM;
    add(&p, "sq", 16, 16, 0);
    assert_int_equal(harness_plan_write(&p, &text, &err), KILN_E_REJECTED);
    assert_null(text);
    p.cases[0].baseline[2] = 16;
    p.cases[0].nsets = 1; /* baseline cases have no input sets */
    assert_int_equal(harness_plan_write(&p, &text, &err), KILN_E_REJECTED);
    p.cases[0].nsets = 0;
    p.cases[0].timed = false;
    assert_int_equal(harness_plan_write(&p, &text, &err), KILN_E_REJECTED);
    p.cases[0].timed = true;
    p.baseline = (enum harness_baseline)9;
    kiln_err_clear(&err);
    assert_int_equal(harness_plan_write(&p, &text, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "unknown baseline"));
    assert_null(text);
    harness_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(memcpy_round_trip),
        cmocka_unit_test(sgemm_round_trip),
        cmocka_unit_test(buffer_bytes),
        cmocka_unit_test(hostile_documents),
        cmocka_unit_test(writer_refuses_invalid_baseline_plans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
