#include "session.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "clock.h"
#include "fsutil.h"
#include "plog.h"
#include "suggest.h"
#include "gpuinfo.h"
#include "hostpaths.h"
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

/* The built-in workload name closest to `name` into near[cap]; false when
 * none is close (or the data directory cannot be read: no hint then). */
static bool closest_builtin(const char *name, char *near, size_t cap)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/workloads", fs_data_dir());
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct suggest s;
    suggest_init(&s, name);
    near[0] = '\0';
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= cap ||
            (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)) /* README.md is no workload */
            continue;
        suggest_consider(&s, e->d_name);
        if (s.best == e->d_name) {
            snprintf(near, cap, "%s", e->d_name); /* readdir reuses its buffer */
            s.best = near;
        }
    }
    closedir(d);
    return s.best != NULL;
}

/* A built-in workload's name: NAME, or GROUP/NAME for a member of a group
 * directory (kernelbench/kb_19_relu, as kiln workloads lists it); never a
 * path that leaves workloads/ (no leading '/' or '.', one '/' at most). */
static bool builtin_name(const char *arg)
{
    const char *slash = strchr(arg, '/');
    if (arg[0] == '\0' || arg[0] == '.' || arg[0] == '/')
        return false;
    return !slash || (slash[1] != '\0' && slash[1] != '.' && !strchr(slash + 1, '/'));
}

/* The group member named `name` (a bare name kiln workloads lists as
 * GROUP/NAME) into near[cap] as "GROUP/NAME"; false when there is none. */
static bool builtin_group_member(const char *name, char *near, size_t cap)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/workloads", fs_data_dir());
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        char probe[PATH_MAX * 2];
        snprintf(probe, sizeof(probe), "%s/%s/%s/workload.json", dir, e->d_name, name);
        if (e->d_name[0] != '.' && access(probe, F_OK) == 0 &&
            (size_t)snprintf(near, cap, "%s/%s", e->d_name, name) < cap)
            found = true;
    }
    closedir(d);
    return found;
}

bool workload_shadows_builtin(const char *arg, char *builtin, size_t cap)
{
    struct stat here, there;
    if (!builtin_name(arg) || stat(arg, &here) != 0 || !S_ISDIR(here.st_mode))
        return false;
    snprintf(builtin, cap, "%s/workloads/%s", fs_data_dir(), arg);
    return stat(builtin, &there) == 0 && S_ISDIR(there.st_mode) &&
           (here.st_dev != there.st_dev || here.st_ino != there.st_ino);
}

void workload_warn_shadow(const char *arg, const struct plog *log)
{
    char builtin[PATH_MAX];
    if (workload_shadows_builtin(arg, builtin, sizeof(builtin)))
        plog_printf(log,
                    "kiln: warning: '%s' is the directory ./%s here, not the built-in workload "
                    "%s (%s); using ./%s: write ./%s to say so, or run from another directory "
                    "for the built-in\n",
                    arg, arg, arg, builtin, arg, arg);
}

enum kiln_rc workload_resolve_dir(const char *arg, char *out, size_t cap, struct kiln_err *err)
{
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(out, cap, "%s", arg);
        return KILN_OK;
    }
    /* A bare name (or GROUP/NAME) is a built-in workload. */
    if (builtin_name(arg)) {
        snprintf(out, cap, "%s/workloads/%s", fs_data_dir(), arg);
        if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
            return KILN_OK;
    }
    char near[SUGGEST_MAX_LEN + 1];
    if (!strchr(arg, '/') && builtin_group_member(arg, near, sizeof(near)))
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "no workload directory '%s'; the built-in workload of that name is "
                         "'%s' (see kiln workloads)",
                         arg, near);
    if (!strchr(arg, '/') && closest_builtin(arg, near, sizeof(near)))
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "no workload directory '%s' and no built-in workload of that name; "
                         "did you mean '%s'? (see kiln workloads)",
                         arg, near);
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
    struct eval_target target; /* cuda: what candidates are compiled for (resolve_target) */
    int short_iterations;      /* eval_session_set_short_run; 0: opts.iterations */
    bool inputs_ready;         /* `visible` holds generated sets, not only their layout */
    double inputs_s;           /* wall time spent generating the visible sets */
    /* A cuda session on a host without its GPU, with deferred inputs: the
     * compile stage still runs (it needs no GPU: a cubin that imports the
     * device heap is refused there), the first run fails with this. */
    bool gpu_missing;
    struct kiln_err gpu_err;
    char shown_for[64], shown[PATH_MAX]; /* eval_session_show_source */
    bool said_no_start;                  /* say_no_start said it once */
};

