/*
 * hx_core.c - the harness protocol, shared by the CUDA and CPU backends.
 * harness/HARNESS.md is the specification; comments here say why.
 */
#include "hx.h"

#include "hx_baseline.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hx_io.h"
#include "hx_watchdog.h"
#include "npy.h"
#include "tensor.h"

#define HX_ALIGN       256
#define HX_MAX_REGIONS (HARNESS_PLAN_MAX_ARGS * (HARNESS_PLAN_MAX_SETS + 2) + 4)

/* Where the harness's time goes, reported in status.json "phases_s"
 * (HARNESS.md section 4); the parent adds its own parts of the turnaround. */
enum hx_phase {
    HX_PH_CONTEXT,     /* the backend's open: CUDA context, helper module, flush buffer */
    HX_PH_LAYOUT,      /* allocations, poison fills, guard and pristine fingerprints */
    HX_PH_READ,        /* input files from /in into host memory (or mapped) */
    HX_PH_UPLOAD,      /* host to device */
    HX_PH_CORRECTNESS, /* correctness runs and rechecks, with their checks */
    HX_PH_TIMING,      /* warmups and measured runs, with reloads, restores, checks */
    HX_PH_OUTPUTS,     /* verified outputs from the device into /out */
    HX_NPHASES
};

static const char *const hx_phase_names[HX_NPHASES] = {"context",     "layout", "read",   "upload",
                                                       "correctness", "timing", "outputs"};

struct hx_ctx {
    const struct hx_ops *ops;
    struct hx_backend *be;
    const struct harness_plan *plan;
    const char *in_dir;
    const char *out_dir;
    int log_fd;
    uint64_t seed;
    bool broken; /* the device is unusable: remaining cases are skipped */
    struct hx_where where;
    json_t *timings; /* the "cases" array of timings.json */
    json_t *status;  /* the "cases" array of status.json */
    bool any_failed;
    double t0_ms;                /* start, for the log's timestamps (turnaround breakdown) */
    double phase_ms[HX_NPHASES]; /* time per phase, for status.json "phases_s" */
    struct hx_io io;             /* big transfers (hx_io.h) */
    struct hx_watchdog *wd;      /* the per-case time limit (hx_watchdog.h) */
};

struct hx_failure {
    bool failed;
    enum failure_kind kind;
    char cuda_error[64];
    int set;
    const char *phase;
    int run;
    char tensor[HARNESS_PLAN_NAME_MAX];
    char detail[256];
};

union hx_value {
    int32_t i32;
    long long i64;
    float f32;
    double f64;
    uint64_t addr;
};

/* Everything one case needs; heap-allocated (it is tens of KiB). */
struct hx_case_run {
    const struct harness_case *c;
    hx_addr arena; /* guard | t0 | guard | t1 | ... | guard | slack */
    uint64_t arena_bytes;
    /* The allocator's rounding past each request (hx_ops.alloc_size):
     * reachable without a fault and kept across runs, so poisoned and
     * checked like a guard, failing as `allocation_slack`. */
    struct hx_region arena_slack;
    uint64_t arena_slack_fp;
    uint64_t pristine_usable;   /* the pristine allocation, gaps and slack included */
    uint64_t pristine_whole_fp; /* ... fingerprinted whole after the inputs are in */
    uint64_t off[HARNESS_PLAN_MAX_ARGS];
    uint64_t bytes[HARNESS_PLAN_MAX_ARGS];
    int nguards;
    struct hx_region guard[HARNESS_PLAN_MAX_ARGS + 1];
    uint64_t guard_fp[HARNESS_PLAN_MAX_ARGS + 1];
    hx_addr pristine; /* kiln's copies of every input set, never candidate-visible */
    uint64_t pristine_bytes;
    uint64_t poff[HARNESS_PLAN_MAX_SETS][HARNESS_PLAN_MAX_ARGS];
    uint64_t pristine_fp[HARNESS_PLAN_MAX_SETS][HARNESS_PLAN_MAX_ARGS];
    uint64_t verified_fp[HARNESS_PLAN_MAX_SETS][HARNESS_PLAN_MAX_ARGS];
    union hx_value val[HARNESS_PLAN_MAX_ARGS];
    void *params[HARNESS_PLAN_MAX_LAUNCH][HARNESS_PLAN_MAX_ARGS];
    void *const *lparams[HARNESS_PLAN_MAX_LAUNCH];
    double *samples[HARNESS_PLAN_MAX_SETS];
    int nsamples[HARNESS_PLAN_MAX_SETS];
    int warmups_done;
    struct hx_region regions[HX_MAX_REGIONS];
    uint64_t fps[HX_MAX_REGIONS];
    struct hx_failure fail;
    bool fingerprint_bad[HARNESS_PLAN_MAX_SETS];
};

double hx_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void hx_log_vline(int fd, double t0_ms, const char *fmt, va_list ap)
{
    char line[1024];
    int off = snprintf(line, sizeof(line), "%10.3f ms  ", hx_now_ms() - t0_ms);
    int n = vsnprintf(line + off, sizeof(line) - 1 - (size_t)off, fmt, ap);
    if (n < 0 || fd < 0)
        return;
    n += off;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
}

static void phase_add(struct hx_ctx *x, enum hx_phase ph, double since_ms)
{
    x->phase_ms[ph] += hx_now_ms() - since_ms;
}

static void hx_log(struct hx_ctx *x, const char *fmt, ...) KILN_PRINTF(2, 3);

