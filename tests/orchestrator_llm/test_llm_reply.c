/*
 * test_llm_reply.c - the strict parsers of the model's answer and of the
 * chat-completions envelope, on hostile inputs built here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_reply.h"

#define GOOD                                                                                       \
    "{\"source\": \"__global__ void k() {}\", \"rationale\": \"why\", \"language\": \"cuda\"}"

/* Parses `s` expecting failure `rc` with `fragment` in the message. */
static void expect_fail(const char *s, size_t len, enum kiln_rc rc, const char *fragment)
{
    struct llm_proposal p;
    struct kiln_err err = {0};
    enum kiln_rc got = llm_reply_parse(s, len, &p, &err);
    if (got != rc || !strstr(err.msg, fragment))
        fail_msg("input %.60s: got rc %d \"%s\", wanted rc %d with \"%s\"", s, got, err.msg, rc,
                 fragment);
    assert_null(p.source);
    assert_null(p.rationale);
}

static void expect_fail_str(const char *s, enum kiln_rc rc, const char *fragment)
{
    expect_fail(s, strlen(s), rc, fragment);
}

static void expect_ok(const char *s, enum llm_language lang, const char *source)
{
    struct llm_proposal p;
    struct kiln_err err = {0};
    enum kiln_rc got = llm_reply_parse(s, strlen(s), &p, &err);
    if (got != KILN_OK)
        fail_msg("input %.60s: got rc %d \"%s\"", s, got, err.msg);
    assert_int_equal(p.language, lang);
    assert_string_equal(p.source, source);
    assert_int_equal(p.source_len, strlen(source));
    llm_proposal_free(&p);
    assert_null(p.source);
}

static void test_accepts_plain_and_fenced(void **state)
{
    (void)state;
    expect_ok(GOOD, LLM_LANG_CUDA, "__global__ void k() {}");
    expect_ok("\n  " GOOD "  \n", LLM_LANG_CUDA, "__global__ void k() {}");
    expect_ok("```json\n" GOOD "\n```", LLM_LANG_CUDA, "__global__ void k() {}");
    expect_ok("\n```JSON  \r\n" GOOD "\r\n```\n\n", LLM_LANG_CUDA, "__global__ void k() {}");
    expect_ok("```\n" GOOD "\n```", LLM_LANG_CUDA, "__global__ void k() {}");
    expect_ok("{\"language\":\"c\",\"rationale\":\"\",\"source\":\"void f(void){}\\n\"}",
              LLM_LANG_C, "void f(void){}\n");
    /* Escapes decode; a fence inside a JSON string is just text. */
    expect_ok("{\"source\":\"a\\n```\\n\\u00e9\",\"rationale\":\"r\",\"language\":\"cuda\"}",
              LLM_LANG_CUDA, "a\n```\n\xc3\xa9");
}

static void test_rejects_text_around_json(void **state)
{
    (void)state;
    expect_fail_str("Here is the kernel: " GOOD, KILN_E_REJECTED,
                    "reply must be one JSON object (optionally in a single ```json fence) and "
                    "nothing else; it starts with \"Here is the kernel: ");
    expect_fail_str(GOOD " Hope this helps!", KILN_E_PARSE,
                    "reply: not valid JSON at line 1 column");
    expect_fail_str("```json\n" GOOD "\n```\nHope this helps!", KILN_E_REJECTED,
                    "does not end with its closing ```");
    expect_fail_str("```python\n" GOOD "\n```", KILN_E_REJECTED, "not ```json followed by");
    expect_fail_str("```json " GOOD "```", KILN_E_REJECTED, "not ```json followed by");
    expect_fail_str("```json\n" GOOD "\n```\n```json\n" GOOD "\n```", KILN_E_REJECTED,
                    "more than one code fence");
    expect_fail_str("```json\n" GOOD "```", KILN_E_REJECTED, "does not end with its closing");
    expect_fail_str("", KILN_E_REJECTED, "reply was empty");
    expect_fail_str(" \n\t ", KILN_E_REJECTED, "reply was empty");
    expect_fail_str("```", KILN_E_REJECTED, "not ```json followed by a newline");
    expect_fail_str("```json\n```", KILN_E_REJECTED, "does not end with its closing");
    expect_fail_str("```json\n\n```", KILN_E_PARSE, "not valid JSON");
}

