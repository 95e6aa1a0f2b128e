#include "optimize.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "apikey.h"
#include "candidate.h"
#include "commands.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "kiln_version.h"
#include "opt_profile.h"
#include "opt_given.h"
#include "optimize_impl.h"
#include "rank.h"
#include "runrec.h"
#include "session.h"
#include "wlgen.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void progress(struct opt_run *r, int it, const char *stage)
{
    if (r->o.quiet || r->o.json)
        return;
    char best[64] = "none yet";
    if (r->best >= 0)
        snprintf(best, sizeof(best), "%s %.4g ms", r->hist[r->best].id,
                 r->hist[r->best].geomean_ms);
    fprintf(stderr, "%s[%d/%d] %-8s best: %-20s %6.1f s%s", r->tty ? "\r\033[K" : "", it,
            r->o.max_iterations, stage, best, now_s() - r->t0, r->tty ? "" : "\n");
    fflush(stderr);
}

static const char *ext_of(enum kiln_backend b)
{
    return b == KILN_BACKEND_CUDA ? "cu" : "c";
}

/* Copies the workload as used (the exact bytes that were hashed). */
static enum kiln_rc copy_workload(struct opt_run *r, const struct workload *wl, const char *initial,
                                  size_t ilen, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    for (int f = 0; rc == KILN_OK && f < WL_FILE_COUNT; f++) {
        const struct wl_file_data *d = &wl->files[f];
        char rel[80];
        snprintf(rel, sizeof(rel), "workload/%s", workload_file_name((enum wl_file)f));
        bool is_start = strcmp(workload_file_name((enum wl_file)f), r->start_file) == 0;
        if (is_start && initial)
            rc = runrec_write(&r->rr, rel, initial, ilen, err);
        else if (d->present)
            rc = runrec_write(&r->rr, rel, d->data, d->len, err);
    }
    return rc;
}

static json_t *gpu_json(int index)
{
    struct gpuinfo g[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    char drv[64] = "";
    if (gpuinfo_list("/proc", g, &n, &e) != KILN_OK || (size_t)index >= n)
        return json_null();
    (void)(gpuinfo_driver_version("/proc", drv, sizeof(drv), &e) == KILN_OK);
    return json_pack("{s:i, s:s, s:s, s:s, s:s}", "index", index, "model", g[index].model, "bus",
                     g[index].bus_id, "uuid", g[index].uuid, "driver", drv);
}

static enum kiln_rc write_run_json(struct opt_run *r, const struct workload *wl,
                                   struct kiln_err *err)
{
    json_t *cmd = json_array();
    for (int i = 0; i < r->o.argc; i++)
        json_array_append_new(cmd, json_string(r->o.argv[i]));
    struct utsname u;
    uname(&u);
    char when[32];
    time_t t = time(NULL);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    enum kiln_backend b = r->o.backend;
    json_t *doc = json_pack(
        "{s:{s:s, s:s, s:s}, s:o, s:s, s:s, s:s, s:o, s:{s:s, s:s, s:s}, s:{s:I, s:I}, s:s, "
        "s:s?, s:s?, s:s?, s:i, s:i, s:i, s:b, s:s?}",
        "kiln", "version", KILN_VERSION, "revision", KILN_GIT_REV, "cuda", KILN_CUDA_VERSION,
        "command", cmd, "started", when, "host", u.nodename, "backend", kiln_backend_name(b), "gpu",
        b == KILN_BACKEND_CUDA ? gpu_json(r->o.gpu) : json_null(), "workload", "name", wl->name,
        "source", r->o.workload, "hash", wl->hash, "seeds", "inputs", (json_int_t)r->o.seed,
        "tuner", (json_int_t)r->o.seed, "proposer", r->o.proposer, "model", r->o.model, "base_url",
        r->o.base_url, "replay", r->o.replay_dir, "max_iterations", r->o.max_iterations, "warmups",
        r->o.warmups, "iterations", r->o.iterations, "reference_generated_by_model",
        r->generated || wl->provenance == WL_PROVENANCE_MODEL, "initial_kernel",
        r->o.initial_kernel);
    if (!doc)
        return kiln_fail(err, KILN_E_NOMEM, "run.json");
    json_object_set_new(doc, "gpu_index", json_integer(r->o.gpu));
    json_object_set_new(doc, "profile", json_boolean(r->o.profile));
    if (r->o.description)
        json_object_set_new(doc, "description", json_string(r->o.description));
    opt_given_add_json(&r->given, doc);
    json_object_set_new(doc, "jobs", json_integer(r->o.jobs > 0 ? r->o.jobs : 1));
    json_object_set_new(doc, "compiler", json_string(compile_tool_name(r->o.compiler)));
    enum kiln_rc rc = runrec_write_json(&r->rr, "run.json", doc, err);
    json_decref(doc);
    return rc;
}

static void attempt_feedback(struct opt_attempt *a, const struct eval_outcome *o)
{
    size_t off = (size_t)snprintf(a->feedback, sizeof(a->feedback), "%s", o->v.summary);
    for (size_t k = 0; k < o->compile.nkernels && off < sizeof(a->feedback); k++) {
        const struct compile_kernel_usage *u = &o->compile.kernels[k];
        off += (size_t)snprintf(a->feedback + off, sizeof(a->feedback) - off,
                                "; %s: %d registers, %d B smem, %d B spilled", u->name,
                                u->registers, u->smem_bytes, u->spill_stores);
    }
    if (o->v.status == VERDICT_COMPILE_ERROR && o->compile.diagnostics && off < sizeof(a->feedback))
        snprintf(a->feedback + off, sizeof(a->feedback) - off, "; compiler: %.500s",
                 o->compile.diagnostics);
}

/* Copies a small file of the candidate's scratch into its record. */
static void keep_file(struct opt_run *r, const char *from_dir, const char *name, const char *id)
{
    char path[PATH_MAX + 32], rel[96];
    snprintf(path, sizeof(path), "%s/%s", from_dir, name);
    snprintf(rel, sizeof(rel), "candidates/%s/%s", id, name);
    char *data;
    size_t len;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_read_file(path, 32u << 20, &data, &len, &e) == KILN_OK) {
        (void)(runrec_write(&r->rr, rel, data, len, &e) == KILN_OK);
        free(data);
    }
}

