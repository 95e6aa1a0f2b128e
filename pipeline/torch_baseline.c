/*
 * torch_baseline.c - the torch baseline (torch_baseline.h): hx_torch.py in
 * a sandbox, once per mode, its documents judged like the harness's.
 */
#include "torch_baseline.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "hstatus.h"
#include "inputs.h"
#include "sbexec.h"
#include "timings.h"

#include "hx_torch_py.h" /* hx_torch_py[]: harness/hx_torch.py, embedded at build */

/* The two columns, in the order they run. */
enum torch_mode { TORCH_EAGER, TORCH_COMPILE };

static const char *mode_name(enum torch_mode m)
{
    return m == TORCH_COMPILE ? "compile" : "eager";
}

/* The cpu harness's flush (hx_cpu.c): twice the last-level cache, 32 MiB
 * when unknown, at most 512 MiB. */
static long long cpu_flush_bytes(void)
{
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    long long llc = l3 > 0 ? l3 : l2 > 0 ? l2 : 16ll << 20;
    return 2 * llc > (512ll << 20) ? 512ll << 20 : 2 * llc;
}

/* {"name", "sizes": {...}, "seeds": [...]} for every performance case of
 * the backend among the sets, in set order; NULL on ENOMEM. */
static json_t *plan_cases(const struct eval_baseline_request *req)
{
    const struct workload *wl = req->wl;
    json_t *cases = json_array();
    const struct wl_case *prev = NULL;
    json_t *seeds = NULL;
    for (size_t i = 0; cases && req->sets && i < req->sets->n; i++) {
        const struct input_set *s = &req->sets->sets[i];
        if (s->wcase->kind != WL_CASE_PERFORMANCE || !(s->wcase->backends & req->backend))
            continue;
        if (s->wcase != prev) {
            json_t *sizes = json_object();
            for (size_t k = 0; sizes && k < wl->nsizes; k++)
                json_object_set_new(sizes, wl->size_names[k], json_integer(s->wcase->sizes[k]));
            seeds = json_array();
            if (json_array_append_new(cases, json_pack("{s:s, s:o, s:o}", "name", s->wcase->name,
                                                       "sizes", sizes ? sizes : json_null(),
                                                       "seeds", seeds ? seeds : json_null())) !=
                0) {
                json_decref(cases);
                return NULL;
            }
            prev = s->wcase;
        }
        if (!seeds || json_array_append_new(seeds, json_integer((json_int_t)s->seed)) != 0) {
            json_decref(cases);
            return NULL;
        }
    }
    return cases;
}

/* plan.json's common part: the device, the mode and the timing rule. */
static json_t *plan_head(bool cuda, const char *mode, int warmups, int iterations, bool flush)
{
    return json_pack("{s:i, s:s, s:s, s:i, s:i, s:b, s:I}", "kiln_torch_plan", 1, "device",
                     cuda ? "cuda" : "cpu", "mode", mode, "warmups",
                     warmups == EVAL_NO_WARMUPS ? 0 : eval_warmups_resolved(warmups), "iterations",
                     eval_iterations_resolved(iterations), "l2_flush", flush, "flush_bytes",
                     (json_int_t)(cuda ? 0 : cpu_flush_bytes()));
}

/* Writes `doc` (taken, NULL: out of memory) to `path`. */
static enum kiln_rc write_plan_doc(json_t *doc, const char *path, struct kiln_err *err)
{
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "the torch baseline's plan");
    enum kiln_rc rc = fs_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

/* dir/plan.json for one mode. */
static enum kiln_rc write_plan(const struct eval_baseline_request *req, enum torch_mode mode,
                               json_t *cases, const char *path, struct kiln_err *err)
{
    json_t *doc = plan_head(req->backend == KILN_BACKEND_CUDA, mode_name(mode), req->warmups,
                            req->iterations, !req->hot);
    if (doc && (json_object_set_new(doc, "script", json_string("/in/inputs.py")) != 0 ||
                json_object_set(doc, "cases", cases) != 0)) {
        json_decref(doc);
        doc = NULL;
    }
    return write_plan_doc(doc, path, err);
}

/* What hx_torch.py returns, and the sandbox it runs in: torch-gpu on the
 * cuda backend, script on the cpu. */
static const char *const OUT_FILES[] = {"timings.json", "status.json", "log.txt"};
static const struct tar_rules OUT_RULES = {.patterns = OUT_FILES,
                                           .n_patterns = 3,
                                           .max_file_bytes = TIMINGS_MAX_BYTES,
                                           .max_total_bytes = 3u * TIMINGS_MAX_BYTES,
                                           .max_files = 3};