static void test_reports_json_position(void **state)
{
    (void)state;
    struct llm_proposal p;
    struct kiln_err err = {0};
    const char *s = "{\"source\": \"x\", \"rationale\": ";
    assert_int_equal(llm_reply_parse(s, strlen(s), &p, &err), KILN_E_PARSE);
    assert_string_equal(err.msg, "reply: not valid JSON at line 1 column 28: unexpected "
                                 "token near end of file");
    /* Inside a fence, lines count from the start of the reply. */
    kiln_err_clear(&err);
    s = "```json\n{\n  \"source\": x\n}\n```";
    assert_int_equal(llm_reply_parse(s, strlen(s), &p, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "at line 3 column"));
}

static void test_rejects_wrong_shape(void **state)
{
    (void)state;
    expect_fail_str("[" GOOD "]", KILN_E_REJECTED, "it starts with \"[");
    expect_fail_str("{\"source\":\"s\",\"rationale\":\"r\"}", KILN_E_REJECTED,
                    "reply is missing the required key \"language\"");
    expect_fail_str("{\"rationale\":\"r\",\"language\":\"c\"}", KILN_E_REJECTED,
                    "missing the required key \"source\"");
    expect_fail_str("{\"source\":\"s\",\"language\":\"c\"}", KILN_E_REJECTED,
                    "missing the required key \"rationale\"");
    expect_fail_str("{\"source\":\"s\",\"rationale\":\"r\",\"language\":\"c\",\"plan\":{}}",
                    KILN_E_REJECTED,
                    "reply has the unknown key \"plan\"; the only keys allowed are source, "
                    "rationale and language");
    expect_fail_str("{\"source\":1,\"rationale\":\"r\",\"language\":\"c\"}", KILN_E_REJECTED,
                    "reply key \"source\" must be a JSON string");
    expect_fail_str("{\"source\":\"s\",\"rationale\":null,\"language\":\"c\"}", KILN_E_REJECTED,
                    "reply key \"rationale\" must be a JSON string");
    expect_fail_str("{\"source\":\"s\",\"rationale\":\"r\",\"language\":[\"c\"]}", KILN_E_REJECTED,
                    "reply key \"language\" must be a JSON string");
    expect_fail_str("{\"source\":\"s\",\"rationale\":\"r\",\"language\":\"CUDA\"}", KILN_E_REJECTED,
                    "reply key \"language\" must be \"cuda\" or \"c\", not \"CUDA\"");
    expect_fail_str("{\"source\":\"\",\"rationale\":\"r\",\"language\":\"c\"}", KILN_E_REJECTED,
                    "reply key \"source\" is empty");
    expect_fail_str("{\"source\":\"a\",\"source\":\"b\",\"rationale\":\"r\",\"language\":\"c\"}",
                    KILN_E_PARSE, "duplicate object key");
    /* Control characters in an unknown key are escaped in the message. */
    expect_fail_str("{\"\\u001b[31m\":1}", KILN_E_REJECTED, "unknown key \"\\x1b[31m\"");
}

static void test_rejects_nul_and_bad_utf8(void **state)
{
    (void)state;
    expect_fail_str("{\"source\":\"a\\u0000b\",\"rationale\":\"r\",\"language\":\"c\"}",
                    KILN_E_PARSE, "not valid JSON");
    static const char raw_nul[] = "{\"source\":\"a\0b\",\"rationale\":\"r\",\"language\":\"c\"}";
    expect_fail(raw_nul, sizeof(raw_nul) - 1, KILN_E_REJECTED, "NUL byte at offset 12");
    expect_fail_str("{\"source\":\"\xff\",\"rationale\":\"r\",\"language\":\"c\"}", KILN_E_PARSE,
                    "not valid JSON");
}

