/* compile_json.c - struct compile_result to and from JSON (compile.h). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "json_strict.h"

enum kiln_rc compile_result_to_json(const struct compile_result *res, char **out,
                                    struct kiln_err *err)
{
    *out = NULL;
    json_t *kernels = json_array();
    for (size_t i = 0; kernels && i < res->nkernels && i < COMPILE_MAX_KERNELS; i++) {
        const struct compile_kernel_usage *k = &res->kernels[i];
        json_t *kj =
            json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "name", k->name, "registers", k->registers,
                      "smem_bytes", k->smem_bytes, "stack_bytes", k->stack_bytes, "spill_stores",
                      k->spill_stores, "spill_loads", k->spill_loads);
        if (!kj || json_array_append_new(kernels, kj)) {
            json_decref(kernels);
            kernels = NULL;
        }
    }
    json_t *doc = kernels ? json_pack("{s:i, s:b, s:s, s:f, s:f, s:f, s:s, s:o}", "version",
                                      COMPILE_JSON_VERSION, "ok", res->ok, "input_sha256",
                                      res->input_sha256, "seconds", res->seconds, "started",
                                      res->started, "finished", res->finished, "diagnostics",
                                      res->diagnostics ? res->diagnostics : "", "kernels", kernels)
                          : NULL;
    *out = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return *out ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "compile result as JSON");
}

/* A non-negative number of seconds (Unix time or a duration). */
static bool take_seconds(json_t *doc, const char *key, double *out)
{
    json_t *v = json_object_get(doc, key);
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= 0 && *out < 1e11;
}

static bool take_int(json_t *obj, const char *key, int *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 30))
        return false;
    *out = (int)json_integer_value(v);
    return true;
}

static bool take_kernel(json_t *kj, struct compile_kernel_usage *k)
{
    static const char *const keys[] = {"name",         "registers",   "smem_bytes", "stack_bytes",
                                       "spill_stores", "spill_loads", NULL};
    json_t *name = json_object_get(kj, "name");
    if (!json_is_object(kj) || json_strict_unknown_key(kj, keys) || !json_is_string(name) ||
        json_string_length(name) >= sizeof(k->name) ||
        strlen(json_string_value(name)) != json_string_length(name))
        return false;
    memcpy(k->name, json_string_value(name), json_string_length(name) + 1);
    return take_int(kj, "registers", &k->registers) && take_int(kj, "smem_bytes", &k->smem_bytes) &&
           take_int(kj, "stack_bytes", &k->stack_bytes) &&
           take_int(kj, "spill_stores", &k->spill_stores) &&
           take_int(kj, "spill_loads", &k->spill_loads);
}

enum kiln_rc compile_result_from_json(const char *text, size_t len, struct compile_result *res,
                                      struct kiln_err *err)
{
    static const char *const keys[] = {"version",     "ok",      "input_sha256",
                                       "seconds",     "started", "finished",
                                       "diagnostics", "kernels", NULL};
    memset(res, 0, sizeof(*res));
    static const struct json_strict_rules rules = {.max_bytes = COMPILE_JSON_MAX, .any_top = true};
    json_t *doc;
    enum kiln_rc rc = json_strict_parse("compile result", text, len, &rules, &doc, err);
    if (rc)
        return rc;
    /* No version: written before compile.json had one (the same format). */
    json_t *ver = json_object_get(doc, "version");
    if (json_is_integer(ver) && json_integer_value(ver) > COMPILE_JSON_VERSION) {
        rc = kiln_fail(err, KILN_E_UNSUPPORTED,
                       "compile result has format version %lld, newer than this kiln reads (%d): "
                       "use a newer kiln",
                       (long long)json_integer_value(ver), COMPILE_JSON_VERSION);
        json_decref(doc);
        return rc;
    }
    json_t *ok = json_object_get(doc, "ok"), *diag = json_object_get(doc, "diagnostics");
    json_t *kernels = json_object_get(doc, "kernels"), *hash = json_object_get(doc, "input_sha256");
    bool good = json_is_object(doc) && !json_strict_unknown_key(doc, keys) &&
                (!ver || (json_is_integer(ver) && json_integer_value(ver) >= 1)) &&
                json_is_boolean(ok) && json_is_string(hash) && json_string_length(hash) == 64 &&
                strspn(json_string_value(hash), "0123456789abcdef") == 64 &&
                take_seconds(doc, "seconds", &res->seconds) &&
                take_seconds(doc, "started", &res->started) &&
                take_seconds(doc, "finished", &res->finished) && json_is_string(diag) &&
                json_string_length(diag) <= COMPILE_DIAG_MAX + 1024 &&
                strlen(json_string_value(diag)) == json_string_length(diag) &&
                json_is_array(kernels) && json_array_size(kernels) <= COMPILE_MAX_KERNELS;
    for (size_t i = 0; good && i < json_array_size(kernels); i++)
        good = take_kernel(json_array_get(kernels, i), &res->kernels[res->nkernels++]);
    if (good) {
        res->ok = json_is_true(ok);
        memcpy(res->input_sha256, json_string_value(hash), 65);
        res->diagnostics = strdup(json_string_value(diag));
    }
    json_decref(doc);
    if (!good) {
        memset(res, 0, sizeof(*res));
        return kiln_fail(err, KILN_E_REJECTED,
                         "compile result: unknown keys, wrong types or values out of range");
    }
    if (!res->diagnostics)
        return kiln_fail(err, KILN_E_NOMEM, "compile result");
    return KILN_OK;
}