static json_t *config_json(const struct opt_attempt *a, const char *src, enum kiln_backend b)
{
    json_t *c = json_object();
    struct candidate *cand = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (!a->has_config || !src || candidate_parse(src, strlen(src), b, &cand, &e))
        (void)(cand == NULL || (candidate_free(cand), 0));
    for (size_t i = 0; cand && i < cand->ntunables && i < a->nconfig; i++)
        json_object_set_new(c, cand->tunables[i].name, json_integer(a->config[i]));
    candidate_free(cand);
    return c;
}

/* Records one finished candidate, then appends its history entry. */
static enum kiln_rc record(struct opt_run *r, int it, const struct proposal *p,
                           struct eval_outcome *o, struct kiln_err *err)
{
    struct opt_attempt *a = &r->hist[r->n];
    memset(a, 0, sizeof(*a));
    snprintf(a->id, sizeof(a->id), "%03d", it);
    a->status = o->v.status;
    snprintf(a->stage, sizeof(a->stage), "%s", o->stage);
    snprintf(a->reason, sizeof(a->reason), "%s", o->v.detail);
    snprintf(a->note, sizeof(a->note), "%s", p->note);
    a->geomean_ms = o->v.status == VERDICT_PASS ? o->v.score_ms : 0;
    a->has_config = p->has_config;
    a->nconfig = p->nconfig;
    memcpy(a->config, p->config, sizeof(a->config));
    attempt_feedback(a, o);
    r->sources[r->n] = p->source ? strdup(p->source) : NULL;
    a->source = r->sources[r->n];
    a->len = p->source ? p->len : 0;
    if (a->status == VERDICT_PASS) {
        if (r->best < 0) {
            a->improved = true;
        } else {
            struct verdict *bv = &r->verdicts[r->best];
            struct stats_score bs = {bv->score_ms, bv->sigma, 1},
                               ns = {o->v.score_ms, o->v.sigma, 1};
            a->improved = stats_compare(&bs, &ns, NULL) == 1;
        }
    }
    r->verdicts[r->n] = o->v; /* takes ownership of the cases */
    memset(&o->v, 0, sizeof(o->v));

    char rel[96], cdir[PATH_MAX];
    json_t *vj = NULL;
    enum kiln_rc rc = verdict_to_json(&r->verdicts[r->n], &vj, err);
    if (rc == KILN_OK) {
        json_object_set_new(vj, "stage", json_string(a->stage));
        json_object_set_new(vj, "proposer", json_string(proposer_name(r->prop)));
        json_object_set_new(vj, "note", json_string(p->note));
        json_object_set_new(vj, "config", config_json(a, p->source, eval_session_backend(r->s)));
        json_object_set_new(vj, "turnaround_s", eval_turnaround_json(&o->t));
        snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", a->id);
        rc = runrec_write_json(&r->rr, rel, vj, err);
    }
    json_decref(vj);
    if (rc == KILN_OK && o->compile.diagnostics) {
        snprintf(rel, sizeof(rel), "candidates/%s/compile.log", a->id);
        rc = runrec_write(&r->rr, rel, o->compile.diagnostics, strlen(o->compile.diagnostics), err);
    }
    if (rc == KILN_OK && o->compile.started > 0) {
        /* When and how it compiled (in a worker with --jobs). */
        char *cj = NULL;
        snprintf(rel, sizeof(rel), "candidates/%s/compile.json", a->id);
        rc = compile_result_to_json(&o->compile, &cj, err);
        if (rc == KILN_OK)
            rc = runrec_write(&r->rr, rel, cj, strlen(cj), err);
        free(cj);
    }
    eval_session_candidate_dir(r->s, a->id, false, cdir, sizeof(cdir));
    char run_out[PATH_MAX + 8];
    snprintf(run_out, sizeof(run_out), "%s/run", cdir);
    keep_file(r, run_out, "timings.json", a->id);
    keep_file(r, run_out, "status.json", a->id);
    keep_file(r, run_out, "log.txt", a->id);
    /* --profile: a new best is profiled while its scratch still exists. */
    json_t *prof = rc == KILN_OK
                       ? opt_profile_on_record(r->op, a->id, a->improved, cdir, o->compile.artifact)
                       : NULL;
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    (void)(fs_remove_tree(cdir, &ignore) == KILN_OK); /* big outputs: not kept */
    if (rc != KILN_OK) {
        json_decref(prof);
        return rc;
    }

    if (a->improved)
        r->best = (int)r->n;
    r->n++;
    json_t *h =
        json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s?, s:f, s:f}", "iteration", it,
                  "candidate", a->id, "proposer", proposer_name(r->prop), "note", p->note, "status",
                  verdict_status_name(a->status), "stage", a->stage, "reason", a->reason,
                  "improved", a->improved, "best", r->best >= 0 ? r->hist[r->best].id : NULL,
                  "geomean_ms", a->geomean_ms, "elapsed_s", now_s() - r->t0);
    if (!h) {
        json_decref(prof);
        return kiln_fail(err, KILN_E_NOMEM, "history entry");
    }
    if (prof)
        json_object_set_new(h, "profile", prof);
    if (p->cost_usd >= 0)
        json_object_set_new(h, "cost_usd", json_real(p->cost_usd));
    if (p->prompt_tokens >= 0)
        json_object_set_new(h, "tokens",
                            json_pack("{s:I, s:I}", "prompt", (json_int_t)p->prompt_tokens,
                                      "completion", (json_int_t)p->completion_tokens));
    json_array_append_new(r->history, h);
    return runrec_write_json(&r->rr, "history.json", r->history, err);
}

/* ---- one candidate in steps (optimize_jobs.c runs them in a window) ---- */

