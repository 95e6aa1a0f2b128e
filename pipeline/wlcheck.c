#include "wlcheck.h"

#include <stdlib.h>

#include "heldout.h"

#include <stdarg.h>
#include <string.h>

#include "cand_source.h"
#include "evaluate.h"
#include "fsutil.h"
#include "inputs.h"
#include "session.h"
#include "text.h"

static void problem(struct wlcheck_result *res, const char *fmt, ...) KILN_PRINTF(2, 3);

static void problem(struct wlcheck_result *res, const char *fmt, ...)
{
    size_t off = strlen(res->problems);
    va_list ap;
    va_start(ap, fmt);
    if (off + 2 < sizeof(res->problems)) {
        vsnprintf(res->problems + off, sizeof(res->problems) - off - 1, fmt, ap);
        strcat(res->problems, "\n");
    }
    va_end(ap);
    res->nproblems++;
}

bool wlcheck_host_failure(enum kiln_rc rc)
{
    switch (rc) {
    case KILN_E_NOMEM:
    case KILN_E_IO:
    case KILN_E_SANDBOX:
    case KILN_E_UNSUPPORTED:
    case KILN_E_INTERNAL:
    case KILN_E_CUDA:
    case KILN_E_NOTFOUND:
    case KILN_E_CANCELLED:
        return true;
    case KILN_OK:
    case KILN_E_USAGE:
    case KILN_E_PARSE:
    case KILN_E_LIMIT:
    case KILN_E_REJECTED:
    case KILN_E_CHILD:
    case KILN_E_TIMEOUT:
    case KILN_E_KILLED:
        return false;
    }
    return true;
}

static void print_sizes(const struct workload *w, const struct wl_case *c, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < w->nsizes && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s=%lld", i ? " " : "", w->size_names[i],
                                (long long)c->sizes[i]);
}

/* One backend's check (visible or held-out cases): what it runs, and
 * where it reports. */
struct backend_check {
    const struct workload *w;
    unsigned backend;
    bool held_out;
    const struct wlcheck_opts *o;
    struct wlcheck_result *res;
};

/* Held-out cases as a check would draw them (from this check's seed):
 * their scripts must work on sizes the author never listed. False when
 * none could be drawn (a problem reported). */
static bool draw_held_out(const struct backend_check *c, struct heldout_set **draw)
{
    *draw = malloc(sizeof(**draw));
    if (!*draw) {
        problem(c->res, "out of memory drawing held-out cases");
        return false;
    }
    struct kiln_err err;
    kiln_err_clear(&err);
    if (heldout_draw(c->w, c->backend, c->o->seed, *draw, &err) != KILN_OK) {
        if (c->o->table)
            fprintf(c->o->table, "  FAIL  held-out cases on %s: %s\n",
                    kiln_backend_name(c->backend), err.msg);
        problem(c->res, "held-out cases on %s: %s", kiln_backend_name(c->backend), err.msg);
        free(*draw);
        *draw = NULL;
        return false;
    }
    return true;
}

/* Runs the scripts on every set (draw: the held-out cases, or NULL). */
static enum kiln_rc prepare_sets(const struct backend_check *c, const struct heldout_set *draw,
                                 struct input_sets *sets, struct kiln_err *err)
{
    const struct wlcheck_opts *o = c->o;
    struct inputs_request req = {.wl = c->w,
                                 .backend = c->backend,
                                 .held_out = c->held_out,
                                 .cache_dir = c->held_out && o->held_cache_dir ? o->held_cache_dir
                                                                               : o->cache_dir,
                                 .seed = o->seed,
                                 .perf_sets = 1,
                                 .script_timeout_ms = o->script_timeout_ms,
                                 .verbose = o->verbose,
                                 .reference = o->reference};
    if (draw) {
        req.cases = draw->cases;
        req.ncases = draw->n;
    }
    /* Given input cases are checked and stand in for the visible inputs;
     * held-out inputs always come from inputs.py. */
    struct given_inputs gi = {.root_fd = -1};
    enum kiln_rc rc = KILN_OK;
    if (!c->held_out && o->input_cases) {
        rc = given_inputs_open(o->input_cases, c->w, c->backend, 1, req.cache_dir, &gi, err);
        if (rc == KILN_OK && o->table)
            fprintf(o->table, "  ok    %s: %zu input sets from %s (sha256 %.16s)\n",
                    kiln_backend_name(c->backend), gi.n, gi.shown, gi.sha256);
        req.given = &gi;
    }
    if (rc == KILN_OK)
        rc = inputs_prepare(&req, sets, err);
    given_inputs_free(&gi);
    return rc;
}

