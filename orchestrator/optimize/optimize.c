/*
 * optimize.c - a new run: the options, the workload (resolved, or generated
 * from a description), given data, run.json, the empty history; and what a
 * resumed run shares with it: the run's history arrays, its session (the
 * baselines), its proposer, freeing it. The loop is opt_candidate.c,
 * finalize opt_finalize.c, `kiln resume` opt_resume.c.
 */
#include "optimize.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "apikey.h"
#include "docs_index.h"
#include "envcap.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "kiln_version.h"
#include "opt_given.h"
#include "opt_profile.h"
#include "optimize_impl.h"
#include "runrec.h"
#include "sbexec.h"
#include "session.h"
#include "wlgen.h"

double opt_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

enum kiln_rc opt_interrupted(const struct opt_run *r, struct kiln_err *err)
{
    return kiln_fail(err, KILN_E_CANCELLED,
                     "interrupted: the run so far is in %s, every finished candidate recorded; "
                     "continue it with: kiln resume %s",
                     r->rr.dir, r->rr.dir);
}

const char *opt_ext_of(enum kiln_backend b)
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
        "s:s?, s:s?, s:s?, s:i, s:b, s:s?}",
        "kiln", "version", KILN_VERSION, "revision", KILN_GIT_REV, "cuda", KILN_CUDA_VERSION,
        "command", cmd, "started", when, "host", u.nodename, "backend", kiln_backend_name(b), "gpu",
        b == KILN_BACKEND_CUDA ? gpu_json(r->o.gpu) : json_null(), "workload", "name", wl->name,
        "source", r->o.workload, "hash", wl->hash, "seeds", "inputs", (json_int_t)r->o.seed,
        "tuner", (json_int_t)r->o.seed, "proposer", r->o.proposer, "model", r->o.model, "base_url",
        r->o.base_url, "replay", r->o.replay_dir, "max_iterations", r->o.max_iterations,
        "reference_generated_by_model", r->generated || wl->provenance == WL_PROVENANCE_MODEL,
        "initial_kernel", r->o.initial_kernel);
    if (!doc)
        return kiln_fail(err, KILN_E_NOMEM, "run.json");
    json_object_set_new(doc, "version", json_integer(RUNREC_RUN_VERSION));
    json_object_set_new(doc, "gpu_index", json_integer(r->o.gpu));
    /* Where the seed came from, and the exact timing runs per case, in one
     * place (0 warmups is none; older runs also had top-level `warmups` and
     * `iterations`, where 0 meant the default: runrec_timed_runs reads both). */
    json_object_set_new(json_object_get(doc, "seeds"), "source",
                        json_string(r->o.seed_random ? "random" : "--seed"));
    json_object_set_new(
        doc, "timed_runs",
        json_pack("{s:i, s:i, s:s, s:o, s:o}", "warmups", eval_warmups_resolved(r->o.warmups),
                  "iterations", eval_iterations_resolved(r->o.iterations), "rule",
                  r->o.adaptive ? "adaptive" : "fixed", "target_rse",
                  r->o.adaptive
                      ? json_real(r->o.target_rse > 0 ? r->o.target_rse : EVAL_DEFAULT_TARGET_RSE)
                      : json_null(),
                  "budget_ms",
                  r->o.adaptive
                      ? json_real(r->o.budget_ms > 0 ? r->o.budget_ms : EVAL_DEFAULT_BUDGET_MS)
                      : json_null()));
    json_object_set_new(doc, "profile", json_boolean(r->o.profile));
    /* Each kiln resume starts the next timing session (opt_resume.c). */
    json_object_set_new(doc, "timing_sessions", json_integer(r->session));
    json_object_set_new(doc, "keep_inputs", json_boolean(r->o.keep_inputs));
    if (r->o.description)
        json_object_set_new(doc, "description", json_string(r->o.description));
    opt_given_add_json(&r->given, doc);
    json_object_set_new(doc, "jobs", json_integer(r->o.jobs > 0 ? r->o.jobs : 1));
    json_object_set_new(doc, "executor", json_string(r->o.runner ? r->o.runner->name : "local"));
    /* The compiler the candidates were compiled with: the cpu backend's is
     * cc whatever --compiler says (that option is the cuda backend's). */
    json_object_set_new(
        doc, "compiler",
        json_string(b == KILN_BACKEND_CUDA ? compile_tool_name(r->o.compiler) : "cc"));
    if (r->findings.record) /* --tuner-run: where the findings came from, for resume */
        json_object_set(doc, "tuner_run", r->findings.record);
    if (r->o.docs > 0) /* --docs: what resume needs to search the same way */
        json_object_set_new(doc, "docs",
                            json_pack("{s:i, s:s?}", "k", r->o.docs, "dir", r->o.docs_dir));
    /* environment.json before anything is timed; then run.json, which
     * starts the MANIFEST with everything written so far. */
    enum kiln_rc rc = opt_record_environment(r, "before_timing", err);
    if (rc == KILN_OK)
        rc = runrec_commit_json(&r->rr, "run.json", doc, err);
    json_decref(doc);
    return rc;
}

