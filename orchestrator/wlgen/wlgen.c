/* wlgen.c - the attempts of `kiln optimize --description`: ask, record,
 * judge like any stranger's workload, feed the problems back. */
#include "wlgen.h"
#include "json_strict.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "llm.h"
#include "llm_reply.h"
#include "session.h"
#include "wlcheck.h"
#include "wlgen_reply.h"
#include "text.h"

#define PROBLEMS_MAX (WLCHECK_PROBLEMS_MAX + 2048)
#define DIAG_MAX     1500 /* bytes of compiler output fed back */

static const char provenance_line[] = "\"provenance\": \"model-generated\"";

struct gen {
    const struct wlgen_request *req;
    struct llm_config cfg;
    int max_attempts;
    json_t *record; /* generation.json */
    char *content;  /* the current attempt's answer */
    size_t content_len;
    char stage[16]; /* where the current attempt failed; "pass" when it did not */
    char problems[PROBLEMS_MAX];
    struct workload *wl; /* the current attempt's workload, once it loads */
};

static void problem(struct gen *g, const char *stage, const char *fmt, ...) KILN_PRINTF(3, 4);

static void problem(struct gen *g, const char *stage, const char *fmt, ...)
{
    snprintf(g->stage, sizeof(g->stage), "%s", stage);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->problems, sizeof(g->problems), fmt, ap);
    va_end(ap);
}

static void attempt_rel(char *out, size_t cap, int k, const char *name)
{
    snprintf(out, cap, "generate/%02d/%s", k, name);
}

/* ---- asking ---- */

/* The recorded answer of attempt k of the replayed run. */
static enum kiln_rc ask_replay(struct gen *g, int k, json_t *entry, struct kiln_err *err)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "generate/%02d/exchange.json", k);
    json_t *doc;
    const char *status, *reply;
    enum kiln_rc rc = llm_exchange_load(g->req->replay_dir, rel, &doc, &status, &reply, err);
    if (rc != KILN_OK)
        return rc;
    json_object_set(entry, "prompt_tokens", json_object_get(doc, "prompt_tokens"));
    json_object_set(entry, "completion_tokens", json_object_get(doc, "completion_tokens"));
    attempt_rel(rel, sizeof(rel), k, "exchange.json");
    rc = runrec_write_json(g->req->rr, rel, doc, err);
    if (rc == KILN_OK && (strcmp(status, "ok") != 0 || !reply)) {
        const char *e = json_string_value(json_object_get(doc, "error"));
        rc = kiln_fail(err, KILN_E_REJECTED, "the recorded model call of attempt %d failed: %s", k,
                       e ? e : "no reply");
    }
    if (rc == KILN_OK) {
        struct llm_usage usage;
        struct kiln_err e;
        kiln_err_clear(&e);
        if (llm_envelope_parse(reply, strlen(reply), &g->content, &g->content_len, &usage, &e) !=
            KILN_OK)
            problem(g, "reply", "the reply was rejected: %s", e.msg);
    }
    json_decref(doc);
    return rc;
}

static enum kiln_rc ask_model(struct gen *g, int k, const char *prompt, json_t *entry,
                              struct kiln_err *err)
{
    struct llm_exchange ex = {0};
    struct kiln_err cerr;
    kiln_err_clear(&cerr);
    const char *key = g->req->llm->api_key[0] ? g->req->llm->api_key : NULL;
    enum kiln_rc rc = llm_chat(&g->cfg, key, wlgen_system_prompt(), prompt, &ex, &cerr);
    json_object_set_new(entry, "prompt_tokens", json_integer(ex.prompt_tokens));
    json_object_set_new(entry, "completion_tokens", json_integer(ex.completion_tokens));
    json_object_set_new(entry, "cost_usd", json_real(ex.cost_usd));
    enum kiln_rc wrc = KILN_OK;
    if (rc != KILN_E_USAGE) {
        char rel[64], *text = llm_exchange_to_json(&ex, rc == KILN_OK ? NULL : cerr.msg);
        attempt_rel(rel, sizeof(rel), k, "exchange.json");
        wrc = text ? runrec_write(g->req->rr, rel, text, strlen(text), err)
                   : kiln_fail(err, KILN_E_NOMEM, "recording the exchange");
        free(text);
    }
    if (rc == KILN_OK && wrc == KILN_OK) {
        g->content = ex.content;
        g->content_len = ex.content_len;
        ex.content = NULL;
    }
    llm_exchange_free(&ex);
    if (wrc != KILN_OK)
        return wrc;
    if (rc != KILN_OK) {
        /* The transport already retried: a failed call ends the generation. */
        *err = cerr;
        kiln_err_prefix(err, "the model call of attempt %d failed", k);
    }
    return rc;
}

