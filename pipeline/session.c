#include "session.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <sys/stat.h>
#include "fsutil.h"
#include "gpuinfo.h"
#include "sbexec.h"

enum kiln_rc eval_fresh_seed(uint64_t *seed, struct kiln_err *err)
{
    uint64_t v;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
        return kiln_fail_errno(err, KILN_E_IO,
                               "getrandom for a fresh input seed (give --seed N to choose one)");
    *seed = v & ((1ULL << 52) - 1);
    return KILN_OK;
}

enum kiln_rc workload_resolve_dir(const char *arg, char *out, size_t cap, struct kiln_err *err)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(out, cap, "%s", arg);
        return KILN_OK;
    }
    /* A bare name is a built-in workload. */
    if (!strchr(arg, '/')) {
        snprintf(out, cap, "%s/workloads/%s", fs_data_dir(), arg);
        if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
            return KILN_OK;
    }
    return kiln_fail(err, KILN_E_NOTFOUND,
                     "no workload directory '%s' (and no built-in workload of that name: "
                     "see kiln workloads)",
                     arg);
}

struct eval_session {
    struct eval_session_opts opts;
    struct workload *wl;
    enum kiln_backend backend;
    char dir[PATH_MAX];
    bool own_dir;
    char harness[PATH_MAX];
    char nvrtc[PATH_MAX]; /* kiln-nvrtc, when the cuda backend compiles with NVRTC */
    struct input_sets visible, held;
    bool have_held;
    struct heldout_set draw; /* the held-out cases; `held` points into it */
    uint64_t secret;
    struct eval_outcome reference;
    bool have_reference;
    struct eval_medians ref_medians;
    struct eval_baseline baseline; /* eval_session_baseline */
    bool have_baseline;
    struct given_inputs given; /* have_given: --input-cases */
    bool have_given;
    struct given_reference given_ref; /* have_given_ref: --reference */
    bool have_given_ref;
    struct stats_ceilings ceilings; /* the physics floor's, asked from the GPU once */
    bool probed_ceilings;
    int short_iterations; /* eval_session_set_short_run; 0: opts.iterations */
};

void eval_session_set_short_run(struct eval_session *s, int iterations)
{
    s->short_iterations = iterations > 0 ? iterations : 0;
}

enum kiln_backend eval_backend_auto(enum kiln_backend requested, const char *hint,
                                    const struct workload *w)
{
    if (requested)
        return requested;
    const char *h = hint;
    size_t n = h ? strlen(h) : 0;
    if (n > 2 && strcmp(h + n - 2, ".c") == 0)
        return KILN_BACKEND_CPU;
    if (n > 3 && strcmp(h + n - 3, ".cu") == 0)
        return KILN_BACKEND_CUDA;
    struct gpuinfo g[GPUINFO_MAX];
    size_t ng = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    bool gpu = gpuinfo_list("/proc", g, &ng, &e) == KILN_OK && ng > 0;
    return gpu && (w->backends & KILN_BACKEND_CUDA) ? KILN_BACKEND_CUDA : KILN_BACKEND_CPU;
}

/* Given data that must be what a record says it was. */
static enum kiln_rc expect_digest(const char *path, const char *want, const char *have,
                                  struct kiln_err *err)
{
    if (!want || !strcmp(want, have))
        return KILN_OK;
    return kiln_fail(err, KILN_E_REJECTED,
                     "%s has sha256 %.16s, the run recorded %.16s: it was changed after the run "
                     "started (start a new run)",
                     path, have, want);
}

