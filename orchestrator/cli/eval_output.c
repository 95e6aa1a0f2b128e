/* eval_output.c - `kiln eval --json`, `--csv`, `--markdown` (eval_output.h). */
#include <string.h>

#include "eval_output.h"
#include "gpuinfo.h"
#include "kiln_version.h"

void eval_device_describe(enum kiln_backend backend, int gpu, struct eval_device *d)
{
    memset(d, 0, sizeof(*d));
    d->backend = backend;
    d->index = -1;
    if (backend != KILN_BACKEND_CUDA) {
        snprintf(d->text, sizeof(d->text), "cpu");
        return;
    }
    d->index = gpu;
    struct gpuinfo gpus[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err err;
    kiln_err_clear(&err);
    /* A host the driver does not describe still gets a verdict: the
     * device is then reported as unknown, not as an error. */
    if (gpuinfo_list("/proc", gpus, &n, &err) == KILN_OK && gpu >= 0 && (size_t)gpu < n) {
        snprintf(d->model, sizeof(d->model), "%s", gpus[gpu].model);
        snprintf(d->uuid, sizeof(d->uuid), "%s", gpus[gpu].uuid);
    }
    kiln_err_clear(&err);
    if (gpuinfo_driver_version("/proc", d->driver, sizeof(d->driver), &err) != KILN_OK)
        d->driver[0] = '\0';
    snprintf(d->text, sizeof(d->text), "%s (%s, driver %s)", d->model[0] ? d->model : "unknown GPU",
             d->uuid[0] ? d->uuid : "no UUID", d->driver[0] ? d->driver : "unknown");
}

static json_t *str_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

json_t *eval_device_json(const struct eval_device *d)
{
    return json_pack("{s:s, s:o, s:o, s:o, s:o}", "backend", kiln_backend_name(d->backend), "index",
                     d->index >= 0 ? json_integer(d->index) : json_null(), "model",
                     str_or_null(d->model), "uuid", str_or_null(d->uuid), "driver",
                     str_or_null(d->driver));
}

/* Moves o[from] to o[to] (verdict.json's name to summary.json's). */
static bool rename_key(json_t *o, const char *from, const char *to)
{
    json_t *v = json_object_get(o, from);
    if (!v)
        return true;
    json_incref(v);
    bool ok = json_object_set_new(o, to, v) == 0 && json_object_del(o, from) == 0;
    return ok;
}

static json_t *ratio_or_null(double num, double den)
{
    return num > 0 && den > 0 ? json_real(num / den) : json_null();
}

/* Per case: summary.json's names, and the speedup over the reference. */
static bool case_keys(json_t *cj, const struct verdict_case *c)
{
    bool ok =
        rename_key(cj, "ref_median", "reference_ms") && rename_key(cj, "sol", "fraction_of_floor");
    json_t *sp = c->timed ? ratio_or_null(c->ref_median_ms, c->timing.median) : json_null();
    return ok && json_object_set_new(cj, "speedup_vs_reference", sp) == 0;
}

enum kiln_rc eval_doc_json(const struct verdict *v, const struct eval_doc_info *info, json_t **out,
                           struct kiln_err *err)
{
    *out = NULL;
    json_t *doc = NULL;
    enum kiln_rc rc = verdict_to_json(v, &doc, err);
    if (rc != KILN_OK)
        return rc;
    bool ok = rename_key(doc, "score_ms", "geomean_ms") &&
              rename_key(doc, "speedup_ref", "speedup_vs_reference") &&
              rename_key(doc, "sol", "fraction_of_floor");
    json_t *cases = json_object_get(doc, "cases");
    for (size_t i = 0; ok && i < v->ncases; i++)
        ok = case_keys(json_array_get(cases, i), &v->cases[i]);
    const struct workload *wl = info->wl;
    ok =
        ok && json_object_set_new(doc, "version", json_integer(EVAL_DOC_VERSION)) == 0 &&
        json_object_set_new(doc, "case_ms", verdict_case_ms_json(v)) == 0 &&
        json_object_set_new(
            doc, "kiln",
            json_pack("{s:s, s:s}", "version", KILN_VERSION, "revision", KILN_GIT_REV)) == 0 &&
        json_object_set_new(doc, "device", eval_device_json(info->device)) == 0 &&
        json_object_set_new(doc, "workload",
                            json_pack("{s:s, s:s, s:o}", "name", wl->name, "source",
                                      info->workload_source, "sha256", str_or_null(wl->hash))) ==
            0 &&
        json_object_set_new(doc, "candidate",
                            json_pack("{s:s, s:s, s:s}", "name", v->candidate, "path",
                                      info->candidate_path, "sha256", info->candidate_sha256)) == 0;
    if (!ok) {
        json_decref(doc);
        return kiln_fail(err, KILN_E_NOMEM,
                         "eval: could not build the JSON document (out of memory, or a path "
                         "that is not UTF-8: rename the file)");
    }
    *out = doc;
    return KILN_OK;
}