static void hx_log(struct hx_ctx *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hx_log_vline(x->log_fd, x->t0_ms, fmt, ap);
    va_end(ap);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static bool is_output(const struct harness_arg *g)
{
    return g->is_tensor && g->role != HR_IN;
}

static bool is_input(const struct harness_arg *g)
{
    return g->is_tensor && g->role != HR_OUT;
}

static enum kiln_rc random_u32(uint32_t *out, struct kiln_err *err)
{
    for (;;) {
        ssize_t n = getrandom(out, sizeof(*out), 0);
        if (n == (ssize_t)sizeof(*out))
            return KILN_OK;
        if (n < 0 && errno != EINTR)
            return kiln_fail_errno(err, KILN_E_IO, "getrandom");
    }
}

/* Uniform in [0, n) by rejection, so no set is favoured. */
static enum kiln_rc random_below(uint32_t n, uint32_t *out, struct kiln_err *err)
{
    uint32_t limit = UINT32_MAX - UINT32_MAX % n;
    for (;;) {
        uint32_t r;
        enum kiln_rc rc = random_u32(&r, err);
        if (rc != KILN_OK)
            return rc;
        if (r < limit) {
            *out = r % n;
            return KILN_OK;
        }
    }
}

/*
 * The order of input sets for warmup and timed runs: blocks that are random
 * permutations of all sets (so every set is timed about equally often), and
 * never the same set twice in a row (so replaying the previous call's output
 * always fails the fingerprint check). Drawn from getrandom: the candidate
 * cannot predict it.
 */
struct hx_order {
    int n;
    int perm[HARNESS_PLAN_MAX_SETS];
    int pos;
    int prev;
};

static enum kiln_rc order_next(struct hx_order *o, int *out, struct kiln_err *err)
{
    enum kiln_rc rc;
    uint32_t r;
    if (o->pos == o->n) {
        for (int i = 0; i < o->n; i++)
            o->perm[i] = i;
        for (int i = o->n - 1; i > 0; i--) {
            if ((rc = random_below((uint32_t)i + 1, &r, err)) != KILN_OK)
                return rc;
            int t = o->perm[i];
            o->perm[i] = o->perm[r];
            o->perm[r] = t;
        }
        if (o->n > 1 && o->perm[0] == o->prev) {
            if ((rc = random_below((uint32_t)o->n - 1, &r, err)) != KILN_OK)
                return rc;
            int t = o->perm[0];
            o->perm[0] = o->perm[1 + r];
            o->perm[1 + r] = t;
        }
        o->pos = 0;
    }
    o->prev = o->perm[o->pos++];
    *out = o->prev;
    return KILN_OK;
}

static void fail_set(struct hx_case_run *cr, enum failure_kind kind, int set, const char *phase,
                     int run, const char *tensor, const char *fmt, ...) KILN_PRINTF(7, 8);

static void fail_set(struct hx_case_run *cr, enum failure_kind kind, int set, const char *phase,
                     int run, const char *tensor, const char *fmt, ...)
{
    if (cr->fail.failed)
        return;
    cr->fail.failed = true;
    cr->fail.kind = kind;
    cr->fail.set = set;
    cr->fail.phase = phase;
    cr->fail.run = run;
    snprintf(cr->fail.tensor, sizeof(cr->fail.tensor), "%s", tensor ? tensor : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cr->fail.detail, sizeof(cr->fail.detail), fmt, ap);
    va_end(ap);
    if (set >= 0)
        cr->fingerprint_bad[set] = true;
}

static enum kiln_rc path_join(char *dst, size_t cap, struct kiln_err *err, const char *fmt, ...)
    KILN_PRINTF(4, 5);

static enum kiln_rc path_join(char *dst, size_t cap, struct kiln_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap)
        return kiln_fail(err, KILN_E_LIMIT, "path too long: %.80s...", dst);
    return KILN_OK;
}

static enum kiln_rc make_dir(const char *path, struct kiln_err *err)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return kiln_fail_errno(err, KILN_E_IO, "creating %s", path);
    return KILN_OK;
}

/* ---- layout and inputs ---- */

/* Offsets of the tensors in the arena, and the guards around them: guards
 * sit between tensors, so a write past one tensor's end or before its
 * start lands in poisoned, fingerprinted bytes kiln checks. The alignment
 * slack after a tensor belongs to the following guard. */
static void layout_arena(const struct harness_plan *p, struct hx_case_run *cr)
{
    uint64_t g = p->guard_bytes;
    uint64_t off = g;
    cr->nguards = 0;
    cr->guard[cr->nguards].addr = 0;
    uint64_t guard_start = 0;
    for (int a = 0; a < p->nargs; a++) {
        if (!p->args[a].is_tensor)
            continue;
        cr->bytes[a] = harness_case_tensor_bytes(p, cr->c, a);
        cr->off[a] = off;
        cr->guard[cr->nguards].addr = guard_start;
        cr->guard[cr->nguards].bytes = off - guard_start;
        cr->nguards++;
        guard_start = off + cr->bytes[a];
        off = align_up(guard_start, HX_ALIGN) + g;
    }
    cr->guard[cr->nguards].addr = guard_start;
    cr->guard[cr->nguards].bytes = off - guard_start;
    cr->nguards++;
    cr->arena_bytes = off;
}

/* Offsets of every input set's pristine copy of every input tensor. */
static void layout_pristine(const struct harness_plan *p, struct hx_case_run *cr)
{
    uint64_t poff = 0;
    for (int s = 0; s < cr->c->nsets; s++)
        for (int a = 0; a < p->nargs; a++)
            if (is_input(&p->args[a])) {
                cr->poff[s][a] = poff;
                poff = align_up(poff + cr->bytes[a], HX_ALIGN);
            }
    cr->pristine_bytes = poff ? poff : HX_ALIGN;
}

/* Allocates the arena and the pristine area and poisons them. */
static enum kiln_rc alloc_poisoned(struct hx_ctx *x, struct hx_case_run *cr, struct kiln_err *err)
{
    enum kiln_rc rc;
    if ((rc = x->ops->alloc(x->be, cr->arena_bytes, &cr->arena, err)) != KILN_OK)
        return rc;
    if ((rc = x->ops->alloc(x->be, cr->pristine_bytes, &cr->pristine, err)) != KILN_OK)
        return rc;
    uint64_t arena_usable = cr->arena_bytes;
    cr->pristine_usable = cr->pristine_bytes;
    if (x->ops->alloc_size) {
        arena_usable = x->ops->alloc_size(x->be, cr->arena, cr->arena_bytes);
        cr->pristine_usable = x->ops->alloc_size(x->be, cr->pristine, cr->pristine_bytes);
    }
    cr->arena_slack.addr = cr->arena + cr->arena_bytes;
    cr->arena_slack.bytes = arena_usable - cr->arena_bytes;
    for (int i = 0; i < cr->nguards; i++)
        cr->guard[i].addr += cr->arena;
    /* Freshly allocated memory is poisoned, every byte the candidate could
     * reach, so leftovers never pass as results; the guards' and the
     * slack's fingerprints are taken from this state. */
    if ((rc = x->ops->fill(x->be, cr->arena, KILN_POISON_BYTE, arena_usable, err)) ||
        (rc = x->ops->fill(x->be, cr->pristine, KILN_POISON_BYTE, cr->pristine_usable, err)) ||
        (rc = x->ops->fingerprint(x->be, cr->guard, cr->nguards, x->seed, cr->guard_fp, err)) ||
        (rc = x->ops->fingerprint(x->be, &cr->arena_slack, 1, x->seed, &cr->arena_slack_fp, err)))
        return rc;
    return KILN_OK;
}

