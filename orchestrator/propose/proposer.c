/* proposer.c - the proposer interface, the embedded tuner and replay. */
#include "proposer.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "fsutil.h"
#include "llm_reply.h"
#include "proposer_impl.h"
#include "text.h"
#include "plan.h"
#include "tune_search.h"

void proposal_free(struct proposal *p)
{
    free(p->source);
    free(p->exchange);
    memset(p, 0, sizeof(*p));
}

enum kiln_rc proposer_propose(struct proposer *p, const struct opt_state *st, struct proposal *out,
                              struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    out->prompt_tokens = out->completion_tokens = -1;
    out->cost_usd = -1;
    return p->ops->propose(p, st, out, err);
}

size_t proposer_planned(const struct proposer *p)
{
    return p && p->ops->planned ? p->ops->planned(p) : 0;
}

void proposer_feedback(struct proposer *p, const struct proposal *prop, bool passed, bool improved,
                       double geomean_ms)
{
    if (p->ops->feedback)
        p->ops->feedback(p, prop, passed, improved, geomean_ms);
}

const char *proposer_name(const struct proposer *p)
{
    return p->ops->name;
}

bool proposer_looks_ahead(const struct proposer *p)
{
    return p->ops->lookahead;
}

void proposer_free(struct proposer *p)
{
    if (p)
        p->ops->destroy(p);
}

/* Turns a model answer (content of the assistant message) into a proposal;
 * a bad answer makes an invalid proposal with the parser's reason. */
void proposal_from_content(const char *content, size_t len, enum kiln_backend backend,
                           struct proposal *out)
{
    struct llm_proposal lp = {0};
    struct kiln_err e;
    kiln_err_clear(&e);
    if (llm_reply_parse(content, len, &lp, &e) != KILN_OK) {
        snprintf(out->invalid, sizeof(out->invalid), "the reply was rejected: %s", e.msg);
        return;
    }
    bool want_c = backend == KILN_BACKEND_CPU;
    if ((lp.language == LLM_LANG_C) != want_c) {
        snprintf(out->invalid, sizeof(out->invalid),
                 "the reply's language is %s but this run's backend needs %s",
                 lp.language == LLM_LANG_C ? "c" : "cuda", want_c ? "c" : "cuda");
    } else {
        out->source = lp.source;
        out->len = lp.source_len;
        lp.source = NULL;
    }
    /* Cut on a character: a partial one would make the record's JSON fail. */
    text_copy_utf8(out->note, sizeof(out->note), lp.rationale);
    llm_proposal_free(&lp);
}

/* ---- tune ---- */

struct tune_proposer {
    struct proposer base;
    char *src;
    size_t len;
    struct candidate *cand;
    const struct workload *wl; /* borrowed: the session's */
    struct device_limits limits;
    struct tune_search *search;
};

/* A configuration may run when it meets the candidate's `require`
 * directives and its launch plan fits the target device's limits for every
 * case of the backend. */
static bool tune_valid(const size_t *idx, void *ctx)
{
    struct tune_proposer *t = ctx;
    int64_t values[CAND_MAX_TUNABLES];
    for (size_t d = 0; d < t->cand->ntunables; d++)
        values[d] = t->cand->tunables[d].values[idx[d]];
    struct kiln_err e;
    kiln_err_clear(&e);
    if (candidate_check_config(t->cand, values, &t->limits, &e) != KILN_OK)
        return false;
    return !t->wl || plan_check_all(t->cand, t->wl, values, &t->limits, &e) == KILN_OK;
}