void eval_session_show_source(struct eval_session *s, const char *name, const char *shown)
{
    snprintf(s->shown_for, sizeof(s->shown_for), "%s", name);
    snprintf(s->shown, sizeof(s->shown), "%s", shown);
}

/* How compiler messages name candidate `name`'s source. */
static const char *shown_source(const struct eval_session *s, const char *name)
{
    if (s->shown_for[0] && strcmp(name, s->shown_for) == 0)
        return s->shown;
    if (strcmp(name, "reference") == 0)
        return workload_file_name(s->backend == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU
                                                                  : WL_FILE_KERNEL_C);
    return NULL;
}

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

/* The visible sets: laid out only (defer), or generated. */
static enum kiln_rc prepare_visible(struct eval_session *s, bool layout_only, struct kiln_err *err)
{
    char cache[PATH_MAX];
    snprintf(cache, sizeof(cache), "%s/inputs", s->dir);
    struct inputs_request req = {.wl = s->wl,
                                 .backend = s->backend,
                                 .cache_dir = cache,
                                 .seed = s->opts.seed,
                                 .perf_sets = EVAL_SESSION_PERF_SETS,
                                 .verbose = s->opts.verbose,
                                 .given = s->have_given ? &s->given : NULL,
                                 .reference = s->have_given_ref ? &s->given_ref : NULL,
                                 .layout_only = layout_only,
                                 .log = s->opts.log};
    if (s->opts.verbose && !layout_only)
        plog_printf(s->opts.log, "kiln: preparing inputs and references for %s (%s backend)\n",
                    s->wl->name, kiln_backend_name(s->backend));
    input_sets_free(&s->visible);
    double t0 = clock_mono_s();
    enum kiln_rc rc = inputs_prepare(&req, &s->visible, err);
    if (!layout_only)
        s->inputs_s += clock_mono_s() - t0;
    if (rc != KILN_OK || layout_only)
        return rc;
    s->inputs_ready = true;
    /* The sets are copied: the given data (a tarball's unpacked copy) is no
     * longer needed; its path and digest stay for the records. */
    if (s->have_given)
        given_inputs_free(&s->given);
    return KILN_OK;
}

/* A cuda session needs its GPU: checked when the session opens, before
 * anything slow runs. */
enum kiln_rc eval_backend_check_gpu(int gpu, struct kiln_err *err)
{
    struct gpuinfo g[GPUINFO_MAX];
    size_t ng = 0;
    enum kiln_rc rc = gpuinfo_list("/proc", g, &ng, err);
    if (rc != KILN_OK)
        return rc;
    if (ng == 0)
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "the cuda backend needs an NVIDIA GPU and this host has none (use "
                         "--backend cpu with a .c candidate; kiln doctor says what is missing)");
    if (gpu < 0 || (size_t)gpu >= ng)
        return kiln_fail(err, KILN_E_NOTFOUND, "GPU %d not found: this host has %zu (--gpu 0..%zu)",
                         gpu, ng, ng - 1);
    return KILN_OK;
}

/* nvcc where the compile sandbox finds it: the toolkit's bin/ (@cuda@) or
 * the image's PATH (images/compile.json). */
static bool have_nvcc(void)
{
    char cuda[PATH_MAX], nvcc[PATH_MAX + 16];
    if (hostpaths_cuda(cuda, sizeof(cuda)))
        return true;
    const char *dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++) {
        snprintf(nvcc, sizeof(nvcc), "%s/nvcc", dirs[i]);
        if (access(nvcc, X_OK) == 0)
            return true;
    }
    return false;
}

/* The GPU and its driver's library (the harness's side). */
static enum kiln_rc check_device(int gpu, struct kiln_err *err)
{
    enum kiln_rc rc = eval_backend_check_gpu(gpu, err);
    char libs[PATH_MAX];
    if (rc == KILN_OK && !hostpaths_nvidia_libs(libs, sizeof(libs)))
        rc = kiln_fail(err, KILN_E_NOTFOUND,
                       "the cuda backend needs the NVIDIA driver's libcuda.so.1 and this host has "
                       "none in /usr/local/nvidia/lib64 or the system's library directories "
                       "(install the driver's user-space libraries, or use --backend cpu with a "
                       ".c candidate; kiln doctor says what is missing)");
    return rc;
}

