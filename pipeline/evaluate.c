#include "evaluate.h"
#include "clock.h"

#include <errno.h>
#include <jansson.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "candidate.h"
#include "compare.h"
#include "cubin.h"
#include "cpu_trampoline.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "gpuarch.h"
#include "gpupeak.h"
#include "harness_plan.h"
#include "hstatus.h"
#include "npy.h"
#include "proc.h"
#include "cand_source.h"
#include "sbexec.h"
#include "suggest.h"
#include "timings.h"

#define LOG_TAIL_MAX (8u << 10)

static void eliminate(struct eval_outcome *out, const char *stage, enum verdict_status s,
                      const char *fmt, ...) KILN_PRINTF(4, 5);

/* Records where and why the candidate was eliminated (first one wins). */
static void eliminate(struct eval_outcome *out, const char *stage, enum verdict_status s,
                      const char *fmt, ...)
{
    if (out->v.status != VERDICT_PASS)
        return;
    char why[VERDICT_DETAIL_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(out->stage, sizeof(out->stage), "%s", stage);
    verdict_fail(&out->v, s, "%s", why);
}

enum kiln_rc eval_device_probe(const char *harness_cuda, int gpu, struct gpu_props *props,
                               struct device_limits *limits, struct kiln_err *err)
{
    struct gpuinfo g[GPUINFO_MAX];
    size_t ng = 0;
    enum kiln_rc rc;
    if ((rc = gpuinfo_list("/proc", g, &ng, err)) != KILN_OK)
        return rc;
    if (gpu < 0 || (size_t)gpu >= ng)
        return kiln_fail(err, KILN_E_NOTFOUND, "GPU %d not found (%zu GPUs on this host)", gpu, ng);
    char text[1024];
    int status = -1;
    char *argv[] = {(char *)harness_cuda, "--device-props", g[gpu].bus_id, NULL};
    if ((rc = proc_capture(argv, text, sizeof(text), 30000, &status, err)) != KILN_OK)
        return rc;
    if (status != 0)
        return kiln_fail(err, KILN_E_CHILD, "%s --device-props %s failed (status %d): %.200s",
                         harness_cuda, g[gpu].bus_id, status, text);
    return devprobe_parse(text, props, limits, err);
}

enum kiln_rc eval_device_ceilings(const char *harness_cuda, int gpu, unsigned units,
                                  struct stats_ceilings *out, struct kiln_err *err)
{
    *out = (struct stats_ceilings){.slack = STATS_CEILINGS_H200.slack,
                                   .reverify_speedup = STATS_CEILINGS_H200.reverify_speedup};
    struct gpu_props props;
    struct device_limits lim;
    enum kiln_rc rc = eval_device_probe(harness_cuda, gpu, &props, &lim, err);
    return rc != KILN_OK ? rc : eval_ceilings_of(&props, units, out, err);
}

enum kiln_rc eval_ceilings_of(const struct gpu_props *props, unsigned units,
                              struct stats_ceilings *out, struct kiln_err *err)
{
    *out = (struct stats_ceilings){.slack = STATS_CEILINGS_H200.slack,
                                   .reverify_speedup = STATS_CEILINGS_H200.reverify_speedup};
    struct gpu_peaks peaks;
    enum kiln_rc rc = gpupeak_compute(props, &peaks, err);
    if (rc != KILN_OK)
        return rc;
    struct gpu_roofline roof;
    gpupeak_for_units(&peaks, units, &roof);
    out->bytes_per_s = peaks.bytes_per_s;
    out->flop_per_s = roof.flop_per_s;
    out->unit = roof.unit;
    out->guard_flop_per_s = roof.guard_flop_per_s;
    out->copy_bytes_per_s = (double)props->copy_mb_per_s * 1e6;
    return KILN_OK;
}

int eval_warmups_resolved(int warmups)
{
    return warmups == EVAL_NO_WARMUPS ? 0 : warmups > 0 ? warmups : HARNESS_PLAN_DEFAULT_WARMUPS;
}

int eval_iterations_resolved(int iterations)
{
    return iterations > 0 ? iterations : HARNESS_PLAN_DEFAULT_ITERATIONS;
}

enum kiln_rc eval_harness_path(enum kiln_backend b, char *out, size_t cap, struct kiln_err *err)
{
    return eval_program_path(b == KILN_BACKEND_CUDA ? "kiln-harness-cuda" : "kiln-harness-cpu", out,
                             cap, err);
}

enum kiln_rc eval_program_path(const char *name, char *out, size_t cap, struct kiln_err *err)
{
    const char *dir = getenv("KILN_HARNESS_DIR");
    char self[PATH_MAX];
    if (!dir || !*dir) {
        enum kiln_rc rc = fs_self_path(true, self, sizeof(self), err);
        if (rc != KILN_OK)
            return rc;
        dir = self;
    }
    if (snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
        return kiln_fail(err, KILN_E_USAGE, "harness path too long");
    if (access(out, X_OK) != 0)
        return kiln_fail(err, KILN_E_NOTFOUND, "%s not found%s (build it, or set KILN_HARNESS_DIR)",
                         out,
                         strcmp(name, "kiln-harness-cpu") ? ": kiln was built without CUDA?" : "");
    return KILN_OK;
}

static enum harness_role role_of(enum wl_role r)
{
    return r == WL_ROLE_IN ? HR_IN : r == WL_ROLE_OUT ? HR_OUT : HR_INOUT;
}

static enum harness_scalar scalar_of(enum wl_scalar_type t)
{
    switch (t) {
    case WL_SCALAR_INT32:
        return HS_INT32;
    case WL_SCALAR_INT64:
        return HS_INT64;
    case WL_SCALAR_FLOAT32:
        return HS_FLOAT32;
    case WL_SCALAR_FLOAT64:
        return HS_FLOAT64;
    }
    return HS_INT64;
}

/* The timing rule a request stands for, defaults resolved: the plan's and
 * the verdict's (so the record says how its cases were timed). */
static void timing_rule_of(const struct eval_request *req, struct verdict_timing_rule *r)
{
    memset(r, 0, sizeof(*r));
    r->known = true;
    r->warmups = eval_warmups_resolved(req->warmups);
    r->iterations = eval_iterations_resolved(req->iterations);
    r->max_iterations = r->iterations;
    r->adaptive = req->adaptive;
    if (req->adaptive) {
        r->target_rse = req->target_rse > 0 ? req->target_rse : EVAL_DEFAULT_TARGET_RSE;
        r->budget_ms = req->budget_ms > 0 ? req->budget_ms : EVAL_DEFAULT_BUDGET_MS;
        r->max_iterations = 10 * r->iterations;
        if (r->max_iterations > HARNESS_PLAN_MAX_RUNS)
            r->max_iterations = HARNESS_PLAN_MAX_RUNS;
    }
}

/* Fills the case-independent part of the plan from the workload signature
 * and the candidate's launches. */
static enum kiln_rc plan_signature(const struct eval_request *req, const struct candidate *cand,
                                   struct harness_plan *hp, struct kiln_err *err)
{
    const struct workload *wl = req->wl;
    harness_plan_init(hp);
    hp->backend = req->backend == KILN_BACKEND_CUDA ? HB_CUDA : HB_CPU;
    struct verdict_timing_rule r;
    timing_rule_of(req, &r);
    hp->warmups = r.warmups;
    hp->iterations = r.iterations;
    hp->adaptive = r.adaptive;
    if (r.adaptive) {
        hp->target_rse = r.target_rse;
        hp->budget_ms = r.budget_ms;
        hp->max_iterations = r.max_iterations;
    }
    hp->l2_flush = !req->hot;
    hp->nargs = (int)wl->nargs;
    for (size_t i = 0; i < wl->nargs; i++) {
        const struct wl_arg *a = &wl->args[i];
        struct harness_arg *h = &hp->args[i];
        snprintf(h->name, sizeof(h->name), "%s", a->name);
        h->is_tensor = a->kind == WL_ARG_TENSOR;
        h->dtype = a->dtype;
        h->role = role_of(a->role);
        h->type = scalar_of(a->type);
    }
    hp->nlaunches = (int)cand->nlaunches;
    for (size_t l = 0; l < cand->nlaunches; l++) {
        const struct cand_launch *cl = &cand->launches[l];
        struct harness_launch *hl = &hp->launches[l];
        snprintf(hl->kernel, sizeof(hl->kernel), "%s", cl->kernel);
        hl->nargs = (int)cl->nargs;
        for (size_t k = 0; k < cl->nargs; k++) {
            int idx = harness_plan_find_arg(hp, cl->args[k]);
            if (idx < 0)
                return kiln_fail(err, KILN_E_REJECTED, "launch %zu: unknown argument %s", l + 1,
                                 cl->args[k]);
            hl->args[k] = idx;
        }
    }
    return KILN_OK;
}

/* The limits the plan and the require directives are checked against: the
 * target device's, or the H200's when the caller knows none. */
static const struct device_limits *request_limits(const struct eval_request *req)
{
    static const struct device_limits h200 = DEVICE_LIMITS_H200;
    return req->limits ? req->limits : &h200;
}

/* Adds one case (shapes, scalars, resolved launch dimensions, sets). */
static enum kiln_rc plan_case(const struct eval_request *req, const struct candidate *cand,
                              const int64_t *values, const struct wl_case *c, int nsets,
                              struct harness_plan *hp, struct resolved_plan *rp,
                              struct kiln_err *err)
{
    const struct workload *wl = req->wl;
    enum kiln_rc rc = plan_resolve(cand, wl, c, values, request_limits(req), rp, err);
    if (rc != KILN_OK)
        return rc;
    struct harness_case *hc;
    if ((rc = harness_plan_add_case(hp, &hc, err)))
        return rc;
    snprintf(hc->name, sizeof(hc->name), "%s", c->name);
    hc->timed = c->kind == WL_CASE_PERFORMANCE;
    struct wl_shape shapes[WL_MAX_ARGS];
    if ((rc = workload_case_shapes(wl, c, shapes, err)))
        return rc;
    for (size_t t = 0; t < wl->ntensors; t++) {
        int a = shapes[t].arg;
        hc->ndim[a] = shapes[t].ndim;
        memcpy(hc->shape[a], shapes[t].shape, sizeof(shapes[t].shape));
    }
    for (size_t i = 0; i < wl->nargs; i++) {
        const struct wl_arg *a = &wl->args[i];
        if (a->kind != WL_ARG_SCALAR)
            continue;
        if (a->type == WL_SCALAR_FLOAT32 || a->type == WL_SCALAR_FLOAT64)
            hc->value[i].f = a->fvalue;
        else if ((rc = workload_case_int_scalar(wl, c, (int)i, &hc->value[i].i, err)))
            return rc;
    }
    for (size_t l = 0; req->backend == KILN_BACKEND_CUDA && l < rp->nlaunches; l++) {
        for (int d = 0; d < 3; d++) {
            hc->dims[l].grid[d] = (uint32_t)rp->launches[l].grid[d];
            hc->dims[l].block[d] = (uint32_t)rp->launches[l].block[d];
        }
        hc->dims[l].smem = (uint32_t)rp->launches[l].smem;
    }
    hc->nsets = nsets;
    for (int s = 0; s < nsets; s++)
        snprintf(hc->sets[s], sizeof(hc->sets[s]), "s%d", s);
    return KILN_OK;
}

/* Hard-links (or copies) one input file into the harness's /in layout. */
static enum kiln_rc place_file(const char *from, const char *to, struct kiln_err *err)
{
    if (link(from, to) == 0)
        return KILN_OK;
    char *data;
    size_t len;
    enum kiln_rc rc = fs_read_file(from, (size_t)8 << 30, &data, &len, err);
    if (rc == KILN_OK) {
        rc = fs_write_atomic(to, data, len, err);
        free(data);
    }
    return rc;
}

static enum kiln_rc lay_out_inputs(const struct eval_request *req, const char *cases_dir,
                                   struct kiln_err *err)
{
    const struct workload *wl = req->wl;
    enum kiln_rc rc = fs_remove_tree(cases_dir, err);
    for (size_t i = 0; rc == KILN_OK && i < req->sets->n; i++) {
        const struct input_set *s = &req->sets->sets[i];
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/%s/s%d", cases_dir, s->wcase->name, s->set);
        if ((rc = fs_mkdirs(dir, err)))
            break;
        for (size_t a = 0; rc == KILN_OK && a < wl->nargs; a++) {
            if (wl->args[a].kind != WL_ARG_TENSOR || wl->args[a].role == WL_ROLE_OUT)
                continue;
            char from[PATH_MAX], to[PATH_MAX];
            snprintf(from, sizeof(from), "%s/in/%s.npy", s->dir, wl->args[a].name);
            snprintf(to, sizeof(to), "%s/%s.npy", dir, wl->args[a].name);
            rc = place_file(from, to, err);
        }
    }
    return rc;
}

/* One output of one set against its reference, both mapped where they lie:
 * the output in the harness's tar stream file (never copied out of it), the
 * reference in the inputs cache. */
static enum kiln_rc verify_output(const struct wl_arg *a, const struct wl_shape *shape,
                                  const struct compare_tol *tol, const char *ref_path,
                                  const char *stream_name, const struct sbexec_result *sr,
                                  struct verdict_output *vo, bool *unusable, struct kiln_err *err)
{
    *unusable = false;
    struct npy_map got = {0}, ref = {0};
    struct kiln_err terr;
    kiln_err_clear(&terr);
    const struct tar_span *sp = sr->has_stream ? tar_names_span(&sr->files, stream_name) : NULL;
    if (!sp)
        kiln_fail(&terr, KILN_E_NOTFOUND, "the harness did not return it");
    if (!sp ||
        npy_map_fd(sr->stream_fd, sp->offset, sp->len, (size_t)shape->nbytes, &got, &terr) !=
            KILN_OK ||
        tensor_check_shape(&got.t, a->name, shape->dtype, shape->ndim, shape->shape, &terr) !=
            KILN_OK) {
        vo->cmp.pass = false;
        snprintf(vo->cmp.reason, sizeof(vo->cmp.reason), "output %s.npy unusable: %s", a->name,
                 terr.msg);
        *unusable = true;
        npy_unmap(&got);
        return KILN_OK;
    }
    enum kiln_rc rc = npy_map_file(ref_path, (size_t)shape->nbytes, &ref, err);
    if (rc == KILN_OK)
        rc = compare_tensors(&got.t, &ref.t, tol, &vo->cmp, err);
    npy_unmap(&got);
    npy_unmap(&ref);
    return rc;
}

/* Compares every output of one set with its reference. */
static enum kiln_rc verify_set(const struct eval_request *req, const struct input_set *s,
                               const struct sbexec_result *sr, struct verdict_case *vc,
                               struct kiln_err *err)
{
    const struct workload *wl = req->wl;
    struct wl_shape shapes[WL_MAX_ARGS];
    enum kiln_rc rc = workload_case_shapes(wl, s->wcase, shapes, err);
    for (size_t t = 0; rc == KILN_OK && t < wl->ntensors; t++) {
        const struct wl_arg *a = &wl->args[shapes[t].arg];
        if (a->role == WL_ROLE_IN || vc->noutputs == VERDICT_MAX_OUTPUTS)
            continue;
        struct verdict_output *vo = &vc->outputs[vc->noutputs++];
        snprintf(vo->name, sizeof(vo->name), "%s", a->name);
        char name[PATH_MAX], ref_path[PATH_MAX];
        snprintf(name, sizeof(name), "%s/s%d/%s.npy", s->wcase->name, s->set, a->name);
        snprintf(ref_path, sizeof(ref_path), "%s/ref/%s.npy", s->dir, a->name);
        struct compare_tol tol = workload_tolerance(wl, shapes[t].arg);
        bool unusable;
        rc = verify_output(a, &shapes[t], &tol, ref_path, name, sr, vo, &unusable, err);
        if (rc == KILN_OK && unusable)
            snprintf(vc->detail, sizeof(vc->detail), "%s", vo->cmp.reason);
        else if (rc == KILN_OK && !vo->cmp.pass && !vc->detail[0])
            snprintf(vc->detail, sizeof(vc->detail), "%s: %s", a->name, vo->cmp.reason);
    }
    return rc;
}

/* A case's median (for the reference every speedup divides, feedback,
 * baselines and the held-out fit): the geometric mean of its input sets'
 * medians, the statistic a verdict's case_ms and score use, so that the
 * starting kernel and the candidates are summarised alike (a pooled median
 * over all sets differs from it and made the start disagree with itself). */
double eval_case_median(const struct timings *t, const char *name)
{
    double lsum = 0;
    size_t n = 0;
    for (size_t i = 0; i < t->ncases; i++) {
        struct stats_summary s;
        struct kiln_err e;
        kiln_err_clear(&e);
        if (strcmp(t->cases[i].name, name) != 0 || t->cases[i].nsamples == 0 ||
            stats_compute(t->cases[i].samples_ms, t->cases[i].nsamples, &s, &e) != KILN_OK ||
            !(s.median > 0))
            continue;
        lsum += log(s.median);
        n++;
    }
    return n ? exp(lsum / (double)n) : 0;
}

double eval_medians_find(const struct eval_medians *m, const char *name)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (strcmp(m->cases[i].name, name) == 0)
            return m->cases[i].ms;
    return 0;
}

/* Maps the sandbox's verdict on the harness process to a candidate status. */
static bool sandbox_failure(const struct sbexec_result *r, struct eval_outcome *out)
{
    char why[600];
    snprintf(why, sizeof(why), "%s", r->line);
    switch (r->sb.verdict) {
    case SANDBOX_EXITED:
        return false;
    case SANDBOX_TIMEOUT:
        eliminate(out, "run", VERDICT_TIMEOUT, "the run did not finish: %s", why);
        return true;
    case SANDBOX_LIMIT:
        eliminate(out, "run", VERDICT_RESOURCE_LIMIT, "a resource limit was hit: %s", why);
        return true;
    case SANDBOX_REFUSED:
        eliminate(out, "run", VERDICT_SANDBOX_VIOLATION, "the sandbox stopped it: %s", why);
        return true;
    case SANDBOX_SIGNALED:
        out->host_killed = r->sb.signal == SIGKILL || r->sb.signal == SIGTERM;
        eliminate(out, "run", VERDICT_RUNTIME_ERROR, "the process crashed: %s%s", why,
                  out->host_killed ? " (a signal kiln did not send: the host's OOM killer, an "
                                     "operator, or the candidate itself)"
                                   : "");
        return true;
    }
    return false;
}

static enum kiln_rc read_small(const char *dir, const char *name, size_t max, char **data,
                               size_t *len, struct kiln_err *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return fs_read_file(path, max, data, len, err);
}

/* The harness's phases (status.json, untrusted: for the report only). */
static void take_phases(const struct hstatus_phases *ph, struct eval_turnaround *t)
{
    t->harness_phases = ph->present;
    t->context = ph->context;
    t->layout = ph->layout;
    t->read = ph->read;
    t->upload = ph->upload;
    t->correctness = ph->correctness;
    t->timing = ph->timing;
    t->outputs = ph->outputs;
    t->harness = ph->total;
}

/* The harness step's parts: what the harness did not account for is the
 * sandbox's (set-up, process start and exit). */
static void run_parts(const struct sbexec_result *sr, struct eval_turnaround *t)
{
    t->tar = sr->sb.tar_s;
    t->ingest = sr->ingest_s;
    t->sandbox = sr->sandbox_s - t->tar - (t->harness_phases ? t->harness : 0);
    if (t->sandbox < 0)
        t->sandbox = 0; /* the harness's figure is its own claim */
}

/* True when a performance set without timings is what the plan implies:
 * the harness spreads `iterations` measured runs over a case's sets one
 * block at a time, so with fewer runs than sets exactly `iterations` sets
 * are timed once and the rest not at all. Any other gap is the candidate's
 * doing (or a broken harness) and fails the set as before. */
static bool untimed_by_plan(const struct eval_request *req, const struct timings *tm,
                            const struct wl_case *c)
{
    int iterations = eval_iterations_resolved(req->iterations), nsets = 0, timed = 0;
    for (size_t i = 0; i < req->sets->n; i++) {
        const struct input_set *s = &req->sets->sets[i];
        if (s->wcase != c)
            continue;
        nsets++;
        timed += timings_find(tm, c->name, s->set) != NULL;
    }
    return iterations < nsets && timed == iterations;
}

/* What the harness returned, as judge() reads it. */
struct harness_docs {
    const struct eval_request *req;
    const struct sbexec_result *sr; /* the outputs, left in the stream */
    struct hstatus st;
    struct timings tm;
};

/* Reads status.json and timings.json; false, the candidate eliminated,
 * when either is unreadable or malformed. */
static bool read_documents(const char *out_dir, struct harness_docs *d, struct eval_outcome *out)
{
    char *text = NULL;
    size_t len = 0;
    struct kiln_err rerr;
    kiln_err_clear(&rerr);
    if (read_small(out_dir, "status.json", HSTATUS_MAX_BYTES, &text, &len, &rerr) != KILN_OK ||
        hstatus_parse(text, len, &d->st, &rerr) != KILN_OK) {
        eliminate(out, "run", VERDICT_REJECTED_OUTPUT, "status.json: %s", rerr.msg);
        free(text);
        return false;
    }
    take_phases(&d->st.phases, &out->t);
    free(text);
    text = NULL;
    kiln_err_clear(&rerr);
    bool ok =
        read_small(out_dir, "timings.json", TIMINGS_MAX_BYTES, &text, &len, &rerr) == KILN_OK &&
        timings_parse(text, len, &d->tm, &rerr) == KILN_OK;
    if (!ok)
        eliminate(out, "run", VERDICT_REJECTED_OUTPUT, "timings.json: %s", rerr.msg);
    free(text);
    return ok;
}

/* A failure the harness saw outranks the numbers: the first one decides. */
static void eliminate_on_harness_failure(const struct hstatus *st, struct eval_outcome *out)
{
    for (size_t i = 0; i < st->ncases; i++) {
        const struct hstatus_case *c = &st->cases[i];
        if (!c->failed)
            continue;
        char why[600];
        snprintf(why, sizeof(why), "case %s: %s%s%s%s%s (%s, set %s, run %d)%s%s", c->name,
                 failure_kind_name(c->kind), c->cuda_error[0] ? " " : "", c->cuda_error,
                 c->tensor[0] ? " on tensor " : "", c->tensor, c->phase, c->set[0] ? c->set : "-",
                 c->run, c->detail[0] ? ": " : "", c->detail);
        eliminate(out, "run", verdict_status_of_failure(c->kind), "%s", why);
        break;
    }
}

/* A set whose case the harness did not report ok: one "-" output saying why. */
static void mark_unreported(const struct hstatus_case *hc, struct verdict_case *vc)
{
    snprintf(vc->detail, sizeof(vc->detail), "%s",
             hc ? (hc->kind ? failure_kind_name(hc->kind) : hc->status) : "no status reported");
    struct verdict_output *vo = &vc->outputs[vc->noutputs++];
    snprintf(vo->name, sizeof(vo->name), "-");
    snprintf(vo->cmp.reason, sizeof(vo->cmp.reason), "%s", vc->detail);
}

/* A performance set's timing, and the references it is compared with. */
static void take_timing(const struct harness_docs *d, const struct input_set *s,
                        struct verdict_case *vc)
{
    const struct eval_request *req = d->req;
    const struct timings_case *tc = timings_find(&d->tm, s->wcase->name, s->set);
    if (tc) {
        struct kiln_err rerr;
        kiln_err_clear(&rerr);
        vc->inputs_modified = !tc->fingerprint_ok;
        if (stats_compute(tc->samples_ms, tc->nsamples, &vc->timing, &rerr) == KILN_OK)
            vc->timed = true;
        vc->ref_median_ms = eval_medians_find(req->reference, s->wcase->name);
        vc->vendor_median_ms = eval_medians_find(req->baseline, s->wcase->name);
        if (req->backend == KILN_BACKEND_CUDA && req->ceilings) {
            double bytes = (double)s->wcase->cost_bytes, flops = (double)s->wcase->cost_flops;
            vc->floor_ms = stats_floor_ms(req->ceilings, bytes, flops);
            vc->guard_ms = stats_guard_ms(req->ceilings, bytes, flops);
        }
    } else if (!untimed_by_plan(req, &d->tm, s->wcase)) {
        snprintf(vc->detail, sizeof(vc->detail), "no timings reported for a performance case");
        vc->inputs_modified = true;
    }
}

static enum kiln_rc judge_set(const struct harness_docs *d, const struct input_set *s,
                              struct eval_outcome *out, struct kiln_err *err)
{
    bool scored = inputs_set_scored(d->req->wl, s);
    struct verdict_case *vc;
    enum kiln_rc rc = verdict_add_case(&out->v, s->wcase->name, s->set, scored, &vc, err);
    if (rc != KILN_OK)
        return rc;
    const struct hstatus_case *hc = hstatus_find(&d->st, s->wcase->name);
    if (!hc || strcmp(hc->status, "ok") != 0) {
        mark_unreported(hc, vc);
        return KILN_OK;
    }
    if ((rc = verify_set(d->req, s, d->sr, vc, err)))
        return rc;
    if (s->wcase->kind == WL_CASE_PERFORMANCE)
        take_timing(d, s, vc);
    return KILN_OK;
}

/* Every case's median the harness timed, visible and held-out. */
static void collect_medians(const struct workload *wl, const struct timings *tm,
                            struct eval_outcome *out)
{
    for (size_t i = 0; i < wl->ncases + wl->nheld_out && out->medians.n < EVAL_MAX_CASE_REFS; i++) {
        const struct wl_case *c = i < wl->ncases ? &wl->cases[i] : &wl->held_out[i - wl->ncases];
        double m = eval_case_median(tm, c->name);
        if (m > 0) {
            struct eval_case_ms *e = &out->medians.cases[out->medians.n++];
            snprintf(e->name, sizeof(e->name), "%s", c->name);
            e->ms = m;
        }
    }
}

/* Judges what the harness returned: documents in out_dir, outputs left in
 * the stream (sr). */
static enum kiln_rc judge(const struct eval_request *req, const char *out_dir,
                          const struct sbexec_result *sr, struct eval_outcome *out,
                          struct kiln_err *err)
{
    struct harness_docs d = {.req = req, .sr = sr};
    enum kiln_rc rc = KILN_OK;
    if (read_documents(out_dir, &d, out)) {
        eliminate_on_harness_failure(&d.st, out);
        for (size_t i = 0; rc == KILN_OK && i < req->sets->n; i++)
            rc = judge_set(&d, &req->sets->sets[i], out, err);
        collect_medians(req->wl, &d.tm, out);
    }
    hstatus_free(&d.st);
    timings_free(&d.tm);
    return rc;
}

/* The harness step of one candidate: what sbexec needs, kept together
 * (the step points into it) so a batch can hold it until collected. */
struct harness_run {
    char cases_dir[PATH_MAX], out_dir[PATH_MAX], plan_path[PATH_MAX];
    const char *patterns[4];
    const char *in_stream[1];
    struct tar_rules rules;
    struct sandbox_input in[4];
    char *argv[3];
    struct sbexec_step step;
};

static enum kiln_rc harness_step(const struct eval_request *req, const struct harness_plan *hp,
                                 const char *plan_path, const char *artifact,
                                 struct harness_run *hr, struct kiln_err *err)
{
    memset(hr, 0, sizeof(*hr));
    snprintf(hr->cases_dir, sizeof(hr->cases_dir), "%s/cases", req->work_dir);
    snprintf(hr->out_dir, sizeof(hr->out_dir), "%s/run", req->work_dir);
    snprintf(hr->plan_path, sizeof(hr->plan_path), "%s", plan_path);
    enum kiln_rc rc = lay_out_inputs(req, hr->cases_dir, err);
    if (rc == KILN_OK)
        rc = fs_remove_tree(hr->out_dir, err);
    if (rc != KILN_OK)
        return rc;
    uint64_t biggest = 0, total = 0;
    size_t files = 3;
    for (int c = 0; c < hp->ncases; c++)
        for (int a = 0; a < hp->nargs; a++) {
            if (!hp->args[a].is_tensor || hp->args[a].role == HR_IN)
                continue;
            uint64_t b = harness_case_tensor_bytes(hp, &hp->cases[c], a) + 65536;
            biggest = b > biggest ? b : biggest;
            total += b * (uint64_t)hp->cases[c].nsets;
            files += (size_t)hp->cases[c].nsets;
        }
    total += 3u * TIMINGS_MAX_BYTES;
    hr->patterns[0] = "*/*/*.npy";
    hr->patterns[1] = "timings.json";
    hr->patterns[2] = "status.json";
    hr->patterns[3] = "log.txt";
    /* The outputs stay in the stream file and are compared where they lie
     * (verify_output): no copy into the directory, no reading them back. */
    hr->in_stream[0] = "*/*/*.npy";
    hr->rules = (struct tar_rules){.patterns = hr->patterns,
                                   .n_patterns = 4,
                                   .in_stream = hr->in_stream,
                                   .n_in_stream = 1,
                                   .max_file_bytes =
                                       biggest > TIMINGS_MAX_BYTES ? biggest : TIMINGS_MAX_BYTES,
                                   .max_total_bytes = total,
                                   .max_files = files};
    bool cuda = req->backend == KILN_BACKEND_CUDA;
    hr->in[0] = (struct sandbox_input){req->harness, "kiln-harness"};
    hr->in[1] = (struct sandbox_input){hr->plan_path, "plan.json"};
    hr->in[2] = (struct sandbox_input){artifact, cuda ? "candidate.cubin" : "candidate.so"};
    hr->in[3] = (struct sandbox_input){hr->cases_dir, "cases"};
    hr->argv[0] = "/in/kiln-harness";
    hr->argv[1] = "/in/plan.json";
    hr->argv[2] = NULL;
    struct sbexec_step *step = &hr->step;
    *step = (struct sbexec_step){.runner = req->runner,
                                 .what = "the harness",
                                 .rules = &hr->rules,
                                 .out_dir = hr->out_dir,
                                 .keep_stream = true};
    step->spec.policy = "gpu-run";
    step->spec.image = "gpu-run";
    step->spec.inputs = hr->in;
    step->spec.n_inputs = 4;
    step->gpu = cuda ? req->gpu : -1;
    step->spec.argv = hr->argv;
    step->spec.stdin_fd = -1;
    step->spec.limits.timeout_ms = req->run_timeout_ms;
    step->spec.limits.out_bytes = (long long)total + (64ll << 20);
    step->spec.limits.tar_bytes = (long long)total + (64ll << 20);
    step->spec.limits.fsize_bytes = (long long)hr->rules.max_file_bytes + (1 << 20);
    return KILN_OK;
}

/* The node's GPU as the floor's source, when this host had none to ask
 * (no ceilings, or ceilings without rates) and the node reported its
 * properties: the floor then describes the GPU that ran the candidate. */
static const struct eval_request *floor_from_node(const struct eval_request *req,
                                                  const struct sbexec_result *sr,
                                                  struct eval_request *with_node,
                                                  struct eval_outcome *out)
{
    bool have_floor =
        req->ceilings && (req->ceilings->bytes_per_s > 0 || req->ceilings->flop_per_s > 0);
    if (req->backend != KILN_BACKEND_CUDA || have_floor || !sr->device.has_props)
        return req;
    struct kiln_err perr;
    kiln_err_clear(&perr);
    if (eval_ceilings_of(&sr->device.props, req->wl->math, &out->node_ceilings, &perr) != KILN_OK) {
        fprintf(stderr, "kiln: warning: no physics floor from node %s's GPU: %s\n", sr->device.node,
                perr.msg);
        return req;
    }
    out->floor_from_node = true;
    *with_node = *req;
    with_node->ceilings = &out->node_ceilings;
    return with_node;
}

/* A node whose GPU cannot load what was compiled here is kiln's failure
 * (the wrong --arch for the cluster), never the candidate's verdict. */
static enum kiln_rc check_node_arch(const struct eval_outcome *out, const struct sbnode_device *dev,
                                    struct kiln_err *err)
{
    int target = 0;
    struct kiln_err perr;
    kiln_err_clear(&perr);
    if (!dev->has_props || !out->arch[0] || gpuarch_parse(out->arch, &target, &perr) != KILN_OK)
        return KILN_OK;
    int node = dev->props.cc_major * 10 + dev->props.cc_minor;
    if (gpuarch_runs_on(target, node))
        return KILN_OK;
    return kiln_fail(err, KILN_E_UNSUPPORTED,
                     "node %s's GPU is sm_%d, but candidates were compiled for %s, which does not "
                     "run there: pass --arch sm_%d (or send the jobs to nodes with %s GPUs)",
                     dev->node, node, out->arch, node, out->arch);
}

/* Judges what the harness step returned (rc: sbexec's) into out. */
static enum kiln_rc harness_judge(const struct eval_request *req, const struct harness_run *hr,
                                  enum kiln_rc rc, struct sbexec_result *sr,
                                  struct eval_outcome *out, struct kiln_err *err)
{
    struct kiln_err aerr; /* err may hold the tarball's rejection already */
    kiln_err_clear(&aerr);
    if ((rc == KILN_OK || rc == KILN_E_REJECTED) &&
        check_node_arch(out, &sr->device, &aerr) != KILN_OK) {
        sbexec_result_free(sr);
        *err = aerr;
        return aerr.rc;
    }
    out->ran_on = sr->device;
    struct eval_request with_node;
    req = floor_from_node(req, sr, &with_node, out);
    bool ran = rc == KILN_OK || rc == KILN_E_REJECTED; /* the sandbox ran and streamed */
    if (rc == KILN_E_REJECTED) {
        /* The tarball broke a rule: the candidate's doing, not kiln's. */
        eliminate(out, "run", VERDICT_REJECTED_OUTPUT, "%s", err->msg);
        kiln_err_clear(err);
        rc = KILN_OK;
    } else if (rc == KILN_OK) {
        char *log = NULL;
        size_t len = 0;
        struct kiln_err lerr;
        kiln_err_clear(&lerr);
        if (read_small(hr->out_dir, "log.txt", 16u << 20, &log, &len, &lerr) == KILN_OK) {
            const char *tail = len > LOG_TAIL_MAX ? log + len - LOG_TAIL_MAX : log;
            out->log_tail = strdup(tail);
            free(log);
        }
        if (!sandbox_failure(sr, out)) {
            if (!sr->exited_ok) {
                char d[900];
                sbexec_describe(sr, d, sizeof(d));
                eliminate(out, "run", VERDICT_RUNTIME_ERROR, "the harness failed: %s", d);
            } else {
                double t0 = clock_mono_s();
                rc = judge(req, hr->out_dir, sr, out, err);
                out->t.verify = clock_mono_s() - t0;
            }
        }
    }
    if (ran)
        run_parts(sr, &out->t);
    snprintf(out->where, sizeof(out->where), "%s", sr->where);
    sbexec_result_free(sr);
    return rc;
}

static enum kiln_rc run_harness_once(const struct eval_request *req, const struct harness_plan *hp,
                                     const char *plan_path, const char *artifact,
                                     struct eval_outcome *out, struct kiln_err *err)
{
    struct harness_run *hr = calloc(1, sizeof(*hr));
    if (!hr)
        return kiln_fail(err, KILN_E_NOMEM, "the harness step");
    enum kiln_rc rc = harness_step(req, hp, plan_path, artifact, hr, err);
    if (rc == KILN_OK) {
        struct sbexec_result sr;
        double t0 = clock_mono_s();
        rc = sbexec_run(&hr->step, &sr, err);
        out->t.run = clock_mono_s() - t0;
        rc = harness_judge(req, hr, rc, &sr, out, err);
    }
    free(hr);
    return rc;
}

/* One pass of a split run: the sets and plan cases of one kind. */
struct harness_pass {
    struct input_sets sets; /* shallow copies of the request's */
    struct harness_plan plan;
    char plan_path[PATH_MAX];
};

static void harness_pass_free(struct harness_pass *p)
{
    free(p->sets.sets);
    free(p->plan.cases); /* the rest of the plan is the whole plan's, by value */
}

/* The request's correctness sets (timed false) or performance sets (true),
 * with the plan cut to them and written beside the whole plan. */
static enum kiln_rc harness_pass_make(const struct eval_request *req, const struct harness_plan *hp,
                                      bool timed, struct harness_pass *p, struct kiln_err *err)
{
    memset(p, 0, sizeof(*p));
    p->plan = *hp;
    p->plan.ncases = 0;
    p->plan.cases = calloc((size_t)hp->ncases + 1, sizeof(*hp->cases));
    p->sets.sets = calloc(req->sets->n + 1, sizeof(*req->sets->sets));
    if (!p->plan.cases || !p->sets.sets)
        return kiln_fail(err, KILN_E_NOMEM, "a harness pass");
    for (int c = 0; c < hp->ncases; c++)
        if (hp->cases[c].timed == timed)
            p->plan.cases[p->plan.ncases++] = hp->cases[c];
    for (size_t i = 0; i < req->sets->n; i++)
        if ((req->sets->sets[i].wcase->kind == WL_CASE_PERFORMANCE) == timed)
            p->sets.sets[p->sets.n++] = req->sets->sets[i];
    snprintf(p->plan_path, sizeof(p->plan_path), "%s/plan-%s.json", req->work_dir,
             timed ? "performance" : "correctness");
    char *text = NULL;
    enum kiln_rc rc = harness_plan_write(&p->plan, &text, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(p->plan_path, text, strlen(text), err);
    free(text);
    return rc;
}

/* Adds a pass's turnaround to the one before (the harness's phases too). */
static void turnaround_add(struct eval_turnaround *t, const struct eval_turnaround *before)
{
    t->run += before->run;
    t->sandbox += before->sandbox;
    t->context += before->context;
    t->layout += before->layout;
    t->read += before->read;
    t->upload += before->upload;
    t->correctness += before->correctness;
    t->timing += before->timing;
    t->outputs += before->outputs;
    t->harness += before->harness;
    t->tar += before->tar;
    t->ingest += before->ingest;
    t->verify += before->verify;
}

/* The verdict's cases so far are all correct (verdict_finish has not run). */
static bool all_correct(const struct verdict *v)
{
    for (size_t i = 0; i < v->ncases; i++)
        if (!verdict_case_correct(&v->cases[i]))
            return false;
    return true;
}

/* Correctness first (issue 26 item 5): when the plan has both kinds of case,
 * the correctness cases run in a harness pass of their own and a wrong
 * answer there ends the candidate, before any performance case is timed;
 * the performance cases (whose outputs are verified too) run after, in a
 * second pass whose verdict cases follow the first's. */
static enum kiln_rc run_harness(const struct eval_request *req, const struct harness_plan *hp,
                                const char *plan_path, const char *artifact,
                                struct eval_outcome *out, struct kiln_err *err)
{
    int ntimed = 0;
    for (int c = 0; c < hp->ncases; c++)
        ntimed += hp->cases[c].timed;
    if (ntimed == 0 || ntimed == hp->ncases)
        return run_harness_once(req, hp, plan_path, artifact, out, err);
    struct harness_pass pass[2];
    struct eval_request sub[2] = {*req, *req};
    enum kiln_rc rc = KILN_OK;
    memset(pass, 0, sizeof(pass));
    for (int k = 0; k < 2 && rc == KILN_OK; k++) {
        if ((rc = harness_pass_make(req, hp, k == 1, &pass[k], err)))
            break;
        sub[k].sets = &pass[k].sets;
        struct eval_turnaround before = out->t;
        if (k == 1) { /* the first pass's log is of no interest once it passed */
            free(out->log_tail);
            out->log_tail = NULL;
        }
        rc = run_harness_once(&sub[k], &pass[k].plan, pass[k].plan_path, artifact, out, err);
        if (k == 1)
            turnaround_add(&out->t, &before);
        if (out->v.status != VERDICT_PASS || !all_correct(&out->v))
            break;
    }
    harness_pass_free(&pass[0]);
    harness_pass_free(&pass[1]);
    return rc;
}

/* A candidate whose harness step is out (eval_candidate_start). The
 * request is copied with what its caller may not keep (work_dir, the
 * ceilings); the step's inputs were placed when it was submitted. */
struct eval_pending {
    struct eval_request req;
    char work_dir[PATH_MAX];
    struct stats_ceilings ceil;
    struct harness_run hr;
    long ticket;
    double t_start, t_run0;
};

/* ---- split evaluation (EVAL_COMPILE_ONLY / EVAL_PRECOMPILED) ---- */

static void forget_compiled(const char *cdir)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/result.json", cdir);
    (void)unlink(path);
}

static enum kiln_rc save_compiled(const char *cdir, const struct compile_result *res,
                                  struct kiln_err *err)
{
    char path[PATH_MAX + 16], *text = NULL;
    snprintf(path, sizeof(path), "%s/result.json", cdir);
    enum kiln_rc rc = compile_result_to_json(res, &text, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

/* The result a compile worker left in cdir, if it is there, parses, and its
 * artifact exists; false sends the caller to compile itself. */
static bool load_precompiled(const struct eval_request *req, const struct compile_request *creq,
                             const char *cdir, struct compile_result *res)
{
    char path[PATH_MAX + 16], *text = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    snprintf(path, sizeof(path), "%s/result.json", cdir);
    if (fs_read_file(path, COMPILE_JSON_MAX, &text, &len, &e) != KILN_OK)
        return false;
    enum kiln_rc rc = compile_result_from_json(text, len, res, &e);
    free(text);
    forget_compiled(cdir); /* used once: a later evaluation compiles afresh */
    if (rc != KILN_OK)
        return false;
    char want[65];
    compile_request_hash(creq, want);
    if (strcmp(want, res->input_sha256) != 0) { /* left by another candidate or run */
        compile_result_free(res);
        memset(res, 0, sizeof(*res));
        return false;
    }
    const char *name = req->backend == KILN_BACKEND_CUDA ? "candidate.cubin" : "candidate.so";
    struct stat st;
    if (res->ok && (snprintf(res->artifact, sizeof(res->artifact), "%s/out/%s", cdir, name) >=
                        (int)sizeof(res->artifact) ||
                    stat(res->artifact, &st) != 0 || !S_ISREG(st.st_mode))) {
        compile_result_free(res);
        memset(res, 0, sizeof(*res));
        return false;
    }
    return true;
}

/* How messages name the candidate's file (compile.h's source_name). */
static const char *shown_name(const struct eval_request *req)
{
    if (req->source_name)
        return req->source_name;
    return req->backend == KILN_BACKEND_CUDA ? "candidate.cu" : "candidate.c";
}

/* A directive or plan error as compilers write theirs: candidate.c's and
 * plan.c's "line L: column C: why" becomes "FILE:L:C: WHAT: why". */
static const char *directive_error(const struct eval_request *req, const char *what,
                                   const char *msg, char *dst, size_t cap)
{
    int line = 0, n = 0;
    size_t col = 0;
    const char *file = shown_name(req);
    if (sscanf(msg, "line %d: column %zu: %n", &line, &col, &n) == 2 && n > 0)
        snprintf(dst, cap, "%s:%d:%zu: %s: %s", file, line, col, what, msg + n);
    else if (sscanf(msg, "line %d: %n", &line, &n) == 1 && n > 0)
        snprintf(dst, cap, "%s:%d: %s: %s", file, line, what, msg + n);
    else
        snprintf(dst, cap, "%s: %s: %s", file, what, msg);
    return dst;
}

/* The first launch whose kernel `defined` (found[] over the launches'
 * names) lacks, said as compilers do: FILE:LINE, with the functions that
 * do exist and the closest of them. */
static void name_missing_kernel(const struct eval_request *req, const struct candidate *cand,
                                const bool *found, const char *defined, char *why, size_t cap)
{
    size_t l = 0;
    while (l + 1 < cand->nlaunches && found[l])
        l++;
    const char *k = cand->launches[l].kernel;
    struct suggest sg;
    suggest_init(&sg, k);
    char names[1024], *save = NULL;
    snprintf(names, sizeof(names), "%s", defined);
    for (char *t = strtok_r(names, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        suggest_consider(&sg, t);
    char hint[128] = "";
    if (sg.best)
        snprintf(hint, sizeof(hint), "did you mean '%.64s'? ", sg.best);
    snprintf(why, cap, "%s:%d: launch %zu names %s, which the candidate does not define (%s%s%s)%s",
             shown_name(req), cand->launches[l].line, l + 1, k, hint,
             defined[0] ? "it defines: " : "it defines no function kiln can launch", defined,
             req->backend == KILN_BACKEND_CUDA
                 ? "; a launched kernel is an extern \"C\" __global__ function of the file"
                 : "; a launched function is a non-static function of the file");
}

/* The compiled artifact, judged before anything runs it: every launched
 * function is defined in it (a misspelt `// kiln: launch` name is a compile
 * error, not a failed run after inputs and references), and a cubin imports
 * no device heap (cubin.h). False with out eliminated at stage compile. */
static bool artifact_acceptable(const struct eval_request *req, const struct candidate *cand,
                                struct eval_outcome *out)
{
    bool cuda = req->backend == KILN_BACKEND_CUDA;
    const char *what = cuda ? "candidate.cubin" : "candidate.so";
    char *img = NULL;
    size_t ilen = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    const char *want[CAND_MAX_LAUNCHES];
    bool found[CAND_MAX_LAUNCHES];
    char defined[512];
    for (size_t i = 0; i < cand->nlaunches; i++)
        want[i] = cand->launches[i].kernel;
    enum kiln_rc rc = fs_read_file(out->compile.artifact, CUBIN_MAX_BYTES, &img, &ilen, &e);
    /* A cubin that uses the device heap could keep results across the
     * module reloads; refused before it reaches a GPU. */
    if (rc == KILN_OK && cuda)
        rc = cubin_check_heap(img, ilen, &e);
    if (rc == KILN_OK)
        rc = elf_find_functions(img, ilen, cuda, want, cand->nlaunches, found, defined,
                                sizeof(defined), &e);
    free(img);
    if (rc != KILN_OK) {
        eliminate(out, "compile", VERDICT_COMPILE_ERROR, "%s refused: %s", what, e.msg);
        return false;
    }
    for (size_t i = 0; i < cand->nlaunches; i++) {
        if (!found[i]) {
            char why[1024];
            name_missing_kernel(req, cand, found, defined, why, sizeof(why));
            eliminate(out, "compile", VERDICT_COMPILE_ERROR, "%s", why);
            return false;
        }
    }
    return true;
}

static void conclude(const struct eval_request *req, struct eval_outcome *out, double t_start)
{
    timing_rule_of(req, &out->v.rule); /* first: the summary says a missed --until-rse target */
    const struct stats_ceilings *ceil = out->floor_from_node ? &out->node_ceilings : req->ceilings;
    /* Every output names what the floors' flop side was measured against. */
    if (ceil && ceil->flop_per_s > 0 && req->backend == KILN_BACKEND_CUDA)
        snprintf(out->v.floor_unit, sizeof(out->v.floor_unit), "%s", gpu_unit_name(ceil->unit));
    verdict_finish(&out->v, ceil);
    if (out->v.status == VERDICT_PASS)
        snprintf(out->stage, sizeof(out->stage), "pass");
    else if (!strcmp(out->stage, "verify") && out->v.status == VERDICT_IMPOSSIBLE_TIMING)
        snprintf(out->stage, sizeof(out->stage), "score");
    out->t.total = clock_mono_s() - t_start;
}

static enum kiln_rc submit_harness(const struct eval_request *req, const struct harness_plan *hp,
                                   const char *plan_path, struct eval_outcome *out, double t_start,
                                   struct eval_pending **pend, struct kiln_err *err);

/* How a stage of evaluate() ended: on to the next stage; conclude the
 * verdict (the candidate was eliminated, or ran to the end); or stop with
 * only the total time (an error in st->rc, a compile-only run, a submitted
 * harness step). */
enum step { STEP_NEXT, STEP_CONCLUDE, STEP_STOP };

/* What evaluate() holds while it judges one candidate; eval_close frees it. */
struct eval_state {
    const struct eval_request *req; /* with_ceil once the run stage adds the floor */
    struct eval_outcome *out;
    double t_start;
    enum kiln_rc rc;
    struct candidate *cand;
    struct harness_plan hp;
    struct resolved_plan *rp;
    char *plan_text, *tramp;
    struct kiln_err cerr; /* the candidate's own errors: they eliminate it */
    char plan_path[PATH_MAX];
    struct eval_request with_ceil;
    struct stats_ceilings ceil;
};

static enum step stop(struct eval_state *st, enum kiln_rc rc)
{
    st->rc = rc;
    return STEP_STOP;
}

/* Eliminates the candidate at `stage` for the directive or plan error in
 * st->cerr, said as compilers say theirs. */
static enum step refuse(struct eval_state *st, const char *stage, const char *what)
{
    char where[KILN_ERR_MSG_MAX + 64];
    eliminate(st->out, stage, VERDICT_COMPILE_ERROR, "%s",
              directive_error(st->req, what, st->cerr.msg, where, sizeof(where)));
    return STEP_CONCLUDE;
}

/* Clears the outcome, starts the clock and takes the work directory. */
static enum step eval_open(struct eval_state *st, const struct eval_request *req,
                           struct eval_outcome *out, struct eval_pending **pend,
                           struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (pend)
        *pend = NULL;
    memset(st, 0, sizeof(*st));
    st->req = req;
    st->out = out;
    st->rc = KILN_OK;
    st->t_start = clock_mono_s();
    verdict_init(&out->v, req->name);
    snprintf(out->stage, sizeof(out->stage), "parse");
    if (req->backend == KILN_BACKEND_CUDA) {
        char def[GPUARCH_NAME_MAX];
        snprintf(out->arch, sizeof(out->arch), "%s", gpuarch_or_default(req->arch, def));
    }
    harness_plan_init(&st->hp);
    st->rp = calloc(1, sizeof(*st->rp));
    kiln_err_clear(&st->cerr);
    if (!st->rp)
        return stop(st, kiln_fail(err, KILN_E_NOMEM, "plan"));
    enum kiln_rc rc = fs_mkdirs(req->work_dir, err);
    if (rc != KILN_OK)
        return stop(st, rc);
    return STEP_NEXT;
}

static void eval_close(struct eval_state *st)
{
    candidate_free(st->cand);
    harness_plan_free(&st->hp);
    free(st->rp);
    free(st->plan_text);
    free(st->tramp);
}

/* The launch-plan directives, then the configuration of tunables: the
 * request's, or the candidate's defaults. */
static enum step parse_stage(struct eval_state *st)
{
    const struct eval_request *req = st->req;
    struct eval_outcome *out = st->out;
    if (candidate_parse(req->source, req->len, req->backend, &st->cand, &st->cerr) != KILN_OK)
        return refuse(st, "parse", "launch plan directive");
    out->nconfig = st->cand->ntunables;
    if (req->tunables)
        memcpy(out->config, req->tunables, st->cand->ntunables * sizeof(int64_t));
    else
        candidate_default_config(st->cand, out->config);
    return STEP_NEXT;
}

/* The harness's own watchdog ends a runaway case, and names it, well
 * inside the sandbox's limit (policies/gpu-run.json's 300 s unless
 * --timeout), which would kill the process without saying where. */
static void set_deadlines(const struct eval_request *req, struct harness_plan *hp)
{
    long long sandbox_ms = req->run_timeout_ms > 0 ? req->run_timeout_ms : 300000;
    hp->deadline_ms = sandbox_ms * 9 / 10 - 1000;
    if (hp->deadline_ms < 100)
        hp->deadline_ms = 100;
    /* Per case: 60 s, or an equal share of a longer --timeout, so raising
     * --timeout for a slow workload raises this limit too. */
    if (hp->ncases > 0 && hp->deadline_ms / hp->ncases > hp->case_timeout_ms)
        hp->case_timeout_ms = hp->deadline_ms / hp->ncases;
    if (hp->case_timeout_ms > hp->deadline_ms)
        hp->case_timeout_ms = hp->deadline_ms;
}

/* The harness plan: the configuration checked, the kernel signature, one
 * case per run of sets sharing a workload case, and the deadlines. */
static enum step plan_stage(struct eval_state *st)
{
    const struct eval_request *req = st->req;
    const struct candidate *cand = st->cand;
    if (candidate_check_config(cand, st->out->config, request_limits(req), &st->cerr) != KILN_OK ||
        plan_check_names(cand, req->wl, &st->cerr) != KILN_OK ||
        plan_signature(req, cand, &st->hp, &st->cerr) != KILN_OK)
        return refuse(st, "plan", "launch plan");
    for (size_t i = 0; i < req->sets->n;) {
        const struct wl_case *c = req->sets->sets[i].wcase;
        int n = 0;
        while (i + (size_t)n < req->sets->n && req->sets->sets[i + (size_t)n].wcase == c)
            n++;
        if (plan_case(req, cand, st->out->config, c, n, &st->hp, st->rp, &st->cerr) != KILN_OK)
            return refuse(st, "plan", "launch plan");
        i += (size_t)n;
    }
    set_deadlines(req, &st->hp);
    return STEP_NEXT;
}

/* plan.json in the work directory; for the CPU backend, the trampoline
 * that calls the candidate's functions as the plan says. */
static enum step write_plan_stage(struct eval_state *st, struct kiln_err *err)
{
    const struct eval_request *req = st->req;
    enum kiln_rc rc;
    snprintf(st->plan_path, sizeof(st->plan_path), "%s/plan.json", req->work_dir);
    if ((rc = harness_plan_write(&st->hp, &st->plan_text, err)) ||
        (rc = fs_write_atomic(st->plan_path, st->plan_text, strlen(st->plan_text), err)))
        return stop(st, rc);
    if (req->backend == KILN_BACKEND_CPU &&
        cpu_trampoline_source(&st->hp, &st->tramp, &st->cerr) != KILN_OK)
        return refuse(st, "plan", "launch plan");
    return STEP_NEXT;
}

/* The artifact: a compile-only run's saved one (precompiled mode), else
 * compiled now; a compile-only run saves what it compiled. */
static enum kiln_rc build_artifact(const struct eval_request *req,
                                   const struct compile_request *creq, const char *cdir,
                                   struct eval_outcome *out, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    double t0 = clock_mono_s();
    if (req->mode == EVAL_PRECOMPILED && load_precompiled(req, creq, cdir, &out->compile)) {
        out->precompiled = true;
        out->t.compile = out->compile.finished - out->compile.started;
    } else {
        if (req->mode == EVAL_COMPILE_ONLY)
            forget_compiled(cdir); /* before out/ changes: no stale result outlives it */
        rc = compile_candidate(creq, &out->compile, err);
        out->t.compile = clock_mono_s() - t0;
    }
    if (rc == KILN_OK && req->mode == EVAL_COMPILE_ONLY)
        rc = save_compiled(cdir, &out->compile, err);
    return rc;
}

/* Compiles the candidate with its configuration's defines and judges the
 * artifact; a compile-only run stops here. */
static enum step compile_stage(struct eval_state *st, struct kiln_err *err)
{
    const struct eval_request *req = st->req;
    struct eval_outcome *out = st->out;
    enum kiln_rc rc;
    snprintf(out->stage, sizeof(out->stage), "compile");
    char defines[CAND_MAX_TUNABLES][CAND_DEFINE_MAX];
    const char *defs[CAND_MAX_TUNABLES];
    if ((rc = candidate_defines(st->cand, out->config, request_limits(req), defines, err)))
        return stop(st, rc);
    for (size_t i = 0; i < st->cand->ntunables; i++)
        defs[i] = defines[i];
    char cdir[PATH_MAX];
    snprintf(cdir, sizeof(cdir), "%s/compile", req->work_dir);
    struct compile_request creq = {.backend = req->backend,
                                   .source = req->source,
                                   .len = req->len,
                                   .trampoline = st->tramp,
                                   .defines = defs,
                                   .ndefines = st->cand->ntunables,
                                   .arch = req->arch,
                                   .work_dir = cdir,
                                   .timeout_ms = req->compile_timeout_ms,
                                   .tool = req->compiler,
                                   .nvrtc = req->nvrtc,
                                   .source_name = req->source_name};
    if ((rc = build_artifact(req, &creq, cdir, out, err)) != KILN_OK)
        return stop(st, rc);
    if (!out->compile.ok) {
        /* The detail is short: it starts at the first error (the full
         * diagnostics, in the compiler's order, stay in out->compile). */
        char d[400];
        snprintf(d, sizeof(d), "%s",
                 out->compile.diagnostics ? compile_first_error(out->compile.diagnostics) : "");
        eliminate(out, "compile", VERDICT_COMPILE_ERROR, "compilation failed: %s", d);
        return STEP_CONCLUDE;
    }
    if (!artifact_acceptable(req, st->cand, out))
        return STEP_CONCLUDE;
    /* The launched functions' parameters against what the harness passes
     * (an `int n` for an int64 would read half of it): the compiler cannot
     * see it, the kernel and its caller being built apart. */
    enum kiln_rc prc =
        cand_source_check_params(req->source, req->len, st->cand, req->wl, &st->cerr);
    if (prc == KILN_E_NOMEM)
        return stop(st, kiln_fail(err, prc, "%s", st->cerr.msg));
    if (prc != KILN_OK)
        return refuse(st, "compile", "kernel parameters");
    /* The compile stage ends here: the cubin check is part of it, so a
     * compile-only run (kiln eval's fail-fast step, a compile worker)
     * judges it too, on a host without a GPU as well. */
    if (req->mode == EVAL_COMPILE_ONLY)
        return STEP_STOP;
    return STEP_NEXT;
}

/* Runs the harness in the sandbox, or with `pend` submits it (*pend
 * receives it and the verdict waits for eval_candidate_finish). */
static enum step run_stage(struct eval_state *st, struct eval_pending **pend, struct kiln_err *err)
{
    struct eval_outcome *out = st->out;
    enum kiln_rc rc;
    snprintf(out->stage, sizeof(out->stage), "run");
    /* The physics floor comes from the device itself (gpupeak.h), asked
     * once per session by the caller or here; without an answer there is
     * no floor rather than another GPU's. */
    if (!st->req->ceilings && st->req->backend == KILN_BACKEND_CUDA) {
        struct kiln_err perr;
        kiln_err_clear(&perr);
        if (eval_device_ceilings(st->req->harness, st->req->gpu, st->req->wl->math, &st->ceil,
                                 &perr) != KILN_OK)
            fprintf(stderr, "kiln: warning: no physics floor for GPU %d: %s\n", st->req->gpu,
                    perr.msg);
        st->with_ceil = *st->req;
        st->with_ceil.ceilings = &st->ceil;
        st->req = &st->with_ceil;
    }
    if (pend)
        return stop(st,
                    submit_harness(st->req, &st->hp, st->plan_path, out, st->t_start, pend, err));
    if ((rc = run_harness(st->req, &st->hp, st->plan_path, out->compile.artifact, out, err)))
        return stop(st, rc);
    if (out->v.status == VERDICT_PASS)
        snprintf(out->stage, sizeof(out->stage), "verify");
    return STEP_CONCLUDE;
}

/* Every stage; with `pend`, the harness step is submitted instead of run
 * and *pend receives it (NULL when the candidate ended before it). */
static enum kiln_rc evaluate(const struct eval_request *req, struct eval_outcome *out,
                             struct eval_pending **pend, struct kiln_err *err)
{
    struct eval_state st;
    enum step s = eval_open(&st, req, out, pend, err);
    if (s == STEP_NEXT)
        s = parse_stage(&st);
    if (s == STEP_NEXT)
        s = plan_stage(&st);
    if (s == STEP_NEXT)
        s = write_plan_stage(&st, err);
    if (s == STEP_NEXT)
        s = compile_stage(&st, err);
    if (s == STEP_NEXT)
        s = run_stage(&st, pend, err);
    if (s == STEP_CONCLUDE)
        conclude(st.req, out, st.t_start);
    else
        out->t.total = clock_mono_s() - st.t_start;
    eval_close(&st);
    return st.rc;
}

enum kiln_rc eval_candidate(const struct eval_request *req, struct eval_outcome *out,
                            struct kiln_err *err)
{
    return evaluate(req, out, NULL, err);
}

/* ---- batches: the harness step submitted, collected later ---- */

static enum kiln_rc submit_harness(const struct eval_request *req, const struct harness_plan *hp,
                                   const char *plan_path, struct eval_outcome *out, double t_start,
                                   struct eval_pending **pend, struct kiln_err *err)
{
    struct eval_pending *p = calloc(1, sizeof(*p));
    if (!p)
        return kiln_fail(err, KILN_E_NOMEM, "the harness step");
    p->req = *req;
    snprintf(p->work_dir, sizeof(p->work_dir), "%s", req->work_dir);
    p->req.work_dir = p->work_dir;
    if (req->ceilings) {
        p->ceil = *req->ceilings;
        p->req.ceilings = &p->ceil;
    }
    p->t_start = t_start;
    enum kiln_rc rc = harness_step(&p->req, hp, plan_path, out->compile.artifact, &p->hr, err);
    p->t_run0 = clock_mono_s();
    if (rc == KILN_OK)
        rc = sbexec_submit(&p->hr.step, &p->ticket, err);
    if (rc != KILN_OK) {
        free(p);
        return rc;
    }
    *pend = p;
    return KILN_OK;
}

enum kiln_rc eval_candidate_start(const struct eval_request *req, struct eval_outcome *out,
                                  struct eval_pending **pend, struct kiln_err *err)
{
    *pend = NULL;
    if (!sbexec_can_batch(req->runner) || req->mode == EVAL_COMPILE_ONLY)
        return kiln_fail(err, KILN_E_INTERNAL, "eval_candidate_start needs a batch runner");
    return evaluate(req, out, pend, err);
}

enum kiln_rc eval_candidate_finish(struct eval_pending *p, struct eval_outcome *out,
                                   struct kiln_err *err)
{
    struct sbexec_result sr;
    enum kiln_rc rc = sbexec_collect(&p->hr.step, p->ticket, &sr, err);
    /* From submission: the run's share of the batch as this candidate saw it. */
    out->t.run = clock_mono_s() - p->t_run0;
    rc = harness_judge(&p->req, &p->hr, rc, &sr, out, err);
    if (rc == KILN_OK) {
        if (out->v.status == VERDICT_PASS)
            snprintf(out->stage, sizeof(out->stage), "verify");
        conclude(&p->req, out, p->t_start);
    } else {
        out->t.total = clock_mono_s() - p->t_start;
    }
    free(p);
    return rc;
}

void eval_pending_drop(struct eval_pending *p)
{
    if (!p)
        return;
    sbexec_drop(&p->hr.step, p->ticket);
    free(p);
}

json_t *eval_arch_json(const struct eval_outcome *out)
{
    return out->arch[0] ? json_string(out->arch) : json_null();
}

json_t *eval_ran_on_json(const struct eval_outcome *out)
{
    if (!out->where[0])
        return json_null();
    json_t *dev = out->ran_on.present ? sbnode_device_json(&out->ran_on) : json_null();
    return dev ? json_pack("{s:s, s:o, s:b}", "where", out->where, "device", dev, "floor_from_node",
                           out->floor_from_node)
               : NULL;
}

void eval_outcome_free(struct eval_outcome *out)
{
    verdict_free(&out->v);
    compile_result_free(&out->compile);
    free(out->log_tail);
    out->log_tail = NULL;
}