/* ---- judging ---- */

/* workload.json as the model wrote it, with "provenance": "model-generated"
 * added after the opening brace: kiln marks it, the model cannot leave it
 * out or claim another author. Returns false with a problem set. */
static bool mark_generated(struct gen *g, const char *text, size_t len, char **out, size_t *out_len)
{
    static const struct json_strict_rules rules = {.max_bytes = WL_MAX_JSON, .any_top = true};
    struct kiln_err je = {0};
    json_t *root;
    if (json_strict_parse("workload.json", text, len, &rules, &root, &je) != KILN_OK) {
        problem(g, "parse", "%s", je.msg);
        return false;
    }
    json_t *p = json_object_get(root, "provenance");
    bool object = json_is_object(root), empty = json_object_size(root) == 0;
    bool already = json_is_string(p) && strcmp(json_string_value(p), "model-generated") == 0;
    json_decref(root);
    if (!object) {
        problem(g, "parse", "workload.json: must be a JSON object");
        return false;
    }
    if (p && !already) {
        problem(g, "parse",
                "workload.json: provenance: leave it out (kiln sets \"model-generated\")");
        return false;
    }
    size_t extra = already ? 0 : sizeof(provenance_line) + 8;
    char *o = malloc(len + extra + 1);
    if (!o)
        return false;
    if (already) {
        memcpy(o, text, len);
        *out_len = len;
    } else {
        /* A JSON object's text starts with blanks, then '{'. */
        const char *brace = memchr(text, '{', len);
        size_t head = (size_t)(brace - text) + 1;
        int n = snprintf(o, len + extra + 1, "%.*s\n  %s%s", (int)head, text, provenance_line,
                         empty ? "" : ",");
        memcpy(o + n, text + head, len - head);
        *out_len = (size_t)n + len - head;
    }
    o[*out_len] = '\0';
    *out = o;
    return true;
}

/* Drops a leading "DIR/" from a loader message: the model knows the files
 * by their names. */
static const char *strip_dir(const char *msg, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(msg, dir, n) == 0 && msg[n] == '/' ? msg + n + 1 : msg;
}

static void remove_quietly(const char *dir, const char *rel)
{
    char path[PATH_MAX];
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_join(path, sizeof(path), dir, rel, &e) == KILN_OK)
        (void)(fs_remove_tree(path, &e) == KILN_OK);
}

/* The starting kernel, compiled, run once per input set and verified
 * against the reference: the run's baseline must pass its own check. */
static enum kiln_rc check_kernel(struct gen *g, const char *dir, struct kiln_err *err)
{
    const struct wlgen_request *req = g->req;
    struct eval_session_opts so = {.workload = dir,
                                   .backend = req->backend,
                                   .gpu = req->gpu,
                                   .work_dir = req->work_dir,
                                   .seed = req->seed,
                                   .warmups = 1,
                                   .iterations = 3,
                                   .verbose = req->verbose};
    struct eval_session *s = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc rc = eval_session_open(&so, &s, &e);
    bool opened = rc == KILN_OK;
    if (rc == KILN_OK)
        rc = eval_session_reference(s, &e);
    const struct eval_outcome *o = s ? eval_session_reference_outcome(s) : NULL;
    if (rc != KILN_OK && !wlcheck_host_failure(rc)) {
        const char *diag = o && o->v.status == VERDICT_COMPILE_ERROR && o->compile.diagnostics
                               ? o->compile.diagnostics
                               : "";
        problem(g, opened ? "kernel" : "check", "%s%s%.*s", strip_dir(e.msg, dir),
                diag[0] ? "\ncompiler: " : "", DIAG_MAX, diag);
        rc = KILN_OK;
    } else if (rc != KILN_OK) {
        *err = e;
    }
    eval_session_close(s);
    remove_quietly(req->work_dir, "cand-reference");
    return rc;
}

/* Judges the current answer as any workload from a stranger. KILN_OK with
 * g->stage "pass" or a problem; an error only when the host failed. */