enum kiln_rc opt_record_environment(struct opt_run *r, const char *when, struct kiln_err *err)
{
    json_t *doc = NULL, *now = NULL;
    /* Absent before the run's first reading: start a new document. */
    if (runrec_read_json(&r->rr, "environment.json", 1u << 20, &doc, err) != KILN_OK ||
        !json_is_object(doc)) {
        json_decref(doc);
        doc = json_object();
    }
    kiln_err_clear(err);
    enum kiln_rc rc = envcap_now(r->o.backend == KILN_BACKEND_CUDA ? r->o.gpu : -1, &now, err);
    if (rc == KILN_OK && doc) {
        json_object_set_new(doc, "version", json_integer(RUNREC_ENVIRONMENT_VERSION));
        json_object_set_new(doc, when, now);
        rc = runrec_write_json(&r->rr, "environment.json", doc, err);
    } else {
        json_decref(now);
    }
    json_decref(doc);
    return rc;
}

/* The run's scratch: every candidate's work/cand-* (its inputs laid out
 * for the sandbox, its artifact, its outputs), the baseline's, profiles.
 * Nothing of it is read again, by this run or by kiln resume (the record is
 * in candidates/; resume needs work/inputs* and work/lock, which stay, as
 * does work/baseline: the baseline's few KB of raw samples and log).
 * Gone however the run ends: a finished run, Ctrl-C or an error. */
static void drop_scratch(const struct opt_run *r)
{
    static const char *const kept[] = {"inputs", "inputs-held", "lock", "baseline"};
    char work[PATH_MAX];
    struct kiln_err e;
    kiln_err_clear(&e);
    /* Only a run this process holds: a resume refused for a live run must
     * not touch that run's scratch. */
    if (r->lock_fd < 0 || !r->rr.dir[0] ||
        runrec_path(&r->rr, "work", work, sizeof(work), &e) != KILN_OK)
        return;
    DIR *d = opendir(work);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        bool keep = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
        for (size_t i = 0; !keep && i < sizeof(kept) / sizeof(kept[0]); i++)
            keep = strcmp(de->d_name, kept[i]) == 0;
        char path[PATH_MAX];
        if (keep || fs_join(path, sizeof(path), work, de->d_name, &e) != KILN_OK)
            continue;
        if (fs_remove_tree(path, &e) != KILN_OK)
            fprintf(stderr, "kiln: warning: scratch %s stays: %s\n", path, e.msg);
        kiln_err_clear(&e);
    }
    closedir(d);
}

