/* The strict timings.json parser against valid and hostile documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timings.h"

static enum kiln_rc parse_str(const char *s, struct timings *t, struct kiln_err *e)
{
    kiln_err_clear(e);
    return timings_parse(s, strlen(s), t, e);
}

static void valid_document(void **state)
{
    (void)state;
    const char *doc = "{\"version\":1,\"cases\":["
                      "{\"case\":\"big\",\"set\":0,\"samples_ms\":[0.5,0.25,1],"
                      "\"fingerprint_ok\":true,\"warmup\":10,\"l2_flush\":true},"
                      "{\"case\":\"big\",\"set\":1,\"samples_ms\":[2],\"fingerprint_ok\":false},"
                      "{\"case\":\"small-1.x\",\"set\":0,\"samples_ms\":[3e-3],"
                      "\"fingerprint_ok\":true}]}";
    struct timings t;
    struct kiln_err e;
    assert_int_equal(parse_str(doc, &t, &e), KILN_OK);
    assert_int_equal(t.ncases, 3);
    assert_string_equal(t.cases[0].name, "big");
    assert_int_equal(t.cases[0].nsamples, 3);
    assert_true(t.cases[0].samples_ms[0] == 0.5 && t.cases[0].samples_ms[2] == 1.0);
    assert_true(t.cases[0].fingerprint_ok);
    assert_int_equal(t.cases[0].warmup, 10);
    assert_int_equal(t.cases[0].l2_flush, 1);
    assert_false(t.cases[1].fingerprint_ok);
    assert_int_equal(t.cases[1].warmup, -1);
    assert_int_equal(t.cases[1].l2_flush, -1);
    const struct timings_case *c = timings_find(&t, "big", 1);
    assert_ptr_equal(c, &t.cases[1]);
    assert_null(timings_find(&t, "big", 2));
    assert_null(timings_find(&t, "nope", 0));
    timings_free(&t);
    assert_null(t.cases);
    timings_free(&t); /* idempotent */
}

/* Each document must be rejected with the given code, leaving `t` empty. */
static void expect_reject(const char *doc, enum kiln_rc want)
{
    struct timings t;
    struct kiln_err e;
    enum kiln_rc rc = parse_str(doc, &t, &e);
    if (rc != want)
        fail_msg("document %.120s: got rc %d (%s), wanted %d", doc, rc, e.msg, want);
    assert_true(e.msg[0] != '\0');
    assert_null(t.cases);
    assert_int_equal(t.ncases, 0);
}

#define CASE_HEAD "{\"version\":1,\"cases\":[{\"case\":\"a\",\"set\":0,\"fingerprint_ok\":true,"

static void hostile_numbers(void **state)
{
    (void)state;
    expect_reject(CASE_HEAD "\"samples_ms\":[1,-1]}]}", KILN_E_REJECTED);
    expect_reject(CASE_HEAD "\"samples_ms\":[0]}]}", KILN_E_REJECTED);
    expect_reject(CASE_HEAD "\"samples_ms\":[-0.0]}]}", KILN_E_REJECTED);
    expect_reject(CASE_HEAD "\"samples_ms\":[1e-400]}]}", KILN_E_REJECTED); /* underflows to 0 */
    expect_reject(CASE_HEAD "\"samples_ms\":[1e400]}]}", KILN_E_PARSE);     /* overflow */
    expect_reject(CASE_HEAD "\"samples_ms\":[NaN]}]}", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":[Infinity]}]}", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":[1e7]}]}", KILN_E_REJECTED); /* > one hour */
    expect_reject(CASE_HEAD "\"samples_ms\":[]}]}", KILN_E_REJECTED);
    expect_reject(CASE_HEAD "\"samples_ms\":[1], \"warmup\":-3}]}", KILN_E_REJECTED);
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"a\",\"set\":70000,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_REJECTED);
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"a\",\"set\":-1,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_REJECTED);
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"a\",\"set\":99999999999999999999999,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_PARSE);
}

