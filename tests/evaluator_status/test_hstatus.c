#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "hstatus.h"
#include "verdict.h"

static const char good[] =
    "{\"version\":1,\"backend\":\"cuda\",\"device\":\"NVIDIA H200\",\"l2_flush\":true,"
    "\"status\":\"failed\",\"cases\":[{\"case\":\"n1\",\"status\":\"ok\"},"
    "{\"case\":\"big\",\"status\":\"failed\",\"failure\":{\"kind\":\"cuda_error\","
    "\"phase\":\"timed\",\"set\":\"s1\",\"run\":17,\"cuda_error\":\"CUDA_ERROR_ILLEGAL_ADDRESS\","
    "\"detail\":\"x\"}}]}";

static void parses_the_documented_example(void **state)
{
    (void)state;
    struct hstatus s;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(hstatus_parse(good, strlen(good), &s, &e), KILN_OK);
    assert_true(s.failed);
    assert_int_equal(s.ncases, 2);
    const struct hstatus_case *c = hstatus_find(&s, "big");
    assert_non_null(c);
    assert_true(c->failed);
    assert_int_equal(c->kind, FK_CUDA_ERROR);
    assert_string_equal(failure_kind_name(c->kind), "cuda_error");
    assert_string_equal(c->cuda_error, "CUDA_ERROR_ILLEGAL_ADDRESS");
    assert_int_equal(c->run, 17);
    assert_false(hstatus_find(&s, "n1")->failed);
    assert_null(hstatus_find(&s, "nope"));
    hstatus_free(&s);
}

static void expect_reject(const char *doc)
{
    struct hstatus s;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_not_equal(hstatus_parse(doc, strlen(doc), &s, &e), KILN_OK);
    assert_null(s.cases);
    assert_true(e.msg[0] != '\0');
}

static void rejects_hostile_documents(void **state)
{
    (void)state;
    expect_reject("");
    expect_reject("[]");
    expect_reject("{\"version\":2,\"backend\":\"cpu\",\"device\":\"x\",\"l2_flush\":true,"
                  "\"status\":\"ok\",\"cases\":[]}");
    expect_reject("{\"version\":1,\"backend\":\"cpu\",\"device\":\"x\",\"l2_flush\":true,"
                  "\"status\":\"ok\",\"cases\":[],\"extra\":1}");
    expect_reject("{\"version\":1,\"backend\":\"cpu\",\"device\":\"x\",\"l2_flush\":true,"
                  "\"status\":\"great\",\"cases\":[]}");
    expect_reject("{\"version\":1,\"backend\":\"cpu\",\"device\":\"\\u001b[31m\","
                  "\"l2_flush\":true,\"status\":\"ok\",\"cases\":[]}");
    expect_reject("{\"version\":1,\"backend\":\"cpu\",\"device\":\"x\",\"l2_flush\":true,"
                  "\"status\":\"ok\",\"cases\":[{\"case\":\"a\",\"status\":\"fine\"}]}");
    expect_reject("{\"version\":1,\"backend\":\"cpu\",\"device\":\"x\",\"l2_flush\":true,"
                  "\"status\":\"ok\",\"cases\":[{\"case\":\"a\",\"status\":\"failed\","
                  "\"failure\":{\"kind\":\"k\",\"phase\":\"p\",\"run\":-1}}]}");
    expect_reject("{\"version\":1,\"version\":1,\"backend\":\"cpu\",\"device\":\"x\","
                  "\"l2_flush\":true,\"status\":\"ok\",\"cases\":[]}");
    /* Over the size cap. */
    size_t big = HSTATUS_MAX_BYTES + 10;
    char *doc = malloc(big + 1);
    assert_non_null(doc);
    memset(doc, ' ', big);
    doc[big] = '\0';
    expect_reject(doc);
    free(doc);
}

#define TOP                                                                                        \
    "{\"version\":1,\"backend\":\"cpu\",\"device\":\"cpu\",\"l2_flush\":true,"                     \
    "\"status\":\"ok\",\"cases\":[]"
#define PHASES(extra)                                                                              \
    TOP ",\"phases_s\":{\"context\":0.25,\"layout\":0.01,\"read\":0.5,\"upload\":0.125,"           \
        "\"correctness\":0.03,\"timing\":1.5,\"outputs\":0.2,\"total\":3" extra "}}"