void opt_run_free(struct opt_run *r)
{
    /* A status line still on screen ends before the caller's message. */
    if (r->tty && r->status[0]) {
        fputc('\n', stderr);
        r->status[0] = '\0';
    }
    opt_window_free(r);
    for (size_t i = 0; i < r->n; i++) {
        free(r->sources[i]);
        verdict_free(&r->verdicts[i]);
    }
    free(r->sources);
    free(r->verdicts);
    free(r->timed_in);
    free(r->hist);
    json_decref(r->history);
    proposer_free(r->prop);
    opt_profile_close(r->op);
    eval_session_close(r->s);
    drop_scratch(r); /* after the session: its workers are stopped */
    opt_given_free(&r->given);
    docs_index_close(r->docs);
    tuner_findings_free(&r->findings);
    if (r->drop_run && r->lock_fd >= 0 && r->rr.dir[0]) {
        struct kiln_err ign;
        kiln_err_clear(&ign);
        (void)(fs_remove_tree(r->rr.dir, &ign) == KILN_OK);
    }
    if (r->lock_fd >= 0) /* last: the run is live until its workers are stopped */
        close(r->lock_fd);
    r->lock_fd = -1;
}

enum kiln_rc opt_docs_open(struct opt_run *r, struct kiln_err *err)
{
    if (r->o.docs <= 0 || r->docs)
        return KILN_OK;
    enum kiln_rc rc = r->o.docs_dir ? docs_index_open_user(r->o.docs_dir, &r->docs, err)
                                    : docs_index_open_builtin(&r->docs, err);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "--docs");
    return rc;
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
        const struct eval_target *t = eval_session_target(r->s);
        return proposer_new_tune(wl->files[f].data, wl->files[f].len, wl, t ? &t->limits : NULL, b,
                                 r->o.seed, (size_t)r->o.max_iterations, &r->prop, err);
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
        if (rc == KILN_OK && r->o.docs > 0 && (rc = opt_docs_open(r, err)) == KILN_OK) {
            rc = proposer_llm_set_docs(r->prop, r->docs, r->o.docs, err);
            r->docs = NULL; /* the proposer's now */
        }
        return rc;
    }
    return kiln_fail(err, KILN_E_USAGE, "unknown proposer '%s' (tune, llm or replay)", p);
}

/* run.json's "target": what this run's candidates are compiled for, set by
 * the session when it opens. A resumed run must compile for what it did:
 * a different target (another GPU) is refused, naming both. */
static enum kiln_rc record_target(struct opt_run *r, struct kiln_err *err)
{
    const struct eval_target *t = eval_session_target(r->s);
    json_t *run = NULL;
    enum kiln_rc rc = runrec_read_json(&r->rr, "run.json", 1u << 20, &run, err);
    if (rc != KILN_OK)
        return rc;
    const char *was = json_string_value(json_object_get(json_object_get(run, "target"), "arch"));
    if (t && was && strcmp(was, t->arch) != 0)
        rc = kiln_fail(err, KILN_E_USAGE,
                       "%s compiled its candidates for %s, but this session targets %s (%s): "
                       "resume it where an %s GPU runs it (or --arch %s), or start a new run",
                       r->rr.dir, was, t->arch, t->source, was, was);
    else if (!was)
        rc = json_object_set_new(run, "target", eval_target_json(t)) == 0
                 ? runrec_write_json(&r->rr, "run.json", run, err)
                 : kiln_fail(err, KILN_E_NOMEM, "run.json: target");
    json_decref(run);
    return rc;
}

/* The starting kernel, then the workload's vendor baseline: once per
 * timing session, every later figure is compared with these. */
static enum kiln_rc time_start(struct opt_run *r, struct kiln_err *err)
{
    opt_progress(r, r->shown_it, "start");
    enum kiln_rc rc = eval_session_reference(r->s, err);
    if (rc == KILN_OK) {
        opt_progress(r, r->shown_it, "vendor");
        rc = eval_session_baseline(r->s, err);
    }
    return rc;
}

