/*
 * opt_resume.c - `kiln resume`: an interrupted run continued from its
 * records. run.json gives back the options; every finished candidate's
 * verdict, source and configuration are read back and recorded again, the
 * proposer is asked again as the run asked it, then the loop goes on.
 */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apikey.h"
#include "docs_prompt.h"
#include "fsutil.h"
#include "json_strict.h"
#include "llm.h"
#include "opt_given.h"
#include "optimize.h"
#include "optimize_impl.h"
#include "runrec.h"
#include "session.h"
#include "text.h"

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* "https://api.openai.com/v1" and ".../v1/" are the same server. */
static bool is_default_url(const char *url)
{
    size_t n = strlen(url), d = strlen(LLM_DEFAULT_BASE_URL);
    while (n > d && url[n - 1] == '/')
        n--;
    return n == d && strncmp(url, LLM_DEFAULT_BASE_URL, d) == 0;
}

/* The llm proposer's server. A run directory may come from anyone: its
 * run.json must not choose where the API key goes. The key goes to the
 * default server, or to a --base-url given to resume; a recorded other URL
 * is used only when no key would be sent. */
static enum kiln_rc resume_base_url(struct opt_run *r, const char *run_dir, const char *recorded,
                                    const char *given, struct kiln_err *err)
{
    r->o.base_url = given ? given : recorded;
    if (given || !recorded || strcmp(r->o.proposer, "llm") != 0 || is_default_url(recorded))
        return KILN_OK;
    char key[512];
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc krc = apikey_load(r->o.dotenv, key, sizeof(key), &e);
    explicit_bzero(key, sizeof(key));
    if (krc == KILN_E_NOTFOUND)
        return KILN_OK; /* no key: nothing secret goes to the recorded server */
    return kiln_fail(err, KILN_E_USAGE,
                     "%s/run.json names the LLM server %s; kiln resume sends the API key only "
                     "to %s or to a server named on its command line: if you trust that "
                     "server, run kiln resume %s --base-url %s",
                     run_dir, recorded, LLM_DEFAULT_BASE_URL, run_dir, recorded);
}

/* The run's copy of the workload is the one run.json's hash describes: a
 * copy changed since (a planted reference.py) is refused before it runs. */
static enum kiln_rc check_workload_copy(struct opt_run *r, json_t *run, struct kiln_err *err)
{
    const char *want = jstr(json_object_get(run, "workload"), "hash");
    char wdir[PATH_MAX];
    struct workload *wl = NULL;
    enum kiln_rc rc = runrec_dir(&r->rr, "workload", wdir, sizeof(wdir), err);
    if (rc == KILN_OK)
        rc = workload_load(wdir, &wl, err);
    if (rc == KILN_OK && (!want || strcmp(want, wl->hash) != 0))
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "%s: the workload copy's content hash %.16s does not match run.json's "
                       "%.16s: the copy was changed after the run started; restore it or start a "
                       "new run",
                       wdir, wl->hash, want ? want : "(none)");
    workload_free(wl);
    return rc;
}

/* --tuner-run: the findings again, from the files the run read when it
 * started (their digests recorded in run.json), so the prompt is the same;
 * the tunable and kernel names come from the run's workload copy. */
static enum kiln_rc resume_findings(struct opt_run *r, json_t *run, struct kiln_err *err)
{
    json_t *tr = json_object_get(run, "tuner_run");
    if (!tr)
        return KILN_OK;
    const char *path = jstr(tr, "path");
    json_t *files = json_object_get(tr, "files");
    if (!path || !json_is_object(files))
        return kiln_fail(err, KILN_E_PARSE, "%s/run.json: tuner_run needs path and files",
                         r->rr.dir);
    char wdir[PATH_MAX];
    struct workload *wl = NULL;
    enum kiln_rc rc = runrec_dir(&r->rr, "workload", wdir, sizeof(wdir), err);
    if (rc == KILN_OK)
        rc = workload_load(wdir, &wl, err);
    if (rc == KILN_OK)
        rc = tuner_findings_load(path, wl, r->o.backend, files, &r->findings, err);
    workload_free(wl);
    return rc;
}

enum kiln_rc optimize_resume(const char *run_dir, bool quiet, bool json, struct kiln_err *err)
{
    struct opt_resume_options ro = {.quiet = quiet, .json = json};
    return optimize_resume_with(run_dir, &ro, err);
}

static void resume_init(struct opt_run *r)
{
    memset(r, 0, sizeof(*r));
    r->best = -1;
    r->lock_fd = -1;
    r->session = 1;
    r->t0 = opt_now_s();
    r->tty = isatty(STDERR_FILENO);
    opt_log_init(r);
}