static char *reply_with(size_t source_len, size_t rationale_len)
{
    size_t cap = source_len + rationale_len + 128;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t o = (size_t)sprintf(s, "{\"source\":\"");
    memset(s + o, 'a', source_len);
    o += source_len;
    o += (size_t)sprintf(s + o, "\",\"rationale\":\"");
    memset(s + o, 'b', rationale_len);
    o += rationale_len;
    sprintf(s + o, "\",\"language\":\"cuda\"}");
    return s;
}

static void test_size_limits(void **state)
{
    (void)state;
    struct llm_proposal p;
    struct kiln_err err = {0};
    char *s = reply_with(LLM_SOURCE_MAX, LLM_RATIONALE_MAX);
    assert_int_equal(llm_reply_parse(s, strlen(s), &p, &err), KILN_OK);
    assert_int_equal(p.source_len, LLM_SOURCE_MAX);
    assert_int_equal(strlen(p.rationale), LLM_RATIONALE_MAX);
    llm_proposal_free(&p);
    free(s);

    s = reply_with(LLM_SOURCE_MAX + 1, 1);
    expect_fail_str(s, KILN_E_LIMIT,
                    "reply key \"source\" is 1048577 bytes; the limit is 1048576 bytes");
    free(s);
    s = reply_with(1, LLM_RATIONALE_MAX + 1);
    expect_fail_str(s, KILN_E_LIMIT, "reply key \"rationale\" is 4097 bytes");
    free(s);

    /* The whole content is capped before parsing. */
    s = malloc(LLM_CONTENT_MAX + 2);
    assert_non_null(s);
    memset(s, ' ', LLM_CONTENT_MAX + 1);
    s[LLM_CONTENT_MAX + 1] = '\0';
    expect_fail(s, LLM_CONTENT_MAX + 1, KILN_E_LIMIT, "reply is 4194305 bytes");
    free(s);
}

static void test_deep_nesting_is_an_error_not_a_crash(void **state)
{
    (void)state;
    size_t n = 100000;
    char *s = malloc(2 * n + 1);
    assert_non_null(s);
    memset(s, '[', n);
    memset(s + n, ']', n);
    s[2 * n] = '\0';
    s[0] = '{';
    /* Refused by the nesting cap before jansson recurses. */
    expect_fail_str(s, KILN_E_LIMIT, "nested deeper than 32 levels");
    free(s);
}

/* --- the envelope ------------------------------------------------------- */

static enum kiln_rc envelope(const char *body, char **content, struct llm_usage *u,
                             struct kiln_err *err)
{
    size_t n;
    return llm_envelope_parse(body, strlen(body), content, &n, u, err);
}

static void test_envelope_good(void **state)
{
    (void)state;
    char *c;
    struct llm_usage u;
    struct kiln_err err = {0};
    assert_int_equal(envelope("{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                              "\"assistant\",\"content\":\"hi\\n\"},\"finish_reason\":\"stop\"}],"
                              "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}",
                              &c, &u, &err),
                     KILN_OK);
    assert_string_equal(c, "hi\n");
    assert_int_equal(u.prompt_tokens, 7);
    assert_int_equal(u.completion_tokens, 3);
    free(c);
    /* No usage, null finish_reason (some local servers). */
    assert_int_equal(envelope("{\"choices\":[{\"message\":{\"content\":\"x\"},\"finish_reason\":"
                              "null}],\"usage\":{\"prompt_tokens\":-4,\"completion_tokens\":"
                              "\"3\"}}",
                              &c, &u, &err),
                     KILN_OK);
    assert_int_equal(u.prompt_tokens, -1);
    assert_int_equal(u.completion_tokens, -1);
    free(c);
}

static void expect_envelope_fail(const char *body, enum kiln_rc rc, const char *fragment)
{
    char *c = (char *)1;
    struct llm_usage u;
    struct kiln_err err = {0};
    enum kiln_rc got = envelope(body, &c, &u, &err);
    if (got != rc || !strstr(err.msg, fragment))
        fail_msg("envelope %.60s: got rc %d \"%s\", wanted rc %d with \"%s\"", body, got, err.msg,
                 rc, fragment);
    assert_null(c);
}

