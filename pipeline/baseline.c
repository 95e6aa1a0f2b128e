/*
 * baseline.c - times the workload's vendor baseline in kiln's harness
 * (baseline mode) and turns what the sandbox returned into per-case
 * medians, the way evaluate.c judges a candidate's timings: strict
 * parsers, statistics recomputed from the raw samples.
 */
#include "baseline.h"
#include "clock.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsutil.h"
#include "harness_plan.h"
#include "hstatus.h"
#include "sbexec.h"
#include "stats.h"
#include "timings.h"
#include "torch_baseline.h"

const char *eval_baseline_kind_name(enum wl_baseline_kind k)
{
    switch (k) {
    case WL_BASELINE_MEMCPY:
        return "memcpy";
    case WL_BASELINE_CUBLAS_SGEMM:
        return "cublas_sgemm";
    case WL_BASELINE_CUBLASLT_BF16:
        return "cublaslt_bf16";
    case WL_BASELINE_TORCH:
        return "torch";
    case WL_BASELINE_NONE:
        break;
    }
    return NULL;
}

const char *eval_baseline_state_name(enum eval_baseline_state s)
{
    switch (s) {
    case EVAL_BASELINE_OK:
        return "ok";
    case EVAL_BASELINE_UNAVAILABLE:
        return "unavailable";
    case EVAL_BASELINE_NONE:
        break;
    }
    return "none";
}

static void note_in(char *detail, size_t cap, const char *fmt, ...) KILN_PRINTF(3, 4);
static void note(struct eval_baseline *b, const char *fmt, ...) KILN_PRINTF(2, 3);

static void vnote_in(char *detail, size_t cap, const char *fmt, va_list ap) KILN_PRINTF(3, 0);

/* Keeps the first reason a case has no baseline time (the rest are alike). */
static void vnote_in(char *detail, size_t cap, const char *fmt, va_list ap)
{
    if (!detail[0])
        vsnprintf(detail, cap, fmt, ap);
}

static void note_in(char *detail, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote_in(detail, cap, fmt, ap);
    va_end(ap);
}

static void note(struct eval_baseline *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote_in(b->detail, sizeof(b->detail), fmt, ap);
    va_end(ap);
}

/* One plan case per performance case of the backend whose buffers fit. */
static enum kiln_rc build_plan(const struct eval_baseline_request *req, struct eval_baseline *b,
                               struct harness_plan *hp, struct kiln_err *err)
{
    const struct workload *wl = req->wl;
    harness_plan_init(hp);
    hp->backend = req->backend == KILN_BACKEND_CUDA ? HB_CUDA : HB_CPU;
    hp->baseline = wl->baseline == WL_BASELINE_MEMCPY          ? HBL_MEMCPY
                   : wl->baseline == WL_BASELINE_CUBLASLT_BF16 ? HBL_CUBLASLT_BF16
                                                               : HBL_CUBLAS_SGEMM;
    hp->warmups = eval_warmups_resolved(req->warmups);
    hp->iterations = eval_iterations_resolved(req->iterations);
    hp->max_iterations = hp->iterations;
    hp->l2_flush = !req->hot;
    int nvals = hp->baseline == HBL_MEMCPY ? 1 : 3;
    for (size_t i = 0; i < wl->ncases; i++) {
        const struct wl_case *c = &wl->cases[i];
        if (c->kind != WL_CASE_PERFORMANCE || !(c->backends & req->backend))
            continue;
        int64_t v[3] = {0, 0, 0};
        struct expr_var vars[WL_MAX_SIZES];
        workload_case_vars(wl, c, vars);
        for (int k = 0; k < nvals; k++) {
            struct kiln_err e;
            kiln_err_clear(&e);
            /* The loader evaluated these for every case: this cannot fail. */
            if (expr_eval(wl->baseline_expr[k], vars, wl->nsizes, &v[k], &e) != KILN_OK)
                return kiln_fail(err, KILN_E_INTERNAL, "baseline of case %s: %s", c->name, e.msg);
        }
        uint64_t bytes = harness_baseline_case_bytes(hp->baseline, v);
        if (bytes > HARNESS_PLAN_MAX_CASE_BYTES) {
            note(b,
                 "case %s: the baseline's buffers take %llu bytes, more than the 4 GiB kiln "
                 "allows a case",
                 c->name, (unsigned long long)bytes);
            continue;
        }
        struct harness_case *hc;
        enum kiln_rc rc = harness_plan_add_case(hp, &hc, err);
        if (rc != KILN_OK)
            return rc;
        snprintf(hc->name, sizeof(hc->name), "%s", c->name);
        hc->timed = true;
        memcpy(hc->baseline, v, sizeof(v));
    }
    return KILN_OK;
}