static enum kiln_rc tune_propose(struct proposer *p, const struct opt_state *st,
                                 struct proposal *out, struct kiln_err *err)
{
    (void)st;
    struct tune_proposer *t = (struct tune_proposer *)p;
    size_t idx[TUNE_SEARCH_MAX_DIMS];
    int rung = 0, iterations = 0;
    enum kiln_rc rc = tune_search_next(t->search, idx, &rung, &iterations, err);
    if (rc != KILN_OK)
        return rc;
    out->source = malloc(t->len + 1);
    if (!out->source)
        return kiln_fail(err, KILN_E_NOMEM, "proposal");
    memcpy(out->source, t->src, t->len + 1);
    out->len = t->len;
    out->has_config = true;
    out->nconfig = t->cand->ntunables;
    out->iterations = iterations;
    (void)rung; /* the note is the configuration alone: records compare it with "config" */
    size_t off = 0;
    for (size_t d = 0; d < t->cand->ntunables; d++) {
        out->config[d] = t->cand->tunables[d].values[idx[d]];
        off += (size_t)snprintf(out->note + off,
                                off < sizeof(out->note) ? sizeof(out->note) - off : 0, "%s%s=%lld",
                                d ? " " : "", t->cand->tunables[d].name, (long long)out->config[d]);
        if (off >= sizeof(out->note))
            off = sizeof(out->note) - 1;
    }
    if (t->cand->ntunables == 0)
        snprintf(out->note, sizeof(out->note), "the starting kernel (no tunables declared)");
    return KILN_OK;
}

static void tune_feedback(struct proposer *p, const struct proposal *prop, bool passed,
                          bool improved, double geomean_ms)
{
    (void)prop;
    (void)improved; /* the search ranks by time itself, rung by rung */
    struct tune_proposer *t = (struct tune_proposer *)p;
    tune_search_report(t->search, passed, geomean_ms);
}

static void tune_destroy(struct proposer *p)
{
    struct tune_proposer *t = (struct tune_proposer *)p;
    candidate_free(t->cand);
    tune_search_free(t->search);
    free(t->src);
    free(t);
}

static size_t tune_planned(const struct proposer *p)
{
    return tune_search_planned(((const struct tune_proposer *)p)->search);
}

static const struct proposer_ops tune_ops = {"tune",       tune_propose, tune_feedback,
                                             tune_destroy, true,         tune_planned};

/* An empty search space: the defaults' own failure says why, e.g. "the
 * kernel needs sm_80 or newer" on a GPU below it. */
static void defaults_say_why(const struct tune_proposer *t, struct kiln_err *err)
{
    int64_t values[CAND_MAX_TUNABLES];
    struct kiln_err why;
    kiln_err_clear(&why);
    for (size_t d = 0; d < t->cand->ntunables; d++)
        values[d] = t->cand->tunables[d].def;
    if (err->rc == KILN_E_REJECTED &&
        candidate_check_config(t->cand, values, &t->limits, &why) != KILN_OK) {
        char msg[KILN_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        kiln_err_clear(err);
        (void)kiln_fail(err, KILN_E_REJECTED, "%.300s; its defaults: %.400s", msg, why.msg);
    }
    kiln_err_prefix(err, "the starting kernel");
}

enum kiln_rc proposer_new_tune(const char *start_source, size_t len, const struct workload *wl,
                               const struct device_limits *limits, enum kiln_backend backend,
                               uint64_t seed, size_t budget, struct proposer **out,
                               struct kiln_err *err)
{
    *out = NULL;
    struct tune_proposer *t = calloc(1, sizeof(*t));
    if (!t)
        return kiln_fail(err, KILN_E_NOMEM, "tune proposer");
    t->base.ops = &tune_ops;
    t->wl = wl;
    const struct device_limits h200 = DEVICE_LIMITS_H200;
    t->limits = limits ? *limits : h200;
    enum kiln_rc rc = candidate_parse(start_source, len, backend, &t->cand, err);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "the starting kernel");
        free(t);
        return rc;
    }
    size_t nv[TUNE_SEARCH_MAX_DIMS], def[TUNE_SEARCH_MAX_DIMS];
    for (size_t d = 0; d < t->cand->ntunables && d < TUNE_SEARCH_MAX_DIMS; d++) {
        nv[d] = t->cand->tunables[d].nvalues;
        def[d] = 0;
        for (size_t v = 0; v < t->cand->tunables[d].nvalues; v++)
            if (t->cand->tunables[d].values[v] == t->cand->tunables[d].def)
                def[d] = v;
    }
    struct tune_search_opts o = TUNE_SEARCH_DEFAULTS;
    o.seed = seed;
    o.budget = budget ? budget : o.budget;
    t->src = malloc(len + 1);
    if (!t->src || (rc = tune_search_new(nv, def, t->cand->ntunables, tune_valid, t, &o, &t->search,
                                         err)) != KILN_OK) {
        if (!t->src)
            rc = kiln_fail(err, KILN_E_NOMEM, "tune proposer");
        else
            defaults_say_why(t, err);
        tune_destroy(&t->base);
        return rc;
    }
    memcpy(t->src, start_source, len);
    t->src[len] = '\0';
    t->len = len;
    *out = &t->base;
    return KILN_OK;
}