/* Argument values: tensors by address, scalars converted to the C type
 * the kernel takes. params[l][i] points at them, kernelParams-style. */
static void bind_args(const struct harness_plan *p, struct hx_case_run *cr)
{
    const struct harness_case *c = cr->c;
    for (int a = 0; a < p->nargs; a++) {
        const struct harness_arg *ga = &p->args[a];
        if (ga->is_tensor)
            cr->val[a].addr = cr->arena + cr->off[a];
        else if (ga->type == HS_INT32)
            cr->val[a].i32 = (int32_t)c->value[a].i;
        else if (ga->type == HS_INT64)
            cr->val[a].i64 = (long long)c->value[a].i;
        else if (ga->type == HS_FLOAT32)
            cr->val[a].f32 = (float)c->value[a].f;
        else
            cr->val[a].f64 = c->value[a].f;
    }
    for (int l = 0; l < p->nlaunches; l++) {
        for (int i = 0; i < p->launches[l].nargs; i++)
            cr->params[l][i] = &cr->val[p->launches[l].args[i]];
        cr->lparams[l] = cr->params[l];
    }
}

static enum kiln_rc case_layout(struct hx_ctx *x, struct hx_case_run *cr, struct kiln_err *err)
{
    layout_arena(x->plan, cr);
    layout_pristine(x->plan, cr);
    enum kiln_rc rc = alloc_poisoned(x, cr, err);
    if (rc != KILN_OK)
        return rc;
    hx_log(x, "case %s: arena %llu bytes (+%llu slack), pristine %llu bytes (+%llu slack)",
           cr->c->name, (unsigned long long)cr->arena_bytes,
           (unsigned long long)cr->arena_slack.bytes, (unsigned long long)cr->pristine_bytes,
           (unsigned long long)(cr->pristine_usable - cr->pristine_bytes));
    bind_args(x->plan, cr);
    return KILN_OK;
}

/* ---- inputs and outputs (hx_io.c) ---- */

/* The plan's dtype and shape of tensor `a` in case `c`. */
static struct hx_io_want want_of(const struct harness_plan *p, const struct harness_case *c, int a,
                                 uint64_t bytes)
{
    return (struct hx_io_want){
        .dtype = p->args[a].dtype, .ndim = c->ndim[a], .shape = c->shape[a], .bytes = bytes};
}

static enum kiln_rc load_inputs(struct hx_ctx *x, struct hx_case_run *cr, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    const struct harness_case *c = cr->c;
    char path[PATH_MAX];
    enum kiln_rc rc;
    for (int s = 0; s < c->nsets; s++) {
        for (int a = 0; a < p->nargs; a++) {
            if (!is_input(&p->args[a]))
                continue;
            struct hx_io_want w = want_of(p, c, a, cr->bytes[a]);
            if ((rc = path_join(path, sizeof(path), err, "%s/cases/%s/%s/%s.npy", x->in_dir,
                                c->name, c->sets[s], p->args[a].name)) ||
                (rc = hx_io_read_input(&x->io, path, &w, cr->pristine + cr->poff[s][a],
                                       &x->phase_ms[HX_PH_READ], &x->phase_ms[HX_PH_UPLOAD], err)))
                return rc;
        }
    }
    /* Fingerprints of kiln's own copies: any change later is tampering. */
    double t0 = hx_now_ms();
    int n = 0;
    for (int s = 0; s < c->nsets; s++)
        for (int a = 0; a < p->nargs; a++)
            if (is_input(&p->args[a])) {
                cr->regions[n].addr = cr->pristine + cr->poff[s][a];
                cr->regions[n++].bytes = cr->bytes[a];
            }
    /* And the whole allocation, alignment gaps and slack included: one
     * region per run checks all of kiln's copies (pristine_check). */
    cr->regions[n].addr = cr->pristine;
    cr->regions[n++].bytes = cr->pristine_usable;
    if ((rc = x->ops->fingerprint(x->be, cr->regions, n, x->seed, cr->fps, err)))
        return rc;
    cr->pristine_whole_fp = cr->fps[n - 1];
    n = 0;
    for (int s = 0; s < c->nsets; s++)
        for (int a = 0; a < p->nargs; a++)
            if (is_input(&p->args[a]))
                cr->pristine_fp[s][a] = cr->fps[n++];
    phase_add(x, HX_PH_LAYOUT, t0);
    return KILN_OK;
}

static enum kiln_rc write_outputs(struct hx_ctx *x, struct hx_case_run *cr, int set,
                                  struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    const struct harness_case *c = cr->c;
    char path[PATH_MAX];
    enum kiln_rc rc;
    double t0 = hx_now_ms();
    if ((rc = path_join(path, sizeof(path), err, "%s/%s", x->out_dir, c->name)) ||
        (rc = make_dir(path, err)) ||
        (rc = path_join(path, sizeof(path), err, "%s/%s/%s", x->out_dir, c->name, c->sets[set])) ||
        (rc = make_dir(path, err)))
        return rc;
    for (int a = 0; rc == KILN_OK && a < p->nargs; a++) {
        if (!is_output(&p->args[a]))
            continue;
        struct hx_io_want w = want_of(p, c, a, cr->bytes[a]);
        rc = path_join(path, sizeof(path), err, "%s/%s/%s/%s.npy", x->out_dir, c->name,
                       c->sets[set], p->args[a].name);
        if (rc == KILN_OK)
            rc = hx_io_write_output(&x->io, path, &w, cr->arena + cr->off[a], err);
    }
    phase_add(x, HX_PH_OUTPUTS, t0);
    return rc;
}

/* status.json "phases_s": every phase and the total so far, in seconds. */
static json_t *phases_json(const struct hx_ctx *x)
{
    json_t *o = json_object();
    for (int i = 0; o && i < HX_NPHASES; i++)
        json_object_set_new(o, hx_phase_names[i], json_real(x->phase_ms[i] / 1e3));
    if (o)
        json_object_set_new(o, "total", json_real((hx_now_ms() - x->t0_ms) / 1e3));
    return o;
}