enum kiln_rc eval_session_open(const struct eval_session_opts *opts, struct eval_session **out,
                               struct kiln_err *err)
{
    *out = NULL;
    struct eval_session *s = calloc(1, sizeof(*s));
    if (!s)
        return kiln_fail(err, KILN_E_NOMEM, "session");
    s->opts = *opts;
    char wdir[PATH_MAX];
    enum kiln_rc rc = workload_resolve_dir(opts->workload, wdir, sizeof(wdir), err);
    if (rc == KILN_OK)
        rc = workload_load(wdir, &s->wl, err);
    if (rc == KILN_OK) {
        s->backend = eval_backend_auto(opts->backend, opts->candidate_hint, s->wl);
        if (!(s->wl->backends & s->backend))
            rc = kiln_fail(err, KILN_E_USAGE, "workload %s does not support the %s backend",
                           s->wl->name, kiln_backend_name(s->backend));
    }
    if (rc == KILN_OK)
        rc = eval_harness_path(s->backend, s->harness, sizeof(s->harness), err);
    if (rc == KILN_OK && s->backend == KILN_BACKEND_CUDA && opts->compiler == COMPILE_NVRTC)
        rc = eval_program_path("kiln-nvrtc", s->nvrtc, sizeof(s->nvrtc), err);
    if (rc == KILN_OK && opts->work_dir) {
        snprintf(s->dir, sizeof(s->dir), "%s", opts->work_dir);
        rc = fs_mkdirs(s->dir, err);
    } else if (rc == KILN_OK) {
        rc = fs_make_tempdir("eval", s->dir, sizeof(s->dir), err);
        s->own_dir = rc == KILN_OK;
    }
    if (rc == KILN_OK && opts->reference) {
        rc = given_reference_load(opts->reference, &s->given_ref, err);
        s->have_given_ref = rc == KILN_OK;
        if (rc == KILN_OK)
            rc = expect_digest(opts->reference, opts->reference_sha256, s->given_ref.sha256, err);
    }
    if (rc == KILN_OK && opts->input_cases) {
        s->given.root_fd = -1;
        rc = given_inputs_open(opts->input_cases, s->wl, s->backend, EVAL_SESSION_PERF_SETS, s->dir,
                               &s->given, err);
        s->have_given = rc == KILN_OK;
        if (rc == KILN_OK)
            rc = expect_digest(opts->input_cases, opts->input_cases_sha256, s->given.sha256, err);
    }
    if (rc == KILN_OK) {
        char cache[PATH_MAX];
        snprintf(cache, sizeof(cache), "%s/inputs", s->dir);
        struct inputs_request req = {.wl = s->wl,
                                     .backend = s->backend,
                                     .cache_dir = cache,
                                     .seed = opts->seed,
                                     .perf_sets = EVAL_SESSION_PERF_SETS,
                                     .verbose = opts->verbose,
                                     .given = s->have_given ? &s->given : NULL,
                                     .reference = s->have_given_ref ? &s->given_ref : NULL};
        if (opts->verbose)
            fprintf(stderr, "kiln: preparing inputs and references for %s (%s backend)\n",
                    s->wl->name, kiln_backend_name(s->backend));
        rc = inputs_prepare(&req, &s->visible, err);
    }
    /* The sets are copied: the given data (a tarball's unpacked copy) is no
     * longer needed; its path and digest stay for the records. */
    if (s->have_given)
        given_inputs_free(&s->given);
    if (rc != KILN_OK) {
        eval_session_close(s);
        return rc;
    }
    *out = s;
    return KILN_OK;
}

static enum kiln_rc run_on_mode(struct eval_session *s, const struct input_sets *sets,
                                const char *name, const char *src, size_t len,
                                const int64_t *tunables, enum eval_mode mode,
                                struct eval_outcome *out, struct eval_pending **pend,
                                struct kiln_err *err);

static enum kiln_rc run_on(struct eval_session *s, const struct input_sets *sets, const char *name,
                           const char *src, size_t len, const int64_t *tunables,
                           struct eval_outcome *out, struct kiln_err *err)
{
    return run_on_mode(s, sets, name, src, len, tunables, EVAL_ALL, out, NULL, err);
}

