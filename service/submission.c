/* submission.c - the JSON body of POST /v1/submissions, parsed strictly:
 * size and nesting checked before jansson sees it, unknown keys refused,
 * names from a small alphabet, the source without NUL bytes. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_nesting.h"
#include "service.h"

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > SERVE_WORKLOAD_NAME_MAX || s[0] == '.' || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

enum kiln_rc serve_parse_submission(const char *body, size_t len, struct serve_submission *out,
                                    struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (len > SERVE_BODY_MAX)
        return kiln_fail(err, KILN_E_LIMIT, "the body has %zu bytes, more than the %u allowed", len,
                         SERVE_BODY_MAX);
    if (!json_nesting_ok(body, len, 4, NULL))
        return kiln_fail(err, KILN_E_PARSE,
                         "the body nests deeper than 4 levels: send one flat JSON object");
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return kiln_fail(err, KILN_E_PARSE, "the body is not JSON: %s (line %d)", je.text, je.line);
    enum kiln_rc rc = KILN_OK;
    if (!json_is_object(doc)) {
        rc = kiln_fail(err, KILN_E_PARSE,
                       "the body must be a JSON object {\"workload\":..., \"source\":...}");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "workload") && strcmp(key, "source") && strcmp(key, "backend")) {
            rc = kiln_fail(err, KILN_E_PARSE,
                           "unknown key \"%.64s\" (allowed: workload, source, backend)", key);
            goto done;
        }
    }
    json_t *w = json_object_get(doc, "workload"), *s = json_object_get(doc, "source"),
           *b = json_object_get(doc, "backend");
    if (!json_is_string(w) || !name_ok(json_string_value(w), json_string_length(w))) {
        rc = kiln_fail(err, KILN_E_PARSE,
                       "\"workload\" must be a workload name (1-%d of A-Z a-z 0-9 _ - .)",
                       SERVE_WORKLOAD_NAME_MAX);
        goto done;
    }
    if (!json_is_string(s) || json_string_length(s) == 0) {
        rc = kiln_fail(err, KILN_E_PARSE, "\"source\" must be the candidate's source as a string");
        goto done;
    }
    size_t sl = json_string_length(s);
    if (sl > SERVE_SOURCE_MAX) {
        rc = kiln_fail(err, KILN_E_LIMIT, "\"source\" has %zu bytes, more than the %u allowed", sl,
                       SERVE_SOURCE_MAX);
        goto done;
    }
    if (memchr(json_string_value(s), '\0', sl)) {
        rc = kiln_fail(err, KILN_E_PARSE, "\"source\" contains a NUL byte");
        goto done;
    }
    const char *backend = "cuda";
    if (b) {
        if (!json_is_string(b) ||
            (strcmp(json_string_value(b), "cuda") && strcmp(json_string_value(b), "cpu"))) {
            rc = kiln_fail(err, KILN_E_PARSE, "\"backend\" must be \"cuda\" or \"cpu\"");
            goto done;
        }
        backend = json_string_value(b);
    }
    snprintf(out->workload, sizeof(out->workload), "%s", json_string_value(w));
    snprintf(out->backend, sizeof(out->backend), "%s", backend);
    out->source = malloc(sl + 1);
    if (!out->source) {
        rc = kiln_fail(err, KILN_E_NOMEM, "submission source");
        goto done;
    }
    memcpy(out->source, json_string_value(s), sl + 1);
    out->source_len = sl;
done:
    json_decref(doc);
    return rc;
}

void serve_submission_free(struct serve_submission *s)
{
    free(s->source);
    s->source = NULL;
}