enum kiln_rc opt_time_start(struct opt_run *r, struct kiln_err *err)
{
    if (!r->start_deferred)
        return KILN_OK;
    r->start_deferred = false;
    return time_start(r, err);
}

int opt_budget(const struct opt_run *r)
{
    size_t planned = proposer_planned(r->prop);
    return planned > 0 && planned < (size_t)r->o.max_iterations ? (int)planned
                                                                : r->o.max_iterations;
}

/* Opens the session on the run's own copy of the workload. */
static enum kiln_rc open_session(struct opt_run *r, struct kiln_err *err)
{
    char wdir[PATH_MAX], work[PATH_MAX];
    /* Real directories of the run, no link inside: the session opens
     * paths in them by name (a resumed record may have been tampered). */
    enum kiln_rc rc = runrec_dir(&r->rr, "workload", wdir, sizeof(wdir), err);
    if (rc == KILN_OK)
        rc = runrec_dir(&r->rr, "work", work, sizeof(work), err);
    if (rc != KILN_OK)
        return rc;
    struct eval_session_opts so = {.workload = wdir,
                                   .backend = r->o.backend,
                                   .gpu = r->o.gpu,
                                   .work_dir = work,
                                   .seed = r->o.seed,
                                   .warmups = r->o.warmups,
                                   .iterations = r->o.iterations,
                                   .adaptive = r->o.adaptive,
                                   .target_rse = r->o.target_rse,
                                   .budget_ms = r->o.budget_ms,
                                   .compiler = r->o.compiler,
                                   .arch = r->o.arch,
                                   .verbose = !r->o.quiet && !r->o.json,
                                   .runner = r->o.runner,
                                   .log = &r->log};
    /* Given data: always the run's own copies (opt_given.h). */
    so.input_cases = r->given.inputs_copy[0] ? r->given.inputs_copy : NULL;
    so.reference = r->given.reference_copy[0] ? r->given.reference_copy : NULL;
    so.input_cases_sha256 = opt_given_sha256(r->given.inputs);
    so.reference_sha256 = opt_given_sha256(r->given.reference);
    so.reference_origin = opt_given_path(r->given.reference);
    if (!r->o.quiet && !r->o.json)
        fprintf(stderr, "kiln: run %s\n", r->rr.dir);
    /* Fail fast: the starting kernel compiles before inputs are generated. */
    so.defer_inputs = true;
    rc = eval_session_open(&so, &r->s, err);
    if (rc == KILN_OK)
        rc = record_target(r, err);
    if (rc == KILN_OK && r->o.initial_kernel)
        eval_session_show_source(r->s, "reference", r->o.initial_kernel);
    if (rc == KILN_OK)
        rc = eval_session_check_reference(r->s, err);
    return rc;
}

enum kiln_rc opt_open_run(struct opt_run *r, struct kiln_err *err)
{
    enum kiln_rc rc = open_session(r, err);
    if (rc == KILN_OK) /* before any timing: the progress line's N is its plan */
        rc = make_proposer(r, err);
    if (rc == KILN_OK)
        rc = opt_window_init(r, err);
    /* A resumed run times them when first needed: its first new candidate's
     * correctness comes first (--profile needs the start's now). */
    r->start_deferred = rc == KILN_OK && r->session > 1 && !r->o.profile;
    if (rc == KILN_OK && !r->start_deferred)
        rc = time_start(r, err);
    char work[PATH_MAX];
    if (rc == KILN_OK)
        rc = runrec_dir(&r->rr, "work", work, sizeof(work), err);
    if (rc == KILN_OK)
        rc = opt_profile_open(r->o.profile, eval_session_backend(r->s), r->o.gpu, &r->rr, work,
                              r->o.quiet || r->o.json, &r->op, err);
    return rc;
}

