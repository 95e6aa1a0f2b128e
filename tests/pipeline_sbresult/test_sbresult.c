/* Unit tests of sbspec.h's result.json "device": the node's GPU (names and
 * the properties the physics floor needs) round trip, and what a hostile
 * node could write instead is refused with a message naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbspec.h"

static const struct sbnode_device h200 = {.present = true,
                                          .node = "n1",
                                          .model = "NVIDIA H200",
                                          .uuid = "GPU-0c6f4b0e-1d2a-4a3b-9c8d-7e6f5a4b3c2d",
                                          .driver = "550.54.15",
                                          .bus_id = "0000:19:00.0",
                                          .has_props = true,
                                          .props = {.sm_count = 132,
                                                    .sm_clock_khz = 1980000,
                                                    .cc_major = 9,
                                                    .cc_minor = 0,
                                                    .mem_clock_khz = 3201000,
                                                    .bus_width_bits = 6144,
                                                    .copy_mb_per_s = 4100000}};

/* result.json of an exited step with `dev` (NULL: none). */
static char *result_text(const struct sbnode_device *dev)
{
    struct sandbox_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.policy, sizeof(r.policy), "gpu-run");
    struct kiln_err err;
    kiln_err_clear(&err);
    char *text = NULL;
    assert_int_equal(sbresult_to_json(&r, "node n1", dev, &text, &err), KILN_OK);
    return text;
}

/* Replaces the first `from` in text with `to` (the tests' hostile edits). */
static char *edited(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

static enum kiln_rc parse(const char *text, struct sbnode_device *dev, struct kiln_err *err)
{
    struct sandbox_result r;
    char where[200];
    kiln_err_clear(err);
    enum kiln_rc rc = sbresult_from_json(text, strlen(text), &r, where, sizeof(where), dev, err);
    if (rc == KILN_OK)
        sandbox_result_free(&r);
    return rc;
}

static void round_trip(void **state)
{
    (void)state;
    char *text = result_text(&h200);
    struct sbnode_device d;
    struct kiln_err err;
    assert_int_equal(parse(text, &d, &err), KILN_OK);
    assert_true(d.present && d.has_props);
    assert_string_equal(d.node, "n1");
    assert_string_equal(d.model, h200.model);
    assert_string_equal(d.uuid, h200.uuid);
    assert_string_equal(d.driver, h200.driver);
    assert_string_equal(d.bus_id, h200.bus_id);
    assert_memory_equal(&d.props, &h200.props, sizeof(d.props));
    free(text);
}

static void no_device_and_no_props(void **state)
{
    (void)state;
    struct sbnode_device d;
    struct kiln_err err;
    char *text = result_text(NULL);
    assert_int_equal(parse(text, &d, &err), KILN_OK);
    assert_false(d.present);
    free(text);
    struct sbnode_device names_only = h200;
    names_only.has_props = false;
    text = result_text(&names_only);
    assert_null(strstr(text, "sm_count"));
    assert_int_equal(parse(text, &d, &err), KILN_OK);
    assert_true(d.present);
    assert_false(d.has_props);
    free(text);
}

/* A record archived before the copy measurement existed still loads, with 0 (unknown). */
static void archived_without_copy(void **state)
{
    (void)state;
    char *text = result_text(&h200);
    char *at = strstr(text, "\"copy_mb_per_s\"");
    assert_non_null(at);
    char *comma = at;
    while (comma > text && *comma != ',')
        comma--;
    char *end = at + strcspn(at, ",}\n");
    memmove(comma, end, strlen(end) + 1);
    assert_null(strstr(text, "copy_mb_per_s"));
    struct sbnode_device d;
    struct kiln_err err;
    assert_int_equal(parse(text, &d, &err), KILN_OK);
    assert_true(d.has_props);
    assert_int_equal(d.props.sm_count, 132);
    assert_int_equal(d.props.copy_mb_per_s, 0);
    free(text);
}

/* Each edit of a good result.json must be refused, naming `why`. */
static void hostile(void **state)
{
    (void)state;
    static const struct {
        const char *from, *to, *why;
    } cases[] = {
        {"\"sm_count\": 132", "\"sm_count\": 0", "sm_count out of range"},
        {"\"sm_count\": 132", "\"sm_count\": 1000000", "sm_count out of range"},
        {"\"sm_clock_khz\": 1980000", "\"sm_clock_khz\": -5", "sm_clock_khz out of range"},
        {"\"cc_major\": 9", "\"cc_major\": \"9\"", "cc_major out of range"},
        {"\"bus_width_bits\": 6144", "\"bus_width_bits\": 6144.5", "bus_width_bits out of range"},
        {"\"sm_count\": 132,", "", "all present or all absent"},
        {"\"copy_mb_per_s\": 4100000", "\"copy_mb_per_s\": -1", "copy_mb_per_s out of range"},
        {"\"node\": \"n1\"", "\"node\": \"n1\", \"floor_ms\": 0", "unknown key"},
        {"\"model\": \"NVIDIA H200\"", "\"model\": \"NVIDIA\\u0007H200\"", "unprintable"},
        {"\"uuid\": \"GPU-", "\"uuid\": 7, \"x\": \"", "unknown key"},
        {"\"driver\": \"550.54.15\",", "", "missing required key"},
    };
    char *good = result_text(&h200);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *bad = edited(good, cases[i].from, cases[i].to);
        struct sbnode_device d;
        struct kiln_err err;
        enum kiln_rc rc = parse(bad, &d, &err);
        if (rc == KILN_OK || !strstr(err.msg, cases[i].why))
            fail_msg("case %zu (%s): rc %d, message '%s'", i, cases[i].why, rc, err.msg);
        free(bad);
    }
    /* Not an object, and a model longer than the field. */
    char *bad = edited(good, "\"device\": {", "\"device\": [], \"x\": {");
    struct sbnode_device d;
    struct kiln_err err;
    assert_int_not_equal(parse(bad, &d, &err), KILN_OK);
    free(bad);
    char longer[300];
    memset(longer, 'A', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    char to[340];
    snprintf(to, sizeof(to), "\"model\": \"%s\"", longer);
    bad = edited(good, "\"model\": \"NVIDIA H200\"", to);
    assert_int_equal(parse(bad, &d, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "too long"));
    free(bad);
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(no_device_and_no_props),
        cmocka_unit_test(archived_without_copy),
        cmocka_unit_test(hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
