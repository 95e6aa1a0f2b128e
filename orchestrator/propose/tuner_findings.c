/* tuner_findings.c - `--tuner-run RUN_DIR`: an earlier tuner run's record
 * read as untrusted input (tuner_findings.h) into kiln's own prompt block. */
#include "tuner_findings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "digest.h"
#include "json_strict.h"
#include "profile.h"
#include "runrec.h"
#include "strbuf.h"
#include "workload.h"

/* What one load has in hand while it reads. */
struct loading {
    struct runrec rr;
    const char *dir;
    const json_t *expect; /* resume: the recorded digests; NULL: a new run */
    json_t *files;        /* rel -> sha256 of every file read */
};

/* Reads `rel` of the earlier run (beneath it, at most `max` bytes), records
 * its digest and, on resume, checks it against the recorded one.
 * KILN_E_NOTFOUND (message set) when absent. */
static enum kiln_rc read_file(struct loading *ld, const char *rel, size_t max, char **data,
                              size_t *len, struct kiln_err *err)
{
    enum kiln_rc rc = runrec_read(&ld->rr, rel, max, data, len, err);
    const char *want = ld->expect ? json_string_value(json_object_get(ld->expect, rel)) : NULL;
    if (rc == KILN_E_NOTFOUND && want)
        return kiln_fail(err, KILN_E_REJECTED,
                         "--tuner-run %s: %s is gone since this run started (it was read "
                         "then): restore it or start a new run",
                         ld->dir, rel);
    if (rc != KILN_OK)
        return rc;
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex_of(*data, *len, hex);
    if (ld->expect && (!want || strcmp(want, hex) != 0))
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "--tuner-run %s: %s changed since this run started (sha256 %.16s, "
                       "recorded %.16s): the prompt would differ; restore it or start a new run",
                       ld->dir, rel, hex, want ? want : "(not read then)");
    else if (json_object_set_new(ld->files, rel, json_string(hex)) != 0)
        rc = kiln_fail(err, KILN_E_NOMEM, "--tuner-run record");
    if (rc != KILN_OK) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

/* An optional file: absent is fine (*data NULL). */
static enum kiln_rc read_optional(struct loading *ld, const char *rel, size_t max, char **data,
                                  size_t *len, struct kiln_err *err)
{
    *data = NULL;
    *len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc rc = read_file(ld, rel, max, data, len, &e);
    if (rc == KILN_E_NOTFOUND)
        return KILN_OK;
    if (rc != KILN_OK)
        *err = e;
    return rc;
}

/* The earlier run must be the tuner's, on this workload and backend. */
static enum kiln_rc check_identity(struct loading *ld, const struct workload *wl,
                                   enum kiln_backend b, struct kiln_err *err)
{
    char *text = NULL;
    size_t len = 0;
    struct findings_run run;
    enum kiln_rc rc = read_file(ld, "run.json", FINDINGS_RUN_MAX, &text, &len, err);
    if (rc == KILN_OK)
        rc = tuner_findings_parse_run("run.json", text, len, &run, err);
    free(text);
    if (rc == KILN_OK &&
        (strcmp(run.workload, wl->name) != 0 || strcmp(run.backend, kiln_backend_name(b)) != 0))
        rc = kiln_fail(err, KILN_E_USAGE,
                       "--tuner-run %s is a run of workload %s on the %s backend; this run "
                       "optimizes %s on the %s backend: give a tuner run of the same workload "
                       "and backend",
                       ld->dir, run.workload, run.backend, wl->name, kiln_backend_name(b));
    if (rc == KILN_OK && strcmp(run.proposer, "tune") != 0)
        rc = kiln_fail(err, KILN_E_USAGE,
                       "--tuner-run %s is a run of proposer %s, not of the tuner (tune): give a "
                       "run made with kiln optimize %s (--proposer tune, the default)",
                       ld->dir, run.proposer, wl->name);
    if (rc != KILN_OK && rc != KILN_E_USAGE && rc != KILN_E_REJECTED)
        kiln_err_prefix(err, "--tuner-run %s", ld->dir);
    return rc;
}

/* Configuration c's values named by the starting kernel `k` (the record's
 * names only select; the text's names are the kernel's own). */
static enum kiln_rc put_config(struct strbuf *sb, const struct findings_config *c,
                               const struct candidate *k, const char *dir, struct kiln_err *err)
{
    for (size_t i = 0; i < c->n; i++) {
        int t = candidate_tunable_index(k, c->names[i]);
        if (t < 0)
            return kiln_fail(err, KILN_E_USAGE,
                             "--tuner-run %s: candidates/%s/verdict.json sets tunable %s, which "
                             "this run's starting kernel does not declare (was that run made with "
                             "another --initial-kernel?)",
                             dir, c->candidate, c->names[i]);
        strbuf_printf(sb, "%s%s=%lld", i ? " " : "", k->tunables[t].name, (long long)c->values[i]);
    }
    if (c->n == 0)
        strbuf_puts(sb, "(the starting kernel's defaults)");
    return KILN_OK;
}

