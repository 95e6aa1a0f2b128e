/*
 * timings.c - strict parser of timings.json (VERDICT.md section 1).
 */
#include "timings.h"

#include "json_strict.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= TIMINGS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

/* Reads integer key `key` of `obj` into *out within [lo, hi]. */
static enum kiln_rc get_int(json_t *obj, const char *key, long long lo, long long hi, size_t ci,
                            long long *out, struct kiln_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return kiln_fail(err, KILN_E_PARSE, "timings.json: case %zu: \"%s\" must be an integer", ci,
                         key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return kiln_fail(err, KILN_E_REJECTED,
                         "timings.json: case %zu: \"%s\" is %lld, outside %lld .. %lld", ci, key, x,
                         lo, hi);
    *out = x;
    return KILN_OK;
}

static enum kiln_rc parse_samples(json_t *arr, size_t ci, size_t *total, struct timings_case *tc,
                                  struct kiln_err *err)
{
    if (!json_is_array(arr))
        return kiln_fail(err, KILN_E_PARSE,
                         "timings.json: case %zu: \"samples_ms\" must be an array", ci);
    size_t n = json_array_size(arr);
    if (n == 0)
        return kiln_fail(err, KILN_E_REJECTED, "timings.json: case %zu: no samples", ci);
    if (n > TIMINGS_MAX_SAMPLES)
        return kiln_fail(err, KILN_E_LIMIT,
                         "timings.json: case %zu: %zu samples, more than the %d allowed", ci, n,
                         TIMINGS_MAX_SAMPLES);
    if (n > TIMINGS_MAX_TOTAL_SAMPLES - *total)
        return kiln_fail(err, KILN_E_LIMIT, "timings.json: more than %d samples in all",
                         TIMINGS_MAX_TOTAL_SAMPLES);
    *total += n;
    tc->samples_ms = malloc(n * sizeof(double));
    if (!tc->samples_ms)
        return kiln_fail(err, KILN_E_NOMEM, "timings.json: out of memory for %zu samples", n);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, i);
        if (!json_is_number(v))
            return kiln_fail(err, KILN_E_PARSE,
                             "timings.json: case %zu: sample %zu is not a number", ci, i);
        double x = json_number_value(v);
        if (!isfinite(x) || !(x > 0.0) || x > TIMINGS_MAX_SAMPLE_MS)
            return kiln_fail(err, KILN_E_REJECTED,
                             "timings.json: case %zu: sample %zu is %g; samples must be finite, "
                             "> 0 and at most %g ms",
                             ci, i, x, TIMINGS_MAX_SAMPLE_MS);
        tc->samples_ms[i] = x;
    }
    tc->nsamples = n;
    return KILN_OK;
}

static enum kiln_rc parse_case(json_t *o, size_t ci, size_t *total, struct timings_case *tc,
                               struct kiln_err *err)
{
    if (!json_is_object(o))
        return kiln_fail(err, KILN_E_PARSE, "timings.json: case %zu is not an object", ci);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (strcmp(key, "case") && strcmp(key, "set") && strcmp(key, "samples_ms") &&
            strcmp(key, "fingerprint_ok") && strcmp(key, "warmup") && strcmp(key, "l2_flush"))
            return kiln_fail(err, KILN_E_PARSE,
                             "timings.json: case %zu: unknown key \"%.64s\" (see VERDICT.md)", ci,
                             key);
    }
    json_t *name = json_object_get(o, "case");
    if (!json_is_string(name) || !name_ok(json_string_value(name)))
        return kiln_fail(err, KILN_E_PARSE,
                         "timings.json: case %zu: \"case\" must be a name of 1..63 bytes of "
                         "[A-Za-z0-9_.-]",
                         ci);
    strcpy(tc->name, json_string_value(name));
    long long x = 0;
    enum kiln_rc rc = get_int(o, "set", 0, TIMINGS_MAX_SET, ci, &x, err);
    if (rc)
        return rc;
    tc->set = (int)x;
    json_t *fp = json_object_get(o, "fingerprint_ok");
    if (!json_is_boolean(fp))
        return kiln_fail(err, KILN_E_PARSE,
                         "timings.json: case %zu: \"fingerprint_ok\" must be a boolean", ci);
    tc->fingerprint_ok = json_is_true(fp);
    tc->warmup = -1;
    if (json_object_get(o, "warmup")) {
        rc = get_int(o, "warmup", 0, TIMINGS_MAX_WARMUP, ci, &x, err);
        if (rc)
            return rc;
        tc->warmup = (int)x;
    }
    tc->l2_flush = -1;
    json_t *l2 = json_object_get(o, "l2_flush");
    if (l2) {
        if (!json_is_boolean(l2))
            return kiln_fail(err, KILN_E_PARSE,
                             "timings.json: case %zu: \"l2_flush\" must be a boolean", ci);
        tc->l2_flush = json_is_true(l2);
    }
    return parse_samples(json_object_get(o, "samples_ms"), ci, total, tc, err);
}