/* The harness's phase times (HARNESS.md section 4): optional, but when
 * present every phase is there, each a number of seconds within range. */
static void parses_and_checks_phases(void **state)
{
    (void)state;
    struct hstatus s;
    struct kiln_err e;
    kiln_err_clear(&e);
    const char *doc = PHASES("");
    assert_int_equal(hstatus_parse(doc, strlen(doc), &s, &e), KILN_OK);
    assert_true(s.phases.present);
    assert_true(s.phases.context == 0.25);
    assert_true(s.phases.upload == 0.125);
    assert_true(s.phases.timing == 1.5);
    assert_true(s.phases.total == 3.0); /* an integer is a number too */
    hstatus_free(&s);
    doc = TOP "}";
    assert_int_equal(hstatus_parse(doc, strlen(doc), &s, &e), KILN_OK);
    assert_false(s.phases.present);
    hstatus_free(&s);

    expect_reject(PHASES(",\"extra\":1"));
    expect_reject(TOP ",\"phases_s\":{\"context\":0.25}}");
    expect_reject(TOP ",\"phases_s\":[]}");
    expect_reject(TOP ",\"phases_s\":null}");
    expect_reject(TOP ",\"phases_s\":{\"context\":-1,\"layout\":0,\"read\":0,"
                      "\"upload\":0,\"correctness\":0,\"timing\":0,\"outputs\":0,"
                      "\"total\":0}}");
    expect_reject(TOP ",\"phases_s\":{\"context\":\"1\",\"layout\":0,\"read\":0,"
                      "\"upload\":0,\"correctness\":0,\"timing\":0,\"outputs\":0,"
                      "\"total\":0}}");
    expect_reject(TOP ",\"phases_s\":{\"context\":0,\"layout\":0,\"read\":0,"
                      "\"upload\":0,\"correctness\":0,\"timing\":0,\"outputs\":0,"
                      "\"total\":1e7}}");
    expect_reject(TOP ",\"phases_s\":{\"context\":0,\"layout\":0,\"read\":0,"
                      "\"upload\":0,\"correctness\":0,\"timing\":0,\"outputs\":0,"
                      "\"total\":1e999}}");
    expect_reject(TOP ",\"phases_s\":{\"context\":0,\"context\":0,\"layout\":0,"
                      "\"read\":0,\"upload\":0,\"correctness\":0,\"timing\":0,"
                      "\"outputs\":0,\"total\":0}}");
}

/* One enum on both sides of the sandbox: every kind the harness can write
 * parses back to itself, an unknown one is refused, and the verdict rule
 * covers each. */
static void failure_kinds_round_trip(void **state)
{
    (void)state;
    for (int k = FK_MODULE; k <= FK_ALLOCATION_SLACK; k++) {
        enum failure_kind back = FK_NONE;
        assert_true(failure_kind_parse(failure_kind_name((enum failure_kind)k), &back));
        assert_int_equal(back, k);
    }
    enum failure_kind x;
    assert_false(failure_kind_parse("segfault", &x));
    assert_false(failure_kind_parse("", &x));
    assert_int_equal(verdict_status_of_failure(FK_ALLOCATION_SLACK), VERDICT_WRONG_ANSWER);
    assert_int_equal(verdict_status_of_failure(FK_OVERWRITES_INPUTS), VERDICT_WRONG_ANSWER);
    assert_int_equal(verdict_status_of_failure(FK_TIMEOUT), VERDICT_TIMEOUT);
    assert_int_equal(verdict_status_of_failure(FK_CUDA_ERROR), VERDICT_RUNTIME_ERROR);
    /* status.json naming a kind kiln does not know is malformed. */
    const char *bad = "{\"version\":1,\"backend\":\"cuda\",\"device\":\"d\",\"l2_flush\":true,"
                      "\"status\":\"failed\",\"cases\":[{\"case\":\"big\",\"status\":\"failed\","
                      "\"failure\":{\"kind\":\"segfault\",\"phase\":\"timed\"}}]}";
    expect_reject(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_the_documented_example),
        cmocka_unit_test(rejects_hostile_documents),
        cmocka_unit_test(parses_and_checks_phases),
        cmocka_unit_test(failure_kinds_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