enum kiln_rc opt_propose(struct opt_run *r, int it, bool replaying, struct proposal *p,
                         bool *exhausted, struct kiln_err *err)
{
    const struct workload *wl = eval_session_workload(r->s);
    enum wl_file sf =
        eval_session_backend(r->s) == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
    struct opt_state st = {.wl = wl,
                           .backend = eval_session_backend(r->s),
                           .start_source = wl->files[sf].data,
                           .start_len = wl->files[sf].len,
                           .best = r->best >= 0 ? &r->hist[r->best] : NULL,
                           .history = r->hist,
                           .nhistory = r->n,
                           .reference = eval_session_reference_outcome(r->s),
                           .iteration = it,
                           .max_iterations = r->o.max_iterations,
                           .profile = opt_profile_text(r->op)};
    if (!replaying)
        progress(r, it, "propose");
    enum kiln_rc rc = proposer_propose(r->prop, &st, p, err);
    if (rc == KILN_E_NOTFOUND) {
        *exhausted = true;
        if (!r->o.quiet && !r->o.json && !replaying)
            fprintf(stderr, "%skiln: stopping early: %s\n", r->tty ? "\n" : "", err->msg);
        kiln_err_clear(err);
        return KILN_OK;
    }
    return rc;
}

enum kiln_rc opt_write_proposal(struct opt_run *r, int it, const struct proposal *p,
                                struct kiln_err *err)
{
    char id[8], rel[96];
    snprintf(id, sizeof(id), "%03d", it);
    enum kiln_rc rc = KILN_OK;
    if (p->exchange) {
        snprintf(rel, sizeof(rel), "candidates/%s/exchange.json", id);
        rc = runrec_write(&r->rr, rel, p->exchange, strlen(p->exchange), err);
    }
    if (rc == KILN_OK && p->source) {
        snprintf(rel, sizeof(rel), "candidates/%s/candidate.%s", id,
                 ext_of(eval_session_backend(r->s)));
        rc = runrec_write(&r->rr, rel, p->source, p->len, err);
    }
    return rc;
}

void opt_invalid_outcome(const struct proposal *p, int it, struct eval_outcome *o)
{
    char id[8];
    snprintf(id, sizeof(id), "%03d", it);
    memset(o, 0, sizeof(*o));
    verdict_init(&o->v, id);
    verdict_fail(&o->v, VERDICT_COMPILE_ERROR, "%s", p->invalid);
    verdict_finish(&o->v, NULL);
    snprintf(o->stage, sizeof(o->stage), "propose");
}

enum kiln_rc opt_finish(struct opt_run *r, int it, const struct proposal *p, struct eval_outcome *o,
                        struct kiln_err *err)
{
    enum kiln_rc rc = record(r, it, p, o, err);
    if (rc == KILN_OK)
        proposer_feedback(r->prop, p, r->hist[r->n - 1].status == VERDICT_PASS,
                          r->hist[r->n - 1].improved);
    return rc;
}

void opt_progress(struct opt_run *r, int it, const char *stage)
{
    progress(r, it, stage);
}

static enum kiln_rc one_iteration(struct opt_run *r, int it, bool *exhausted, struct kiln_err *err)
{
    struct proposal p;
    enum kiln_rc rc = opt_propose(r, it, false, &p, exhausted, err);
    if (rc != KILN_OK || *exhausted)
        return rc;
    char id[8];
    snprintf(id, sizeof(id), "%03d", it);
    rc = opt_write_proposal(r, it, &p, err);
    struct eval_outcome o;
    memset(&o, 0, sizeof(o));
    if (rc == KILN_OK && p.invalid[0]) {
        opt_invalid_outcome(&p, it, &o);
    } else if (rc == KILN_OK) {
        progress(r, it, "evaluate");
        rc = eval_session_run(r->s, id, p.source, p.len, p.has_config ? p.config : NULL, &o, err);
    }
    if (rc == KILN_OK)
        rc = opt_finish(r, it, &p, &o, err);
    eval_outcome_free(&o);
    proposal_free(&p);
    return rc;
}

/* best.cu: the best source with its tunables' defaults set to the values
 * that won, so the file alone reproduces the result. */
static char *pin_config(const char *src, const struct opt_attempt *a, enum kiln_backend b)
{
    struct candidate *cand = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    char *out = strdup(src);
    if (!out || !a->has_config || candidate_parse(src, strlen(src), b, &cand, &e) != KILN_OK)
        return out;
    for (size_t t = 0; t < cand->ntunables && t < a->nconfig; t++) {
        /* Find the directive's line and replace what follows its last '='. */
        char *line = out;
        for (int l = 1; l < cand->tunables[t].line && line; l++) {
            line = strchr(line, '\n');
            line = line ? line + 1 : NULL;
        }
        if (!line)
            continue;
        char *eol = strchr(line, '\n');
        char *eq = NULL;
        for (char *q = line; q < (eol ? eol : line + strlen(line)); q++)
            if (*q == '=')
                eq = q;
        if (!eq)
            continue;
        char val[32];
        snprintf(val, sizeof(val), "= %lld", (long long)a->config[t]);
        size_t head = (size_t)(eq - out), tail = eol ? strlen(eol) : 0;
        char *n = malloc(head + strlen(val) + tail + 1);
        if (!n)
            break;
        memcpy(n, out, head);
        memcpy(n + head, val, strlen(val));
        memcpy(n + head + strlen(val), eol ? eol : "", tail + 1);
        free(out);
        out = n;
    }
    candidate_free(cand);
    return out;
}

static json_t *medians_json(const struct eval_medians *m)
{
    json_t *o = json_object();
    for (size_t i = 0; m && i < m->n; i++)
        json_object_set_new(o, m->cases[i].name, json_real(m->cases[i].ms));
    return o;
}

static json_t *case_ms_json(const struct verdict *v)
{
    /* Median per case over its input sets' medians (for the heatmap). */
    json_t *o = json_object();
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (!c->timed || !c->scored)
            continue;
        double sum = 0;
        int n = 0;
        for (size_t j = 0; j < v->ncases; j++)
            if (v->cases[j].timed && !strcmp(v->cases[j].name, c->name)) {
                sum += log(v->cases[j].timing.median);
                n++;
            }
        json_object_set_new(o, c->name, json_real(exp(sum / n)));
    }
    return o;
}