static enum kiln_rc read_config(struct loading *ld, struct findings_config *c, struct kiln_err *err)
{
    char rel[64], *text = NULL;
    size_t len = 0;
    snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", c->candidate);
    enum kiln_rc rc = read_file(ld, rel, FINDINGS_HISTORY_MAX, &text, &len, err);
    if (rc == KILN_OK)
        rc = tuner_findings_parse_config(rel, text, len, c, err);
    free(text);
    return rc;
}

/* The best's Nsight Compute metrics, when the run recorded them: kiln's
 * text (profile_summarize) from the checked numbers, with the case and
 * kernel names of this run's workload. */
static enum kiln_rc put_profile(struct loading *ld, const char *best, const struct workload *wl,
                                const struct candidate *k, struct strbuf *sb, struct kiln_err *err)
{
    char rel[64], *text = NULL;
    size_t len = 0;
    if (strcmp(best, "start") == 0)
        snprintf(rel, sizeof(rel), "reference/profile.json");
    else
        snprintf(rel, sizeof(rel), "candidates/%s/profile.json", best);
    enum kiln_rc rc = read_optional(ld, rel, FINDINGS_PROFILE_MAX, &text, &len, err);
    struct findings_profile *p = text ? calloc(1, sizeof(*p)) : NULL;
    if (rc != KILN_OK || !text) {
        free(text);
        return rc;
    }
    if (!p)
        rc = kiln_fail(err, KILN_E_NOMEM, "profile");
    if (rc == KILN_OK)
        rc = tuner_findings_parse_profile(rel, text, len, p, err);
    free(text);
    const char *case_name = NULL;
    for (size_t c = 0; rc == KILN_OK && p->ok && c < wl->ncases; c++)
        if (strcmp(wl->cases[c].name, p->case_name) == 0)
            case_name = wl->cases[c].name;
    for (size_t i = 0; rc == KILN_OK && p->ok && i < p->report.nkernels; i++) {
        size_t l = 0;
        while (l < k->nlaunches && strcmp(k->launches[l].kernel, p->report.kernels[i].name) != 0)
            l++;
        if (l == k->nlaunches)
            rc = kiln_fail(err, KILN_E_USAGE,
                           "--tuner-run %s: %s names kernel %s, which this run's starting "
                           "kernel does not launch",
                           ld->dir, rel, p->report.kernels[i].name);
    }
    if (rc == KILN_OK && p->ok && !case_name)
        rc = kiln_fail(err, KILN_E_USAGE, "--tuner-run %s: %s names case %s, not one of %s's",
                       ld->dir, rel, p->case_name, wl->name);
    if (rc == KILN_OK && p->ok) {
        char block[PROFILE_SUMMARY_MAX];
        profile_summarize(&p->report, case_name, p->launches, block, sizeof(block));
        strbuf_printf(sb, "The tuner's best, profiled there: %s\n", block);
    }
    free(p);
    return rc;
}

/* The prompt block. */
static enum kiln_rc build_text(struct loading *ld, struct tuner_findings *f,
                               struct findings_config *top, size_t ntop, size_t passed,
                               const struct workload *wl, const struct candidate *k,
                               struct kiln_err *err)
{
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_printf(&sb,
                  "\nTuner findings (an earlier run of kiln's tuner on this workload: %zu "
                  "configurations of the starting kernel's tunables passed; the fastest "
                  "first):\n",
                  passed);
    enum kiln_rc rc = KILN_OK;
    for (size_t i = 0; rc == KILN_OK && i < ntop; i++) {
        strbuf_printf(&sb, "- %.3f ms: ", top[i].geomean_ms);
        rc = put_config(&sb, &top[i], k, ld->dir, err);
        strbuf_puts(&sb, "\n");
    }
    /* The best: summary.json's when it is a candidate, else the fastest. */
    struct findings_config best = {0};
    bool have_best = false;
    if (rc == KILN_OK && f->best[0] && strcmp(f->best, "start") != 0) {
        snprintf(best.candidate, sizeof(best.candidate), "%s", f->best);
        rc = read_config(ld, &best, err);
        have_best = rc == KILN_OK;
    } else if (rc == KILN_OK && ntop > 0 && strcmp(f->best, "start") != 0) {
        best = top[0];
        have_best = true;
    }
    if (rc == KILN_OK && have_best) {
        strbuf_puts(&sb, "Best tunables: ");
        rc = put_config(&sb, &best, k, ld->dir, err);
        strbuf_puts(&sb, f->best_source
                             ? ". This run starts from the tuner's best kernel (those values "
                               "as the defaults): change the code where the tuner's space ends.\n"
                             : ". Start from that configuration (make it the defaults) and "
                               "change the code where the tuner's space ends.\n");
    } else if (rc == KILN_OK && strcmp(f->best, "start") == 0) {
        strbuf_puts(&sb, "No configuration beat the starting kernel beyond measured noise: "
                         "the gains are in the code, not the tunables.\n");
    }
    if (rc == KILN_OK && f->best[0])
        rc = put_profile(ld, f->best, wl, k, &sb, err);
    if (rc == KILN_OK)
        rc = strbuf_finish(&sb, &f->text, err);
    else
        strbuf_free(&sb);
    return rc;
}