enum kiln_rc eval_compiler_check(enum compile_tool compiler, struct kiln_err *err)
{
    if (compiler != COMPILE_NVCC || have_nvcc())
        return KILN_OK;
    return kiln_fail(err, KILN_E_NOTFOUND,
                     "the cuda backend compiles with nvcc and this host has none ($CUDA_HOME, "
                     "$CUDA_PATH, /usr/local/cuda or /usr/bin; install the CUDA toolkit, try "
                     "--compiler nvrtc, or use --backend cpu with a .c candidate)");
}

enum kiln_rc eval_backend_check(enum kiln_backend b, int gpu, enum compile_tool compiler,
                                const struct sbexec_runner *runner, struct kiln_err *err)
{
    if (b != KILN_BACKEND_CUDA || runner)
        return KILN_OK;
    enum kiln_rc rc = check_device(gpu, err);
    return rc != KILN_OK ? rc : eval_compiler_check(compiler, err);
}

/* The local GPU's own architecture and limits, asked once; the same answer
 * gives the physics floor. False (with a warning) when it cannot be asked. */
static bool probe_local(struct eval_session *s, struct device_limits *lim)
{
    struct gpu_props props;
    struct kiln_err perr;
    kiln_err_clear(&perr);
    if (eval_device_probe(s->harness, s->opts.gpu, &props, lim, &perr) != KILN_OK) {
        plog_printf(s->opts.log, "kiln: warning: could not ask GPU %d what it is: %s\n",
                    s->opts.gpu, perr.msg);
        return false;
    }
    kiln_err_clear(&perr);
    if (eval_ceilings_of(&props, s->wl->math, &s->ceilings, &perr) != KILN_OK)
        plog_printf(s->opts.log, "kiln: warning: no physics floor for GPU %d: %s\n", s->opts.gpu,
                    perr.msg);
    s->probed_ceilings = true;
    return true;
}

enum kiln_rc eval_target_resolve(const char *arch, const struct device_limits *probed, int gpu,
                                 struct eval_target *t, struct kiln_err *err)
{
    int cc = 0;
    enum kiln_rc rc;
    memset(t, 0, sizeof(*t));
    if (arch && (rc = gpuarch_check(arch, "--arch", &cc, err)) != KILN_OK)
        return rc;
    if (probed && !cc) {
        if ((rc = gpuarch_require(probed->cc, "the GPU", err)) != KILN_OK)
            return rc;
        cc = probed->cc;
        t->source = "the GPU";
    } else if (probed && !gpuarch_runs_on(cc, probed->cc)) {
        return kiln_fail(err, KILN_E_USAGE,
                         "--arch %s: GPU %d is sm_%d, and code compiled for %s does not run on "
                         "it (a cubin runs only on its own major version, at the same or a "
                         "higher minor): drop --arch to compile for the GPU's own",
                         arch, gpu, probed->cc, arch);
    } else {
        t->source = cc ? "--arch" : "the default";
        cc = cc ? cc : GPUARCH_DEFAULT;
    }
    if (probed)
        t->limits = *probed;
    else
        (void)devlimits_for_arch(cc, &t->limits);
    t->limits.cc = cc; /* DEVICE_CC is what the code is compiled for */
    gpuarch_name(cc, t->arch);
    return KILN_OK;
}

/* The session's target: the GPU is asked only when it runs here. */
static enum kiln_rc resolve_target(struct eval_session *s, struct kiln_err *err)
{
    struct device_limits probed;
    bool asked = !s->opts.runner && !s->gpu_missing && probe_local(s, &probed);
    enum kiln_rc rc =
        eval_target_resolve(s->opts.arch, asked ? &probed : NULL, s->opts.gpu, &s->target, err);
    if (rc == KILN_OK && !strcmp(s->target.source, "the default"))
        plog_printf(s->opts.log,
                    "kiln: note: %s, so candidates are compiled for %s (the H200's); "
                    "--arch sm_XX names the GPU that will run them\n",
                    s->opts.runner ? "the GPU is on the cluster's node, not here"
                                   : "no GPU could be asked",
                    s->target.arch);
    return rc;
}

const struct eval_target *eval_session_target(const struct eval_session *s)
{
    return s->backend == KILN_BACKEND_CUDA ? &s->target : NULL;
}