static void test_envelope_bad(void **state)
{
    (void)state;
    expect_envelope_fail(
        "", KILN_E_PARSE,
        "the server's reply (is --base-url an OpenAI-compatible API?): not valid JSON");
    expect_envelope_fail("[]", KILN_E_PARSE, "the top level must be an object");
    expect_envelope_fail("{}", KILN_E_PARSE, "no \"choices\" array");
    expect_envelope_fail("{\"choices\":[]}", KILN_E_PARSE, "no \"choices\" array");
    expect_envelope_fail("{\"error\":{\"message\":\"overloaded\"}}", KILN_E_PARSE,
                         "the server returned an error: \"overloaded\"");
    expect_envelope_fail("{\"choices\":[1]}", KILN_E_PARSE, "no choices[0].message object");
    expect_envelope_fail("{\"choices\":[{\"message\":\"hi\"}]}", KILN_E_PARSE,
                         "no choices[0].message object");
    expect_envelope_fail("{\"choices\":[{\"message\":{}}]}", KILN_E_REJECTED,
                         "choices[0].message.content is missing");
    expect_envelope_fail("{\"choices\":[{\"message\":{\"content\":null,\"tool_calls\":[]}}]}",
                         KILN_E_REJECTED, "choices[0].message.content is null");
    expect_envelope_fail("{\"choices\":[{\"message\":{\"content\":5}}]}", KILN_E_REJECTED,
                         "is not a string");
    expect_envelope_fail("{\"choices\":[{\"message\":{\"content\":\"x\"},\"finish_reason\":7}]}",
                         KILN_E_PARSE, "finish_reason is not a string");
    expect_envelope_fail(
        "{\"choices\":[{\"message\":{\"content\":\"x\"},\"finish_reason\":\"content_filter\"}]}",
        KILN_E_REJECTED, "content filter");
    expect_envelope_fail("{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"no\"}}]}",
                         KILN_E_REJECTED, "the model refused: \"no\"");
    expect_envelope_fail("{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"choices\":[]}",
                         KILN_E_PARSE, "duplicate");
}

static void test_envelope_truncated_keeps_usage(void **state)
{
    (void)state;
    char *c;
    struct llm_usage u;
    struct kiln_err err = {0};
    assert_int_equal(envelope("{\"choices\":[{\"message\":{\"content\":\"{\\\"sou\"},"
                              "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":10,"
                              "\"completion_tokens\":2048}}",
                              &c, &u, &err),
                     KILN_E_LIMIT);
    assert_null(c);
    assert_int_equal(u.prompt_tokens, 10);
    assert_int_equal(u.completion_tokens, 2048);
    assert_non_null(strstr(err.msg, "the reply was truncated (finish_reason \"length\")"));
}

static void test_snippet(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(llm_snippet("a\"b\\\n", 5, buf, sizeof(buf)), "\"a\\x22b\\x5c\\x0a\"");
    char longs[100];
    memset(longs, 'z', sizeof(longs));
    llm_snippet(longs, sizeof(longs), buf, sizeof(buf));
    assert_true(strlen(buf) < sizeof(buf));
    char tiny[4];
    llm_snippet("abcdef", 6, tiny, sizeof(tiny));
    assert_true(strlen(tiny) < sizeof(tiny));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_plain_and_fenced),
        cmocka_unit_test(test_rejects_text_around_json),
        cmocka_unit_test(test_reports_json_position),
        cmocka_unit_test(test_rejects_wrong_shape),
        cmocka_unit_test(test_rejects_nul_and_bad_utf8),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_deep_nesting_is_an_error_not_a_crash),
        cmocka_unit_test(test_envelope_good),
        cmocka_unit_test(test_envelope_bad),
        cmocka_unit_test(test_envelope_truncated_keeps_usage),
        cmocka_unit_test(test_snippet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