/* The order in which finalize() tries candidates on the held-out cases:
 * the ranking, with every pass allowed to rank. */
static enum kiln_rc held_out_order(const struct opt_run *r, struct rank_entry **order,
                                   struct kiln_err *err)
{
    *order = NULL;
    if (r->n == 0)
        return KILN_OK;
    struct verdict *v = malloc(r->n * sizeof(*v));
    if (!v)
        return kiln_fail(err, KILN_E_NOMEM, "finalize: out of memory");
    memcpy(v, r->verdicts, r->n * sizeof(*v)); /* shallow: only read by the ranking */
    for (size_t i = 0; i < r->n; i++)
        if (v[i].status == VERDICT_PASS)
            v[i].reverified = true;
    enum kiln_rc rc = rank_verdicts(v, r->n, NULL, order, err);
    free(v);
    return rc;
}

/* A ratio or JSON null when there is none (0 in C), never 0.0. */
static json_t *ratio_or_null(double x)
{
    return x > 0 ? json_real(x) : json_null();
}

/* summary.json's "baseline": the vendor baseline's kind, status, reason and
 * per-case medians, plus their geometric mean over the performance cases
 * ("geomean_ms", null unless every one has a time). */
static json_t *baseline_summary_json(const struct opt_run *r, const json_t *perf_cases)
{
    const struct eval_baseline *b = eval_session_baseline_result(r->s);
    struct eval_baseline none;
    memset(&none, 0, sizeof(none));
    none.kind = eval_session_workload(r->s)->baseline;
    json_t *j = eval_baseline_json(b ? b : &none);
    double lsum = 0;
    size_t n = 0, want = json_array_size(perf_cases);
    for (size_t i = 0; b && i < want; i++)
        for (size_t k = 0; k < b->medians.n; k++)
            if (!strcmp(b->medians.cases[k].name,
                        json_string_value(json_array_get(perf_cases, i)))) {
                lsum += log(b->medians.cases[k].ms);
                n++;
            }
    if (j)
        json_object_set_new(j, "geomean_ms",
                            n > 0 && n == want ? json_real(exp(lsum / (double)n)) : json_null());
    return j;
}

static enum kiln_rc finalize(struct opt_run *r, struct kiln_err *err)
{
    progress(r, (int)r->n, "finalize");
    const struct workload *wl = eval_session_workload(r->s);
    enum kiln_backend b = eval_session_backend(r->s);
    /* Held-out check in rank order (the order summary.json reports, noise-
     * aware: within noise the earlier candidate keeps its place), counting
     * passes that await re-verification as eligible since this check is
     * their re-verification. A failure there eliminates the candidate and
     * the next one is checked (at most three). */
    int best = -1;
    struct rank_entry *order = NULL;
    enum kiln_rc orc = held_out_order(r, &order, err);
    if (orc != KILN_OK)
        return orc;
    for (size_t k = 0, tries = 0; k < r->n && tries < 3 && best < 0; k++) {
        int cand = (int)order[k].index;
        if (r->verdicts[cand].status != VERDICT_PASS)
            continue;
        if (r->verdicts[cand].reverified) { /* checked before an interruption */
            best = cand;
            break;
        }
        tries++;
        struct eval_outcome held;
        memset(&held, 0, sizeof(held));
        enum kiln_rc rc = eval_session_held_out(
            r->s, r->hist[cand].id, r->sources[cand], r->hist[cand].len,
            r->hist[cand].has_config ? r->hist[cand].config : NULL, &held, err);
        if (rc != KILN_OK) {
            eval_outcome_free(&held);
            free(order);
            return rc;
        }
        struct eval_outcome vis;
        memset(&vis, 0, sizeof(vis));
        vis.v = r->verdicts[cand];
        snprintf(vis.stage, sizeof(vis.stage), "pass");
        eval_session_apply_held_out(&vis, &held);
        r->verdicts[cand] = vis.v;
        if (vis.v.status != VERDICT_PASS) {
            r->hist[cand].status = vis.v.status;
            snprintf(r->hist[cand].stage, sizeof(r->hist[cand].stage), "held_out");
            snprintf(r->hist[cand].reason, sizeof(r->hist[cand].reason), "%s", vis.v.detail);
        } else {
            best = cand;
        }
        eval_outcome_free(&held);
    }
    free(order);
    struct rank_entry *rank = NULL;
    enum kiln_rc rc = rank_verdicts(r->verdicts, r->n, NULL, &rank, err);
    if (rc != KILN_OK)
        return rc;
    if (r->n && rank[0].place == 1 && r->verdicts[rank[0].index].reverified)
        best = (int)rank[0].index;