/* Reads status.json and timings.json from the baseline's out_dir: a
 * median per case that was timed (the geometric mean of its sets'
 * medians, as for candidates), the first reason one was not in `detail`. */
static void judge(const char *out_dir, struct eval_medians *m, char *detail, size_t cap)
{
    char path[PATH_MAX];
    char *text = NULL;
    size_t len = 0;
    struct kiln_err e;
    struct hstatus st = {0};
    struct timings tm = {0};
    kiln_err_clear(&e);
    snprintf(path, sizeof(path), "%s/status.json", out_dir);
    if (fs_read_file(path, HSTATUS_MAX_BYTES, &text, &len, &e) != KILN_OK ||
        hstatus_parse(text, len, &st, &e) != KILN_OK) {
        note_in(detail, cap, "the baseline's status.json: %s", e.msg);
        goto done;
    }
    free(text);
    text = NULL;
    snprintf(path, sizeof(path), "%s/timings.json", out_dir);
    if (fs_read_file(path, TIMINGS_MAX_BYTES, &text, &len, &e) != KILN_OK ||
        timings_parse(text, len, &tm, &e) != KILN_OK) {
        note_in(detail, cap, "the baseline's timings.json: %s", e.msg);
        goto done;
    }
    for (size_t i = 0; i < st.ncases && m->n < EVAL_MAX_CASE_REFS; i++) {
        const struct hstatus_case *c = &st.cases[i];
        if (c->failed || strcmp(c->status, "ok") != 0) {
            /* "baseline unavailable: ..." comes from the harness itself. */
            if (c->kind == FK_UNAVAILABLE)
                note_in(detail, cap, "%s", c->detail);
            else
                note_in(detail, cap, "case %s: %s%s%s (%s): %s", c->name,
                        c->kind ? failure_kind_name(c->kind) : c->status,
                        c->cuda_error[0] ? " " : "", c->cuda_error, c->phase, c->detail);
            continue;
        }
        double ms = eval_case_median(&tm, c->name);
        if (!(ms > 0)) {
            note_in(detail, cap, "case %s: no timings reported", c->name);
            continue;
        }
        struct eval_case_ms *cm = &m->cases[m->n++];
        snprintf(cm->name, sizeof(cm->name), "%s", c->name);
        cm->ms = ms;
    }
done:
    free(text);
    hstatus_free(&st);
    timings_free(&tm);
}

enum kiln_rc eval_baseline_sandboxed(const struct sbexec_step *step, const char *what,
                                     struct eval_medians *m, char *detail, size_t cap,
                                     double *t_run, struct kiln_err *err)
{
    struct sbexec_result sr;
    struct kiln_err e;
    kiln_err_clear(&e);
    double t0 = clock_mono_s();
    enum kiln_rc rc = sbexec_run(step, &sr, &e);
    *t_run += clock_mono_s() - t0;
    if (rc == KILN_E_NOMEM || rc == KILN_E_CANCELLED) { /* kiln's state, not the baseline's */
        sbexec_result_free(&sr);
        return kiln_fail(err, rc, "%s", e.msg);
    }
    if (rc != KILN_OK) {
        note_in(detail, cap, "%s could not run: %s", what, e.msg);
    } else if (sr.sb.verdict != SANDBOX_EXITED || !sr.exited_ok) {
        char d[400];
        sbexec_describe(&sr, d, sizeof(d));
        note_in(detail, cap, "%s failed: %s; %s", what, sr.line, d);
    } else {
        judge(step->out_dir, m, detail, cap);
    }
    sbexec_result_free(&sr);
    return KILN_OK;
}

/* The harness in the gpu-run sandbox, as for a candidate but with no
 * module and no inputs: /in holds the harness and plan.json only. */