static enum kiln_rc judge(struct gen *g, int k, json_t *entry, struct kiln_err *err)
{
    const struct wlgen_request *req = g->req;
    struct wlgen_reply r;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (wlgen_reply_parse(g->content, g->content_len, &r, &e) != KILN_OK) {
        problem(g, "reply", "the reply was rejected: %s", e.msg);
        return KILN_OK;
    }
    if (r.rationale[0])
        json_object_set_new(entry, "rationale", json_string(r.rationale));
    char *marked = NULL;
    size_t mlen = 0;
    enum kiln_rc rc = KILN_OK;
    if (!mark_generated(g, r.files[WL_FILE_JSON], r.lens[WL_FILE_JSON], &marked, &mlen)) {
        if (!g->problems[0])
            rc = kiln_fail(err, KILN_E_NOMEM, "marking workload.json");
        wlgen_reply_free(&r);
        return rc;
    }
    free(r.files[WL_FILE_JSON]);
    r.files[WL_FILE_JSON] = marked;
    r.lens[WL_FILE_JSON] = mlen;
    /* The files as proposed (with kiln's mark), for the record. */
    char rel[96], dir[PATH_MAX];
    for (int f = 0; rc == KILN_OK && f < WL_FILE_COUNT; f++) {
        if (!r.files[f])
            continue;
        char name[64];
        snprintf(name, sizeof(name), "workload/%s", workload_file_name((enum wl_file)f));
        attempt_rel(rel, sizeof(rel), k, name);
        rc = runrec_write(req->rr, rel, r.files[f], r.lens[f], err);
    }
    wlgen_reply_free(&r);
    attempt_rel(rel, sizeof(rel), k, "workload");
    if (rc == KILN_OK)
        rc = runrec_path(req->rr, rel, dir, sizeof(dir), err);
    if (rc != KILN_OK)
        return rc;

    if (workload_load(dir, &g->wl, &e) != KILN_OK) {
        problem(g, "parse", "%s", strip_dir(e.msg, dir));
        return KILN_OK;
    }
    json_object_set_new(entry, "workload", json_string(g->wl->name));
    json_object_set_new(entry, "hash", json_string(g->wl->hash));
    if (g->wl->provenance != WL_PROVENANCE_MODEL)
        return kiln_fail(err, KILN_E_INTERNAL, "%s/workload.json lost its provenance", dir);
    if (!(g->wl->backends & req->backend)) {
        problem(g, "parse", "workload.json: backends: must list %s, this run's backend",
                kiln_backend_name(req->backend));
        return KILN_OK;
    }

    char inputs[PATH_MAX], held[PATH_MAX];
    if ((rc = fs_join(inputs, sizeof(inputs), req->work_dir, "inputs", err)) != KILN_OK ||
        (rc = fs_join(held, sizeof(held), req->work_dir, "inputs-check", err)) != KILN_OK)
        return rc;
    struct wlcheck_opts co = {.backends = KILN_BACKEND_ALL,
                              .cache_dir = inputs,
                              .held_cache_dir = held,
                              .seed = req->seed,
                              .verbose = req->verbose};
    struct wlcheck_result res;
    wlcheck_run(g->wl, &co, &res);
    remove_quietly(req->work_dir, "inputs-check");
    if (res.environment != KILN_OK)
        return kiln_fail(err, res.environment, "checking the generated workload: %s", res.problems);
    if (res.nproblems) {
        problem(g, "check", "%s", res.problems);
        return KILN_OK;
    }
    rc = check_kernel(g, dir, err);
    if (rc == KILN_OK && !g->problems[0])
        snprintf(g->stage, sizeof(g->stage), "pass");
    return rc;
}

/* ---- recording and installing ---- */

static enum kiln_rc save_record(struct gen *g, struct kiln_err *err)
{
    return runrec_write_json(g->req->rr, "generation.json", g->record, err);
}

/* workload/ of the run: the accepted files, written to workload.tmp/ and
 * renamed, so the directory appears whole or not at all. */
static enum kiln_rc install(struct gen *g, struct kiln_err *err)
{
    const struct runrec *rr = g->req->rr;
    char tmp[PATH_MAX], final[PATH_MAX];
    enum kiln_rc rc = runrec_path(rr, "workload.tmp", tmp, sizeof(tmp), err);
    if (rc == KILN_OK)
        rc = runrec_path(rr, "workload", final, sizeof(final), err);
    if (rc == KILN_OK)
        rc = fs_remove_tree(tmp, err);
    for (int f = 0; rc == KILN_OK && f < WL_FILE_COUNT; f++) {
        const struct wl_file_data *d = &g->wl->files[f];
        if (!d->present)
            continue;
        char rel[64];
        snprintf(rel, sizeof(rel), "workload.tmp/%s", workload_file_name((enum wl_file)f));
        rc = runrec_write(rr, rel, d->data, d->len, err);
    }
    if (rc == KILN_OK && rename(tmp, final) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "renaming %s to %s", tmp, final);
    return rc;
}

