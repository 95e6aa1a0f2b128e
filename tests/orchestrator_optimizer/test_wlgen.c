/* test_wlgen.c - the parser of a generated workload (wlgen_reply.h) and the
 * prompt that asks for one (wlgen.h). The end-to-end generation, its checks
 * and its record are tested by tests/pipeline_cli/generate.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wlgen.h"
#include "wlgen_reply.h"

#define GOOD                                                                                       \
    "{\"workload_json\": \"{\\\"name\\\": \\\"t\\\"}\", \"inputs_py\": \"import numpy\\n\", "      \
    "\"reference_py\": \"import numpy\\n\", \"kernel_cu\": null, \"kernel_c\": \"void f(void) "    \
    "{}\\n\", \"rationale\": \"float64\"}"

static enum kiln_rc parse(const char *text, struct wlgen_reply *r, struct kiln_err *e)
{
    kiln_err_clear(e);
    return wlgen_reply_parse(text, strlen(text), r, e);
}

static void parse_bad(const char *text, enum kiln_rc want, const char *msg)
{
    struct wlgen_reply r;
    struct kiln_err e;
    assert_int_equal(parse(text, &r, &e), want);
    for (int f = 0; f < WL_FILE_COUNT; f++)
        assert_null(r.files[f]);
    assert_null(r.rationale);
    if (!strstr(e.msg, msg))
        fail_msg("message '%s' lacks '%s'", e.msg, msg);
}

/* GOOD with `from` replaced by `to`. */
static void mutate_bad(const char *from, const char *to, enum kiln_rc want, const char *msg)
{
    char buf[1024];
    const char *at = strstr(GOOD, from);
    assert_non_null(at);
    snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - GOOD), GOOD, to, at + strlen(from));
    parse_bad(buf, want, msg);
}

static void reply_good(void **state)
{
    (void)state;
    struct wlgen_reply r;
    struct kiln_err e;
    assert_int_equal(parse(GOOD, &r, &e), KILN_OK);
    assert_string_equal(r.files[WL_FILE_JSON], "{\"name\": \"t\"}");
    assert_int_equal(r.lens[WL_FILE_JSON], strlen("{\"name\": \"t\"}"));
    assert_string_equal(r.files[WL_FILE_INPUTS], "import numpy\n");
    assert_string_equal(r.files[WL_FILE_REFERENCE], "import numpy\n");
    assert_null(r.files[WL_FILE_KERNEL_CU]);
    assert_string_equal(r.files[WL_FILE_KERNEL_C], "void f(void) {}\n");
    assert_string_equal(r.rationale, "float64");
    wlgen_reply_free(&r);
    wlgen_reply_free(&r); /* twice is fine */

    /* One ```json fence is tolerated, as for candidates; kernel_cu may be absent. */
    char fenced[1024];
    snprintf(fenced, sizeof(fenced), "```json\n%s\n```\n", GOOD);
    assert_int_equal(parse(fenced, &r, &e), KILN_OK);
    wlgen_reply_free(&r);
    char *noc = strdup(GOOD);
    char *at = strstr(noc, "\"kernel_cu\": null, ");
    memmove(at, at + strlen("\"kernel_cu\": null, "),
            strlen(at + strlen("\"kernel_cu\": null, ")) + 1);
    assert_int_equal(parse(noc, &r, &e), KILN_OK);
    assert_null(r.files[WL_FILE_KERNEL_CU]);
    wlgen_reply_free(&r);
    free(noc);
}

static void reply_bad(void **state)
{
    (void)state;
    parse_bad("", KILN_E_REJECTED, "reply was empty");
    parse_bad("Here it is: {}", KILN_E_REJECTED, "reply must be one JSON object");
    parse_bad("{\"workload_json\": ", KILN_E_PARSE, "not valid JSON");
    parse_bad("[1]", KILN_E_REJECTED, "it starts with \"[1]\"");
    parse_bad("```json\n[1]\n```", KILN_E_REJECTED, "not a JSON array");
    mutate_bad("\"rationale\": \"float64\"", "\"rationale\": \"x\", \"extra\": 1", KILN_E_REJECTED,
               "unknown key \"extra\"");
    mutate_bad("\"inputs_py\": \"import numpy\\n\", ", "", KILN_E_REJECTED,
               "missing the required key \"inputs_py\"");
    mutate_bad(", \"rationale\": \"float64\"", "", KILN_E_REJECTED,
               "missing the required key \"rationale\"");
    mutate_bad("\"{\\\"name\\\": \\\"t\\\"}\"", "{\"name\": \"t\"}", KILN_E_REJECTED,
               "\"workload_json\" must be a JSON string (the file's text, not an object)");
    mutate_bad("\"kernel_c\": \"void f(void) {}\\n\"", "\"kernel_c\": 3", KILN_E_REJECTED,
               "\"kernel_c\" must be a JSON string or null");
    mutate_bad("\"kernel_c\": \"void f(void) {}\\n\"", "\"kernel_c\": null", KILN_E_REJECTED,
               "neither kernel_cu nor kernel_c");
    mutate_bad("\"reference_py\": \"import numpy\\n\"", "\"reference_py\": \"\"", KILN_E_REJECTED,
               "\"reference_py\" is empty");
    mutate_bad("\"rationale\": \"float64\"", "\"rationale\": \"float64\", \"rationale\": \"x\"",
               KILN_E_PARSE, "duplicate object key");
    mutate_bad("import numpy\\n\", \"reference_py\"", "a\\u0000b\", \"reference_py\"", KILN_E_PARSE,
               "not valid JSON");
    /* Caps: the loader's own (workload.json 256 KiB), and the rationale's. */
    size_t big = WL_MAX_JSON + 2;
    char *pad = malloc(big + 1);
    memset(pad, 'x', big);
    pad[big] = '\0';
    char *text = malloc(big + 256);
    snprintf(text, big + 256,
             "{\"workload_json\": \"%s\", \"inputs_py\": \"a\", \"reference_py\": "
             "\"a\", \"kernel_c\": \"a\", \"rationale\": \"\"}",
             pad);
    parse_bad(text, KILN_E_LIMIT, "\"workload_json\" is 262146 bytes; the limit is 262144");
    pad[WLGEN_RATIONALE_MAX + 1] = '\0';
    snprintf(text, big + 256,
             "{\"workload_json\": \"{}\", \"inputs_py\": \"a\", \"reference_py\": "
             "\"a\", \"kernel_c\": \"a\", \"rationale\": \"%s\"}",
             pad);
    parse_bad(text, KILN_E_LIMIT, "\"rationale\" is 4097 bytes");
    free(pad);
    free(text);
    /* A raw NUL inside the content is named. */
    char nul[] = "{\"workload_json\": \"a\0b\"}";
    struct wlgen_reply r;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(wlgen_reply_parse(nul, sizeof(nul) - 1, &r, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "NUL byte at offset 20"));
}