/* The record opened, locked and its run.json and history.json read. On
 * error nothing is left held. */
static enum kiln_rc resume_open_record(struct opt_run *r, const char *run_dir, json_t **run,
                                       json_t **hist, struct kiln_err *err)
{
    enum kiln_rc rc = runrec_open(run_dir, &r->rr, err);
    if (rc == KILN_OK) /* one process per run: a second resume would race the first */
        rc = runrec_lock(&r->rr, &r->lock_fd, err);
    /* Nothing in the record is read before its MANIFEST says it is intact:
     * first every file but those of candidates in flight, then, once the
     * verified history says how many finished, that those really were in
     * flight (numbered past the finished ones). */
    size_t in_flight = 0;
    if (rc == KILN_OK)
        rc = runrec_manifest_check(&r->rr, 0, &in_flight, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(&r->rr, "run.json", 1u << 20, run, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(&r->rr, "history.json", 64u << 20, hist, err);
    if (rc == KILN_OK && in_flight > 0)
        rc = runrec_manifest_check(&r->rr, json_array_size(*hist), NULL, err);
    if (rc == KILN_OK)
        rc = runrec_check_versions(*run, *hist, NULL, err);
    if (rc != KILN_OK) {
        json_decref(*run);
        json_decref(*hist);
        *run = *hist = NULL;
        if (r->lock_fd >= 0)
            close(r->lock_fd);
        r->lock_fd = -1;
        kiln_err_prefix(err, "%s is not a resumable run", run_dir);
    }
    return rc;
}

/* The run's options again, from run.json and the resume command line. */
static void resume_options(struct opt_run *r, json_t *run, const char *run_dir,
                           const struct opt_resume_options *ro)
{
    r->o.quiet = ro->quiet;
    r->o.json = ro->json;
    r->o.workload = jstr(json_object_get(run, "workload"), "source");
    r->o.backend = kiln_backend_from_name(jstr(run, "backend") ? jstr(run, "backend") : "");
    r->o.gpu = (int)json_integer_value(json_object_get(run, "gpu_index"));
    r->o.max_iterations = (int)json_integer_value(json_object_get(run, "max_iterations"));
    r->o.proposer = jstr(run, "proposer");
    r->o.model = jstr(run, "model");
    r->o.dotenv = ro->dotenv;
    r->o.stop = ro->stop;
    r->o.runner = ro->runner;
    /* The executor is chosen anew: a spool and partition may not outlive
     * the run, and verdicts do not depend on where the harness ran. */
    const char *ran_on = jstr(run, "executor");
    if (!ro->runner && ran_on && strcmp(ran_on, "local") != 0 && !ro->quiet)
        fprintf(stderr,
                "kiln: %s was made with --executor %s; resuming it on this host (give "
                "--executor %s --spool DIR to continue there)\n",
                run_dir, ran_on, ran_on);
    r->o.replay_dir = jstr(run, "replay");
    r->o.description = jstr(run, "description");
    r->generated = json_is_true(json_object_get(run, "reference_generated_by_model"));
    r->o.seed =
        (uint64_t)json_integer_value(json_object_get(json_object_get(run, "seeds"), "inputs"));
    runrec_timed_runs(run, &r->o.warmups, &r->o.iterations);
    runrec_timing_rule(run, &r->o.adaptive, &r->o.target_rse, &r->o.budget_ms);
    r->o.seed_random = !strcmp(jstr(json_object_get(run, "seeds"), "source")
                                   ? jstr(json_object_get(run, "seeds"), "source")
                                   : "",
                               "random");
    r->o.profile = json_is_true(json_object_get(run, "profile")) ||
                   json_is_object(json_object_get(run, "profile"));
    /* Runs made before --keep-inputs have no "keep_inputs": they kept them. */
    json_t *keep = json_object_get(run, "keep_inputs");
    r->o.keep_inputs = !keep || json_is_true(keep);
    /* Runs made before --jobs have no "jobs": they ran one at a time. */
    json_t *jobs = json_object_get(run, "jobs");
    r->o.jobs = jobs ? (int)json_integer_value(jobs) : 1;
    json_t *docs = json_object_get(run, "docs"); /* --docs K [--docs-dir DIR] */
    r->o.docs = (int)json_integer_value(json_object_get(docs, "k"));
    r->o.docs_dir = jstr(docs, "dir");
    /* This process times the next session; runs made before sessions were
     * counted had one. */
    json_int_t had = json_integer_value(json_object_get(run, "timing_sessions"));
    r->session = had >= 1 && had < OPT_MAX_SESSIONS ? (int)had + 1 : 2;
}

/* run.json says how many timing sessions the run has had: this one too. */
static enum kiln_rc resume_count_session(struct opt_run *r, struct kiln_err *err)
{
    json_t *now = NULL;
    enum kiln_rc rc = runrec_read_json(&r->rr, "run.json", 1u << 20, &now, err);
    if (rc == KILN_OK && json_object_set_new(now, "timing_sessions", json_integer(r->session)))
        rc = kiln_fail(err, KILN_E_NOMEM, "run.json: timing_sessions");
    if (rc == KILN_OK)
        rc = runrec_write_json(&r->rr, "run.json", now, err);
    json_decref(now);
    return rc;
}

/* The options checked, then everything the loop needs opened, each step
 * refusing what the record no longer supports before any candidate runs. */
static enum kiln_rc resume_prepare(struct opt_run *r, json_t *run, json_t *hist,
                                   const char *run_dir, const struct opt_resume_options *ro,
                                   struct kiln_err *err)
{
    bool compiler_ok = runrec_compiler(run, &r->o.compiler);
    if (r->o.max_iterations <= 0 || r->o.max_iterations > OPT_MAX_ITER || !r->o.proposer ||
        !json_is_array(hist) || r->o.jobs < 1 || r->o.jobs > OPT_MAX_JOBS || !compiler_ok ||
        r->o.docs < 0 || r->o.docs > DOCS_K_MAX)
        return kiln_fail(err, KILN_E_PARSE, "%s/run.json: missing or bad fields", run_dir);
    /* --docs: a corpus now refused is said before the baselines run */
    enum kiln_rc rc = opt_docs_open(r, err);
    if (rc == KILN_OK)
        rc = resume_base_url(r, run_dir, jstr(run, "base_url"), ro->base_url, err);
    if (rc == KILN_OK)
        rc = check_workload_copy(r, run, err);
    if (rc == KILN_OK)
        rc = resume_findings(r, run, err);
    if (rc == KILN_OK)
        rc = opt_alloc_history(r, err);
    if (rc == KILN_OK)
        rc = opt_given_load(&r->given, &r->rr, run, err);
    if (rc == KILN_OK)
        rc = resume_count_session(r, err);
    if (rc == KILN_OK)
        rc = opt_open_run(r, err);
    return rc;
}

/* A finished candidate's recorded verdict; its note is copied to note,
 * the session that timed it to *session (1 when the record predates them). */
static enum kiln_rc resume_read_verdict(struct opt_run *r, const char *run_dir, const char *id,
                                        struct verdict *v, char note[512], int *session,
                                        struct kiln_err *err)
{
    char rel[96], *text = NULL;
    size_t len = 0;
    snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", id);
    enum kiln_rc rc = runrec_read(&r->rr, rel, VERDICT_MAX_JSON, &text, &len, err);
    if (rc)
        return rc;
    /* verdict.json carries kiln's extra keys; strip them for the strict reader. */
    static const struct json_strict_rules vrules = {.max_bytes = VERDICT_MAX_JSON};
    static const char *const extra[] = {"stage",        "proposer", "note", "config",
                                        "turnaround_s", "ran_on",   "arch", "timing_session"};
    json_t *vj = NULL;
    rc = json_strict_parse(rel, text, len, &vrules, &vj, err);
    free(text);
    if (rc)
        return rc;
    text_copy_utf8(note, 512, jstr(vj, "note"));
    json_int_t ts = json_integer_value(json_object_get(vj, "timing_session"));
    *session = ts >= 1 && ts < r->session ? (int)ts : 1;
    for (size_t k = 0; k < sizeof(extra) / sizeof(extra[0]); k++)
        json_object_del(vj, extra[k]);
    char *clean = vj ? json_dumps(vj, JSON_COMPACT) : NULL;
    json_decref(vj);
    rc = clean ? verdict_from_json(clean, strlen(clean), v, err)
               : kiln_fail(err, KILN_E_PARSE, "%s/%s: not JSON", run_dir, rel);
    free(clean);
    return rc;
}

/* A failed proposal has no source; a source behind a link is refused. */
static enum kiln_rc resume_read_source(struct opt_run *r, const char *id, struct proposal *p,
                                       struct kiln_err *err)
{
    char srel[96];
    snprintf(srel, sizeof(srel), "candidates/%s/candidate.%s", id,
             opt_ext_of(eval_session_backend(r->s)));
    struct kiln_err serr;
    kiln_err_clear(&serr);
    enum kiln_rc src = runrec_read(&r->rr, srel, 1u << 20, &p->source, &p->len, &serr);
    if (src != KILN_OK && src != KILN_E_NOTFOUND) {
        *err = serr;
        return src;
    }
    return KILN_OK;
}

/* The tuner proposes deterministically for a seed: asking it again, in the
 * order the run asked (--jobs looks ahead), reproduces the finished
 * configuration, which keeps its state. Replay re-reads its replies the
 * same way; llm is not asked again. */
static enum kiln_rc resume_repropose(struct opt_run *r, size_t i, struct proposal *p,
                                     struct kiln_err *err)
{
    if (!proposer_looks_ahead(r->prop))
        return KILN_OK;
    struct proposal again;
    enum kiln_rc rc = opt_window_repropose(r, (int)i + 1, &again, err);
    if (rc == KILN_OK && !strcmp(r->o.proposer, "tune")) {
        p->has_config = again.has_config;
        p->nconfig = again.nconfig;
        memcpy(p->config, again.config, sizeof(p->config));
    }
    proposal_free(&again);
    return rc;
}

/* History entry i recorded again, as the run finished it. */
static enum kiln_rc resume_candidate(struct opt_run *r, json_t *h, size_t i, const char *run_dir,
                                     struct kiln_err *err)
{
    const char *id = jstr(h, "candidate");
    char want[16];
    snprintf(want, sizeof(want), "%03zu", i + 1);
    if (!id || strcmp(id, want) != 0)
        return kiln_fail(err, KILN_E_PARSE,
                         "%s/history.json: entry %zu names candidate %s, expected %s", run_dir,
                         i + 1, id ? id : "(none)", want);
    struct proposal p;
    memset(&p, 0, sizeof(p));
    struct eval_outcome o;
    memset(&o, 0, sizeof(o));
    char notebuf[512];
    struct opt_replayed was = {.improved = json_is_true(json_object_get(h, "improved"))};
    enum kiln_rc rc = resume_read_verdict(r, run_dir, id, &o.v, notebuf, &was.session, err);
    /* A recorded "reverified" is the record's word, not a check: the
     * held-out check runs again in finalize for every pass. */
    o.v.reverified = false;
    snprintf(o.stage, sizeof(o.stage), "%s", jstr(h, "stage") ? jstr(h, "stage") : "");
    if (rc == KILN_OK)
        text_copy_utf8(p.note, sizeof(p.note), notebuf);
    if (rc == KILN_OK)
        rc = resume_read_source(r, id, &p, err);
    if (rc == KILN_OK)
        rc = resume_repropose(r, i, &p, err);
    /* opt_finish() rewrites the same files with the same content. */
    r->replayed = &was;
    if (rc == KILN_OK)
        rc = opt_finish(r, (int)i + 1, &p, &o, err);
    r->replayed = NULL;
    eval_outcome_free(&o);
    proposal_free(&p);
    return rc;
}

/* Rebuild the state from the records: every finished candidate's verdict,
 * source and configuration; the proposer replays its feedback so the tuner
 * never proposes a finished configuration again. */
static enum kiln_rc resume_replay_history(struct opt_run *r, json_t *hist, const char *run_dir,
                                          struct kiln_err *err)
{
    size_t done = json_array_size(hist);
    if (done > (size_t)r->o.max_iterations)
        return kiln_fail(err, KILN_E_PARSE, "%s: history longer than the budget", run_dir);
    enum kiln_rc rc = KILN_OK;
    for (size_t i = 0; rc == KILN_OK && i < done; i++)
        rc = resume_candidate(r, json_array_get(hist, i), i, run_dir, err);
    return rc;
}

enum kiln_rc optimize_resume_with(const char *run_dir, const struct opt_resume_options *ro,
                                  struct kiln_err *err)
{
    struct opt_run r;
    resume_init(&r);
    json_t *run = NULL, *hist = NULL;
    enum kiln_rc rc = resume_open_record(&r, run_dir, &run, &hist, err);
    if (rc != KILN_OK)
        return rc; /* nothing is held */
    resume_options(&r, run, run_dir, ro);
    rc = resume_prepare(&r, run, hist, run_dir, ro, err);
    if (rc == KILN_OK)
        rc = resume_replay_history(&r, hist, run_dir, err);
    size_t done = json_array_size(hist);
    if (rc == KILN_OK && !ro->quiet && !ro->json)
        fprintf(stderr, "kiln: resuming %s after %zu finished candidates\n", run_dir, done);
    if (rc == KILN_OK)
        rc = opt_loop(&r, (int)done + 1, err);
    else if (opt_stopping(&r) && r.lock_fd >= 0) { /* stopped while it set up: resumable */
        kiln_err_clear(err);
        rc = opt_interrupted(&r, err);
    }
    json_decref(run);
    json_decref(hist);
    opt_run_free(&r);
    return rc;
}