static void torch_step(struct sbexec_step *step, struct sandbox_input *in, size_t n_in, bool cuda,
                       int gpu, long long timeout_ms)
{
    static char *argv[] = {"python3", "/in/hx_torch.py", "/in/plan.json", "/out", NULL};
    step->rules = &OUT_RULES;
    step->spec.policy = cuda ? "torch-gpu" : "script";
    step->spec.image = cuda ? "torch-gpu" : "script";
    step->spec.inputs = in;
    step->spec.n_inputs = n_in;
    step->gpu = cuda ? gpu : -1;
    step->spec.argv = argv;
    step->spec.stdin_fd = -1;
    step->spec.limits.timeout_ms = timeout_ms;
    step->spec.limits.out_bytes = 3ll * TIMINGS_MAX_BYTES + (16ll << 20);
    step->spec.limits.tar_bytes = 3ll * TIMINGS_MAX_BYTES + (16ll << 20);
    step->spec.limits.fsize_bytes = TIMINGS_MAX_BYTES + (1 << 20);
}

/* One mode in its sandbox. */
static enum kiln_rc run_mode(const struct eval_baseline_request *req, enum torch_mode mode,
                             const char *plan, struct eval_baseline *b, struct kiln_err *err)
{
    char script[PATH_MAX], inputs[PATH_MAX], out_dir[PATH_MAX], what[64];
    snprintf(script, sizeof(script), "%s/hx_torch.py", req->work_dir);
    snprintf(inputs, sizeof(inputs), "%s/inputs.py", req->work_dir);
    snprintf(out_dir, sizeof(out_dir), "%s/%s", req->work_dir, mode_name(mode));
    snprintf(what, sizeof(what), "the torch baseline (%s)", mode_name(mode));
    enum kiln_rc rc = fs_remove_tree(out_dir, err);
    if (rc != KILN_OK)
        return rc;
    struct sandbox_input in[] = {
        {script, "hx_torch.py"}, {plan, "plan.json"}, {inputs, "inputs.py"}};
    struct sbexec_step step = {.runner = req->runner, .what = what, .out_dir = out_dir};
    torch_step(&step, in, 3, req->backend == KILN_BACKEND_CUDA, req->gpu, req->run_timeout_ms);
    struct eval_medians *m = mode == TORCH_COMPILE ? &b->compile : &b->medians;
    char *detail = mode == TORCH_COMPILE ? b->compile_detail : b->detail;
    return eval_baseline_sandboxed(
        &step, what, m, detail,
        mode == TORCH_COMPILE ? sizeof(b->compile_detail) : sizeof(b->detail), &b->t_run, err);
}

/* hx_torch.py and the workload's inputs.py into the scratch directory. */
static enum kiln_rc write_scripts(const struct eval_baseline_request *req, struct kiln_err *err)
{
    char path[PATH_MAX];
    const struct wl_file_data *f = &req->wl->files[WL_FILE_INPUTS];
    enum kiln_rc rc = fs_mkdirs(req->work_dir, err);
    snprintf(path, sizeof(path), "%s/hx_torch.py", req->work_dir);
    if (rc == KILN_OK)
        rc = fs_write_atomic(path, hx_torch_py, sizeof(hx_torch_py), err);
    snprintf(path, sizeof(path), "%s/inputs.py", req->work_dir);
    if (rc == KILN_OK)
        rc = fs_write_atomic(path, f->data ? f->data : "", f->data ? f->len : 0, err);
    return rc;
}

static void settle(enum eval_baseline_state *state, const struct eval_medians *m, char *detail,
                   size_t cap, const char *what)
{
    *state = m->n > 0 ? EVAL_BASELINE_OK : EVAL_BASELINE_UNAVAILABLE;
    if (*state != EVAL_BASELINE_OK && !detail[0])
        snprintf(detail, cap, "%s reported no case", what);
}

enum kiln_rc torch_baseline_run(const struct eval_baseline_request *req, struct eval_baseline *out,
                                struct kiln_err *err)
{
    out->state = out->compile_state = EVAL_BASELINE_UNAVAILABLE;
    json_t *cases = plan_cases(req);
    if (!cases)
        return kiln_fail(err, KILN_E_NOMEM, "the torch baseline's cases");
    if (json_array_size(cases) == 0 || !req->wl->files[WL_FILE_INPUTS].present) {
        snprintf(out->detail, sizeof(out->detail), "torch baseline unavailable: %s",
                 json_array_size(cases) ? "the workload has no inputs.py"
                                        : "no performance case on this backend");
        snprintf(out->compile_detail, sizeof(out->compile_detail), "%s", out->detail);
        json_decref(cases);
        return KILN_OK;
    }
    enum kiln_rc rc = write_scripts(req, err);
    for (int m = TORCH_EAGER; rc == KILN_OK && m <= TORCH_COMPILE; m++) {
        char plan[PATH_MAX];
        snprintf(plan, sizeof(plan), "%s/plan-%s.json", req->work_dir,
                 mode_name((enum torch_mode)m));
        rc = write_plan(req, (enum torch_mode)m, cases, plan, err);
        if (rc == KILN_OK)
            rc = run_mode(req, (enum torch_mode)m, plan, out, err);
    }
    json_decref(cases);
    if (rc != KILN_OK)
        return rc;
    settle(&out->state, &out->medians, out->detail, sizeof(out->detail), "torch eager");
    settle(&out->compile_state, &out->compile, out->compile_detail, sizeof(out->compile_detail),
           "torch.compile");
    return KILN_OK;
}