static void report_failure(const struct backend_check *c, enum kiln_rc rc,
                           const struct kiln_err *err)
{
    const char *which = c->held_out ? "held-out" : "visible";
    struct wlcheck_result *res = c->res;
    char esc[KILN_ERR_MSG_MAX * 4];
    if (c->o->table)
        fprintf(c->o->table, "  FAIL  %s cases on %s: %s\n", which, kiln_backend_name(c->backend),
                text_escape_control(esc, sizeof(esc), err->msg));
    problem(res, "%s cases on %s: %s", which, kiln_backend_name(c->backend), err->msg);
    if (wlcheck_host_failure(rc) && res->environment == KILN_OK)
        res->environment = rc;
    if (rc == KILN_E_TIMEOUT || rc == KILN_E_KILLED)
        res->load_dependent = true;
}

/* A row per set; a performance set with an unaccepted weak reference is a
 * problem. */
static void report_sets(const struct backend_check *c, const struct input_sets *sets)
{
    const char *backend = kiln_backend_name(c->backend);
    for (size_t i = 0; i < sets->n; i++) {
        const struct input_set *s = &sets->sets[i];
        char sizes[160];
        print_sizes(c->w, s->wcase, sizes, sizeof(sizes));
        const char *kind = c->held_out                             ? "held-out"
                           : s->wcase->kind == WL_CASE_PERFORMANCE ? "perf"
                                                                   : "correct";
        bool bad = !c->held_out && s->weak && s->wcase->kind == WL_CASE_PERFORMANCE &&
                   !inputs_set_scored(c->w, s);
        if (c->o->table)
            fprintf(c->o->table, "  %-5s %-4s %-12s %-8s %10.1f MB  %-32s %s%s\n",
                    bad       ? "FAIL"
                    : s->weak ? "WEAK"
                              : "ok",
                    backend, s->wcase->name, kind, (double)s->wcase->bytes / 1e6, sizes,
                    s->weak ? "weak: " : "", s->weak ? s->weak_why : "");
        if (s->weak && !c->held_out && s->wcase->kind == WL_CASE_CORRECTNESS &&
            c->res->weak_correctness++ == 0)
            snprintf(c->res->weak_first, sizeof(c->res->weak_first), "case %s on %s: %s",
                     s->wcase->name, backend, s->weak_why);
        if (bad)
            problem(c->res,
                    "performance case %s on %s has a weak reference (%s): make its outputs "
                    "depend on the inputs, or accept it by name in accept_weak and say why in "
                    "the description",
                    s->wcase->name, backend, s->weak_why);
    }
}

/* The starting kernel's unused tunables: WARN rows (the tuner would try
 * their values for nothing), not problems. */
static void warn_unused_tunables(const struct backend_check *c, const struct wl_file_data *k,
                                 const char *file)
{
    struct candidate *cand = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (!c->o->table || candidate_parse(k->data, k->len, c->backend, &cand, &e) != KILN_OK)
        return; /* a directive error is the run's to report */
    bool used[CAND_MAX_TUNABLES];
    cand_source_tunables_used(k->data, k->len, cand, used);
    for (size_t t = 0; t < cand->ntunables; t++)
        if (!used[t])
            fprintf(c->o->table,
                    "  WARN  %-4s %s:%d: tunable %s is never used in the code: the tuner would "
                    "try its %zu values for nothing (use it, or remove the directive)\n",
                    kiln_backend_name(c->backend), file, cand->tunables[t].line,
                    cand->tunables[t].name, cand->tunables[t].nvalues);
    candidate_free(cand);
}

/* What the start is compiled for and where it runs: a cuda start runs
 * only where the GPU is (else it is compiled alone, for the default
 * target). False when the host cannot do even that (said as a SKIP row). */
static bool start_request(const struct backend_check *c, struct eval_request *req,
                          struct eval_target *t, char *harness, size_t cap, bool *run,
                          struct kiln_err *err)
{
    *run = true;
    if (eval_harness_path(c->backend, harness, cap, err) != KILN_OK)
        return false;
    req->harness = harness;
    if (c->backend != KILN_BACKEND_CUDA)
        return true;
    struct kiln_err e;
    kiln_err_clear(&e);
    *run = eval_backend_check(KILN_BACKEND_CUDA, c->o->gpu, COMPILE_NVCC, NULL, &e) == KILN_OK;
    /* Without nvcc it cannot even be compiled: a SKIP, not the kernel's fault. */
    if (!*run && eval_compiler_check(COMPILE_NVCC, err) != KILN_OK)
        return false;
    struct gpu_props props;
    struct device_limits lim;
    bool probed = *run && eval_device_probe(harness, c->o->gpu, &props, &lim, &e) == KILN_OK;
    if (eval_target_resolve(NULL, probed ? &lim : NULL, c->o->gpu, t, err) != KILN_OK)
        return false;
    req->arch = t->arch;
    req->limits = &t->limits;
    return true;
}

/* The correctness sets of `sets` (pointing into them): no timing. */
static bool correctness_only(const struct input_sets *sets, struct input_sets *out)
{
    out->n = 0;
    out->sets = calloc(sets->n ? sets->n : 1, sizeof(*out->sets));
    for (size_t i = 0; out->sets && i < sets->n; i++)
        if (sets->sets[i].wcase->kind == WL_CASE_CORRECTNESS)
            out->sets[out->n++] = sets->sets[i];
    return out->sets != NULL;
}

