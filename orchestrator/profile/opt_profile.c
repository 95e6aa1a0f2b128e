/* opt_profile.c - --profile in the optimizer loop (opt_profile.h). */
#include "opt_profile.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "text.h"

struct opt_profile {
    enum kiln_backend backend;
    int gpu;
    const struct runrec *rr;
    char work[PATH_MAX];
    bool quiet;
    struct profiler *prof; /* NULL until live */
    bool noted;            /* unavailability said and recorded */
    char best[PROFILE_SUMMARY_MAX];
};

enum kiln_rc opt_profile_open(bool requested, enum kiln_backend b, int gpu, const struct runrec *rr,
                              const char *work_dir, bool quiet, struct opt_profile **out,
                              struct kiln_err *err)
{
    *out = NULL;
    if (!requested)
        return KILN_OK;
    struct opt_profile *op = calloc(1, sizeof(*op));
    if (!op)
        return kiln_fail(err, KILN_E_NOMEM, "profiler state");
    op->backend = b;
    op->gpu = gpu;
    op->rr = rr;
    op->quiet = quiet;
    snprintf(op->work, sizeof(op->work), "%s", work_dir);
    *out = op;
    return KILN_OK;
}

/* Says once why profiling is off, and records it in run.json. */
static void note_unavailable(struct opt_profile *op)
{
    const char *why = op->prof ? profiler_why(op->prof) : NULL;
    if (!why || op->noted)
        return;
    op->noted = true;
    op->best[0] = '\0';
    fprintf(stderr, "kiln: --profile: %s; continuing without profile data\n", why);
    json_t *run = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (runrec_read_json(op->rr, "run.json", 1u << 20, &run, &e) == KILN_OK &&
        json_is_object(run)) {
        json_object_set_new(
            run, "profile",
            json_pack("{s:b, s:b, s:s}", "requested", 1, "available", 0, "message", why));
        if (runrec_write_json(op->rr, "run.json", run, &e) != KILN_OK)
            fprintf(stderr, "kiln: --profile: could not record this in run.json: %s\n", e.msg);
    }
    json_decref(run);
}

/* Profiles one kernel and records it at `rel`; returns the document. */
static json_t *profile_one(struct opt_profile *op, const char *id, const char *dir,
                           const char *cubin, const char *rel)
{
    struct profile_target t = {.name = id, .cand_dir = dir, .cubin = cubin};
    struct profile_result *res = calloc(1, sizeof(*res));
    struct kiln_err e;
    kiln_err_clear(&e);
    op->best[0] = '\0'; /* the best changed: the old block no longer describes it */
    if (!res || profiler_run(op->prof, &t, res, &e) != KILN_OK) {
        char esc[KILN_ERR_MSG_MAX * 4];
        if (!op->quiet)
            fprintf(stderr, "kiln: --profile: %s: %s\n", id,
                    text_escape_control(esc, sizeof(esc), res ? e.msg : "out of memory"));
        free(res);
        return NULL;
    }
    if (res->status == PROFILE_OK)
        snprintf(op->best, sizeof(op->best), "%s", res->summary);
    else if (res->status == PROFILE_FAILED && !op->quiet) {
        /* Nsight Compute's words about a candidate: untrusted text. */
        fprintf(stderr, "kiln: --profile: %s could not be profiled: ", id);
        text_fputs_escaped(stderr, res->message, strlen(res->message));
        fputc('\n', stderr);
    }
    json_t *doc = res->status == PROFILE_UNAVAILABLE ? NULL : profile_result_json(res, id);
    if (doc && runrec_write_json(op->rr, rel, doc, &e) != KILN_OK && !op->quiet)
        fprintf(stderr, "kiln: --profile: %s: %s\n", rel, e.msg);
    free(res);
    note_unavailable(op);
    return doc;
}

enum kiln_rc opt_profile_go_live(struct opt_profile *op, bool have_best, const char *ref_dir,
                                 const char *ref_cubin, struct kiln_err *err)
{
    if (!op || op->prof)
        return KILN_OK;
    enum kiln_rc rc = profiler_open(op->backend, op->gpu, op->work, &op->prof, err);
    if (rc != KILN_OK)
        return rc;
    note_unavailable(op);
    if (!have_best && !profiler_why(op->prof))
        json_decref(profile_one(op, "reference", ref_dir, ref_cubin, "reference/profile.json"));
    return KILN_OK;
}

json_t *opt_profile_on_record(struct opt_profile *op, const char *id, bool improved,
                              const char *cand_dir, const char *cubin)
{
    if (!op || !improved)
        return NULL;
    char rel[96];
    snprintf(rel, sizeof(rel), "candidates/%s/profile.json", id);
    if (op->prof)
        return profiler_why(op->prof) ? NULL : profile_one(op, id, cand_dir, cubin, rel);
    /* Replaying a resumed run's records: the profile is read back. */
    json_t *doc = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    op->best[0] = '\0';
    if (runrec_read_json(op->rr, rel, 1u << 20, &doc, &e) != KILN_OK)
        return NULL;
    const char *s = json_string_value(json_object_get(doc, "summary"));
    const char *st = json_string_value(json_object_get(doc, "status"));
    if (s && st && !strcmp(st, "ok"))
        snprintf(op->best, sizeof(op->best), "%s", s);
    return doc;
}

const char *opt_profile_text(const struct opt_profile *op)
{
    return op && op->best[0] ? op->best : NULL;
}

void opt_profile_close(struct opt_profile *op)
{
    if (!op)
        return;
    profiler_close(op->prof);
    free(op);
}