enum kiln_rc opt_alloc_history(struct opt_run *r, struct kiln_err *err)
{
    size_t cap = (size_t)r->o.max_iterations + 1;
    r->hist = calloc(cap, sizeof(*r->hist));
    r->sources = calloc(cap, sizeof(*r->sources));
    r->verdicts = calloc(cap, sizeof(*r->verdicts));
    r->timed_in = calloc(cap, sizeof(*r->timed_in));
    r->history = json_array();
    if (!r->hist || !r->sources || !r->verdicts || !r->timed_in || !r->history)
        return kiln_fail(err, KILN_E_NOMEM, "run history");
    return KILN_OK;
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
    if (rc == KILN_OK) /* a run its host cannot do leaves no run directory */
        rc = eval_backend_check(r->o.backend, r->o.gpu, r->o.compiler, r->o.runner, err);
    if (rc == KILN_OK)
        rc = runrec_create(r->o.results_dir, &r->rr, err);
    if (rc == KILN_OK)
        rc = runrec_lock(&r->rr, &r->lock_fd, err);
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

/* `src` is the workload's own starting kernel for backend `b`. */
static bool is_workload_start(const struct workload *wl, enum kiln_backend b, const char *src,
                              size_t len)
{
    const struct wl_file_data *start =
        &wl->files[b == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C];
    return start->present && start->len == len && memcmp(start->data, src, len) == 0;
}

/* --tuner-run: the earlier run's findings (checked before a run directory
 * exists), and its best kernel as this run's starting kernel (as
 * --initial-kernel would make it) unless the best is the starting kernel
 * anyway: the tuner kept it, or its defaults already were the best values.
 * The record's digests go into run.json; the kernel into workload/. */
static enum kiln_rc use_tuner_run(struct opt_run *r, const struct workload *wl, char **initial,
                                  size_t *ilen, struct kiln_err *err)
{
    if (strcmp(r->o.proposer, "llm") != 0)
        return kiln_fail(err, KILN_E_USAGE,
                         "--tuner-run needs --proposer llm (the findings go into the "
                         "model's prompt)");
    if (r->o.initial_kernel || r->o.description)
        return kiln_fail(err, KILN_E_USAGE,
                         "--tuner-run starts from that run's best kernel: give it without "
                         "--initial-kernel and --description");
    enum kiln_backend b = eval_backend_auto(r->o.backend, NULL, wl);
    enum kiln_rc rc = tuner_findings_load(r->o.tuner_run, wl, b, NULL, &r->findings, err);
    const struct tuner_findings *f = &r->findings;
    bool same = f->best_source && is_workload_start(wl, b, f->best_source, f->best_len);
    if (rc == KILN_OK && f->best_source && !same) {
        *initial = malloc(f->best_len + 1);
        if (!*initial)
            return kiln_fail(err, KILN_E_NOMEM, "--tuner-run");
        memcpy(*initial, f->best_source, f->best_len + 1);
        *ilen = f->best_len;
    }
    if (rc == KILN_OK)
        rc = json_object_set_new(r->findings.record, "started_from",
                                 json_string(*initial
                                                 ? (b == KILN_BACKEND_CUDA ? "best.cu" : "best.c")
                                                 : "workload")) == 0
                 ? KILN_OK
                 : kiln_fail(err, KILN_E_NOMEM, "--tuner-run");
    return rc;
}

/* --proposer replay starts where the replayed run started: its own copy of
 * the starting kernel (RUN/workload/kernel.c|cu), when that differs from
 * the workload's (the run had --initial-kernel or --tuner-run). Else "vs
 * start" would compare the same candidates with another kernel. Records
 * without a copy, and --initial-kernel given here, keep the workload's. */
static enum kiln_rc use_replayed_start(struct opt_run *r, const struct workload *wl, char **initial,
                                       size_t *ilen, struct kiln_err *err)
{
    enum kiln_backend b = eval_backend_auto(r->o.backend, NULL, wl);
    enum wl_file kf = b == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
    char path[sizeof(r->replay_start)];
    int n = snprintf(path, sizeof(path), "%s/workload/%s", r->o.replay_dir, workload_file_name(kf));
    struct stat st;
    if (n < 0 || (size_t)n >= sizeof(path) || lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return KILN_OK;
    char *src = NULL;
    size_t len = 0;
    enum kiln_rc rc = fs_read_file(path, 1u << 20, &src, &len, err);
    if (rc != KILN_OK)
        return rc;
    if (is_workload_start(wl, b, src, len)) {
        free(src);
        return KILN_OK;
    }
    *initial = src;
    *ilen = len;
    memcpy(r->replay_start, path, (size_t)n + 1);
    r->o.initial_kernel = r->replay_start; /* run.json names it */
    if (!r->o.quiet && !r->o.json)
        opt_log(r, "kiln: replay starts from the replayed run's starting kernel %s\n", path);
    return KILN_OK;
}

/* The tuner searches the starting kernel's tunables: a workload without
 * one (kiln import kernelbench without --kernel) has nothing to tune, said
 * before a run directory exists. */
static enum kiln_rc check_tunable_start(const struct workload *wl, enum kiln_backend b,
                                        struct kiln_err *err)
{
    if (workload_start_kernel(wl, b))
        return KILN_OK;
    const char *f = workload_file_name(workload_kernel_file(b));
    return kiln_fail(err, KILN_E_USAGE,
                     "workload %s has no starting kernel (%s), and the tuner can only tune the "
                     "tunables of one. Fix: add %s with `// kiln: tunable` directives "
                     "(evaluator/CANDIDATE.md), give one with --initial-kernel FILE, or start "
                     "from the reference with --proposer llm",
                     wl->name, f, f);
}

static void run_init(struct opt_run *r, const struct opt_options *o)
{
    memset(r, 0, sizeof(*r));
    r->o = *o;
    r->best = -1;
    r->lock_fd = -1;
    r->session = 1;
    r->t0 = opt_now_s();
    r->tty = isatty(STDERR_FILENO);
    opt_log_init(r);
    if (!r->o.results_dir)
        r->o.results_dir = "results";
}

/* The budget's defaults and limits, said before anything is taken. */
static enum kiln_rc run_limits(struct opt_run *r, bool tune, struct kiln_err *err)
{
    /* The tuner's search needs room: rungs of 27, 9 and 3 (tune_search.h),
     * a few minutes on an H200; a model's proposals are slower and dearer. */
    if (r->o.max_iterations <= 0)
        r->o.max_iterations = tune ? 40 : 7;
    if (r->o.max_iterations > OPT_MAX_ITER)
        return kiln_fail(err, KILN_E_USAGE, "--max-iterations is at most %d", OPT_MAX_ITER);
    if (r->o.jobs > OPT_MAX_JOBS)
        return kiln_fail(err, KILN_E_USAGE, "--jobs is at most %d", OPT_MAX_JOBS);
    if (!r->o.proposer)
        r->o.proposer = "tune";
    return KILN_OK;
}

/* The API key and --docs, checked before inputs and baselines run. */
static enum kiln_rc run_check_llm(struct opt_run *r, const struct opt_options *o,
                                  struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    if (strcmp(r->o.proposer, "llm") == 0 || (o->description && !o->replay_dir)) {
        /* A key kiln refuses to read (a world-readable .env) is the
         * environment's problem: say so now, before inputs and the
         * baseline take minutes, and exit as a usage error. */
        char key[512];
        rc = load_key(r, key, sizeof(key), err);
        explicit_bzero(key, sizeof(key));
        if (rc != KILN_OK && rc != KILN_E_NOMEM)
            rc = err->rc = KILN_E_USAGE;
    }
    if (rc == KILN_OK && o->docs > 0 && strcmp(r->o.proposer, "llm") != 0)
        rc = kiln_fail(err, KILN_E_USAGE,
                       "--docs needs --proposer llm (only a model reads "
                       "documentation)");
    if (rc == KILN_OK) /* a refused --docs-dir is said before inputs and baselines run */
        rc = opt_docs_open(r, err);
    return rc;
}

/* The workload (found, or generated into the run) and the starting kernel,
 * with the given data checked before a run directory exists. Load the
 * workload once to learn its backend and copy it as used. */
static enum kiln_rc run_load_workload(struct opt_run *r, const struct opt_options *o, bool tune,
                                      char *wdir, size_t cap, struct workload **wl, char **initial,
                                      size_t *ilen, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    if (o->initial_kernel)
        rc = fs_read_file(o->initial_kernel, 1u << 20, initial, ilen, err);
    if (rc == KILN_OK && o->description)
        rc = generate_workload(r, wdir, cap, err);
    else if (rc == KILN_OK)
        rc = workload_resolve_dir(o->workload, wdir, cap, err);
    if (rc == KILN_OK && !o->description)
        workload_warn_shadow(o->workload, NULL);
    if (rc == KILN_OK)
        rc = workload_load(wdir, wl, err);
    if (rc == KILN_OK && o->tuner_run)
        rc = use_tuner_run(r, *wl, initial, ilen, err);
    else if (rc == KILN_OK && !*initial && r->o.replay_dir && strcmp(r->o.proposer, "replay") == 0)
        rc = use_replayed_start(r, *wl, initial, ilen, err);
    if (rc == KILN_OK && tune && !*initial)
        rc = check_tunable_start(*wl, eval_backend_auto(o->backend, NULL, *wl), err);
    /* Given data is checked before a run directory exists. */
    if (rc == KILN_OK && (o->input_cases || o->reference))
        rc = opt_given_prepare(&r->given, o->input_cases, o->reference, *wl,
                               eval_backend_auto(o->backend, o->initial_kernel, *wl), err);
    return rc;
}

/* The run directory, locked, with its copy of the workload and given data. */
static enum kiln_rc run_create_record(struct opt_run *r, const struct opt_options *o,
                                      const struct workload *wl, const char *initial, size_t ilen,
                                      char *run_dir, size_t cap, struct kiln_err *err)
{
    enum kiln_rc rc = opt_alloc_history(r, err);
    /* A backend this host cannot run (no GPU, driver or nvcc) is said before
     * a run directory exists: no run that `kiln resume` could not continue. */
    if (rc == KILN_OK && !r->generated)
        rc = eval_backend_check(eval_backend_auto(o->backend, o->initial_kernel, wl), r->o.gpu,
                                r->o.compiler, r->o.runner, err);
    if (rc == KILN_OK && !r->generated)
        rc = runrec_create(r->o.results_dir, &r->rr, err);
    if (rc == KILN_OK && !r->generated) /* generate_workload took it */
        rc = runrec_lock(&r->rr, &r->lock_fd, err);
    if (rc == KILN_OK) {
        snprintf(run_dir, cap, "%s", r->rr.dir);
        r->o.backend = eval_backend_auto(r->o.backend, o->initial_kernel, wl);
        snprintf(r->start_file, sizeof(r->start_file), "%s",
                 workload_file_name(r->o.backend == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU
                                                                      : WL_FILE_KERNEL_C));
        rc = copy_workload(r, wl, initial, ilen, err);
    }
    if (rc == KILN_OK)
        rc = opt_given_store(&r->given, &r->rr, err);
    return rc;
}

/* run.json and the empty history come first, so a run killed while its
 * inputs or its baseline are prepared can be resumed. They describe the
 * run's own copy of the workload (its hash covers --initial-kernel). */
static enum kiln_rc run_write_start(struct opt_run *r, struct kiln_err *err)
{
    struct workload *used = NULL;
    char udir[PATH_MAX];
    enum kiln_rc rc = runrec_path(&r->rr, "workload", udir, sizeof(udir), err);
    if (rc == KILN_OK)
        rc = workload_load(udir, &used, err);
    if (rc == KILN_OK && r->o.jobs <= 0) {
        /* On the GPU, compile ahead on spare cores unless told otherwise; on
         * the CPU backend compiles would disturb the timing. */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        bool gpu = eval_backend_auto(r->o.backend, NULL, used) == KILN_BACKEND_CUDA;
        r->o.jobs = gpu && ncpu >= 4 ? (int)(ncpu / 2 < 8 ? ncpu / 2 : 8) : 1;
    }
    if (rc == KILN_OK)
        rc = write_run_json(r, used, err);
    workload_free(used);
    if (rc == KILN_OK)
        rc = runrec_write_json(&r->rr, "history.json", r->history, err);
    return rc;
}

/* Options given that have no effect here are said, not silently dropped. */
static void run_notices(struct opt_run *r, const struct opt_options *o)
{
    if (o->jobs > 1 && opt_jobs(r) == 1 && !r->o.quiet && !r->o.json)
        fprintf(stderr,
                "kiln: --jobs %d has no effect with --proposer %s: each proposal "
                "needs the verdict on the one before\n",
                r->o.jobs, proposer_name(r->prop));
    if (r->o.compiler == COMPILE_NVRTC && eval_session_backend(r->s) != KILN_BACKEND_CUDA &&
        !r->o.quiet && !r->o.json)
        fprintf(stderr,
                "kiln: --compiler nvrtc applies to the cuda backend; the %s backend "
                "compiles with cc\n",
                kiln_backend_name(eval_session_backend(r->s)));
}

/* A run that failed before its first candidate (the start does not
 * compile or is wrong, the baseline failed, ...) holds nothing to resume:
 * it is removed rather than left suggesting `kiln resume`, and run_dir
 * emptied so the caller says nothing of it. A stopped run (Ctrl-C) is
 * kept, and so is a run whose workload the model wrote (its exchanges
 * cost money and say what went wrong). */
static void drop_if_unstarted(struct opt_run *r, enum kiln_rc rc, char *run_dir)
{
    if (rc == KILN_OK || rc == KILN_E_CANCELLED || r->n > 0 || r->generated || r->lock_fd < 0 ||
        !run_dir[0])
        return;
    r->drop_run = true;
    run_dir[0] = '\0';
}

enum kiln_rc optimize_run(const struct opt_options *o, char *run_dir, size_t cap,
                          struct kiln_err *err)
{
    struct opt_run r;
    run_init(&r, o);
    bool tune = !r.o.proposer || strcmp(r.o.proposer, "tune") == 0;
    enum kiln_rc rc = run_limits(&r, tune, err);
    if (rc != KILN_OK)
        return rc;
    char wdir[PATH_MAX]; /* generate_workload points r.o.workload here */
    struct workload *wl = NULL;
    char *initial = NULL;
    size_t ilen = 0;
    rc = run_check_llm(&r, o, err);
    if (rc == KILN_OK)
        rc = run_load_workload(&r, o, tune, wdir, sizeof(wdir), &wl, &initial, &ilen, err);
    if (rc == KILN_OK)
        rc = run_create_record(&r, o, wl, initial, ilen, run_dir, cap, err);
    free(initial);
    if (rc == KILN_OK)
        rc = run_write_start(&r, err);
    if (rc == KILN_OK)
        rc = opt_open_run(&r, err);
    if (rc == KILN_OK)
        run_notices(&r, o);
    if (rc == KILN_OK && opt_stopping(&r))
        rc = opt_interrupted(&r, err);
    if (rc == KILN_OK)
        rc = opt_loop(&r, 1, err);
    else if (opt_stopping(&r) && r.lock_fd >= 0) { /* stopped while it set up: resumable */
        kiln_err_clear(err);
        rc = opt_interrupted(&r, err);
    }
    drop_if_unstarted(&r, rc, run_dir);
    workload_free(wl);
    opt_run_free(&r);
    return rc;
}