    const struct eval_outcome *ref = eval_session_reference_outcome(r->s);
    json_t *cases = json_array();
    for (size_t c = 0; c < wl->ncases; c++)
        if (wl->cases[c].kind == WL_CASE_PERFORMANCE && (wl->cases[c].backends & b))
            json_array_append_new(cases, json_string(wl->cases[c].name));
    json_t *cands = json_array(), *ranking = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const struct verdict *v = &r->verdicts[i];
        json_t *cj = json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:o}", "id", r->hist[i].id, "status",
                               verdict_status_name(r->hist[i].status), "stage", r->hist[i].stage,
                               "reason", r->hist[i].reason, "geomean_ms",
                               v->status == VERDICT_PASS ? v->score_ms : 0.0,
                               "speedup_vs_reference", v->speedup_ref, "case_ms", case_ms_json(v));
        if (cj)
            json_object_set_new(cj, "speedup_vs_baseline", ratio_or_null(v->speedup_vendor));
        json_array_append_new(cands, cj);
        const struct verdict *rv = &r->verdicts[rank[i].index];
        json_array_append_new(ranking,
                              json_pack("{s:s, s:i, s:s, s:s}", "candidate",
                                        r->hist[rank[i].index].id, "place", rank[i].place, "status",
                                        verdict_status_name(rv->status), "reason", rank[i].reason));
    }
    free(rank);
    json_t *bestj = json_null();
    if (best >= 0) {
        const struct verdict *v = &r->verdicts[best];
        bestj = json_pack("{s:s, s:f, s:f, s:o, s:f, s:s, s:s}", "candidate", r->hist[best].id,
                          "geomean_ms", v->score_ms, "speedup_vs_reference", v->speedup_ref,
                          "speedup_vs_baseline", ratio_or_null(v->speedup_vendor),
                          "fraction_of_floor", v->sol, "held_out", "pass", "summary", v->summary);
        char *pinned = pin_config(r->sources[best], &r->hist[best], b);
        char name[16];
        snprintf(name, sizeof(name), "best.%s", ext_of(b));
        if (pinned)
            rc = runrec_write(&r->rr, name, pinned, strlen(pinned), err);
        free(pinned);
    }
    char runname[32];
    snprintf(runname, sizeof(runname), "run-%03d", r->rr.number);
    int generated = r->generated || wl->provenance == WL_PROVENANCE_MODEL;
    json_t *summary = json_pack(
        "{s:s, s:s, s:s, s:b, s:o, s:o, s:f, s:o, s:o, s:o, s:I}", "run", runname, "workload",
        wl->name, "backend", kiln_backend_name(b), "reference_generated_by_model", generated,
        "perf_cases", cases, "reference_ms", medians_json(ref ? &ref->medians : NULL),
        "reference_geomean_ms", ref ? ref->v.score_ms : 0.0, "best", bestj, "candidates", cands,
        "ranking", ranking, "held_out_seed", (json_int_t)eval_session_secret_seed(r->s));
    if (summary)
        json_object_set_new(summary, "baseline",
                            baseline_summary_json(r, json_object_get(summary, "perf_cases")));
    if (rc == KILN_OK && !summary)
        rc = kiln_fail(err, KILN_E_NOMEM, "summary.json");
    if (summary)
        opt_given_add_json(&r->given, summary);
    if (rc == KILN_OK)
        rc = runrec_write_json(&r->rr, "summary.json", summary, err);
    if (rc == KILN_OK)
        rc = report_write_run(&r->rr, err);
    if (rc == KILN_OK && r->o.json)
        json_dumpf(summary, stdout, JSON_INDENT(2)), putchar('\n');
    if (rc == KILN_OK && !r->o.json) {
        if (r->tty && !r->o.quiet)
            fputc('\n', stderr);
        printf("kiln optimize %s (%s): %zu candidates, results in %s\n", wl->name,
               kiln_backend_name(b), r->n, r->rr.dir);
        if (generated)
            printf("  reference generated by the model: not an independent oracle\n");
        printf("  %-4s %-18s %-9s %12s %9s  %s\n", "id", "status", "stage", "geomean ms",
               "vs start", "note");
        if (ref)
            printf("  %-4s %-18s %-9s %12.4f %9s  %s\n", "ref", "pass", "-", ref->v.score_ms,
                   "1.00x", "the starting kernel");
        for (size_t i = 0; i < r->n; i++) {
            const struct verdict *v = &r->verdicts[i];
            char g[32] = "-", sp[32] = "-";
            if (v->status == VERDICT_PASS) {
                snprintf(g, sizeof(g), "%.4f", v->score_ms);
                if (v->speedup_ref > 0)
                    snprintf(sp, sizeof(sp), "%.2fx", v->speedup_ref);
            }
            printf("  %-4s %-18s %-9s %12s %9s  %s%s\n", r->hist[i].id,
                   verdict_status_name(r->hist[i].status), r->hist[i].stage, g, sp,
                   (int)i == best ? "BEST " : "",
                   r->hist[i].status == VERDICT_PASS ? r->hist[i].note : r->hist[i].reason);
        }
        if (best >= 0)
            printf("best: candidate %s, %s; written to %s/best.%s\n", r->hist[best].id,
                   r->verdicts[best].summary, r->rr.dir, ext_of(b));
        else
            printf("no candidate passed every check (see %s/report.html)\n", r->rr.dir);
    }
    json_decref(summary);
    return rc;
}

static void run_free(struct opt_run *r)
{
    opt_window_free(r);
    for (size_t i = 0; i < r->n; i++) {
        free(r->sources[i]);
        verdict_free(&r->verdicts[i]);
    }
    free(r->sources);
    free(r->verdicts);
    free(r->hist);
    json_decref(r->history);
    proposer_free(r->prop);
    opt_profile_close(r->op);
    eval_session_close(r->s);
    opt_given_free(&r->given);
}

/* The llm proposer's key; none is fine for a --base-url server (a local one
 * needs no key). */
static enum kiln_rc load_key(const struct opt_run *r, char *key, size_t cap, struct kiln_err *err)
{
    enum kiln_rc rc = apikey_load(r->o.dotenv, key, cap, err);
    if (rc == KILN_E_NOTFOUND && r->o.base_url) {
        kiln_err_clear(err);
        key[0] = '\0';
        rc = KILN_OK;
    }
    return rc;
}

static enum kiln_rc make_proposer(struct opt_run *r, struct kiln_err *err)
{
    const struct workload *wl = eval_session_workload(r->s);
    enum kiln_backend b = eval_session_backend(r->s);
    const char *p = r->o.proposer ? r->o.proposer : "tune";
    if (strcmp(p, "tune") == 0) {
        enum wl_file f = b == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
        return proposer_new_tune(wl->files[f].data, wl->files[f].len, b, r->o.seed, &r->prop, err);
    }
    if (strcmp(p, "replay") == 0) {
        if (!r->o.replay_dir)
            return kiln_fail(err, KILN_E_USAGE, "--proposer replay needs --replay RUN_DIR");
        return proposer_new_replay(r->o.replay_dir, &r->prop, err);
    }
    if (strcmp(p, "llm") == 0) {
        struct llm_settings s;
        memset(&s, 0, sizeof(s));
        s.cfg.base_url = r->o.base_url;
        s.cfg.model = r->o.model;
        s.cfg.max_retries = 4;
        enum kiln_rc rc = load_key(r, s.api_key, sizeof(s.api_key), err);
        if (rc != KILN_OK)
            return rc;
        rc = proposer_new_llm(&s, &r->prop, err);
        memset(s.api_key, 0, sizeof(s.api_key));
        return rc;
    }
    return kiln_fail(err, KILN_E_USAGE, "unknown proposer '%s' (tune, llm or replay)", p);
}

