#include "opt_given.h"

#include <stdio.h>
#include <string.h>

#include "fsutil.h"
#include "session.h"

#define COPY_INPUTS    "given/inputs"
#define COPY_REFERENCE "given/reference.py"

enum kiln_rc opt_given_prepare(struct opt_given *g, const char *input_cases, const char *reference,
                               const struct workload *wl, enum kiln_backend b, struct kiln_err *err)
{
    g->gi.root_fd = -1;
    enum kiln_rc rc = KILN_OK;
    if (reference) {
        rc = given_reference_load(reference, &g->gr, err);
        g->have_gr = rc == KILN_OK;
    }
    if (rc == KILN_OK && input_cases) {
        rc = fs_make_tempdir("given", g->scratch, sizeof(g->scratch), err);
        if (rc == KILN_OK)
            rc = given_inputs_open(input_cases, wl, b, EVAL_SESSION_PERF_SETS, g->scratch, &g->gi,
                                   err);
        g->have_gi = rc == KILN_OK;
    }
    /* What the user gave is wrong: a usage error, before any work. */
    if (rc != KILN_OK)
        rc = err->rc = KILN_E_USAGE;
    return rc;
}

/* The checked data and its scratch directory, once copied or not needed. */
static void release(struct opt_given *g)
{
    if (g->have_gi)
        given_inputs_free(&g->gi);
    if (g->have_gr)
        given_reference_free(&g->gr);
    g->have_gi = g->have_gr = false;
    if (g->scratch[0]) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        (void)(fs_remove_tree(g->scratch, &ignore) == KILN_OK);
        g->scratch[0] = '\0';
    }
}

static json_t *record_of(const char *path, const char *sha256, const char *copy)
{
    json_t *o = given_source_json(path, sha256);
    json_object_set_new(o, "copy", json_string(copy));
    return o;
}

enum kiln_rc opt_given_store(struct opt_given *g, const struct runrec *rr, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    if (g->have_gr) {
        rc = runrec_write(rr, COPY_REFERENCE, g->gr.data, g->gr.len, err);
        if (rc == KILN_OK)
            rc = runrec_path(rr, COPY_REFERENCE, g->reference_copy, sizeof(g->reference_copy), err);
        if (rc == KILN_OK)
            g->reference = record_of(g->gr.path, g->gr.sha256, COPY_REFERENCE);
    }
    if (rc == KILN_OK && g->have_gi) {
        rc = runrec_path(rr, COPY_INPUTS, g->inputs_copy, sizeof(g->inputs_copy), err);
        if (rc == KILN_OK)
            rc = given_inputs_export(&g->gi, g->inputs_copy, err);
        if (rc == KILN_OK)
            g->inputs = record_of(g->gi.path, g->gi.sha256, COPY_INPUTS);
    }
    if ((g->have_gr && !g->reference) || (g->have_gi && !g->inputs))
        rc = rc != KILN_OK ? rc : kiln_fail(err, KILN_E_NOMEM, "run.json: given data");
    release(g);
    return rc;
}

enum kiln_rc opt_given_load(struct opt_given *g, const struct runrec *rr, json_t *run_json,
                            struct kiln_err *err)
{
    g->gi.root_fd = -1;
    json_t *in = json_object_get(run_json, "input_cases");
    json_t *ref = json_object_get(run_json, "reference_script");
    enum kiln_rc rc = KILN_OK;
    /* The copies are always where a run puts them, whatever run.json says. */
    if (json_is_object(in)) {
        g->inputs = json_incref(in);
        rc = runrec_path(rr, COPY_INPUTS, g->inputs_copy, sizeof(g->inputs_copy), err);
    }
    if (rc == KILN_OK && json_is_object(ref)) {
        g->reference = json_incref(ref);
        rc = runrec_path(rr, COPY_REFERENCE, g->reference_copy, sizeof(g->reference_copy), err);
    }
    return rc;
}

const char *opt_given_sha256(const json_t *record)
{
    return record ? json_string_value(json_object_get(record, "sha256")) : NULL;
}

const char *opt_given_path(const json_t *record)
{
    return record ? json_string_value(json_object_get(record, "path")) : NULL;
}

void opt_given_add_json(const struct opt_given *g, json_t *doc)
{
    json_object_set(doc, "input_cases", g->inputs ? g->inputs : json_null());
    json_object_set(doc, "reference_script", g->reference ? g->reference : json_null());
}

void opt_given_free(struct opt_given *g)
{
    release(g);
    json_decref(g->inputs);
    json_decref(g->reference);
    g->inputs = g->reference = NULL;
}