static enum kiln_rc run_sandboxed(const struct eval_baseline_request *req, const char *plan_path,
                                  const char *out_dir, struct eval_baseline *b,
                                  struct kiln_err *err)
{
    const char *patterns[] = {"timings.json", "status.json", "log.txt"};
    struct tar_rules rules = {.patterns = patterns,
                              .n_patterns = 3,
                              .max_file_bytes = TIMINGS_MAX_BYTES,
                              .max_total_bytes = 3u * TIMINGS_MAX_BYTES,
                              .max_files = 3};
    struct sandbox_input in[] = {{req->harness, "kiln-harness"}, {plan_path, "plan.json"}};
    char *argv[] = {"/in/kiln-harness", "/in/plan.json", NULL};
    struct sbexec_step step = {
        .runner = req->runner, .what = "the baseline harness", .rules = &rules, .out_dir = out_dir};
    step.spec.policy = "gpu-run";
    step.spec.image = "gpu-run";
    step.spec.inputs = in;
    step.spec.n_inputs = 2;
    step.gpu = req->backend == KILN_BACKEND_CUDA ? req->gpu : -1;
    step.spec.argv = argv;
    step.spec.stdin_fd = -1;
    step.spec.limits.timeout_ms = req->run_timeout_ms;
    step.spec.limits.out_bytes = 3ll * TIMINGS_MAX_BYTES + (16ll << 20);
    step.spec.limits.tar_bytes = 3ll * TIMINGS_MAX_BYTES + (16ll << 20);
    step.spec.limits.fsize_bytes = TIMINGS_MAX_BYTES + (1 << 20);
    return eval_baseline_sandboxed(&step, "the baseline harness", &b->medians, b->detail,
                                   sizeof(b->detail), &b->t_run, err);
}

enum kiln_rc eval_baseline_run(const struct eval_baseline_request *req, struct eval_baseline *out,
                               struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    out->kind = req->wl->baseline;
    if (out->kind == WL_BASELINE_NONE)
        return KILN_OK;
    if (out->kind == WL_BASELINE_TORCH)
        return torch_baseline_run(req, out, err);
    out->state = EVAL_BASELINE_UNAVAILABLE;
    if (out->kind == WL_BASELINE_CUBLAS_SGEMM && req->backend != KILN_BACKEND_CUDA) {
        /* What the cpu harness would answer, without starting it. */
        note(out,
             "baseline unavailable: cublas_sgemm is not available on the %s backend (only "
             "memcpy is; cuBLAS needs the cuda backend)",
             kiln_backend_name(req->backend));
        return KILN_OK;
    }
    struct harness_plan hp;
    char plan_path[PATH_MAX], out_dir[PATH_MAX], *text = NULL;
    snprintf(plan_path, sizeof(plan_path), "%s/plan.json", req->work_dir);
    snprintf(out_dir, sizeof(out_dir), "%s/run", req->work_dir);
    enum kiln_rc rc = build_plan(req, out, &hp, err);
    if (rc == KILN_OK && hp.ncases == 0) {
        harness_plan_free(&hp);
        return KILN_OK; /* every case too large: the note says so */
    }
    if (rc == KILN_OK)
        rc = fs_mkdirs(req->work_dir, err);
    if (rc == KILN_OK)
        rc = fs_remove_tree(out_dir, err);
    if (rc == KILN_OK)
        rc = harness_plan_write(&hp, &text, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(plan_path, text, strlen(text), err);
    if (rc == KILN_OK)
        rc = run_sandboxed(req, plan_path, out_dir, out, err);
    if (rc == KILN_OK && out->medians.n > 0)
        out->state = EVAL_BASELINE_OK;
    if (rc == KILN_OK && out->state != EVAL_BASELINE_OK && !out->detail[0])
        note(out, "the baseline harness reported no case");
    free(text);
    harness_plan_free(&hp);
    return rc;
}

static json_t *medians_json(const struct eval_medians *m)
{
    json_t *ms = json_object();
    for (size_t i = 0; ms && i < m->n; i++)
        json_object_set_new(ms, m->cases[i].name, json_real(m->cases[i].ms));
    return ms ? ms : json_null();
}

json_t *eval_baseline_json(const struct eval_baseline *b)
{
    const char *kind = eval_baseline_kind_name(b->kind);
    json_t *doc = json_pack("{s:o, s:s, s:s, s:o}", "kind", kind ? json_string(kind) : json_null(),
                            "status", eval_baseline_state_name(b->state), "detail", b->detail, "ms",
                            medians_json(&b->medians));
    if (doc && b->kind == WL_BASELINE_TORCH &&
        json_object_set_new(doc, "compile",
                            json_pack("{s:s, s:s, s:o}", "status",
                                      eval_baseline_state_name(b->compile_state), "detail",
                                      b->compile_detail, "ms", medians_json(&b->compile))) != 0) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}