/* Opens the session on the run's own copy of the workload. */
static enum kiln_rc open_session(struct opt_run *r, struct kiln_err *err)
{
    char wdir[PATH_MAX], work[PATH_MAX];
    enum kiln_rc rc = runrec_path(&r->rr, "workload", wdir, sizeof(wdir), err);
    if (rc == KILN_OK)
        rc = runrec_path(&r->rr, "work", work, sizeof(work), err);
    if (rc != KILN_OK)
        return rc;
    struct eval_session_opts so = {.workload = wdir,
                                   .backend = r->o.backend,
                                   .gpu = r->o.gpu,
                                   .work_dir = work,
                                   .seed = r->o.seed,
                                   .warmups = r->o.warmups,
                                   .iterations = r->o.iterations,
                                   .compiler = r->o.compiler,
                                   .verbose = !r->o.quiet && !r->o.json};
    /* Given data: always the run's own copies (opt_given.h). */
    so.input_cases = r->given.inputs_copy[0] ? r->given.inputs_copy : NULL;
    so.reference = r->given.reference_copy[0] ? r->given.reference_copy : NULL;
    so.input_cases_sha256 = opt_given_sha256(r->given.inputs);
    so.reference_sha256 = opt_given_sha256(r->given.reference);
    so.reference_origin = opt_given_path(r->given.reference);
    if (!r->o.quiet && !r->o.json)
        fprintf(stderr, "kiln: run %s\n", r->rr.dir);
    rc = eval_session_open(&so, &r->s, err);
    if (rc == KILN_OK) {
        progress(r, 0, "baseline");
        rc = eval_session_reference(r->s, err);
    }
    if (rc == KILN_OK) {
        progress(r, 0, "vendor"); /* the workload's vendor baseline, once per run */
        rc = eval_session_baseline(r->s, err);
    }
    if (rc == KILN_OK)
        rc = opt_profile_open(r->o.profile, eval_session_backend(r->s), r->o.gpu, &r->rr, work,
                              r->o.quiet || r->o.json, &r->op, err);
    return rc;
}

static enum kiln_rc alloc_history(struct opt_run *r, struct kiln_err *err)
{
    size_t cap = (size_t)r->o.max_iterations + 1;
    r->hist = calloc(cap, sizeof(*r->hist));
    r->sources = calloc(cap, sizeof(*r->sources));
    r->verdicts = calloc(cap, sizeof(*r->verdicts));
    r->history = json_array();
    if (!r->hist || !r->sources || !r->verdicts || !r->history)
        return kiln_fail(err, KILN_E_NOMEM, "run history");
    return KILN_OK;
}

static enum kiln_rc loop(struct opt_run *r, int first, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    bool exhausted = false;
    if (r->op) {
        /* --profile: from here on profiles run (the starting kernel's first,
         * when nothing passed yet); replayed records were read back. */
        char ref_dir[PATH_MAX];
        eval_session_candidate_dir(r->s, "reference", false, ref_dir, sizeof(ref_dir));
        const struct eval_outcome *ref = eval_session_reference_outcome(r->s);
        rc = opt_profile_go_live(r->op, r->best >= 0, ref_dir, ref ? ref->compile.artifact : "",
                                 err);
    }
    if (opt_jobs(r) > 1 || r->win.n > 0)
        rc = opt_loop_jobs(r, first, err); /* --jobs N: optimize_jobs.c */
    else
        for (int it = first; rc == KILN_OK && !exhausted && it <= r->o.max_iterations; it++)
            rc = one_iteration(r, it, &exhausted, err);
    if (rc == KILN_OK)
        rc = finalize(r, err);
    return rc;
}

/* --description: a fresh run whose workload/ the model writes (wlgen.h);
 * *wdir gets that directory. The run's backend is chosen first, as for a
 * workload that could run on either. */
static enum kiln_rc generate_workload(struct opt_run *r, char *wdir, size_t cap,
                                      struct kiln_err *err)
{
    struct workload *any = calloc(1, sizeof(*any));
    if (!any)
        return kiln_fail(err, KILN_E_NOMEM, "workload");
    any->backends = KILN_BACKEND_ALL;
    r->o.backend = eval_backend_auto(r->o.backend, r->o.initial_kernel, any);
    free(any);
    struct llm_settings s;
    memset(&s, 0, sizeof(s));
    s.cfg.base_url = r->o.base_url;
    s.cfg.model = r->o.model;
    s.cfg.max_retries = 4;
    char work[PATH_MAX];
    struct wlgen_request g = {.description = r->o.description,
                              .backend = r->o.backend,
                              .gpu = r->o.gpu,
                              .rr = &r->rr,
                              .work_dir = work,
                              .seed = r->o.seed,
                              .max_attempts = r->o.gen_attempts,
                              .llm = &s,
                              .replay_dir = r->o.replay_dir,
                              .verbose = !r->o.quiet && !r->o.json};
    enum kiln_rc rc = KILN_OK;
    if (!r->o.replay_dir)
        rc = load_key(r, s.api_key, sizeof(s.api_key), err);
    if (rc == KILN_OK)
        rc = wlgen_check(&g, err);
    if (rc == KILN_OK)
        rc = runrec_create(r->o.results_dir, &r->rr, err);
    if (rc == KILN_OK)
        rc = runrec_path(&r->rr, "work", work, sizeof(work), err);
    if (rc == KILN_OK) {
        if (!r->o.quiet && !r->o.json)
            fprintf(stderr, "kiln: run %s: generating the workload from the description\n",
                    r->rr.dir);
        struct wlgen_result res;
        rc = wlgen_generate(&g, &res, err);
    }
    explicit_bzero(s.api_key, sizeof(s.api_key));
    if (rc == KILN_OK)
        rc = runrec_path(&r->rr, "workload", wdir, cap, err);
    if (rc == KILN_OK) {
        r->generated = true;
        r->o.workload = wdir;
    }
    return rc;
}

