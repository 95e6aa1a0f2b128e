#include "hstatus.h"
#include "json_strict.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Copies a JSON string of printable ASCII into dst; anything else fails. */
static int take_str(json_t *obj, const char *key, bool required, char *dst, size_t cap)
{
    json_t *v = json_object_get(obj, key);
    dst[0] = '\0';
    if (!v)
        return required ? -1 : 0;
    const char *s = json_string_value(v);
    if (!s || json_string_length(v) >= cap)
        return -1;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            return -1;
    memcpy(dst, s, json_string_length(v) + 1);
    return 0;
}

static enum kiln_rc parse_case(json_t *c, size_t i, struct hstatus_case *out, struct kiln_err *err)
{
    static const char *const ckeys[] = {"case", "status", "failure", NULL};
    static const char *const fkeys[] = {"kind",   "phase",      "set",    "run",
                                        "tensor", "cuda_error", "detail", NULL};
    if (!json_is_object(c) || json_strict_unknown_key(c, ckeys) ||
        take_str(c, "case", true, out->name, sizeof(out->name)) ||
        take_str(c, "status", true, out->status, sizeof(out->status)))
        return kiln_fail(err, KILN_E_REJECTED, "status.json: cases[%zu] is malformed", i);
    if (strcmp(out->status, "ok") && strcmp(out->status, "failed") &&
        strcmp(out->status, "skipped"))
        return kiln_fail(err, KILN_E_REJECTED, "status.json: cases[%zu]: unknown status", i);
    json_t *f = json_object_get(c, "failure");
    if (!f)
        return KILN_OK;
    json_t *run = json_object_get(f, "run");
    char kind[32];
    if (!json_is_object(f) || json_strict_unknown_key(f, fkeys) ||
        take_str(f, "kind", true, kind, sizeof(kind)) || !failure_kind_parse(kind, &out->kind) ||
        take_str(f, "phase", true, out->phase, sizeof(out->phase)) ||
        take_str(f, "set", false, out->set, sizeof(out->set)) ||
        take_str(f, "tensor", false, out->tensor, sizeof(out->tensor)) ||
        take_str(f, "cuda_error", false, out->cuda_error, sizeof(out->cuda_error)) ||
        take_str(f, "detail", false, out->detail, sizeof(out->detail)) ||
        (run && (!json_is_integer(run) || json_integer_value(run) < 0 ||
                 json_integer_value(run) > 1000000)))
        return kiln_fail(err, KILN_E_REJECTED, "status.json: cases[%zu].failure is malformed", i);
    out->failed = true;
    out->run = run ? (int)json_integer_value(run) : 0;
    return KILN_OK;
}

/* "phases_s": exactly these keys, each a number in 0 .. HSTATUS_MAX_PHASE_S. */
static enum kiln_rc parse_phases(json_t *o, struct hstatus_phases *ph, struct kiln_err *err)
{
    static const char *const pkeys[] = {"context", "layout",  "read",  "upload", "correctness",
                                        "timing",  "outputs", "total", NULL};
    double *dst[] = {&ph->context,     &ph->layout, &ph->read,    &ph->upload,
                     &ph->correctness, &ph->timing, &ph->outputs, &ph->total};
    if (!json_is_object(o) || json_strict_unknown_key(o, pkeys))
        return kiln_fail(err, KILN_E_REJECTED,
                         "status.json: phases_s is not an object of "
                         "the phases in HARNESS.md section 4");
    for (size_t i = 0; pkeys[i]; i++) {
        json_t *v = json_object_get(o, pkeys[i]);
        double d = json_number_value(v);
        /* jansson has no NaN or Inf; the range check is what is left. */
        if (!json_is_number(v) || !(d >= 0 && d <= HSTATUS_MAX_PHASE_S))
            return kiln_fail(err, KILN_E_REJECTED,
                             "status.json: phases_s.%s is not a number of seconds in 0 .. %g",
                             pkeys[i], HSTATUS_MAX_PHASE_S);
        *dst[i] = d;
    }
    ph->present = true;
    return KILN_OK;
}

enum kiln_rc hstatus_parse(const void *buf, size_t len, struct hstatus *out, struct kiln_err *err)
{
    static const char *const keys[] = {"version", "backend", "device",   "l2_flush",
                                       "status",  "cases",   "phases_s", NULL};
    memset(out, 0, sizeof(*out));
    static const struct json_strict_rules rules = {.max_bytes = HSTATUS_MAX_BYTES,
                                                   .parse_rc = KILN_E_REJECTED};
    json_t *root;
    enum kiln_rc rc = json_strict_parse("status.json", buf, len, &rules, &root, err);
    if (rc)
        return rc;
    char st[16];
    json_t *ver = json_object_get(root, "version"), *cases = json_object_get(root, "cases");
    json_t *l2 = json_object_get(root, "l2_flush");
    if (json_strict_unknown_key(root, keys) || !json_is_integer(ver) ||
        json_integer_value(ver) != 1 || !json_is_boolean(l2) || !json_is_array(cases) ||
        take_str(root, "backend", true, out->backend, sizeof(out->backend)) ||
        take_str(root, "device", true, out->device, sizeof(out->device)) ||
        take_str(root, "status", true, st, sizeof(st)) ||
        (strcmp(st, "ok") && strcmp(st, "failed"))) {
        rc = kiln_fail(err, KILN_E_REJECTED, "status.json: malformed top level (HARNESS.md §4)");
        goto out;
    }
    out->l2_flush = json_is_true(l2);
    out->failed = strcmp(st, "failed") == 0;
    out->ncases = json_array_size(cases);
    if (out->ncases > HSTATUS_MAX_CASES) {
        rc = kiln_fail(err, KILN_E_LIMIT, "status.json: %zu cases, more than %d", out->ncases,
                       HSTATUS_MAX_CASES);
        goto out;
    }
    out->cases = calloc(out->ncases ? out->ncases : 1, sizeof(*out->cases));
    if (!out->cases) {
        rc = kiln_fail(err, KILN_E_NOMEM, "status.json");
        goto out;
    }
    for (size_t i = 0; rc == KILN_OK && i < out->ncases; i++)
        rc = parse_case(json_array_get(cases, i), i, &out->cases[i], err);
    json_t *phases = json_object_get(root, "phases_s");
    if (rc == KILN_OK && phases)
        rc = parse_phases(phases, &out->phases, err);
out:
    json_decref(root);
    if (rc != KILN_OK)
        hstatus_free(out);
    return rc;
}

const struct hstatus_case *hstatus_find(const struct hstatus *s, const char *name)
{
    for (size_t i = 0; i < s->ncases; i++)
        if (strcmp(s->cases[i].name, name) == 0)
            return &s->cases[i];
    return NULL;
}

void hstatus_free(struct hstatus *s)
{
    free(s->cases);
    memset(s, 0, sizeof(*s));
}
