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

#include "docs_prompt.h"
#include "fsutil.h"
#include "json_strict.h"
#include "opt_given.h"
#include "optimize.h"
#include "optimize_impl.h"
#include "runrec.h"
#include "session.h"

static const char *jstr(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

enum kiln_rc optimize_resume(const char *run_dir, bool quiet, bool json, struct kiln_err *err)
{
    struct opt_run r;
    memset(&r, 0, sizeof(r));
    r.best = -1;
    r.t0 = opt_now_s();
    r.tty = isatty(STDERR_FILENO);
    json_t *run = NULL, *hist = NULL;
    enum kiln_rc rc = runrec_open(run_dir, &r.rr, err);
    /* Nothing in the record is read before its MANIFEST says it is intact:
     * first every file but those of candidates in flight, then, once the
     * verified history says how many finished, that those really were in
     * flight (numbered past the finished ones). */
    size_t in_flight = 0;
    if (rc == KILN_OK)
        rc = runrec_manifest_check(&r.rr, 0, &in_flight, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(&r.rr, "run.json", 1u << 20, &run, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(&r.rr, "history.json", 64u << 20, &hist, err);
    if (rc == KILN_OK && in_flight > 0)
        rc = runrec_manifest_check(&r.rr, json_array_size(hist), NULL, err);
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
    /* The exact counts where the run has them (older runs: 0 meant the
     * default, which is what they ran). */
    json_t *timed = json_object_get(run, "timed_runs");
    if (json_is_object(timed)) {
        int wu = (int)json_integer_value(json_object_get(timed, "warmups"));
        r.o.warmups = wu == 0 ? EVAL_NO_WARMUPS : wu;
        r.o.iterations = (int)json_integer_value(json_object_get(timed, "iterations"));
    }
    r.o.seed_random = !strcmp(jstr(json_object_get(run, "seeds"), "source")
                                  ? jstr(json_object_get(run, "seeds"), "source")
                                  : "",
                              "random");
    r.o.profile = json_is_true(json_object_get(run, "profile")) ||
                  json_is_object(json_object_get(run, "profile"));
    /* Runs made before --jobs have no "jobs": they ran one at a time. */
    json_t *jobs = json_object_get(run, "jobs");
    r.o.jobs = jobs ? (int)json_integer_value(jobs) : 1;
    json_t *docs = json_object_get(run, "docs"); /* --docs K [--docs-dir DIR] */
    r.o.docs = (int)json_integer_value(json_object_get(docs, "k"));
    r.o.docs_dir = jstr(docs, "dir");
    bool compiler_ok = !json_object_get(run, "compiler") || /* older runs: nvcc */
                       compile_tool_from_name(jstr(run, "compiler"), &r.o.compiler);
    if (r.o.max_iterations <= 0 || r.o.max_iterations > OPT_MAX_ITER || !r.o.proposer ||
        !json_is_array(hist) || r.o.jobs < 1 || r.o.jobs > OPT_MAX_JOBS || !compiler_ok ||
        r.o.docs < 0 || r.o.docs > DOCS_K_MAX)
        rc = kiln_fail(err, KILN_E_PARSE, "%s/run.json: missing or bad fields", run_dir);
    if (rc == KILN_OK) /* --docs: a corpus now refused is said before the baselines run */
        rc = opt_docs_open(&r, err);
    if (rc == KILN_OK)
        rc = opt_alloc_history(&r, err);
    if (rc == KILN_OK)
        rc = opt_given_load(&r.given, &r.rr, run, err);
    if (rc == KILN_OK)
        rc = opt_open_run(&r, err);
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
        static const struct json_strict_rules vrules = {.max_bytes = VERDICT_MAX_JSON};
        json_t *vj = NULL;
        rc = json_strict_parse(path, text, len, &vrules, &vj, err);
        free(text);
        if (rc)
            break;
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
                 opt_ext_of(eval_session_backend(r.s)));
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
        /* opt_finish() rewrites the same files with the same content. */
        if (rc == KILN_OK)
            rc = opt_finish(&r, (int)i + 1, &p, &o, err);
        eval_outcome_free(&o);
        proposal_free(&p);
    }
    if (rc == KILN_OK && !quiet && !json)
        fprintf(stderr, "kiln: resuming %s after %zu finished candidates\n", run_dir, done);
    if (rc == KILN_OK)
        rc = opt_loop(&r, (int)done + 1, err);
    json_decref(run);
    json_decref(hist);
    opt_run_free(&r);
    return rc;
}