static void wrong_types_and_keys(void **state)
{
    (void)state;
    expect_reject("[]", KILN_E_PARSE);
    expect_reject("{\"version\":2,\"cases\":[]}", KILN_E_PARSE);
    expect_reject("{\"version\":\"1\",\"cases\":[]}", KILN_E_PARSE);
    expect_reject("{\"version\":1}", KILN_E_PARSE);
    expect_reject("{\"version\":1,\"cases\":{}}", KILN_E_PARSE);
    {
        /* No timed case: an empty list is valid (correctness-only plans). */
        struct timings t = {0};
        struct kiln_err e;
        kiln_err_clear(&e);
        const char *doc = "{\"version\":1,\"cases\":[]}";
        assert_int_equal(timings_parse(doc, strlen(doc), &t, &e), KILN_OK);
        assert_int_equal(t.ncases, 0);
        timings_free(&t);
    }
    expect_reject("{\"version\":1,\"cases\":[1]}", KILN_E_PARSE);
    expect_reject("{\"version\":1,\"cases\":[],\"extra\":0}", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":[\"1\"]}]}", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":[true]}]}", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":1}]}", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":[1],\"speedup\":100}]}", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":[1],\"l2_flush\":1}]}", KILN_E_PARSE);
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"a\",\"set\":0,\"samples_ms\":[1]}]}",
                  KILN_E_PARSE); /* no fingerprint_ok */
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"a\",\"set\":0.5,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_PARSE);
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"../x\",\"set\":0,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_PARSE);
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"\",\"set\":0,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_PARSE);
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"a\\u0000b\",\"set\":0,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_PARSE);
    /* duplicate key, duplicate case, trailing data, truncated */
    expect_reject("{\"version\":1,\"version\":1,\"cases\":[]}", KILN_E_PARSE);
    expect_reject("{\"version\":1,\"cases\":["
                  "{\"case\":\"a\",\"set\":0,\"fingerprint_ok\":true,\"samples_ms\":[1]},"
                  "{\"case\":\"a\",\"set\":0,\"fingerprint_ok\":true,\"samples_ms\":[2]}]}",
                  KILN_E_REJECTED);
    expect_reject(CASE_HEAD "\"samples_ms\":[1]}]} x", KILN_E_PARSE);
    expect_reject(CASE_HEAD "\"samples_ms\":[1", KILN_E_PARSE);
    expect_reject("", KILN_E_PARSE);
}

static void deep_nesting(void **state)
{
    (void)state;
    char doc[4096];
    size_t n = 0;
    for (int i = 0; i < 1000; i++)
        doc[n++] = '[';
    for (int i = 0; i < 1000; i++)
        doc[n++] = ']';
    doc[n] = '\0';
    expect_reject(doc, KILN_E_LIMIT);
    /* depth 5 inside a sample array */
    expect_reject(CASE_HEAD "\"samples_ms\":[[1]]}]}", KILN_E_LIMIT);
    /* brackets inside strings do not count */
    expect_reject("{\"version\":1,\"cases\":[{\"case\":\"[[[[[[\",\"set\":0,"
                  "\"fingerprint_ok\":true,\"samples_ms\":[1]}]}",
                  KILN_E_PARSE);
}

/* Builds a document with `ncases` cases of `nsamples` samples each. */
static char *big_doc(size_t ncases, size_t nsamples, size_t *len)
{
    size_t cap = 64 + ncases * (96 + nsamples * 2);
    char *s = malloc(cap);
    assert_non_null(s);
    size_t n = (size_t)snprintf(s, cap, "{\"version\":1,\"cases\":[");
    for (size_t c = 0; c < ncases; c++) {
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"case\":\"c%zu\",\"set\":0,\"fingerprint_ok\":true,"
                              "\"samples_ms\":[",
                              c ? "," : "", c);
        for (size_t i = 0; i < nsamples; i++) {
            s[n++] = i ? ',' : '1';
            if (i)
                s[n++] = '1';
        }
        n += (size_t)snprintf(s + n, cap - n, "]}");
    }
    n += (size_t)snprintf(s + n, cap - n, "]}");
    *len = n;
    return s;
}

static void huge_arrays(void **state)
{
    (void)state;
    struct timings t;
    struct kiln_err e = {0};
    size_t len;
    char *s = big_doc(1, TIMINGS_MAX_SAMPLES, &len);
    assert_int_equal(timings_parse(s, len, &t, &e), KILN_OK);
    assert_int_equal(t.cases[0].nsamples, TIMINGS_MAX_SAMPLES);
    timings_free(&t);
    free(s);

    s = big_doc(1, TIMINGS_MAX_SAMPLES + 1, &len);
    kiln_err_clear(&e);
    assert_int_equal(timings_parse(s, len, &t, &e), KILN_E_LIMIT);
    assert_non_null(strstr(e.msg, "100001 samples"));
    free(s);

    s = big_doc(TIMINGS_MAX_CASES + 1, 1, &len);
    kiln_err_clear(&e);
    assert_int_equal(timings_parse(s, len, &t, &e), KILN_E_LIMIT);
    free(s);

    /* 11 cases of 100000: over the document-wide sample cap */
    s = big_doc(11, TIMINGS_MAX_SAMPLES, &len);
    kiln_err_clear(&e);
    assert_int_equal(timings_parse(s, len, &t, &e), KILN_E_LIMIT);
    assert_null(t.cases);
    free(s);
}

static void oversize_document(void **state)
{
    (void)state;
    size_t len = (size_t)TIMINGS_MAX_BYTES + 1;
    char *s = malloc(len);
    assert_non_null(s);
    memset(s, ' ', len);
    struct timings t;
    struct kiln_err e = {0};
    assert_int_equal(timings_parse(s, len, &t, &e), KILN_E_LIMIT);
    assert_null(t.cases);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_document),       cmocka_unit_test(hostile_numbers),
        cmocka_unit_test(wrong_types_and_keys), cmocka_unit_test(deep_nesting),
        cmocka_unit_test(huge_arrays),          cmocka_unit_test(oversize_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