static enum kiln_rc load(struct loading *ld, const struct workload *wl, enum kiln_backend b,
                         struct tuner_findings *f, struct kiln_err *err)
{
    enum kiln_rc rc = check_identity(ld, wl, b, err);
    char *text = NULL;
    size_t len = 0, ntop = 0, passed = 0;
    struct findings_config *top = calloc(FINDINGS_TOP, sizeof(*top));
    if (!top)
        return kiln_fail(err, KILN_E_NOMEM, "--tuner-run");
    if (rc == KILN_OK)
        rc = read_file(ld, "history.json", FINDINGS_HISTORY_MAX, &text, &len, err);
    if (rc == KILN_OK)
        rc = tuner_findings_parse_history("history.json", text, len, top, &ntop, &passed, err);
    free(text);
    text = NULL;
    if (rc == KILN_OK) /* an interrupted run has no summary: its history is all there is */
        rc = read_optional(ld, "summary.json", FINDINGS_SUMMARY_MAX, &text, &len, err);
    if (rc == KILN_OK && text)
        rc = tuner_findings_parse_summary("summary.json", text, len, f->best, err);
    free(text);
    const char *ext = b == KILN_BACKEND_CUDA ? "best.cu" : "best.c";
    if (rc == KILN_OK && f->best[0] && strcmp(f->best, "start") != 0)
        rc = read_optional(ld, ext, FINDINGS_SOURCE_MAX, &f->best_source, &f->best_len, err);
    for (size_t i = 0; rc == KILN_OK && i < ntop; i++)
        rc = read_config(ld, &top[i], err);
    if (rc != KILN_OK && rc != KILN_E_USAGE && rc != KILN_E_REJECTED)
        kiln_err_prefix(err, "--tuner-run %s", ld->dir);
    /* The tunables' and kernels' names come from this run's starting kernel. */
    struct candidate *k = NULL;
    enum wl_file sf = b == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
    if (rc == KILN_OK && !wl->files[sf].present)
        rc = kiln_fail(err, KILN_E_USAGE, "--tuner-run: workload %s has no %s starting kernel",
                       wl->name, kiln_backend_name(b));
    if (rc == KILN_OK)
        rc = candidate_parse(wl->files[sf].data, wl->files[sf].len, b, &k, err);
    if (rc == KILN_OK)
        rc = build_text(ld, f, top, ntop, passed, wl, k, err);
    candidate_free(k);
    free(top);
    return rc;
}

enum kiln_rc tuner_findings_load(const char *dir, const struct workload *wl, enum kiln_backend b,
                                 const json_t *expect, struct tuner_findings *out,
                                 struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    struct loading ld = {.dir = dir, .expect = expect, .files = json_object()};
    if (!ld.files)
        return kiln_fail(err, KILN_E_NOMEM, "--tuner-run");
    enum kiln_rc rc = runrec_open(dir, &ld.rr, err);
    if (rc != KILN_OK) /* resume: the path as given then, relative to where kiln ran */
        kiln_err_prefix(err, "--tuner-run");
    if (rc == KILN_OK)
        rc = load(&ld, wl, b, out, err);
    /* Resume: the files read now are the files read then. */
    if (rc == KILN_OK && expect && json_object_size(expect) != json_object_size(ld.files))
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "--tuner-run %s: this run read %zu of its files when it started, %zu "
                       "now: the record changed; restore it or start a new run",
                       dir, json_object_size(expect), json_object_size(ld.files));
    if (rc == KILN_OK) {
        out->record = json_pack("{s:s, s:O}", "path", dir, "files", ld.files);
        if (!out->record)
            rc = kiln_fail(err, KILN_E_NOMEM, "--tuner-run record");
    }
    json_decref(ld.files);
    if (rc != KILN_OK)
        tuner_findings_free(out);
    return rc;
}

void tuner_findings_free(struct tuner_findings *f)
{
    free(f->best_source);
    free(f->text);
    json_decref(f->record);
    memset(f, 0, sizeof(*f));
}