static enum kiln_rc run_on_mode(struct eval_session *s, const struct input_sets *sets,
                                const char *name, const char *src, size_t len,
                                const int64_t *tunables, enum eval_mode mode,
                                struct eval_outcome *out, struct eval_pending **pend,
                                struct kiln_err *err)
{
    char work[PATH_MAX];
    eval_session_candidate_dir(s, name, sets == &s->held, work, sizeof(work));
    struct eval_request req = {.wl = s->wl,
                               .backend = s->backend,
                               .name = name,
                               .source = src,
                               .len = len,
                               .tunables = tunables,
                               .sets = sets,
                               .work_dir = work,
                               .harness = s->harness,
                               .gpu = s->opts.gpu,
                               .arch = "sm_90",
                               .warmups = s->opts.warmups,
                               .iterations = sets == &s->held || !s->short_iterations
                                                 ? s->opts.iterations
                                                 : s->short_iterations,
                               .hot = s->opts.hot,
                               .run_timeout_ms = s->opts.run_timeout_ms,
                               .reference = s->have_reference ? &s->ref_medians : NULL,
                               .mode = mode,
                               .compiler = s->opts.compiler,
                               .nvrtc = s->nvrtc[0] ? s->nvrtc : NULL,
                               .runner = s->opts.runner};
    if (s->backend == KILN_BACKEND_CUDA && mode != EVAL_COMPILE_ONLY) {
        if (!s->probed_ceilings) {
            struct kiln_err perr;
            kiln_err_clear(&perr);
            if (eval_device_ceilings(s->harness, s->opts.gpu, &s->ceilings, &perr) != KILN_OK)
                fprintf(stderr, "kiln: warning: no physics floor for GPU %d: %s%s\n", s->opts.gpu,
                        perr.msg,
                        s->opts.runner ? " (the node's GPU gives it, when the node reports one)"
                                       : "");
            s->probed_ceilings = true;
        }
        req.ceilings = &s->ceilings;
    }
    /* The vendor baseline's medians, once eval_session_baseline timed some. */
    if (s->have_baseline && s->baseline.medians.n)
        req.baseline = &s->baseline.medians;
    if (s->opts.verbose && mode != EVAL_COMPILE_ONLY)
        fprintf(stderr, "kiln: evaluating %s%s\n", name,
                sets == &s->held ? " on the held-out cases" : "");
    enum kiln_rc rc =
        pend ? eval_candidate_start(&req, out, pend, err) : eval_candidate(&req, out, err);
    /* Scratch of a candidate is not needed once judged (inputs stay cached). */
    if (rc == KILN_OK && s->own_dir && mode != EVAL_COMPILE_ONLY && !(pend && *pend)) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        (void)(fs_remove_tree(work, &ignore) == KILN_OK);
    }
    return rc;
}

enum kiln_rc eval_session_reference(struct eval_session *s, struct kiln_err *err)
{
    enum wl_file f = s->backend == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
    const struct wl_file_data *k = &s->wl->files[f];
    if (!k->present)
        return kiln_fail(err, KILN_E_USAGE, "workload %s has no %s", s->wl->name,
                         workload_file_name(f));
    enum kiln_rc rc =
        run_on(s, &s->visible, "reference", k->data, k->len, NULL, &s->reference, err);
    if (rc != KILN_OK)
        return rc;
    s->have_reference = true;
    if (s->reference.v.status != VERDICT_PASS && s->have_given_ref)
        return kiln_fail(err, KILN_E_CHILD,
                         "the workload's own starting kernel (%s) fails against the "
                         "--reference script %s: %s: %s (that script replaces the workload's "
                         "reference.py: check it computes what the workload describes)",
                         workload_file_name(f),
                         s->opts.reference_origin ? s->opts.reference_origin : s->given_ref.path,
                         verdict_status_name(s->reference.v.status), s->reference.v.detail);
    if (s->reference.v.status != VERDICT_PASS)
        return kiln_fail(err, KILN_E_CHILD, "the workload's own starting kernel (%s) fails: %s: %s",
                         workload_file_name(f), verdict_status_name(s->reference.v.status),
                         s->reference.v.detail);
    s->ref_medians = s->reference.medians;
    return KILN_OK;
}

const struct eval_outcome *eval_session_reference_outcome(const struct eval_session *s)
{
    return s->have_reference ? &s->reference : NULL;
}

/* ---- the vendor baseline (baseline.h) ---- */