enum kiln_rc optimize_run(const struct opt_options *o, char *run_dir, size_t cap,
                          struct kiln_err *err)
{
    struct opt_run r;
    memset(&r, 0, sizeof(r));
    r.o = *o;
    r.best = -1;
    r.t0 = now_s();
    r.tty = isatty(STDERR_FILENO);
    if (!r.o.results_dir)
        r.o.results_dir = "results";
    if (r.o.max_iterations <= 0)
        r.o.max_iterations = 7;
    if (r.o.max_iterations > OPT_MAX_ITER)
        return kiln_fail(err, KILN_E_USAGE, "--max-iterations is at most %d", OPT_MAX_ITER);
    if (r.o.jobs <= 0)
        r.o.jobs = 1;
    if (r.o.jobs > OPT_MAX_JOBS)
        return kiln_fail(err, KILN_E_USAGE, "--jobs is at most %d", OPT_MAX_JOBS);
    if (!r.o.proposer)
        r.o.proposer = "tune";
    /* Load the workload once to learn its backend and copy it as used. */
    char wdir[PATH_MAX];
    struct workload *wl = NULL;
    char *initial = NULL;
    size_t ilen = 0;
    enum kiln_rc rc = KILN_OK;
    if (strcmp(r.o.proposer, "llm") == 0 || (o->description && !o->replay_dir)) {
        /* A key kiln refuses to read (a world-readable .env) is the
         * environment's problem: say so now, before inputs and the
         * baseline take minutes, and exit as a usage error. */
        char key[512];
        rc = load_key(&r, key, sizeof(key), err);
        explicit_bzero(key, sizeof(key));
        if (rc != KILN_OK && rc != KILN_E_NOMEM)
            rc = err->rc = KILN_E_USAGE;
    }
    if (rc == KILN_OK && o->initial_kernel)
        rc = fs_read_file(o->initial_kernel, 1u << 20, &initial, &ilen, err);
    if (rc == KILN_OK && o->description)
        rc = generate_workload(&r, wdir, sizeof(wdir), err);
    else if (rc == KILN_OK)
        rc = workload_resolve_dir(o->workload, wdir, sizeof(wdir), err);
    if (rc == KILN_OK)
        rc = workload_load(wdir, &wl, err);
    /* Given data is checked before a run directory exists. */
    if (rc == KILN_OK && (o->input_cases || o->reference))
        rc = opt_given_prepare(&r.given, o->input_cases, o->reference, wl,
                               eval_backend_auto(o->backend, o->initial_kernel, wl), err);
    if (rc == KILN_OK)
        rc = alloc_history(&r, err);
    if (rc == KILN_OK && !r.generated)
        rc = runrec_create(r.o.results_dir, &r.rr, err);
    if (rc == KILN_OK) {
        snprintf(run_dir, cap, "%s", r.rr.dir);
        r.o.backend = eval_backend_auto(r.o.backend, o->initial_kernel, wl);
        snprintf(r.start_file, sizeof(r.start_file), "%s",
                 workload_file_name(r.o.backend == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU
                                                                     : WL_FILE_KERNEL_C));
        rc = copy_workload(&r, wl, initial, ilen, err);
    }
    if (rc == KILN_OK)
        rc = opt_given_store(&r.given, &r.rr, err);
    free(initial);
    /* run.json and the empty history come first, so a run killed while its
     * inputs or its baseline are prepared can be resumed. They describe the
     * run's own copy of the workload (its hash covers --initial-kernel). */
    struct workload *used = NULL;
    char udir[PATH_MAX];
    if (rc == KILN_OK)
        rc = runrec_path(&r.rr, "workload", udir, sizeof(udir), err);
    if (rc == KILN_OK)
        rc = workload_load(udir, &used, err);
    if (rc == KILN_OK)
        rc = write_run_json(&r, used, err);
    workload_free(used);
    if (rc == KILN_OK)
        rc = runrec_write_json(&r.rr, "history.json", r.history, err);
    if (rc == KILN_OK)
        rc = open_session(&r, err);
    if (rc == KILN_OK)
        rc = make_proposer(&r, err);
    if (rc == KILN_OK)
        rc = opt_window_init(&r, err);
    if (rc == KILN_OK && r.o.jobs > 1 && opt_jobs(&r) == 1 && !r.o.quiet && !r.o.json)
        fprintf(stderr,
                "kiln: --jobs %d has no effect with --proposer %s: each proposal "
                "needs the verdict on the one before\n",
                r.o.jobs, proposer_name(r.prop));
    if (rc == KILN_OK && r.o.compiler == COMPILE_NVRTC &&
        eval_session_backend(r.s) != KILN_BACKEND_CUDA && !r.o.quiet && !r.o.json)
        fprintf(stderr,
                "kiln: --compiler nvrtc applies to the cuda backend; the %s backend "
                "compiles with cc\n",
                kiln_backend_name(eval_session_backend(r.s)));
    if (rc == KILN_OK)
        rc = loop(&r, 1, err);
    workload_free(wl);
    run_free(&r);
    return rc;
}

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