/* The verdict on the start as a row and, when it failed, a problem. */
static void report_start(const struct backend_check *c, const char *file, bool run, size_t ncases,
                         const struct eval_outcome *o)
{
    const char *b = kiln_backend_name(c->backend);
    char esc[VERDICT_DETAIL_MAX * 4];
    if (o->v.status == VERDICT_PASS) {
        if (c->o->table && run)
            fprintf(c->o->table,
                    "  ok    %-4s %s compiles and is correct on the %zu correctness "
                    "case%s\n",
                    b, file, ncases, ncases == 1 ? "" : "s");
        else if (c->o->table)
            fprintf(c->o->table, "  ok    %-4s %s compiles (not run: no usable GPU here)\n", b,
                    file);
        return;
    }
    text_escape_control(esc, sizeof(esc), o->v.detail);
    if (c->o->table)
        fprintf(c->o->table, "  FAIL  %-4s starting kernel %s: %s (stage %s): %s\n", b, file,
                verdict_status_name(o->v.status), o->stage, esc);
    problem(c->res, "starting kernel %s on %s: %s (stage %s): %.*s", file, b,
            verdict_status_name(o->v.status), o->stage, (int)strcspn(o->v.detail, "\n"),
            o->v.detail);
}

/* Compiles the starting kernel and runs it on the correctness sets, as
 * `kiln eval` would judge it (the compile and gpu-run sandboxes). */
static void check_start(const struct backend_check *c, const struct input_sets *sets)
{
    const struct wl_file_data *k = workload_start_kernel(c->w, c->backend);
    if (!k)
        return; /* said: the kernel part is skipped */
    const char *file = workload_file_name(workload_kernel_file(c->backend));
    warn_unused_tunables(c, k, file);
    char harness[PATH_MAX], work[PATH_MAX];
    struct eval_target t;
    struct input_sets corr = {0};
    struct eval_request req = {.wl = c->w,
                               .backend = c->backend,
                               .name = "start",
                               .source = k->data,
                               .len = k->len,
                               .gpu = c->o->gpu,
                               .source_name = file,
                               .sets = &corr,
                               .work_dir = work};
    bool run = false;
    struct kiln_err err;
    kiln_err_clear(&err);
    snprintf(work, sizeof(work), "%s/start-%s", c->o->cache_dir, kiln_backend_name(c->backend));
    enum kiln_rc rc = start_request(c, &req, &t, harness, sizeof(harness), &run, &err)
                          ? KILN_OK
                          : (err.rc ? err.rc : KILN_E_INTERNAL);
    if (rc == KILN_OK && !correctness_only(sets, &corr))
        rc = kiln_fail(&err, KILN_E_NOMEM, "out of memory");
    req.mode = run ? EVAL_ALL : EVAL_COMPILE_ONLY;
    struct eval_outcome o;
    memset(&o, 0, sizeof(o));
    if (rc == KILN_OK)
        rc = eval_candidate(&req, &o, &err);
    if (rc == KILN_OK)
        report_start(c, file, run, corr.n, &o);
    else if (c->o->table)
        fprintf(c->o->table, "  SKIP  %-4s %s not checked: this host could not run it: %s\n",
                kiln_backend_name(c->backend), file, err.msg);
    eval_outcome_free(&o);
    free(corr.sets);
    struct kiln_err ign;
    kiln_err_clear(&ign);
    (void)(fs_remove_tree(work, &ign) == KILN_OK);
}

/* Runs the scripts for every case of one backend; a row per set. */
static void check_backend(const struct workload *w, unsigned backend, bool held_out,
                          const struct wlcheck_opts *o, struct wlcheck_result *res)
{
    const struct backend_check c = {
        .w = w, .backend = backend, .held_out = held_out, .o = o, .res = res};
    struct heldout_set *draw = NULL;
    if (held_out && !draw_held_out(&c, &draw))
        return;
    struct input_sets sets;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = prepare_sets(&c, draw, &sets, &err);
    if (rc != KILN_OK) {
        report_failure(&c, rc, &err);
    } else {
        report_sets(&c, &sets);
        if (o->check_start && !held_out)
            check_start(&c, &sets);
        input_sets_free(&sets);
    }
    free(draw);
}

void wlcheck_run(const struct workload *w, const struct wlcheck_opts *o, struct wlcheck_result *res)
{
    memset(res, 0, sizeof(*res));
    const unsigned all[] = {KILN_BACKEND_CUDA, KILN_BACKEND_CPU};
    for (size_t b = 0; b < 2; b++) {
        if (!(w->backends & o->backends & all[b]))
            continue;
        for (int held = 0; held < 2; held++)
            check_backend(w, all[b], held, o, res);
    }
}