/* ---- one run ---- */

/* kiln's pristine allocation changed somewhere: name the copy that did
 * (`tampering`), or else it was the gaps between copies or the slack past
 * them (`allocation_slack`). Costs a second pass only on failure. */
static enum kiln_rc pristine_check(struct hx_ctx *x, struct hx_case_run *cr, int set,
                                   const char *phase, int run, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    const struct harness_case *c = cr->c;
    int n = 0;
    for (int s = 0; s < c->nsets; s++)
        for (int a = 0; a < p->nargs; a++)
            if (is_input(&p->args[a])) {
                cr->regions[n].addr = cr->pristine + cr->poff[s][a];
                cr->regions[n++].bytes = cr->bytes[a];
            }
    enum kiln_rc rc = x->ops->fingerprint(x->be, cr->regions, n, x->seed, cr->fps, err);
    if (rc != KILN_OK)
        return rc;
    int k = 0;
    for (int s = 0; s < c->nsets; s++)
        for (int a = 0; a < p->nargs; a++)
            if (is_input(&p->args[a]) && cr->fps[k++] != cr->pristine_fp[s][a])
                fail_set(cr, FK_TAMPERING, set, phase, run, p->args[a].name,
                         "kiln's pristine copy of %s for set %s changed: the candidate wrote "
                         "into the harness's memory",
                         p->args[a].name, c->sets[s]);
    fail_set(cr, FK_ALLOCATION_SLACK, set, phase, run, NULL,
             "kiln's pristine allocation changed outside every copy (the alignment gaps between "
             "copies or the %llu bytes of the allocator's rounding past them): the candidate "
             "wrote into the harness's memory, as when stashing data in allocation slack",
             (unsigned long long)(cr->pristine_usable - cr->pristine_bytes));
    return KILN_OK;
}

/* Between two launches of a correctness run: the `in` tensors must still
 * be the pristine inputs (a launch may not use them as scratch space and
 * put them back). */
static enum kiln_rc inputs_between(struct hx_ctx *x, struct hx_case_run *cr, int set,
                                   const char *phase, int run, int l, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    int n = 0, which[HARNESS_PLAN_MAX_ARGS];
    for (int a = 0; a < p->nargs; a++)
        if (p->args[a].is_tensor && p->args[a].role == HR_IN) {
            which[n] = a;
            cr->regions[n].addr = cr->arena + cr->off[a];
            cr->regions[n++].bytes = cr->bytes[a];
        }
    if (n == 0)
        return KILN_OK;
    enum kiln_rc rc = x->ops->fingerprint(x->be, cr->regions, n, x->seed, cr->fps, err);
    if (rc != KILN_OK)
        return rc;
    for (int i = 0; i < n; i++) {
        int a = which[i];
        if (cr->fps[i] != cr->pristine_fp[set][a])
            fail_set(cr, FK_OVERWRITES_INPUTS, set, phase, run, p->args[a].name,
                     "input %s changed during launch %d (%s), before launch %d (%s) ran (role in "
                     "is read-only, also when a later launch restores it)",
                     p->args[a].name, l, p->launches[l].kernel, l + 1, p->launches[l + 1].kernel);
    }
    return KILN_OK;
}

/* A failed run, in the log. */
static void log_run_failure(struct hx_ctx *x, const struct hx_case_run *cr, int set,
                            const char *phase, int run)
{
    const struct harness_case *c = cr->c;
    hx_log(x, "case %s: %s run %d on set %s failed: %s: %s", c->name, phase, run, c->sets[set],
           failure_kind_name(cr->fail.kind), cr->fail.detail);
}

/* A fresh module before the run when the plan reloads for every run, and
 * always before the first one. A module the backend rejects fails the
 * candidate: *ended, and KILN_OK. */
static enum kiln_rc reload_module(struct hx_ctx *x, struct hx_case_run *cr, int set,
                                  const char *phase, int run, struct hx_fault *fault, bool *ended,
                                  struct kiln_err *err)
{
    if (!x->plan->reload && !(run == 0 && strcmp(phase, "correctness") == 0 && set == 0))
        return KILN_OK;
    enum kiln_rc rc = x->ops->reload(x->be, fault, err);
    if (rc == KILN_E_REJECTED) {
        fail_set(cr, fault->kind ? fault->kind : FK_MODULE, set, phase, run, NULL, "%s", err->msg);
        kiln_err_clear(err);
        *ended = true;
        return KILN_OK;
    }
    return rc;
}

/* Every tensor as the run must find it: outputs poisoned, the others
 * copied from kiln's pristine copies of set `set`. */
static enum kiln_rc restore_tensors(struct hx_ctx *x, struct hx_case_run *cr, int set,
                                    struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    enum kiln_rc rc;
    for (int a = 0; a < p->nargs; a++) {
        const struct harness_arg *g = &p->args[a];
        if (!g->is_tensor || cr->bytes[a] == 0)
            continue;
        if (g->role == HR_OUT)
            rc = x->ops->fill(x->be, cr->arena + cr->off[a], KILN_POISON_BYTE, cr->bytes[a], err);
        else
            rc = x->ops->copy(x->be, cr->arena + cr->off[a], cr->pristine + cr->poff[set][a],
                              cr->bytes[a], err);
        if (rc != KILN_OK)
            return rc;
    }
    return KILN_OK;
}

/* A timed run (warmup or measured) is all launches back to back. A
 * correctness run goes one launch at a time and checks the `in` tensors
 * in between, so an input overwritten by one launch and restored by a
 * later one is caught (CANDIDATE.md: what stays unseen). A launch that
 * fails fails the candidate: *ended, and KILN_OK. */
static enum kiln_rc run_launches(struct hx_ctx *x, struct hx_case_run *cr, int set,
                                 const char *phase, int run, bool verify, double *ms,
                                 struct hx_fault *fault, bool *ended, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    enum kiln_rc rc;
    bool stepwise = p->nlaunches > 1 && (verify || strcmp(phase, "recheck") == 0);
    *ms = 0;
    for (int l = 0; l < p->nlaunches; l += stepwise ? 1 : p->nlaunches) {
        double part = 0;
        rc = x->ops->run(x->be, cr->c, l, stepwise ? 1 : p->nlaunches, cr->lparams, &part, fault,
                         err);
        x->where.launch = -1;
        *ms += part;
        if (rc == KILN_E_REJECTED || rc == KILN_E_CUDA) {
            snprintf(cr->fail.cuda_error, sizeof(cr->fail.cuda_error), "%s", fault->cuda_error);
            fail_set(cr, fault->kind ? fault->kind : FK_CUDA_ERROR, set, phase, run, NULL, "%s",
                     err->msg);
            kiln_err_clear(err);
            if (fault->broken)
                x->broken = true;
            *ended = true;
            return KILN_OK;
        }
        if (rc != KILN_OK)
            return rc;
        if (stepwise && l + 1 < p->nlaunches) {
            if ((rc = inputs_between(x, cr, set, phase, run, l, err)) != KILN_OK)
                return rc;
            if (cr->fail.failed)
                break;
        }
    }
    return KILN_OK;
}