enum kiln_rc eval_session_baseline(struct eval_session *s, struct kiln_err *err)
{
    char work[PATH_MAX];
    snprintf(work, sizeof(work), "%s/baseline", s->dir);
    struct eval_baseline_request req = {.wl = s->wl,
                                        .backend = s->backend,
                                        .harness = s->harness,
                                        .work_dir = work,
                                        .gpu = s->opts.gpu,
                                        .warmups = s->opts.warmups,
                                        .iterations = s->opts.iterations,
                                        .hot = s->opts.hot,
                                        .run_timeout_ms = s->opts.run_timeout_ms,
                                        .runner = s->opts.runner};
    if (s->opts.verbose && s->wl->baseline != WL_BASELINE_NONE)
        fprintf(stderr, "kiln: timing the vendor baseline (%s)\n",
                eval_baseline_kind_name(s->wl->baseline));
    enum kiln_rc rc = eval_baseline_run(&req, &s->baseline, err);
    if (rc != KILN_OK)
        return rc;
    s->have_baseline = true;
    if (s->opts.verbose && s->baseline.state == EVAL_BASELINE_UNAVAILABLE)
        fprintf(stderr, "kiln: no baseline times: %s\n", s->baseline.detail);
    if (s->own_dir) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        (void)(fs_remove_tree(work, &ignore) == KILN_OK);
    }
    return KILN_OK;
}

const struct eval_baseline *eval_session_baseline_result(const struct eval_session *s)
{
    return s->have_baseline ? &s->baseline : NULL;
}

enum kiln_rc eval_session_run(struct eval_session *s, const char *name, const char *src, size_t len,
                              const int64_t *tunables, struct eval_outcome *out,
                              struct kiln_err *err)
{
    return run_on(s, &s->visible, name, src, len, tunables, out, err);
}

/* ---- split evaluation (kiln optimize --jobs) ---- */

enum kiln_rc eval_session_compile(struct eval_session *s, const char *name, const char *src,
                                  size_t len, const int64_t *tunables, struct eval_outcome *out,
                                  struct kiln_err *err)
{
    return run_on_mode(s, &s->visible, name, src, len, tunables, EVAL_COMPILE_ONLY, out, NULL, err);
}

enum kiln_rc eval_session_run_compiled(struct eval_session *s, const char *name, const char *src,
                                       size_t len, const int64_t *tunables,
                                       struct eval_outcome *out, struct kiln_err *err)
{
    return run_on_mode(s, &s->visible, name, src, len, tunables, EVAL_PRECOMPILED, out, NULL, err);
}

bool eval_session_batches(const struct eval_session *s)
{
    return sbexec_can_batch(s->opts.runner);
}

enum kiln_rc eval_session_start_compiled(struct eval_session *s, const char *name, const char *src,
                                         size_t len, const int64_t *tunables,
                                         struct eval_outcome *out, struct eval_pending **pend,
                                         struct kiln_err *err)
{
    return run_on_mode(s, &s->visible, name, src, len, tunables, EVAL_PRECOMPILED, out, pend, err);
}

enum kiln_rc eval_session_finish(struct eval_session *s, const char *name,
                                 struct eval_pending *pend, struct eval_outcome *out,
                                 struct kiln_err *err)
{
    enum kiln_rc rc = eval_candidate_finish(pend, out, err);
    if (rc == KILN_OK && s->own_dir) {
        char work[PATH_MAX];
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        eval_session_candidate_dir(s, name, false, work, sizeof(work));
        (void)(fs_remove_tree(work, &ignore) == KILN_OK);
    }
    return rc;
}