/* ---- the attempts ---- */

/* Replay: the description and backend must be the recorded ones, and the
 * attempts are the recorded ones. */
static enum kiln_rc replay_setup(struct gen *g, struct kiln_err *err)
{
    const struct wlgen_request *req = g->req;
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/generate/01/exchange.json", req->replay_dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "%s holds no recorded workload generation (generate/01/exchange.json): "
                         "replaying one needs a run made with --description",
                         req->replay_dir);
    fclose(f);
    g->max_attempts = 1;
    for (int k = 2; k <= WLGEN_MAX_ATTEMPTS; k++) {
        snprintf(path, sizeof(path), "%s/generate/%02d/exchange.json", req->replay_dir, k);
        if (!(f = fopen(path, "re")))
            break;
        fclose(f);
        g->max_attempts = k;
    }
    snprintf(path, sizeof(path), "%s/generation.json", req->replay_dir);
    char *text = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_read_file(path, 16u << 20, &text, &len, &e) != KILN_OK)
        return KILN_OK; /* the exchanges are what replay needs */
    static const struct json_strict_rules rules = {.max_bytes = 16u << 20};
    json_t *doc = NULL;
    if (json_strict_parse(path, text, len, &rules, &doc, &e) != KILN_OK)
        doc = NULL; /* as a missing file: the exchanges are what replay needs */
    free(text);
    const char *d = json_string_value(json_object_get(doc, "description"));
    const char *b = json_string_value(json_object_get(doc, "backend"));
    enum kiln_rc rc = KILN_OK;
    if (d && strcmp(d, req->description) != 0)
        rc = kiln_fail(err, KILN_E_USAGE,
                       "%s generated its workload from another description: give the same "
                       "--description to replay it",
                       req->replay_dir);
    else if (b && strcmp(b, kiln_backend_name(req->backend)) != 0)
        rc = kiln_fail(err, KILN_E_USAGE,
                       "%s generated its workload for the %s backend: pass --backend %s to "
                       "replay it",
                       req->replay_dir, b, b);
    json_decref(doc);
    return rc;
}

/* What can be checked before the run exists: the request and, for a
 * replay, that the recorded generation fits it. */
static enum kiln_rc check_request(struct gen *g, struct kiln_err *err)
{
    const struct wlgen_request *req = g->req;
    if (!req->description || !req->description[0])
        return kiln_fail(err, KILN_E_USAGE, "--description is empty: say what to compute");
    if (strlen(req->description) > WLGEN_DESC_MAX)
        return kiln_fail(err, KILN_E_USAGE, "--description is %zu bytes; the limit is %d",
                         strlen(req->description), WLGEN_DESC_MAX);
    g->max_attempts = req->max_attempts ? req->max_attempts : WLGEN_DEFAULT_ATTEMPTS;
    if (g->max_attempts < 1 || g->max_attempts > WLGEN_MAX_ATTEMPTS)
        return kiln_fail(err, KILN_E_USAGE, "attempts must be 1..%d", WLGEN_MAX_ATTEMPTS);
    if (req->replay_dir) {
        enum kiln_rc rc = replay_setup(g, err);
        if (rc != KILN_OK)
            return rc;
    } else if (!req->llm || !req->llm->cfg.model || !req->llm->cfg.model[0]) {
        return kiln_fail(err, KILN_E_USAGE,
                         "generating a workload needs a model: pass --model NAME (or --replay "
                         "RUN_DIR of a run made with --description)");
    } else {
        g->cfg = req->llm->cfg;
        g->cfg.schema = wlgen_reply_schema();
        g->cfg.schema_name = "kiln_workload";
    }
    return KILN_OK;
}

enum kiln_rc wlgen_check(const struct wlgen_request *req, struct kiln_err *err)
{
    struct gen g;
    memset(&g, 0, sizeof(g));
    g.req = req;
    return check_request(&g, err);
}