/* ---- replay ---- */

struct replay_proposer {
    struct proposer base;
    char dir[PATH_MAX];
    int next; /* candidate number to replay next */
};

static enum kiln_rc replay_propose(struct proposer *p, const struct opt_state *st,
                                   struct proposal *out, struct kiln_err *err)
{
    struct replay_proposer *r = (struct replay_proposer *)p;
    char rel[64];
    snprintf(rel, sizeof(rel), "candidates/%03d/exchange.json", r->next);
    json_t *doc;
    const char *status, *reply;
    enum kiln_rc rc = llm_exchange_load(r->dir, rel, &doc, &status, &reply, err);
    if (rc == KILN_E_NOTFOUND) {
        kiln_err_clear(err);
        return kiln_fail(err, KILN_E_NOTFOUND, "the recorded run has no more model replies");
    }
    if (rc == KILN_OK || rc == KILN_E_PARSE) /* the record was read: move past it */
        r->next++;
    if (rc != KILN_OK)
        return rc;
    out->exchange = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (strcmp(status, "ok") != 0 || !reply) {
        const char *e = json_string_value(json_object_get(doc, "error"));
        /* The same words the llm proposer used when it recorded the call. */
        snprintf(out->invalid, sizeof(out->invalid), "the model call failed: %s",
                 e ? e : "no error recorded");
    } else {
        char *content = NULL;
        size_t clen = 0;
        struct llm_usage usage;
        struct kiln_err e;
        kiln_err_clear(&e);
        if (llm_envelope_parse(reply, strlen(reply), &content, &clen, &usage, &e) != KILN_OK)
            snprintf(out->invalid, sizeof(out->invalid), "the reply was rejected: %s", e.msg);
        else
            proposal_from_content(content, clen, st->backend, out);
        free(content);
    }
    json_decref(doc);
    return KILN_OK;
}

static void replay_destroy(struct proposer *p)
{
    free(p);
}

static const struct proposer_ops replay_ops = {"replay",       replay_propose, NULL,
                                               replay_destroy, true,           NULL};

enum kiln_rc proposer_new_replay(const char *run_dir, struct proposer **out, struct kiln_err *err)
{
    *out = NULL;
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof(probe), "%s/candidates/001/exchange.json", run_dir);
    FILE *f = fopen(probe, "re");
    if (!f)
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "%s holds no recorded model replies (candidates/001/exchange.json): "
                         "replay needs a run made with --proposer llm",
                         run_dir);
    fclose(f);
    struct replay_proposer *r = calloc(1, sizeof(*r));
    if (!r)
        return kiln_fail(err, KILN_E_NOMEM, "replay proposer");
    r->base.ops = &replay_ops;
    snprintf(r->dir, sizeof(r->dir), "%s", run_dir);
    r->next = 1;
    *out = &r->base;
    return KILN_OK;
}
