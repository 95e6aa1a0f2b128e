/* tuner_findings_parse.c - the parsers of an earlier run's record for
 * --tuner-run (tuner_findings.h): hostile bytes in, checked names and
 * numbers out. Keys a parser does not use are ignored (the record has
 * many); the ones it uses must have the right type and range. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_strict.h"
#include "tuner_findings.h"

static bool is_alpha(char c)
{
    return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A C identifier of at most `max` bytes. */
static bool is_ident(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max || !is_alpha(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_alpha(s[i]) && !is_digit(s[i]))
            return false;
    return true;
}

/* A workload name: letters, digits, '_', '-', '.' (workloads/README.md). */
static bool is_plain(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '-' && s[i] != '.')
            return false;
    return true;
}

/* A candidate id: 3..6 digits ("007"), safe in a path. */
static bool is_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 3 || n > 6)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_digit(s[i]))
            return false;
    return true;
}

static enum kiln_rc parse(const char *what, const void *buf, size_t len, size_t max, bool any_top,
                          json_t **out, struct kiln_err *err)
{
    struct json_strict_rules rules = {.max_bytes = max, .any_top = any_top};
    return json_strict_parse(what, buf, len, &rules, out, err);
}

static const char *str_of(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

enum kiln_rc tuner_findings_parse_run(const char *what, const void *buf, size_t len,
                                      struct findings_run *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *doc = NULL;
    enum kiln_rc rc = parse(what, buf, len, FINDINGS_RUN_MAX, false, &doc, err);
    if (rc != KILN_OK)
        return rc;
    const char *name = str_of(json_object_get(doc, "workload"), "name");
    const char *backend = str_of(doc, "backend"), *proposer = str_of(doc, "proposer");
    if (!is_plain(name, sizeof(out->workload) - 1))
        rc = kiln_fail(err, KILN_E_PARSE, "%s: workload.name is missing or not a plain name", what);
    else if (!is_ident(backend, sizeof(out->backend) - 1))
        rc = kiln_fail(err, KILN_E_PARSE, "%s: backend is missing or not a plain name", what);
    else if (!is_ident(proposer, sizeof(out->proposer) - 1))
        rc = kiln_fail(err, KILN_E_PARSE, "%s: proposer is missing or not a plain name", what);
    if (rc == KILN_OK) {
        snprintf(out->workload, sizeof(out->workload), "%s", name);
        snprintf(out->backend, sizeof(out->backend), "%s", backend);
        snprintf(out->proposer, sizeof(out->proposer), "%s", proposer);
    }
    json_decref(doc);
    return rc;
}

static bool good_ms(const json_t *v)
{
    double ms = json_number_value(v);
    return json_is_number(v) && isfinite(ms) && ms > 0 && ms < FINDINGS_MS_MAX;
}

enum kiln_rc tuner_findings_parse_history(const char *what, const void *buf, size_t len,
                                          struct findings_config top[FINDINGS_TOP], size_t *ntop,
                                          size_t *passed, struct kiln_err *err)
{
    *ntop = *passed = 0;
    json_t *doc = NULL;
    enum kiln_rc rc = parse(what, buf, len, FINDINGS_HISTORY_MAX, true, &doc, err);
    if (rc != KILN_OK)
        return rc;
    if (!json_is_array(doc) || json_array_size(doc) > FINDINGS_HISTORY_LEN)
        rc = kiln_fail(err, KILN_E_PARSE, "%s: not an array of at most %d entries", what,
                       FINDINGS_HISTORY_LEN);
    for (size_t i = 0; rc == KILN_OK && i < json_array_size(doc); i++) {
        json_t *h = json_array_get(doc, i);
        const char *id = str_of(h, "candidate"), *status = str_of(h, "status");
        json_t *ms = json_object_get(h, "geomean_ms");
        if (!json_is_object(h) || !is_id(id) || !status) {
            rc = kiln_fail(err, KILN_E_PARSE, "%s: entry %zu has no candidate id or status", what,
                           i + 1);
            break;
        }
        if (strcmp(status, "pass") != 0 || !str_of(h, "proposer") ||
            strcmp(str_of(h, "proposer"), "tune") != 0)
            continue;
        if (!good_ms(ms)) {
            rc = kiln_fail(err, KILN_E_PARSE,
                           "%s: entry %zu passed but its geomean_ms is not a time in (0, %g) ms",
                           what, i + 1, FINDINGS_MS_MAX);
            break;
        }
        (*passed)++;
        /* Insertion into the fastest FINDINGS_TOP, ties by order. */
        double t = json_number_value(ms);
        size_t at = *ntop;
        while (at > 0 && top[at - 1].geomean_ms > t)
            at--;
        if (at >= FINDINGS_TOP)
            continue;
        if (*ntop < FINDINGS_TOP)
            (*ntop)++;
        memmove(&top[at + 1], &top[at], (*ntop - 1 - at) * sizeof(*top));
        memset(&top[at], 0, sizeof(*top));
        snprintf(top[at].candidate, sizeof(top[at].candidate), "%s", id);
        top[at].geomean_ms = t;
    }
    json_decref(doc);
    if (rc != KILN_OK)
        *ntop = *passed = 0;
    return rc;
}

enum kiln_rc tuner_findings_parse_summary(const char *what, const void *buf, size_t len,
                                          char best[8], struct kiln_err *err)
{
    best[0] = '\0';
    json_t *doc = NULL;
    enum kiln_rc rc = parse(what, buf, len, FINDINGS_SUMMARY_MAX, false, &doc, err);
    if (rc != KILN_OK)
        return rc;
    json_t *b = json_object_get(doc, "best");
    const char *id = str_of(b, "candidate");
    if (json_is_object(b) && id && (strcmp(id, "start") == 0 || is_id(id)))
        snprintf(best, 8, "%s", id);
    else if (b && !json_is_null(b))
        rc = kiln_fail(err, KILN_E_PARSE,
                       "%s: best is neither null nor an object naming \"start\" or a candidate",
                       what);
    json_decref(doc);
    return rc;
}

enum kiln_rc tuner_findings_parse_config(const char *what, const void *buf, size_t len,
                                         struct findings_config *c, struct kiln_err *err)
{
    c->n = 0;
    json_t *doc = NULL;
    enum kiln_rc rc = parse(what, buf, len, FINDINGS_HISTORY_MAX, false, &doc, err);
    if (rc != KILN_OK)
        return rc;
    json_t *cfg = json_object_get(doc, "config"), *v;
    const char *k;
    if (!json_is_object(cfg) || json_object_size(cfg) > FINDINGS_MAX_CONFIG)
        rc = kiln_fail(err, KILN_E_PARSE, "%s: config is not an object of at most %d tunables",
                       what, FINDINGS_MAX_CONFIG);
    if (rc == KILN_OK)
        json_object_foreach(cfg, k, v)
        {
            json_int_t x = json_integer_value(v);
            if (!is_ident(k, FINDINGS_NAME_MAX) || !json_is_integer(v) || x > FINDINGS_VALUE_MAX ||
                x < -FINDINGS_VALUE_MAX) {
                char q[80];
                rc = kiln_fail(err, KILN_E_PARSE,
                               "%s: config \"%s\" is not a tunable name with an integer value "
                               "within +-2^40",
                               what, json_strict_quote(k, q, sizeof(q)));
                break;
            }
            snprintf(c->names[c->n], sizeof(c->names[c->n]), "%s", k);
            c->values[c->n++] = (int64_t)x;
        }
    json_decref(doc);
    if (rc != KILN_OK)
        c->n = 0;
    return rc;
}

/* A metric's value in its unit's range: percentages 0..100 (ncu rounds a
 * little past 100 now and then: up to 101), counts and times 0..1e15. */
static bool good_metric(enum ncu_metric m, double v)
{
    bool pct = strcmp(ncu_metric_unit(m), "%") == 0;
    return isfinite(v) && v >= 0 && v <= (pct ? 101.0 : 1e15);
}

static enum kiln_rc parse_kernel(const char *what, json_t *k, size_t i, struct ncu_kernel *out,
                                 struct kiln_err *err)
{
    const char *name = str_of(k, "name");
    json_t *launches = json_object_get(k, "launches"), *metrics = json_object_get(k, "metrics");
    if (!is_ident(name, NCU_CSV_NAME_MAX - 1) || !json_is_integer(launches) ||
        json_integer_value(launches) < 0 || json_integer_value(launches) > NCU_CSV_MAX_LAUNCHES ||
        !json_is_object(metrics))
        return kiln_fail(err, KILN_E_PARSE,
                         "%s: kernel %zu needs a C identifier name, launches 0..%d and metrics",
                         what, i + 1, NCU_CSV_MAX_LAUNCHES);
    snprintf(out->name, sizeof(out->name), "%s", name);
    out->launches = (int)json_integer_value(launches);
    const char *key;
    json_t *m;
    json_object_foreach(metrics, key, m)
    {
        int j = 0;
        while (j < NCU_METRIC_COUNT && strcmp(key, ncu_metric_name((enum ncu_metric)j)) != 0)
            j++;
        json_t *val = json_object_get(m, "value");
        const char *unit = str_of(m, "unit");
        if (j == NCU_METRIC_COUNT || !json_is_number(val) || !unit ||
            strcmp(unit, ncu_metric_unit((enum ncu_metric)j)) != 0 ||
            !good_metric((enum ncu_metric)j, json_number_value(val))) {
            char q[80];
            return kiln_fail(err, KILN_E_PARSE,
                             "%s: kernel %zu metric \"%s\" is not one kiln records, or its "
                             "value or unit is out of range",
                             what, i + 1, json_strict_quote(key, q, sizeof(q)));
        }
        out->have[j] = true;
        out->value[j] = json_number_value(val);
    }
    return KILN_OK;
}

enum kiln_rc tuner_findings_parse_profile(const char *what, const void *buf, size_t len,
                                          struct findings_profile *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *doc = NULL;
    enum kiln_rc rc = parse(what, buf, len, FINDINGS_PROFILE_MAX, false, &doc, err);
    if (rc != KILN_OK)
        return rc;
    const char *status = str_of(doc, "status"), *cname = str_of(doc, "case");
    json_t *launches = json_object_get(doc, "launches"), *ks = json_object_get(doc, "kernels");
    if (!status)
        rc = kiln_fail(err, KILN_E_PARSE, "%s: no status", what);
    else if (strcmp(status, "ok") != 0) {
        /* failed: no metrics, nothing for the prompt */
    } else if (!is_plain(cname, sizeof(out->case_name) - 1) || !json_is_integer(launches) ||
               json_integer_value(launches) < 0 || json_integer_value(launches) > 1000000 ||
               !json_is_array(ks) || json_array_size(ks) > NCU_CSV_MAX_KERNELS)
        rc = kiln_fail(err, KILN_E_PARSE,
                       "%s: an ok profile needs case (a name), launches and at most %d kernels",
                       what, NCU_CSV_MAX_KERNELS);
    else {
        snprintf(out->case_name, sizeof(out->case_name), "%s", cname);
        out->launches = (int)json_integer_value(launches);
        for (size_t i = 0; rc == KILN_OK && i < json_array_size(ks); i++)
            rc = parse_kernel(what, json_array_get(ks, i), i, &out->report.kernels[i], err);
        out->report.nkernels = json_array_size(ks);
        out->ok = rc == KILN_OK;
    }
    json_decref(doc);
    if (rc != KILN_OK)
        memset(out, 0, sizeof(*out));
    return rc;
}