enum kiln_rc eval_session_held_out(struct eval_session *s, const char *name, const char *src,
                                   size_t len, const int64_t *tunables, struct eval_outcome *out,
                                   struct kiln_err *err)
{
    if (!s->have_held) {
        /* The secret seed comes from the kernel's CSPRNG: a candidate cannot
         * predict it from anything it has seen. */
        if (getrandom(&s->secret, sizeof(s->secret), 0) != (ssize_t)sizeof(s->secret))
            return kiln_fail_errno(err, KILN_E_IO, "getrandom for the held-out seed");
        s->secret &= (1ULL << 52) - 1;
        enum kiln_rc rc = heldout_draw(s->wl, s->backend, s->secret, &s->draw, err);
        if (rc != KILN_OK)
            return rc;
        if (s->opts.verbose)
            fprintf(stderr, "kiln: drew %zu held-out cases (%zu fixed) from the secret seed\n",
                    s->draw.n, s->draw.nincluded);
        char cache[PATH_MAX];
        snprintf(cache, sizeof(cache), "%s/inputs-held", s->dir);
        struct inputs_request req = {.wl = s->wl,
                                     .backend = s->backend,
                                     .held_out = true,
                                     .cases = s->draw.cases,
                                     .ncases = s->draw.n,
                                     .cache_dir = cache,
                                     .seed = s->secret,
                                     .perf_sets = EVAL_SESSION_PERF_SETS,
                                     .verbose = s->opts.verbose,
                                     .reference = s->have_given_ref ? &s->given_ref : NULL};
        if ((rc = inputs_prepare(&req, &s->held, err)) != KILN_OK)
            return rc;
        s->have_held = true;
    }
    return run_on(s, &s->held, name, src, len, tunables, out, err);
}

void eval_session_apply_held_out(const struct eval_session *s, struct eval_outcome *visible,
                                 const struct eval_outcome *held)
{
    if (visible->v.status != VERDICT_PASS)
        return;
    if (held->v.status != VERDICT_PASS) {
        snprintf(visible->stage, sizeof(visible->stage), "held_out");
        verdict_fail(&visible->v,
                     held->v.status == VERDICT_COMPILE_ERROR ? VERDICT_COMPILE_ERROR
                                                             : VERDICT_WRONG_ANSWER,
                     "held-out check (fresh inputs, unseen sizes) failed: %s", held->v.detail);
        verdict_summarize(&visible->v);
        return;
    }
    char why[VERDICT_DETAIL_MAX];
    if (s->have_held && heldout_timing_inconsistent(s->wl, &s->draw, &visible->v, &held->v, NULL,
                                                    why, sizeof(why))) {
        snprintf(visible->stage, sizeof(visible->stage), "held_out");
        verdict_fail(&visible->v, VERDICT_INCONSISTENT_TIMING, "%s", why);
        verdict_summarize(&visible->v);
        return;
    }
    visible->v.reverified = true;
}

const struct heldout_set *eval_session_held_out_draw(const struct eval_session *s)
{
    return s->have_held ? &s->draw : NULL;
}

void eval_session_candidate_dir(const struct eval_session *s, const char *name, bool held,
                                char *out, size_t cap)
{
    snprintf(out, cap, "%s/cand-%s%s", s->dir, name, held ? "-held" : "");
}

const struct workload *eval_session_workload(const struct eval_session *s)
{
    return s->wl;
}

enum kiln_backend eval_session_backend(const struct eval_session *s)
{
    return s->backend;
}

const char *eval_session_dir(const struct eval_session *s)
{
    return s->dir;
}

uint64_t eval_session_secret_seed(const struct eval_session *s)
{
    return s->have_held ? s->secret : 0;
}

const struct given_inputs *eval_session_given_inputs(const struct eval_session *s)
{
    return s->have_given ? &s->given : NULL;
}

const struct given_reference *eval_session_given_reference(const struct eval_session *s)
{
    return s->have_given_ref ? &s->given_ref : NULL;
}

void eval_session_close(struct eval_session *s)
{
    if (!s)
        return;
    /* Before the directory goes: a tarball's staging lives inside it. */
    if (s->have_given)
        given_inputs_free(&s->given);
    if (s->own_dir) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        (void)(fs_remove_tree(s->dir, &ignore) == KILN_OK);
    }
    if (s->have_given_ref)
        given_reference_free(&s->given_ref);
    input_sets_free(&s->visible);
    input_sets_free(&s->held);
    if (s->have_reference)
        eval_outcome_free(&s->reference);
    workload_free(s->wl);
    free(s);
}