json_t *eval_target_json(const struct eval_target *t)
{
    if (!t)
        return json_null();
    return json_pack("{s:s, s:s, s:s, s:i}", "arch", t->arch, "from", t->source, "limits",
                     t->limits.queried ? "queried" : "table", "smem_optin",
                     (int)t->limits.max_smem_optin);
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
        workload_warn_shadow(opts->workload, opts->log);
    if (rc == KILN_OK)
        rc = workload_load(wdir, &s->wl, err);
    if (rc == KILN_OK) {
        s->backend = eval_backend_auto(opts->backend, opts->candidate_hint, s->wl);
        if (!(s->wl->backends & s->backend))
            rc = kiln_fail(err, KILN_E_USAGE, "workload %s does not support the %s backend",
                           s->wl->name, kiln_backend_name(s->backend));
    }
    /* The GPU is checked here, before anything slow runs; with Slurm it is
     * the node's (the submit host may have none). With deferred inputs a
     * missing GPU or driver waits for the first run, so the compile stage is
     * still judged; a missing compiler cannot wait. */
    if (rc == KILN_OK && s->backend == KILN_BACKEND_CUDA && !opts->runner) {
        if (!opts->defer_inputs) {
            rc = eval_backend_check(s->backend, opts->gpu, opts->compiler, NULL, err);
        } else {
            rc = eval_compiler_check(opts->compiler, err);
            kiln_err_clear(&s->gpu_err);
            s->gpu_missing = check_device(opts->gpu, &s->gpu_err) != KILN_OK;
        }
    }
    if (rc == KILN_OK)
        rc = eval_harness_path(s->backend, s->harness, sizeof(s->harness), err);
    if (rc == KILN_OK && s->backend == KILN_BACKEND_CUDA && opts->compiler == COMPILE_NVRTC)
        rc = eval_program_path("kiln-nvrtc", s->nvrtc, sizeof(s->nvrtc), err);
    if (rc == KILN_OK && s->backend == KILN_BACKEND_CUDA)
        rc = resolve_target(s, err);
    else if (rc == KILN_OK && opts->arch) /* said, not silently dropped */
        plog_printf(s->opts.log,
                    "kiln: note: --arch %s is ignored: the cpu backend compiles for this "
                    "machine's CPU (--arch names the GPU that runs a cuda candidate)\n",
                    opts->arch);
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
    if (rc == KILN_OK)
        rc = prepare_visible(s, opts->defer_inputs, err);
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
    /* Deferred inputs are generated when the first run needs them; the
     * compile stage needs only their layout. */
    if (s->gpu_missing && mode != EVAL_COMPILE_ONLY) {
        *err = s->gpu_err;
        return err->rc;
    }
    if (sets == &s->visible && !s->inputs_ready && mode != EVAL_COMPILE_ONLY) {
        enum kiln_rc prc = prepare_visible(s, false, err);
        if (prc != KILN_OK)
            return prc;
    }
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
                               .arch = s->backend == KILN_BACKEND_CUDA ? s->target.arch : NULL,
                               .limits = s->backend == KILN_BACKEND_CUDA ? &s->target.limits : NULL,
                               .warmups = s->opts.warmups,
                               .iterations = sets == &s->held || !s->short_iterations
                                                 ? s->opts.iterations
                                                 : s->short_iterations,
                               .adaptive = s->opts.adaptive,
                               .target_rse = s->opts.target_rse,
                               .budget_ms = s->opts.budget_ms,
                               .hot = s->opts.hot,
                               .run_timeout_ms = s->opts.run_timeout_ms,
                               .reference = s->have_reference ? &s->ref_medians : NULL,
                               .mode = mode,
                               .compiler = s->opts.compiler,
                               .nvrtc = s->nvrtc[0] ? s->nvrtc : NULL,
                               .source_name = shown_source(s, name),
                               .runner = s->opts.runner};
    if (s->backend == KILN_BACKEND_CUDA && mode != EVAL_COMPILE_ONLY) {
        if (!s->probed_ceilings) {
            struct kiln_err perr;
            kiln_err_clear(&perr);
            if (eval_device_ceilings(s->harness, s->opts.gpu, s->wl->math, &s->ceilings, &perr) !=
                KILN_OK)
                plog_printf(s->opts.log, "kiln: warning: no physics floor for GPU %d: %s%s\n",
                            s->opts.gpu, perr.msg,
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
        plog_printf(s->opts.log, "kiln: evaluating %s%s\n", name,
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

bool eval_session_has_start(const struct eval_session *s)
{
    return workload_start_kernel(s->wl, s->backend) != NULL;
}

/* Without a starting kernel there is nothing to compile or time: the
 * reference stays absent and every speedup vs the start unknown (0). */
static void say_no_start(struct eval_session *s)
{
    if (s->opts.verbose && !s->said_no_start)
        plog_printf(s->opts.log,
                    "kiln: no starting kernel (%s): candidates are judged against the "
                    "reference as usual, speedups vs the start are not computed\n",
                    workload_file_name(workload_kernel_file(s->backend)));
    s->said_no_start = true;
}

enum kiln_rc eval_session_check_reference(struct eval_session *s, struct kiln_err *err)
{
    const struct wl_file_data *k = workload_start_kernel(s->wl, s->backend);
    if (!k) {
        say_no_start(s);
        return KILN_OK;
    }
    struct eval_outcome o;
    enum kiln_rc rc = run_on_mode(s, &s->visible, "reference", k->data, k->len, NULL,
                                  EVAL_COMPILE_ONLY, &o, NULL, err);
    if (rc == KILN_OK && o.v.status != VERDICT_PASS) {
        /* The compiler's own lines, named by the file (shown_source). */
        const char *why =
            o.compile.diagnostics && o.compile.diagnostics[0] ? o.compile.diagnostics : o.v.detail;
        rc = kiln_fail(err, KILN_E_CHILD, "the starting kernel %s does not compile (stage %s):\n%s",
                       shown_source(s, "reference"), o.stage, why);
    }
    eval_outcome_free(&o);
    return rc;
}

enum kiln_rc eval_session_reference(struct eval_session *s, struct kiln_err *err)
{
    const struct wl_file_data *k = workload_start_kernel(s->wl, s->backend);
    if (!k) {
        say_no_start(s);
        return KILN_OK;
    }
    enum wl_file f = workload_kernel_file(s->backend);
    /* Precompiled: eval_session_check_reference's result when it ran. */
    enum kiln_rc rc = run_on_mode(s, &s->visible, "reference", k->data, k->len, NULL,
                                  EVAL_PRECOMPILED, &s->reference, NULL, err);
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

void eval_session_rescore(const struct eval_session *s, struct eval_outcome *o)
{
    if (o->v.status != VERDICT_PASS)
        return;
    const struct eval_medians *ref = s->have_reference ? &s->ref_medians : NULL;
    const struct eval_medians *base =
        s->have_baseline && s->baseline.medians.n ? &s->baseline.medians : NULL;
    for (size_t i = 0; i < o->v.ncases; i++) {
        struct verdict_case *c = &o->v.cases[i];
        if (!c->timed)
            continue;
        c->ref_median_ms = eval_medians_find(ref, c->name);
        c->vendor_median_ms = eval_medians_find(base, c->name);
    }
    const struct stats_ceilings *ceil = o->floor_from_node ? &o->node_ceilings
                                        : s->backend == KILN_BACKEND_CUDA && s->probed_ceilings
                                            ? &s->ceilings
                                            : NULL;
    verdict_finish(&o->v, ceil);
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
                                        .runner = s->opts.runner,
                                        .sets = &s->visible};
    if (s->opts.verbose && s->wl->baseline != WL_BASELINE_NONE)
        plog_printf(s->opts.log, "kiln: timing the vendor baseline (%s)\n",
                    eval_baseline_kind_name(s->wl->baseline));
    enum kiln_rc rc = eval_baseline_run(&req, &s->baseline, err);
    if (rc != KILN_OK)
        return rc;
    s->have_baseline = true;
    /* The start was timed first: its speedup over the baseline only now. */
    if (s->have_reference)
        eval_session_rescore(s, &s->reference);
    if (s->opts.verbose && s->baseline.state == EVAL_BASELINE_UNAVAILABLE)
        plog_printf(s->opts.log, "kiln: no baseline times: %s\n", s->baseline.detail);
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
            plog_printf(s->opts.log,
                        "kiln: drew %zu held-out cases (%zu fixed) from the secret seed\n",
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
                                     .reference = s->have_given_ref ? &s->given_ref : NULL,
                                     .log = s->opts.log};
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
    /* The summary said "flagged for re-verification": now it is done. */
    visible->v.reverified = true;
    verdict_summarize(&visible->v);
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

double eval_session_inputs_seconds(const struct eval_session *s)
{
    return s->inputs_s;
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