/* After the run, each candidate-visible tensor against what it must be:
 * an input its pristine copy; an output, on a run after the verified one,
 * the verified output (on the verified run it becomes that). */
static void check_tensors(struct hx_ctx *x, struct hx_case_run *cr, int set, const char *phase,
                          int run, bool verify, const uint64_t *tensor_fp)
{
    const struct harness_plan *p = x->plan;
    int k = 0;
    for (int a = 0; a < p->nargs; a++) {
        const struct harness_arg *g = &p->args[a];
        if (!g->is_tensor)
            continue;
        uint64_t fp = tensor_fp[k++];
        if (g->role == HR_IN && fp != cr->pristine_fp[set][a])
            fail_set(cr, FK_OVERWRITES_INPUTS, set, phase, run, g->name,
                     "input %s changed during the run (role in is read-only)", g->name);
        if (g->role == HR_IN)
            continue;
        if (verify)
            cr->verified_fp[set][a] = fp;
        else if (fp != cr->verified_fp[set][a])
            fail_set(cr, FK_NONDETERMINISTIC, set, phase, run, g->name,
                     "output %s differs from the verified output for set %s: the result "
                     "depends on state, caching or timing, not only on the inputs",
                     g->name, cr->c->sets[set]);
    }
}

/* The checks, outside the timed region: every candidate-visible tensor,
 * every guard, the arena's slack and kiln's whole pristine allocation,
 * fingerprinted in one batch. */
static enum kiln_rc check_after_run(struct hx_ctx *x, struct hx_case_run *cr, int set,
                                    const char *phase, int run, bool verify, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    enum kiln_rc rc;
    int n = 0;
    for (int a = 0; a < p->nargs; a++)
        if (p->args[a].is_tensor) {
            cr->regions[n].addr = cr->arena + cr->off[a];
            cr->regions[n++].bytes = cr->bytes[a];
        }
    int first_guard = n;
    for (int i = 0; i < cr->nguards; i++)
        cr->regions[n++] = cr->guard[i];
    int slack = n;
    cr->regions[n++] = cr->arena_slack;
    int whole = n;
    cr->regions[n].addr = cr->pristine;
    cr->regions[n++].bytes = cr->pristine_usable;
    if ((rc = x->ops->fingerprint(x->be, cr->regions, n, x->seed, cr->fps, err)) != KILN_OK)
        return rc;
    uint64_t tensor_fp[HARNESS_PLAN_MAX_ARGS];
    memcpy(tensor_fp, cr->fps, sizeof(uint64_t) * (size_t)first_guard);

    if (cr->fps[whole] != cr->pristine_whole_fp &&
        (rc = pristine_check(x, cr, set, phase, run, err)) != KILN_OK)
        return rc;
    for (int i = 0; i < cr->nguards; i++)
        if (cr->fps[first_guard + i] != cr->guard_fp[i])
            fail_set(cr, FK_OUT_OF_BOUNDS, set, phase, run, NULL,
                     "guard region %d (%llu bytes at arena offset %llu) changed: a write "
                     "outside a tensor's bounds",
                     i, (unsigned long long)cr->guard[i].bytes,
                     (unsigned long long)(cr->guard[i].addr - cr->arena));
    if (cr->fps[slack] != cr->arena_slack_fp)
        fail_set(cr, FK_ALLOCATION_SLACK, set, phase, run, NULL,
                 "the %llu bytes past the end of kiln's tensor allocation (arena offset %llu, "
                 "the allocator's rounding up to its page) changed: a write past every tensor "
                 "and guard, as when a candidate stashes data in allocation slack to reuse it "
                 "in a later run",
                 (unsigned long long)cr->arena_slack.bytes, (unsigned long long)cr->arena_bytes);
    check_tensors(x, cr, set, phase, run, verify, tensor_fp);
    return KILN_OK;
}

/*
 * One execution of the plan on input set `set`, then the checks. Returns
 * KILN_OK also when the candidate failed (cr->fail says how); an error
 * return is the harness's own failure.
 */
static enum kiln_rc run_once(struct hx_ctx *x, struct hx_case_run *cr, int set, const char *phase,
                             int run, bool verify, double *ms, struct kiln_err *err)
{
    const struct harness_case *c = cr->c;
    struct hx_fault fault = {0}; /* one for the reload and every launch, as they fill it */
    bool ended = false;
    enum kiln_rc rc;

    x->where.set_name = c->sets[set];
    x->where.phase = phase;
    x->where.run = run;
    x->where.launch = -1;
    hx_watchdog_where(x->wd, phase, c->sets[set], run);

    /* Outside the timed region: a fresh module (no __device__ state
     * survives), pristine inputs, poisoned outputs, a cold cache. */
    if ((rc = reload_module(x, cr, set, phase, run, &fault, &ended, err)) != KILN_OK || ended)
        return rc;
    if ((rc = restore_tensors(x, cr, set, err)) != KILN_OK)
        return rc;
    if ((rc = x->ops->prepare(x->be, x->plan->l2_flush, err)) != KILN_OK)
        return rc;

    if ((rc = run_launches(x, cr, set, phase, run, verify, ms, &fault, &ended, err)) != KILN_OK ||
        ended)
        return rc;
    if (cr->fail.failed) {
        log_run_failure(x, cr, set, phase, run);
        return KILN_OK;
    }
    if ((rc = check_after_run(x, cr, set, phase, run, verify, err)) != KILN_OK)
        return rc;
    if (cr->fail.failed)
        log_run_failure(x, cr, set, phase, run);
    return KILN_OK;
}

/* ---- timing ---- */

/* Samples each set needs before adaptive timing may stop on its noise
 * target (STATS_MIN_INTERVAL_SAMPLES: fewer give no interval). */