enum kiln_rc optimize_resume(const char *run_dir, bool quiet, bool json, struct kiln_err *err)
{
    struct opt_run r;
    memset(&r, 0, sizeof(r));
    r.best = -1;
    r.t0 = now_s();
    r.tty = isatty(STDERR_FILENO);
    json_t *run = NULL, *hist = NULL;
    enum kiln_rc rc = runrec_open(run_dir, &r.rr, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(&r.rr, "run.json", 1u << 20, &run, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(&r.rr, "history.json", 64u << 20, &hist, err);
    if (rc != KILN_OK) {
        json_decref(run);
        kiln_err_prefix(err, "%s is not a resumable run", run_dir);
        return rc;
    }
    r.o.quiet = quiet;
    r.o.json = json;
    r.o.workload = jstr(json_object_get(run, "workload"), "source");
    r.o.backend = kiln_backend_from_name(jstr(run, "backend") ? jstr(run, "backend") : "");
    r.o.gpu = (int)json_integer_value(json_object_get(run, "gpu_index"));
    r.o.max_iterations = (int)json_integer_value(json_object_get(run, "max_iterations"));
    r.o.proposer = jstr(run, "proposer");
    r.o.model = jstr(run, "model");
    r.o.base_url = jstr(run, "base_url");
    r.o.replay_dir = jstr(run, "replay");
    r.o.description = jstr(run, "description");
    r.generated = json_is_true(json_object_get(run, "reference_generated_by_model"));
    r.o.seed =
        (uint64_t)json_integer_value(json_object_get(json_object_get(run, "seeds"), "inputs"));
    r.o.warmups = (int)json_integer_value(json_object_get(run, "warmups"));
    r.o.iterations = (int)json_integer_value(json_object_get(run, "iterations"));
    r.o.profile = json_is_true(json_object_get(run, "profile")) ||
                  json_is_object(json_object_get(run, "profile"));
    /* Runs made before --jobs have no "jobs": they ran one at a time. */
    json_t *jobs = json_object_get(run, "jobs");
    r.o.jobs = jobs ? (int)json_integer_value(jobs) : 1;
    bool compiler_ok = !json_object_get(run, "compiler") || /* older runs: nvcc */
                       compile_tool_from_name(jstr(run, "compiler"), &r.o.compiler);
    if (r.o.max_iterations <= 0 || r.o.max_iterations > OPT_MAX_ITER || !r.o.proposer ||
        !json_is_array(hist) || r.o.jobs < 1 || r.o.jobs > OPT_MAX_JOBS || !compiler_ok)
        rc = kiln_fail(err, KILN_E_PARSE, "%s/run.json: missing or bad fields", run_dir);
    if (rc == KILN_OK)
        rc = alloc_history(&r, err);
    if (rc == KILN_OK)
        rc = opt_given_load(&r.given, &r.rr, run, err);
    if (rc == KILN_OK)
        rc = open_session(&r, err);
    if (rc == KILN_OK)
        rc = make_proposer(&r, err);
    if (rc == KILN_OK)
        rc = opt_window_init(&r, err);
    /* Rebuild the state from the records: every finished candidate's
     * verdict, source and configuration; the proposer replays its feedback
     * so the tuner never proposes a finished configuration again. */
    size_t done = json_array_size(hist);
    if (rc == KILN_OK && done > (size_t)r.o.max_iterations)
        rc = kiln_fail(err, KILN_E_PARSE, "%s: history longer than the budget", run_dir);
    for (size_t i = 0; rc == KILN_OK && i < done; i++) {
        json_t *h = json_array_get(hist, i);
        const char *id = jstr(h, "candidate");
        char rel[96], *text = NULL;
        size_t len = 0;
        snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", id ? id : "?");
        char path[PATH_MAX];
        if ((rc = runrec_path(&r.rr, rel, path, sizeof(path), err)) ||
            (rc = fs_read_file(path, VERDICT_MAX_JSON, &text, &len, err)))
            break;
        /* verdict.json carries kiln's extra keys; strip them for the strict reader. */
        json_error_t je;
        json_t *vj = json_loadb(text, len, 0, &je);
        free(text);
        json_t *cfg = json_incref(json_object_get(vj, "config"));
        const char *note = jstr(vj, "note");
        char notebuf[512];
        snprintf(notebuf, sizeof(notebuf), "%s", note ? note : "");
        json_object_del(vj, "stage");
        json_object_del(vj, "proposer");
        json_object_del(vj, "note");
        json_object_del(vj, "config");
        json_object_del(vj, "turnaround_s");
        char *clean = vj ? json_dumps(vj, JSON_COMPACT) : NULL;
        json_decref(vj);
        struct proposal p;
        memset(&p, 0, sizeof(p));
        struct eval_outcome o;
        memset(&o, 0, sizeof(o));
        rc = clean ? verdict_from_json(clean, strlen(clean), &o.v, err)
                   : kiln_fail(err, KILN_E_PARSE, "%s: not JSON", path);
        free(clean);
        snprintf(o.stage, sizeof(o.stage), "%s", jstr(h, "stage") ? jstr(h, "stage") : "");
        snprintf(p.note, sizeof(p.note), "%s", notebuf);
        char srel[96], spath[PATH_MAX];
        snprintf(srel, sizeof(srel), "candidates/%s/candidate.%s", id,
                 ext_of(eval_session_backend(r.s)));
        if (rc == KILN_OK && runrec_path(&r.rr, srel, spath, sizeof(spath), err) == KILN_OK) {
            struct kiln_err ign;
            kiln_err_clear(&ign);
            (void)(fs_read_file(spath, 1u << 20, &p.source, &p.len, &ign) == KILN_OK);
        }
        /* The tuner proposes deterministically for a seed: asking it again,
         * in the order the run asked (--jobs looks ahead), reproduces the
         * finished configuration, which keeps its state. Replay re-reads its
         * replies the same way; llm is not asked again. */
        if (rc == KILN_OK && proposer_looks_ahead(r.prop)) {
            struct proposal again;
            if ((rc = opt_window_repropose(&r, (int)i + 1, &again, err)) == KILN_OK &&
                !strcmp(r.o.proposer, "tune")) {
                p.has_config = again.has_config;
                p.nconfig = again.nconfig;
                memcpy(p.config, again.config, sizeof(p.config));
            }
            proposal_free(&again);
        }
        json_decref(cfg);
        if (rc == KILN_OK) {
            /* record() rewrites the same files with the same content. */
            rc = record(&r, (int)i + 1, &p, &o, err);
            if (rc == KILN_OK)
                proposer_feedback(r.prop, &p, r.hist[r.n - 1].status == VERDICT_PASS,
                                  r.hist[r.n - 1].improved);
        }
        eval_outcome_free(&o);
        proposal_free(&p);
    }
    if (rc == KILN_OK && !quiet && !json)
        fprintf(stderr, "kiln: resuming %s after %zu finished candidates\n", run_dir, done);
    if (rc == KILN_OK)
        rc = loop(&r, (int)done + 1, err);
    json_decref(run);
    json_decref(hist);
    run_free(&r);
    return rc;
}