/* ---- a level's problems at their own sizes ---- */

static enum kiln_rc write_problems_plan(const struct torch_problems_request *req,
                                        const struct torch_problem_time *p, size_t n,
                                        const char *path, struct kiln_err *err)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        char name[32], file[300];
        snprintf(name, sizeof(name), "p%zu", i);
        snprintf(file, sizeof(file), "/in/problems/%s", p[i].file);
        json_array_append_new(list, json_pack("{s:s, s:s}", "name", name, "file", file));
    }
    json_t *doc = list ? plan_head(req->backend == KILN_BACKEND_CUDA, "eager", req->warmups,
                                   req->iterations, true)
                       : NULL;
    if (doc && (json_object_set_new(doc, "deadline_s", json_real(req->deadline_s)) != 0 ||
                json_object_set(doc, "problems", list) != 0)) {
        json_decref(doc);
        doc = NULL;
    }
    json_decref(list);
    return write_plan_doc(doc, path, err);
}

/* status.json and timings.json of the problems' sandbox into p[]. */
static void judge_problems(const char *out_dir, struct torch_problem_time *p, size_t n,
                           char *detail, size_t cap)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    struct kiln_err e = KILN_ERR_INIT;
    struct hstatus st = {0};
    struct timings tm = {0};
    snprintf(path, sizeof(path), "%s/status.json", out_dir);
    bool ok = fs_read_file(path, HSTATUS_MAX_BYTES, &text, &len, &e) == KILN_OK &&
              hstatus_parse(text, len, &st, &e) == KILN_OK;
    free(text);
    text = NULL;
    snprintf(path, sizeof(path), "%s/timings.json", out_dir);
    ok = ok && fs_read_file(path, TIMINGS_MAX_BYTES, &text, &len, &e) == KILN_OK &&
         timings_parse(text, len, &tm, &e) == KILN_OK;
    if (!ok)
        snprintf(detail, cap, "the torch baseline's documents: %s", e.msg);
    for (size_t i = 0; ok && i < n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "p%zu", i);
        const struct hstatus_case *c = hstatus_find(&st, name);
        if (!c)
            snprintf(p[i].detail, sizeof(p[i].detail), "no status reported");
        else if (!strcmp(c->status, "skipped"))
            snprintf(p[i].detail, sizeof(p[i].detail), "not reached in the time given");
        else if (c->failed)
            snprintf(p[i].detail, sizeof(p[i].detail), "%s", c->detail);
        else if (!((p[i].ms = eval_case_median(&tm, name)) > 0))
            snprintf(p[i].detail, sizeof(p[i].detail), "no timings reported");
    }
    free(text);
    hstatus_free(&st);
    timings_free(&tm);
}

enum kiln_rc torch_baseline_problems(const struct torch_problems_request *req,
                                     struct torch_problem_time *p, size_t n, char *detail,
                                     size_t cap, struct kiln_err *err)
{
    char script[PATH_MAX], plan[PATH_MAX], out_dir[PATH_MAX];
    snprintf(script, sizeof(script), "%s/hx_torch.py", req->work_dir);
    snprintf(plan, sizeof(plan), "%s/plan-problems.json", req->work_dir);
    snprintf(out_dir, sizeof(out_dir), "%s/problems", req->work_dir);
    detail[0] = '\0';
    enum kiln_rc rc = fs_mkdirs(req->work_dir, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(script, hx_torch_py, sizeof(hx_torch_py), err);
    if (rc == KILN_OK)
        rc = write_problems_plan(req, p, n, plan, err);
    if (rc == KILN_OK)
        rc = fs_remove_tree(out_dir, err);
    if (rc != KILN_OK)
        return rc;
    struct sandbox_input in[] = {
        {script, "hx_torch.py"}, {plan, "plan.json"}, {req->dir, "problems"}};
    struct sbexec_step step = {.what = "the torch baseline (problems)", .out_dir = out_dir};
    torch_step(&step, in, 3, req->backend == KILN_BACKEND_CUDA, req->gpu, req->timeout_ms);
    struct sbexec_result sr;
    struct kiln_err e = KILN_ERR_INIT;
    rc = sbexec_run(&step, &sr, &e);
    if (rc == KILN_E_NOMEM) {
        sbexec_result_free(&sr);
        return kiln_fail(err, rc, "%s", e.msg);
    }
    if (rc != KILN_OK) {
        snprintf(detail, cap, "the torch baseline could not run: %s", e.msg);
    } else if (sr.sb.verdict != SANDBOX_EXITED || !sr.exited_ok) {
        char d[400];
        sbexec_describe(&sr, d, sizeof(d));
        snprintf(detail, cap, "the torch baseline failed: %s; %s", sr.line, d);
    } else {
        judge_problems(out_dir, p, n, detail, cap);
    }
    sbexec_result_free(&sr);
    return KILN_OK;
}
