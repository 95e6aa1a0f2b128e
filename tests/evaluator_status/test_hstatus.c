#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "hstatus.h"

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
    assert_string_equal(c->kind, "cuda_error");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_the_documented_example),
        cmocka_unit_test(rejects_hostile_documents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