static enum kiln_rc setup(struct gen *g, struct kiln_err *err)
{
    const struct wlgen_request *req = g->req;
    enum kiln_rc rc = check_request(g, err);
    if (rc != KILN_OK)
        return rc;
    g->record = json_pack(
        "{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:i, s:n, s:[]}", "description", req->description,
        "backend", kiln_backend_name(req->backend), "provenance", "model-generated", "model",
        req->replay_dir ? NULL : g->cfg.model, "base_url", req->replay_dir ? NULL : g->cfg.base_url,
        "replayed_from", req->replay_dir, "max_attempts", g->max_attempts, "accepted", "attempts");
    return g->record ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "generation.json");
}

static void first_line(const char *s, char *out, size_t cap)
{
    size_t n = strcspn(s, "\n");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), s);
}

/* One attempt: ask, judge, record. */
static enum kiln_rc attempt(struct gen *g, int k, struct kiln_err *err)
{
    const struct wlgen_request *req = g->req;
    char *prompt = NULL;
    if (!req->replay_dir) {
        char *previous = g->content;
        prompt = wlgen_build_prompt(req->description, req->backend, k > 1 ? g->problems : NULL,
                                    k > 1 ? previous : NULL, err);
        if (!prompt)
            return err->rc ? err->rc : kiln_fail(err, KILN_E_NOMEM, "the workload prompt");
    }
    free(g->content);
    g->content = NULL;
    g->content_len = 0;
    workload_free(g->wl);
    g->wl = NULL;
    g->stage[0] = g->problems[0] = '\0';
    if (req->verbose)
        fprintf(stderr, "kiln: %s a workload (attempt %d of %d)\n",
                req->replay_dir ? "replaying the recorded answer for" : "asking the model for", k,
                g->max_attempts);
    json_t *entry = json_pack("{s:i}", "attempt", k);
    if (!entry) {
        free(prompt);
        return kiln_fail(err, KILN_E_NOMEM, "generation.json");
    }
    json_array_append_new(json_object_get(g->record, "attempts"), entry);
    enum kiln_rc rc =
        req->replay_dir ? ask_replay(g, k, entry, err) : ask_model(g, k, prompt, entry, err);
    free(prompt);
    if (rc == KILN_OK && g->content && !g->problems[0])
        rc = judge(g, k, entry, err);
    bool ok = rc == KILN_OK && strcmp(g->stage, "pass") == 0;
    json_object_set_new(entry, "status", json_string(ok ? "accepted" : "rejected"));
    json_object_set_new(entry, "stage", json_string(rc == KILN_OK ? g->stage : "error"));
    json_object_set_new(entry, "problems", json_string(rc == KILN_OK ? g->problems : err->msg));
    if (g->wl && !ok) {
        /* A rejected workload's inputs are of no further use. */
        char rel[64];
        snprintf(rel, sizeof(rel), "inputs/%.16s", g->wl->hash);
        remove_quietly(req->work_dir, rel);
    }
    if (rc == KILN_OK && req->verbose) {
        char line[300], esc[sizeof(line) * 4];
        first_line(g->problems, line, sizeof(line));
        if (ok)
            fprintf(stderr,
                    "kiln: attempt %d accepted: workload %s (reference generated by the "
                    "model: not an independent oracle)\n",
                    k, g->wl->name);
        else
            fprintf(stderr, "kiln: attempt %d rejected (%s): %s\n", k, g->stage,
                    text_escape_control(esc, sizeof(esc), line));
    }
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc src = save_record(g, rc == KILN_OK ? err : &e);
    return rc != KILN_OK ? rc : src;
}

enum kiln_rc wlgen_generate(const struct wlgen_request *req, struct wlgen_result *res,
                            struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    struct gen g;
    memset(&g, 0, sizeof(g));
    g.req = req;
    enum kiln_rc rc = setup(&g, err);
    for (int k = 1; rc == KILN_OK && k <= g.max_attempts && !res->accepted; k++) {
        rc = attempt(&g, k, err);
        res->attempts = k;
        if (rc == KILN_OK && strcmp(g.stage, "pass") == 0)
            res->accepted = k;
    }
    if (rc == KILN_OK && res->accepted) {
        json_object_set_new(g.record, "accepted", json_integer(res->accepted));
        rc = install(&g, err);
        if (rc == KILN_OK)
            rc = save_record(&g, err);
    } else if (rc == KILN_OK) {
        char line[300];
        first_line(g.problems, line, sizeof(line));
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "the model wrote no valid workload in %d attempt%s; the last one failed "
                       "at %s: %s (every attempt is in %s/generate/)",
                       res->attempts, res->attempts == 1 ? "" : "s", g.stage, line, req->rr->dir);
    }
    json_decref(g.record);
    free(g.content);
    workload_free(g.wl);
    return rc;
}