static void schema_is_strict(void **state)
{
    (void)state;
    const char *s = wlgen_reply_schema();
    assert_non_null(strstr(s, "\"additionalProperties\":false"));
    assert_non_null(strstr(s, "\"required\":[\"workload_json\",\"inputs_py\",\"reference_py\","
                              "\"kernel_cu\",\"kernel_c\",\"rationale\"]"));
}

static void prompt_first_and_retry(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    char *p = wlgen_build_prompt("row sums of a float32 matrix", KILN_BACKEND_CPU, NULL, NULL, &e);
    if (!p)
        fail_msg("%s", e.msg);
    assert_non_null(strstr(p, "row sums of a float32 matrix"));
    assert_non_null(strstr(p, "set \"backends\": [\"cpu\"]"));
    assert_non_null(strstr(p, "send kernel_c (and kernel_cu null)"));
    assert_non_null(strstr(p, "## `workload.json`"));     /* workloads/README.md */
    assert_non_null(strstr(p, "# The candidate format")); /* evaluator/CANDIDATE.md */
    assert_non_null(strstr(p, "--- kernel.c ---"));
    assert_null(strstr(p, "--- kernel.cu ---"));
    assert_null(strstr(p, "previous answer"));
    free(p);

    p = wlgen_build_prompt("d", KILN_BACKEND_CUDA, NULL, NULL, &e);
    assert_non_null(p);
    assert_non_null(strstr(p, "set \"backends\": [\"cuda\"]"));
    assert_non_null(strstr(p, "--- kernel.cu ---"));
    assert_non_null(strstr(p, "extern \"C\" __global__"));
    free(p);

    /* A retry quotes the problems and the previous answer; untrusted bytes
     * (a script's output) arrive as valid UTF-8 without control characters. */
    char prev[30000];
    memset(prev, 'p', sizeof(prev) - 1);
    prev[sizeof(prev) - 1] = '\0';
    memcpy(prev + (24u << 10) - 1, "\xc3\xa9", 2); /* a character across the cut */
    p = wlgen_build_prompt("d", KILN_BACKEND_CPU, "inputs.py failed: \xff\x1b[31mred\n\xc3\xa9",
                           prev, &e);
    assert_non_null(p);
    assert_non_null(strstr(p, "The problems kiln found:\ninputs.py failed: ??[31mred\n\xc3\xa9"));
    assert_non_null(strstr(p, "Your previous answer was:\n```\npppp"));
    assert_non_null(strstr(p, "p?\n[... cut]\n```\nFix every problem"));
    assert_null(strstr(p, "\x1b"));
    free(p);
}

static void prompt_needs_kiln_docs(void **state)
{
    (void)state;
    const char *old = getenv("KILN_DATA_DIR");
    char *keep = old ? strdup(old) : NULL;
    setenv("KILN_DATA_DIR", "/nonexistent-kiln-data", 1);
    struct kiln_err e;
    kiln_err_clear(&e);
    char *p = wlgen_build_prompt("d", KILN_BACKEND_CPU, NULL, NULL, &e);
    assert_null(p);
    assert_non_null(strstr(e.msg, "workloads/README.md"));
    assert_non_null(strstr(e.msg, "KILN_DATA_DIR"));
    if (keep)
        setenv("KILN_DATA_DIR", keep, 1);
    else
        unsetenv("KILN_DATA_DIR");
    free(keep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reply_good),
        cmocka_unit_test(reply_bad),
        cmocka_unit_test(schema_is_strict),
        cmocka_unit_test(prompt_first_and_retry),
        cmocka_unit_test(prompt_needs_kiln_docs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