#define HX_MIN_SET_SAMPLES 3

bool hx_adaptive_spent(const struct harness_plan *p, double timed_ms, double wall_ms)
{
    /* The budget is the kernel's measured time: the flush, the restore and
     * the fingerprint around each run are not (a 0.5 ms kernel costs many
     * times that in wall time, which must not end timing at the minimum).
     * Half the case's time limit bounds the wall time, so the watchdog
     * never ends a case that is only being timed. */
    return timed_ms >= p->budget_ms ||
           (p->case_timeout_ms > 0 && wall_ms >= p->case_timeout_ms / 2.0);
}

/* Relative standard error of the mean of all samples so far. */
static double samples_rse(const struct hx_case_run *cr, int nsets)
{
    double sum = 0, sq = 0;
    long n = 0;
    for (int s = 0; s < nsets; s++)
        for (int i = 0; i < cr->nsamples[s]; i++) {
            sum += cr->samples[s][i];
            n++;
        }
    if (n < 2 || sum <= 0)
        return INFINITY;
    double mean = sum / (double)n;
    for (int s = 0; s < nsets; s++)
        for (int i = 0; i < cr->nsamples[s]; i++)
            sq += (cr->samples[s][i] - mean) * (cr->samples[s][i] - mean);
    double sd = sqrt(sq / (double)(n - 1));
    return sd / sqrt((double)n) / mean;
}

static enum kiln_rc time_case(struct hx_ctx *x, struct hx_case_run *cr, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    const struct harness_case *c = cr->c;
    int maxn = p->adaptive ? p->max_iterations : p->iterations;
    struct hx_order order = {.n = c->nsets, .pos = c->nsets, .prev = c->nsets - 1};
    enum kiln_rc rc;
    for (int s = 0; s < c->nsets; s++) {
        cr->samples[s] = malloc(sizeof(double) * (size_t)maxn);
        if (!cr->samples[s])
            return kiln_fail(err, KILN_E_NOMEM, "out of memory for %d samples", maxn);
    }
    hx_log(x, "case %s: %d warmups", c->name, p->warmups);
    for (int w = 0; w < p->warmups; w++) {
        int set;
        double ms;
        if ((rc = order_next(&order, &set, err)) ||
            (rc = run_once(x, cr, set, "warmup", w, false, &ms, err)))
            return rc;
        if (cr->fail.failed)
            return KILN_OK;
        cr->warmups_done++;
    }
    hx_log(x, "case %s: timing (%s, at most %d runs)", c->name, p->adaptive ? "adaptive" : "fixed",
           maxn);
    /* Measured runs start a fresh block, so every set gets an equal share. */
    order.pos = order.n;
    double start = hx_now_ms(), timed = 0;
    for (int i = 0; i < maxn; i++) {
        int set;
        double ms;
        if ((rc = order_next(&order, &set, err)) ||
            (rc = run_once(x, cr, set, "timed", i, false, &ms, err)))
            return rc;
        if (cr->fail.failed)
            return KILN_OK;
        cr->samples[set][cr->nsamples[set]++] = ms;
        timed += ms;
        if (!p->adaptive)
            continue;
        /* The noise target counts only once every set has enough samples
         * for an interval of its own (what the parent reports per set). */
        int fewest = cr->nsamples[0];
        for (int k = 1; k < c->nsets; k++)
            fewest = cr->nsamples[k] < fewest ? cr->nsamples[k] : fewest;
        if (i + 1 >= p->iterations &&
            ((fewest >= HX_MIN_SET_SAMPLES && samples_rse(cr, c->nsets) < p->target_rse) ||
             hx_adaptive_spent(p, timed, hx_now_ms() - start)))
            break;
    }
    return KILN_OK;
}

/* ---- documents ---- */

static void record_case(struct hx_ctx *x, struct hx_case_run *cr, const char *status)
{
    const struct harness_plan *p = x->plan;
    const struct harness_case *c = cr->c;
    json_t *st = json_pack("{s:s,s:s}", "case", c->name, "status", status);
    if (st && cr->fail.failed) {
        json_t *f = json_pack("{s:s,s:s,s:s,s:i,s:s}", "kind", failure_kind_name(cr->fail.kind),
                              "phase", cr->fail.phase ? cr->fail.phase : "setup", "set",
                              cr->fail.set >= 0 ? c->sets[cr->fail.set] : "", "run", cr->fail.run,
                              "detail", cr->fail.detail);
        if (f && cr->fail.tensor[0])
            json_object_set_new(f, "tensor", json_string(cr->fail.tensor));
        if (f && cr->fail.cuda_error[0])
            json_object_set_new(f, "cuda_error", json_string(cr->fail.cuda_error));
        json_object_set_new(st, "failure", f);
    }
    json_array_append_new(x->status, st);
    for (int s = 0; s < c->nsets; s++) {
        if (cr->nsamples[s] == 0)
            continue;
        json_t *samples = json_array();
        for (int i = 0; samples && i < cr->nsamples[s]; i++)
            json_array_append_new(samples, json_real(cr->samples[s][i]));
        json_array_append_new(
            x->timings, json_pack("{s:s,s:i,s:o,s:b,s:i,s:b}", "case", c->name, "set", s,
                                  "samples_ms", samples, "fingerprint_ok", !cr->fingerprint_bad[s],
                                  "warmup", cr->warmups_done, "l2_flush", p->l2_flush));
    }
}

static enum kiln_rc run_case(struct hx_ctx *x, const struct harness_case *c, struct kiln_err *err)
{
    struct hx_case_run *cr = calloc(1, sizeof(*cr));
    if (!cr)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory for case %s", c->name);
    cr->c = c;
    cr->fail.set = -1;
    x->where.case_name = c->name;
    enum kiln_rc rc = KILN_OK;