static enum kiln_rc parse_root(json_t *root, struct timings *out, struct kiln_err *err)
{
    if (!json_is_object(root))
        return kiln_fail(err, KILN_E_PARSE, "timings.json: the top level must be an object");
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "version") && strcmp(key, "cases"))
            return kiln_fail(err, KILN_E_PARSE,
                             "timings.json: unknown top-level key \"%.64s\" (see VERDICT.md)", key);
    }
    json_t *ver = json_object_get(root, "version");
    if (!json_is_integer(ver) || json_integer_value(ver) != TIMINGS_VERSION)
        return kiln_fail(err, KILN_E_PARSE, "timings.json: \"version\" must be the integer %d",
                         TIMINGS_VERSION);
    json_t *cases = json_object_get(root, "cases");
    if (!json_is_array(cases))
        return kiln_fail(err, KILN_E_PARSE, "timings.json: \"cases\" must be an array");
    size_t n = json_array_size(cases);
    /* No entries is valid: a plan with no timed (performance) case. */
    if (n == 0)
        return KILN_OK;
    if (n > TIMINGS_MAX_CASES)
        return kiln_fail(err, KILN_E_LIMIT, "timings.json: %zu cases, more than the %d allowed", n,
                         TIMINGS_MAX_CASES);
    out->cases = calloc(n, sizeof(*out->cases));
    if (!out->cases)
        return kiln_fail(err, KILN_E_NOMEM, "timings.json: out of memory for %zu cases", n);
    out->ncases = n;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        enum kiln_rc rc = parse_case(json_array_get(cases, i), i, &total, &out->cases[i], err);
        if (rc)
            return rc;
        /* Quadratic, but n <= 1024 and names are short. */
        for (size_t j = 0; j < i; j++) {
            if (out->cases[j].set == out->cases[i].set &&
                strcmp(out->cases[j].name, out->cases[i].name) == 0)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "timings.json: case \"%s\" set %d appears twice",
                                 out->cases[i].name, out->cases[i].set);
        }
    }
    return KILN_OK;
}

enum kiln_rc timings_parse(const void *buf, size_t len, struct timings *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    static const struct json_strict_rules rules = {.max_bytes = TIMINGS_MAX_BYTES,
                                                   .max_depth = TIMINGS_MAX_DEPTH};
    json_t *root;
    enum kiln_rc rc = json_strict_parse("timings.json", buf, len, &rules, &root, err);
    if (rc)
        return rc;
    rc = parse_root(root, out, err);
    json_decref(root);
    if (rc)
        timings_free(out);
    return rc;
}

void timings_free(struct timings *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ncases; i++)
        free(t->cases[i].samples_ms);
    free(t->cases);
    t->cases = NULL;
    t->ncases = 0;
}

const struct timings_case *timings_find(const struct timings *t, const char *name, int set)
{
    for (size_t i = 0; i < t->ncases; i++) {
        if (t->cases[i].set == set && strcmp(t->cases[i].name, name) == 0)
            return &t->cases[i];
    }
    return NULL;
}
