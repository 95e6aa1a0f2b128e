/* The one strict JSON reader (base/json_strict.h): each rule, each message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "json_strict.h"

static enum kiln_rc parse(const char *text, const struct json_strict_rules *r, json_t **out,
                          struct kiln_err *e)
{
    kiln_err_clear(e);
    return json_strict_parse("doc.json", text, strlen(text), r, out, e);
}

static void accepts_an_object(void **state)
{
    (void)state;
    struct json_strict_rules r = {.max_bytes = 100};
    struct kiln_err e;
    json_t *j = NULL;
    assert_int_equal(parse("{\"a\": [1, {\"b\": 2}]}", &r, &j, &e), KILN_OK);
    assert_non_null(j);
    json_decref(j);
}

static void refuses_each_rule_by_name(void **state)
{
    (void)state;
    struct json_strict_rules r = {.max_bytes = 16, .max_depth = 2};
    struct kiln_err e;
    json_t *j = (json_t *)1;
    assert_int_equal(parse("{\"a\": \"0123456789\"}", &r, &j, &e), KILN_E_LIMIT);
    assert_null(j);
    assert_string_equal(e.msg, "doc.json: 19 bytes; the limit is 16");
    assert_int_equal(parse("{\"a\":[[1]]}", &r, &j, &e), KILN_E_LIMIT);
    assert_string_equal(e.msg, "doc.json: nested deeper than 2 levels");
    assert_int_equal(parse("{\"a\":1,\"a\":2}", &r, &j, &e), KILN_E_PARSE);
    assert_non_null(strstr(e.msg, "doc.json: not valid JSON at line 1 column"));
    assert_non_null(strstr(e.msg, "duplicate object key"));
    assert_int_equal(parse("[1]", &r, &j, &e), KILN_E_PARSE);
    assert_string_equal(e.msg, "doc.json: the top level must be an object");
    r.any_top = true;
    assert_int_equal(parse("[1]", &r, &j, &e), KILN_OK);
    json_decref(j);
    /* A NUL byte inside the stated length. */
    kiln_err_clear(&e);
    assert_int_equal(json_strict_parse("doc.json", "{}\0{}", 5, &r, &j, &e), KILN_E_PARSE);
    assert_string_equal(e.msg, "doc.json: NUL byte in the document");
    /* The caller's code for malformed input, and a line offset. */
    struct json_strict_rules r2 = {.max_bytes = 100, .parse_rc = KILN_E_REJECTED, .line_offset = 2};
    assert_int_equal(parse("{\n\"a\": }", &r2, &j, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "at line 4 column"));
}

static void checks_keys_and_quotes_them(void **state)
{
    (void)state;
    static const char *const allowed[] = {"a", "b", NULL};
    static const char *const required[] = {"a", NULL};
    struct json_strict_rules r = {.max_bytes = 100};
    struct kiln_err e;
    json_t *j;
    assert_int_equal(parse("{\"a\": 1, \"b\": 2}", &r, &j, &e), KILN_OK);
    assert_null(json_strict_unknown_key(j, allowed));
    assert_int_equal(json_strict_keys(j, "doc", allowed, required, &e), KILN_OK);
    json_decref(j);
    assert_int_equal(parse("{\"b\": 2}", &r, &j, &e), KILN_OK);
    assert_int_equal(json_strict_keys(j, "doc", allowed, required, &e), KILN_E_PARSE);
    assert_string_equal(e.msg, "doc: missing required key \"a\"");
    json_decref(j);
    assert_int_equal(parse("{\"a\": 1, \"\\u001b[31m\": 2}", &r, &j, &e), KILN_OK);
    assert_string_equal(json_strict_unknown_key(j, allowed), "\x1b[31m");
    kiln_err_clear(&e);
    assert_int_equal(json_strict_keys(j, "doc", allowed, NULL, &e), KILN_E_PARSE);
    assert_string_equal(e.msg, "doc: unknown key \"\\x1b[31m\"");
    json_decref(j);
    char q[8];
    assert_string_equal(json_strict_quote("abcdefghij", q, sizeof(q)), "abcd...");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_an_object),
        cmocka_unit_test(refuses_each_rule_by_name),
        cmocka_unit_test(checks_keys_and_quotes_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