    if (x->broken) {
        snprintf(cr->fail.detail, sizeof(cr->fail.detail),
                 "not run: the device failed in an earlier case");
        record_case(x, cr, "skipped");
        free(cr);
        return KILN_OK;
    }
    hx_log(x, "case %s: %d sets, %s", c->name, c->nsets, c->timed ? "timed" : "correctness only");
    double t0 = hx_now_ms();
    rc = case_layout(x, cr, err);
    phase_add(x, HX_PH_LAYOUT, t0);
    if (rc || (rc = load_inputs(x, cr, err)))
        goto out;
    for (int s = 0; s < c->nsets && !cr->fail.failed; s++) {
        double ms;
        t0 = hx_now_ms();
        rc = run_once(x, cr, s, "correctness", 0, true, &ms, err);
        phase_add(x, HX_PH_CORRECTNESS, t0);
        if (rc)
            goto out;
        if (cr->fail.failed && failure_kind_device_lost(cr->fail.kind))
            break; /* no outputs worth returning */
        if ((rc = write_outputs(x, cr, s, err)))
            goto out;
    }
    if (!cr->fail.failed && !c->timed) {
        /* A correctness-only case still gets one determinism recheck: the
         * first set again after a different one, same bits expected. */
        double ms;
        t0 = hx_now_ms();
        rc = run_once(x, cr, 0, "recheck", 0, false, &ms, err);
        phase_add(x, HX_PH_CORRECTNESS, t0);
        if (rc)
            goto out;
    }
    if (!cr->fail.failed && c->timed) {
        t0 = hx_now_ms();
        rc = time_case(x, cr, err);
        phase_add(x, HX_PH_TIMING, t0);
    }
out:
    if (rc != KILN_OK) {
        hx_log(x, "case %s: harness error: %s", c->name, err->msg);
    } else {
        if (cr->fail.failed)
            x->any_failed = true;
        /* "ran", not "ok": the harness never sees a reference, kiln judges
         * the outputs afterwards (a wrong answer's log must not say ok). */
        hx_log(x, "case %s: %s", c->name, cr->fail.failed ? "FAILED" : "ran");
        record_case(x, cr, cr->fail.failed ? "failed" : "ok");
    }
    if (!x->broken) {
        if (cr->arena)
            x->ops->release(x->be, cr->arena);
        if (cr->pristine)
            x->ops->release(x->be, cr->pristine);
    }
    for (int s = 0; s < HARNESS_PLAN_MAX_SETS; s++)
        free(cr->samples[s]);
    free(cr);
    return rc;
}

static enum kiln_rc write_doc(struct hx_ctx *x, const char *name, json_t *doc, struct kiln_err *err)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    enum kiln_rc rc;
    if ((rc = path_join(path, sizeof(path), err, "%s/%s", x->out_dir, name)) ||
        (rc = path_join(tmp, sizeof(tmp), err, "%s/.%s.tmp", x->out_dir, name)))
        return rc;
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory serializing %s", name);
    size_t len = strlen(text);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        free(text);
        return kiln_fail_errno(err, KILN_E_IO, "creating %s", tmp);
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    free(text);
    if (done != len || fsync(fd) != 0) {
        rc = kiln_fail_errno(err, KILN_E_IO, "writing %s", tmp);
        close(fd);
        unlink(tmp);
        return rc;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        rc = kiln_fail_errno(err, KILN_E_IO, "renaming %s", tmp);
        unlink(tmp);
        return rc;
    }
    return KILN_OK;
}

/* ---- the watchdog's documents ---- */

/*
 * What to write if case `ci` runs past its limit (hx_watchdog.h): the cases
 * recorded so far, `ci` failed as `timeout` with markers for where it
 * stood, every later case skipped. Built while the main thread is healthy;
 * the watchdog only fills in the markers.
 */
static enum kiln_rc arm_watchdog(struct hx_ctx *x, int ci, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    const struct harness_case *c = &p->cases[ci];
    double now = hx_now_ms();
    double limit = (double)p->case_timeout_ms;
    bool by_deadline = false;
    if (p->deadline_ms > 0 && x->t0_ms + (double)p->deadline_ms - now < limit) {
        limit = x->t0_ms + (double)p->deadline_ms - now;
        by_deadline = true;
    }
    if (limit < 0)
        limit = 0;
    char detail[400];
    snprintf(detail, sizeof(detail),
             "timeout after %.0f ms (%s): case %s was still running in the @WHERE@: a hang, a "
             "printf flood or a kernel far slower than the task needs; the harness ended the "
             "process",
             limit,
             by_deadline ? "what was left of the harness's whole deadline"
                         : "the harness's per-case limit",
             c->name);
    json_t *cases = json_array();
    for (size_t i = 0; cases && i < json_array_size(x->status); i++)
        json_array_append(cases, json_array_get(x->status, i));
    json_t *failure = json_pack("{s:s,s:s,s:s,s:I,s:s}", "kind", failure_kind_name(FK_TIMEOUT),
                                "phase", "@PHASE@", "set", "@SET@", "run",
                                (json_int_t)HX_WATCHDOG_RUN_MARK, "detail", detail);
    json_array_append_new(
        cases, json_pack("{s:s,s:s,s:o}", "case", c->name, "status", "failed", "failure", failure));
    for (int j = ci + 1; j < p->ncases; j++)
        json_array_append_new(
            cases, json_pack("{s:s,s:s}", "case", p->cases[j].name, "status", "skipped"));
    json_t *st = json_pack("{s:i,s:s,s:s,s:b,s:s,s:o,s:o}", "version", 1, "backend", x->ops->name,
                           "device", x->ops->device_name(x->be), "l2_flush", p->l2_flush, "status",
                           "failed", "cases", cases, "phases_s", phases_json(x));
    json_t *tm = json_pack("{s:i,s:O}", "version", 1, "cases", x->timings);
    char *st_text = st ? json_dumps(st, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    char *tm_text = tm ? json_dumps(tm, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(st);
    json_decref(tm);
    return hx_watchdog_arm(x->wd, c->name, now + limit, limit, tm_text, st_text, err);
}

/* ---- main ---- */

static void usage_error(const char *argv0)
{
    fprintf(stderr, "usage: %s PLAN.json [--in DIR] [--out DIR]  (defaults /in and /out)\n", argv0);
}

/* PLAN.json [--in DIR] [--out DIR]; false (after the usage line) when the
 * arguments are not that. */
static bool parse_args(struct hx_ctx *x, int argc, char **argv, const char **plan_path)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--in") == 0 && i + 1 < argc) {
            x->in_dir = argv[++i];
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            x->out_dir = argv[++i];
        } else if (!*plan_path && argv[i][0] != '-') {
            *plan_path = argv[i];
        } else {
            usage_error(argv[0]);
            return false;
        }
    }
    if (!*plan_path) {
        usage_error(argv[0]);
        return false;
    }
    return true;
}

/* OUT/log.txt, where everything after this goes too. */
static enum kiln_rc open_log(struct hx_ctx *x, struct kiln_err *err)
{
    char path[PATH_MAX];
    enum kiln_rc rc = path_join(path, sizeof(path), err, "%s/log.txt", x->out_dir);
    if (rc != KILN_OK)
        return rc;
    x->log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (x->log_fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "creating %s", path);
    return KILN_OK;
}

/* The plan, for this harness's backend. */
static enum kiln_rc load_plan(struct hx_ctx *x, struct harness_plan *plan, const char *plan_path,
                              struct kiln_err *err)
{
    enum kiln_rc rc = harness_plan_read_file(plan_path, plan, err);
    if (rc != KILN_OK)
        return rc;
    x->plan = plan;
    if (strcmp(x->ops->name, plan->backend == HB_CUDA ? "cuda" : "cpu") != 0)
        return kiln_fail(err, KILN_E_USAGE,
                         "the plan is for another backend than %s (use the "
                         "kiln-harness built for it)",
                         x->ops->name);
    return KILN_OK;
}

/* The fingerprints' secret seed, fresh for every process. */
static enum kiln_rc draw_seed(struct hx_ctx *x, struct kiln_err *err)
{
    for (;;) {
        ssize_t n = getrandom(&x->seed, sizeof(x->seed), 0);
        if (n == (ssize_t)sizeof(x->seed))
            return KILN_OK;
        if (n < 0 && errno != EINTR)
            return kiln_fail_errno(err, KILN_E_IO, "getrandom");
    }
}

/* The backend opened on the candidate's module from IN, and the arrays
 * the cases' documents collect into. */
static enum kiln_rc open_backend(struct hx_ctx *x, struct kiln_err *err)
{
    const struct hx_ops *ops = x->ops;
    char path[PATH_MAX];
    enum kiln_rc rc;
    if ((rc = path_join(path, sizeof(path), err, "%s/%s", x->in_dir, ops->module_file)))
        return rc;
    x->where.launch = -1;
    /* A baseline plan has no candidate module to read. */
    double t_open = hx_now_ms();
    rc = ops->open(&x->be, x->plan, x->plan->baseline != HBL_NONE ? NULL : path, &x->where,
                   x->log_fd, err);
    phase_add(x, HX_PH_CONTEXT, t_open);
    if (rc)
        return rc;
    x->io.ops = ops;
    x->io.be = x->be;
    hx_log(x, "device: %s", ops->device_name(x->be));
    x->timings = json_array();
    x->status = json_array();
    if (!x->timings || !x->status)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    return KILN_OK;
}

/* Every case in turn, each under the watchdog. */
static enum kiln_rc run_cases(struct hx_ctx *x, struct kiln_err *err)
{
    const struct harness_plan *plan = x->plan;
    enum kiln_rc rc;
    /* ---- baseline mode (HARNESS.md section 7): each case in hx_baseline.c ---- */
    struct hx_bl bl = {.ops = x->ops,
                       .be = x->be,
                       .plan = plan,
                       .where = &x->where,
                       .log_fd = x->log_fd,
                       .t0_ms = x->t0_ms,
                       .timings = x->timings,
                       .status = x->status,
                       .broken = &x->broken,
                       .any_failed = &x->any_failed};
    if ((rc = hx_watchdog_start(&x->wd, x->out_dir, x->log_fd, x->t0_ms, err)))
        return rc;
    for (int i = 0; i < plan->ncases; i++) {
        if ((rc = arm_watchdog(x, i, err)) ||
            (rc = plan->baseline != HBL_NONE ? hx_baseline_case(&bl, &plan->cases[i], err)
                                             : run_case(x, &plan->cases[i], err)))
            return rc;
        hx_watchdog_disarm(x->wd);
    }
    return KILN_OK;
}

/* timings.json, then status.json. */
static enum kiln_rc write_results(struct hx_ctx *x, struct kiln_err *err)
{
    const struct hx_ops *ops = x->ops;
    json_t *timings = json_pack("{s:i,s:O}", "version", 1, "cases", x->timings);
    json_t *st =
        json_pack("{s:i,s:s,s:s,s:b,s:s,s:O,s:o}", "version", 1, "backend", ops->name, "device",
                  ops->device_name(x->be), "l2_flush", x->plan->l2_flush, "status",
                  x->any_failed ? "failed" : "ok", "cases", x->status, "phases_s", phases_json(x));
    enum kiln_rc rc = write_doc(x, "timings.json", timings, err);
    if (rc == KILN_OK)
        rc = write_doc(x, "status.json", st, err);
    json_decref(timings);
    json_decref(st);
    return rc;
}

int hx_main(const struct hx_ops *ops, int argc, char **argv)
{
    struct hx_ctx x = {
        .ops = ops, .in_dir = "/in", .out_dir = "/out", .log_fd = -1, .t0_ms = hx_now_ms()};
    struct harness_plan plan;
    struct kiln_err err;
    const char *plan_path = NULL;
    int status = 1;

    kiln_err_clear(&err);
    harness_plan_init(&plan);
    if (!parse_args(&x, argc, argv, &plan_path))
        return 1;
    enum kiln_rc rc = open_log(&x, &err);
    if (rc == KILN_OK) {
        hx_log(&x, "kiln-harness (%s): plan %s", ops->name, plan_path);
        rc = load_plan(&x, &plan, plan_path, &err);
    }
    if (rc == KILN_OK)
        rc = draw_seed(&x, &err);
    if (rc == KILN_OK)
        rc = open_backend(&x, &err);
    if (rc == KILN_OK)
        rc = run_cases(&x, &err);
    if (rc == KILN_OK)
        rc = write_results(&x, &err);
    if (rc == KILN_OK) {
        hx_log(&x, "done: %s",
               x.any_failed ? "the candidate failed" : "every case ran (kiln checks the outputs)");
        status = 0;
    } else {
        hx_log(&x, "harness error: %s: %s", kiln_strerror(rc), err.msg);
        fprintf(stderr, "kiln-harness: %s: %s\n", kiln_strerror(rc), err.msg);
    }
    /* Before anything it could write from is freed. */
    hx_watchdog_stop(x.wd);
    if (x.be)
        ops->close(x.be);
    json_decref(x.timings);
    json_decref(x.status);
    hx_io_free(&x.io);
    harness_plan_free(&plan);
    if (x.log_fd >= 0)
        close(x.log_fd);
    return status;
}
