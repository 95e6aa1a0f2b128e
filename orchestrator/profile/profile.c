/* profile.c - Nsight Compute around kiln's harness in the profile sandbox (profile.h). */
#include "profile.h"
#include "clock.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evaluate.h"
#include "fsutil.h"
#include "harness_plan.h"
#include "hostpaths.h"
#include "sandbox.h"
#include "sbexec.h"

#define FAILS_BEFORE_GIVING_UP 2

struct profiler {
    int gpu;
    char work[PATH_MAX];
    char ncu_root[PATH_MAX];
    char harness[PATH_MAX];
    char why[640]; /* non-empty: unavailable */
    int fails;     /* failed profiles in a row */
};

enum kiln_rc profiler_open(enum kiln_backend b, int gpu, const char *work_dir,
                           struct profiler **out, struct kiln_err *err)
{
    *out = NULL;
    struct profiler *p = calloc(1, sizeof(*p));
    if (!p)
        return kiln_fail(err, KILN_E_NOMEM, "profiler");
    p->gpu = gpu;
    snprintf(p->work, sizeof(p->work), "%s", work_dir);
    struct kiln_err e;
    kiln_err_clear(&e);
    if (b != KILN_BACKEND_CUDA)
        snprintf(p->why, sizeof(p->why),
                 "Nsight Compute profiles CUDA kernels and this run uses the %s backend, which "
                 "has no GPU counters",
                 kiln_backend_name(b));
    else if (!hostpaths_ncu(p->ncu_root, sizeof(p->ncu_root)))
        snprintf(p->why, sizeof(p->why),
                 "ncu (Nsight Compute) was not found: install it with the CUDA toolkit "
                 "(cuda-nsight-compute) or point KILN_NCU at the ncu program");
    else if (eval_harness_path(KILN_BACKEND_CUDA, p->harness, sizeof(p->harness), &e) != KILN_OK)
        snprintf(p->why, sizeof(p->why), "%s", e.msg);
    *out = p;
    return KILN_OK;
}

const char *profiler_why(const struct profiler *p)
{
    return p->why[0] ? p->why : NULL;
}

void profiler_close(struct profiler *p)
{
    free(p);
}

/* The performance case with the most tensor bytes, or -1. */
static int pick_case(const struct harness_plan *hp)
{
    int best = -1;
    uint64_t most = 0;
    for (int c = 0; c < hp->ncases; c++) {
        if (!hp->cases[c].timed)
            continue;
        uint64_t bytes = 0;
        for (int a = 0; a < hp->nargs; a++)
            if (hp->args[a].is_tensor)
                bytes += harness_case_tensor_bytes(hp, &hp->cases[c], a);
        if (best < 0 || bytes > most)
            best = c, most = bytes;
    }
    return best;
}

/* Rewrites the candidate's plan for the profile run: the chosen case alone,
 * untimed (a correctness run and its recheck), its first input set. */
static enum kiln_rc profile_plan(const char *cand_dir, const char *out_path, char *case_name,
                                 size_t ccap, char *regex, size_t rcap, int *runs_launches,
                                 uint64_t *out_bytes, struct kiln_err *err)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/plan.json", cand_dir);
    struct harness_plan hp;
    harness_plan_init(&hp);
    char *text = NULL;
    enum kiln_rc rc = harness_plan_read_file(path, &hp, err);
    int c = rc == KILN_OK ? pick_case(&hp) : -1;
    if (rc == KILN_OK && (c < 0 || hp.backend != HB_CUDA))
        rc = kiln_fail(err, KILN_E_USAGE, "%s: no CUDA performance case to profile", path);
    if (rc == KILN_OK) {
        if (c != 0)
            hp.cases[0] = hp.cases[c];
        hp.ncases = 1;
        hp.cases[0].timed = false;
        hp.cases[0].nsets = 1;
        hp.adaptive = false;
        hp.warmups = 0;
        hp.iterations = 1;
        snprintf(case_name, ccap, "%s", hp.cases[0].name);
        *out_bytes = 0;
        for (int a = 0; a < hp.nargs; a++)
            if (hp.args[a].is_tensor)
                *out_bytes += harness_case_tensor_bytes(&hp, &hp.cases[0], a) + hp.guard_bytes;
        /* The plan's kernels are C identifiers (the plan parser checks),
         * so they go into the regex as they are. */
        size_t off = (size_t)snprintf(regex, rcap, "regex:^(");
        for (int l = 0; l < hp.nlaunches && off < rcap; l++) {
            bool dup = false;
            for (int k = 0; k < l; k++)
                dup |= !strcmp(hp.launches[k].kernel, hp.launches[l].kernel);
            if (!dup)
                off += (size_t)snprintf(regex + off, rcap - off, "%s%s", off > 8 ? "|" : "",
                                        hp.launches[l].kernel);
        }
        if (off + 3 >= rcap)
            rc = kiln_fail(err, KILN_E_LIMIT, "kernel filter too long");
        else
            snprintf(regex + off, rcap - off, ")$");
        *runs_launches = 2 * hp.nlaunches;
    }
    if (rc == KILN_OK)
        rc = harness_plan_write(&hp, &text, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(out_path, text, strlen(text), err);
    free(text);
    harness_plan_free(&hp);
    return rc;
}

static void fail(struct profiler *p, struct profile_result *res, const char *fmt, ...)
    KILN_PRINTF(3, 4);

/* This profile failed; two in a row make the profiler give up for the run. */
static void fail(struct profiler *p, struct profile_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof(res->message), fmt, ap);
    va_end(ap);
    res->status = PROFILE_FAILED;
    if (++p->fails >= FAILS_BEFORE_GIVING_UP) {
        snprintf(p->why, sizeof(p->why), "profiling failed %d times in a row, the last: %s",
                 p->fails, res->message);
        res->status = PROFILE_UNAVAILABLE;
        snprintf(res->message, sizeof(res->message), "%s", p->why);
    }
}

static void unavailable(struct profiler *p, struct profile_result *res, const char *fmt, ...)
    KILN_PRINTF(3, 4);

static void unavailable(struct profiler *p, struct profile_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof(p->why), fmt, ap);
    va_end(ap);
    res->status = PROFILE_UNAVAILABLE;
    snprintf(res->message, sizeof(res->message), "%s", p->why);
}

/* Reads what ncu printed; decides ok / failed / unavailable. */
static void judge(struct profiler *p, const struct sbexec_result *sr, const char *regex,
                  struct profile_result *res)
{
    char d[900];
    sbexec_describe(sr, d, sizeof(d));
    if (sr->sb.verdict == SANDBOX_REFUSED) {
        unavailable(p, res,
                    "the profile sandbox refused syscall %s (%d; arguments %s), which this "
                    "ncu needs: allowing it means widening policies/profile.json (read "
                    "SECURITY.md, \"Profiling\", first)",
                    sr->sb.syscall_name, sr->sb.syscall_nr,
                    *sr->sb.syscall_args ? sr->sb.syscall_args : "not known");
        return;
    }
    if (sr->sb.verdict != SANDBOX_EXITED) {
        fail(p, res, "ncu did not finish: %s", d);
        return;
    }
    if (sr->sb.out.dropped) {
        fail(p, res, "ncu printed %llu bytes, more than kiln reads", sr->sb.out.total);
        return;
    }
    struct kiln_err e;
    kiln_err_clear(&e);
    const char *text = sr->sb.out.data ? sr->sb.out.data : "";
    /* ncu may print its errors on stderr: the refusal is looked for there too. */
    if (sr->sb.err.data && strstr(sr->sb.err.data, "ERR_NVGPUCTRPERM"))
        goto refused;
    if (ncu_csv_parse(text, strlen(text), &res->report, &e) != KILN_OK) {
        if (res->report.counters_refused)
            goto refused;
        fail(p, res, "ncu's output was rejected: %s (%s)", e.msg, d);
        return;
    }
    if (res->report.counters_refused)
        goto refused;
    if (res->report.nkernels == 0) {
        fail(p, res, "ncu profiled no launch matching %s: %s", regex,
             res->report.error[0] ? res->report.error : d);
        return;
    }
    p->fails = 0;
    res->status = PROFILE_OK;
    for (size_t k = 0; k < res->report.nkernels; k++)
        res->launches += res->report.kernels[k].launches;
    profile_summarize(&res->report, res->case_name, res->launches, res->summary,
                      sizeof(res->summary));
    return;
refused:
    unavailable(p, res,
                "GPU performance counters are refused to kiln's unprivileged sandbox user "
                "(ERR_NVGPUCTRPERM: the driver lets only administrators profile). An "
                "administrator can allow them with the nvidia module option "
                "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/"
                "ERR_NVGPUCTRPERM); kiln does not grant the sandbox CAP_SYS_ADMIN or "
                "CAP_PERFMON");
}

/* One profile: where it works and what its plan says to profile. */
struct profile_job {
    char dir[PATH_MAX], plan[PATH_MAX + 16], out_dir[PATH_MAX + 16], cases[PATH_MAX + 16];
    char regex[2048], count[16]; /* ncu's -k and -c */
    uint64_t out_bytes;          /* what the harness writes to /tmp */
};

/* An empty work/profile-NAME for this profile. */
static enum kiln_rc fresh_dir(const struct profiler *p, const struct profile_target *t,
                              struct profile_job *job, struct kiln_err *err)
{
    snprintf(job->dir, sizeof(job->dir), "%s/profile-%s", p->work, t->name);
    snprintf(job->plan, sizeof(job->plan), "%s/plan.json", job->dir);
    snprintf(job->out_dir, sizeof(job->out_dir), "%s/out", job->dir);
    snprintf(job->cases, sizeof(job->cases), "%s/cases", t->cand_dir);
    enum kiln_rc rc = fs_remove_tree(job->dir, err);
    if (rc == KILN_OK)
        rc = fs_mkdirs(job->dir, err);
    return rc;
}

/* The harness plan of one case; *planned false when there is none, which
 * fails this profile (res says why) without failing the run. */
static enum kiln_rc make_plan(struct profiler *p, const struct profile_target *t,
                              struct profile_job *job, struct profile_result *res, bool *planned,
                              struct kiln_err *err)
{
    int runs_launches = 0;
    struct kiln_err perr;
    kiln_err_clear(&perr);
    *planned = false;
    job->out_bytes = 0;
    if (profile_plan(t->cand_dir, job->plan, res->case_name, sizeof(res->case_name), job->regex,
                     sizeof(job->regex), &runs_launches, &job->out_bytes, &perr) != KILN_OK) {
        if (perr.rc == KILN_E_NOMEM || perr.rc == KILN_E_IO)
            return kiln_fail(err, perr.rc, "%s", perr.msg);
        fail(p, res, "%s", perr.msg);
        return KILN_OK;
    }
    snprintf(job->count, sizeof(job->count), "%d", runs_launches);
    *planned = true;
    return KILN_OK;
}

/* ncu around the harness in the profile sandbox. */
static enum kiln_rc run_ncu(const struct profiler *p, const struct profile_target *t,
                            struct profile_job *job, struct sbexec_result *sr,
                            struct kiln_err *serr)
{
    char ncu[PATH_MAX + 8];
    snprintf(ncu, sizeof(ncu), "%s/ncu", p->ncu_root);
    char *argv[] = {ncu,
                    "--csv",
                    "--print-units",
                    "base",
                    "--print-metric-name",
                    "name",
                    "--cache-control",
                    "all",
                    "--clock-control",
                    "none",
                    "--metrics",
                    (char *)ncu_metrics_arg(),
                    "-k",
                    job->regex,
                    "-c",
                    job->count,
                    "/in/kiln-harness",
                    "/in/plan.json",
                    "--out",
                    "/tmp",
                    NULL};
    struct sandbox_input in[] = {{p->harness, "kiln-harness"},
                                 {job->plan, "plan.json"},
                                 {t->cubin, "candidate.cubin"},
                                 {job->cases, "cases"}};
    /* Nothing is expected in /out: the harness writes to /tmp (the
     * directory exists; it does not create its --out). */
    struct tar_rules rules = {.patterns = NULL,
                              .n_patterns = 0,
                              .max_file_bytes = 1,
                              .max_total_bytes = 1,
                              .max_files = 0};
    struct sbexec_step step = {.what = "ncu", .rules = &rules, .out_dir = job->out_dir};
    step.spec.policy = "profile";
    step.spec.image = "profile";
    step.spec.inputs = in;
    step.spec.n_inputs = 4;
    step.gpu = p->gpu;
    step.spec.argv = argv;
    step.spec.stdin_fd = -1;
    step.spec.limits.timeout_ms = PROFILE_TIMEOUT_MS;
    step.spec.limits.tmp_bytes = (long long)job->out_bytes + (512ll << 20);
    step.spec.limits.out_bytes = 1 << 20;
    step.spec.limits.tar_bytes = 1 << 20;
    step.spec.limits.output_bytes = NCU_CSV_MAX_BYTES;
    return sbexec_run(&step, sr, serr);
}

/* What ncu's run (rc, serr) means for this profile; an error only when
 * the run itself must stop. */
static enum kiln_rc take_outcome(struct profiler *p, enum kiln_rc rc,
                                 const struct sbexec_result *sr, const struct kiln_err *serr,
                                 const char *regex, struct profile_result *res,
                                 struct kiln_err *err)
{
    if (rc == KILN_E_SANDBOX || rc == KILN_E_NOTFOUND || rc == KILN_E_PARSE || rc == KILN_E_USAGE) {
        /* The sandbox could not be built (image, policy, devices). */
        unavailable(p, res, "the profile sandbox could not be set up: %s", serr->msg);
        return KILN_OK;
    }
    if (rc == KILN_E_REJECTED) {
        fail(p, res, "the profile sandbox returned files it should not have: %s", serr->msg);
        return KILN_OK;
    }
    if (rc == KILN_OK)
        judge(p, sr, regex, res);
    else
        *err = *serr;
    return rc;
}

enum kiln_rc profiler_run(struct profiler *p, const struct profile_target *t,
                          struct profile_result *res, struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    if (p->why[0]) {
        res->status = PROFILE_UNAVAILABLE;
        snprintf(res->message, sizeof(res->message), "%s", p->why);
        return KILN_OK;
    }
    double t0 = clock_mono_s();
    struct profile_job job;
    bool planned = false;
    enum kiln_rc rc = fresh_dir(p, t, &job, err);
    if (rc == KILN_OK)
        rc = make_plan(p, t, &job, res, &planned, err);
    if (rc != KILN_OK || !planned)
        return rc;
    struct sbexec_result sr;
    memset(&sr, 0, sizeof(sr));
    struct kiln_err serr;
    kiln_err_clear(&serr);
    rc = run_ncu(p, t, &job, &sr, &serr);
    rc = take_outcome(p, rc, &sr, &serr, job.regex, res, err);
    sbexec_result_free(&sr);
    res->wall_s = clock_mono_s() - t0;
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    (void)(fs_remove_tree(job.dir, &ignore) == KILN_OK);
    return rc;
}

static void put_pct(char *buf, size_t cap, size_t *off, const struct ncu_kernel *k,
                    enum ncu_metric m, const char *label)
{
    if (k->have[m] && *off < cap)
        *off += (size_t)snprintf(buf + *off, cap - *off, "; %s %.1f%%", label, k->value[m]);
}

void profile_summarize(const struct ncu_report *r, const char *case_name, int launches, char *buf,
                       size_t cap)
{
    size_t off = (size_t)snprintf(buf, cap,
                                  "Nsight Compute on case %s (%d profiled launches, caches "
                                  "flushed before each; medians):",
                                  case_name, launches);
    for (size_t i = 0; i < r->nkernels && off < cap; i++) {
        const struct ncu_kernel *k = &r->kernels[i];
        off += (size_t)snprintf(buf + off, cap - off, "\n- %s:", k->name);
        if (k->have[NCU_DURATION] && off < cap)
            off += (size_t)snprintf(buf + off, cap - off, " %.2f us", k->value[NCU_DURATION] / 1e3);
        put_pct(buf, cap, &off, k, NCU_DRAM_PCT, "DRAM throughput");
        put_pct(buf, cap, &off, k, NCU_SM_PCT, "SM throughput");
        put_pct(buf, cap, &off, k, NCU_OCCUPANCY, "achieved occupancy");
        put_pct(buf, cap, &off, k, NCU_OCCUPANCY_THEORY, "theoretical occupancy");
        if (k->have[NCU_REGISTERS] && off < cap)
            off += (size_t)snprintf(buf + off, cap - off, "; %.0f registers/thread",
                                    k->value[NCU_REGISTERS]);
        put_pct(buf, cap, &off, k, NCU_L1_HIT, "L1 hit rate");
        put_pct(buf, cap, &off, k, NCU_L2_HIT, "L2 hit rate");
        if ((k->have[NCU_LOCAL_LD] || k->have[NCU_LOCAL_ST]) && off < cap)
            off += (size_t)snprintf(buf + off, cap - off,
                                    "; local memory (spills) %.0f load + %.0f store sectors",
                                    k->value[NCU_LOCAL_LD], k->value[NCU_LOCAL_ST]);
    }
}

static const char *status_name(enum profile_status s)
{
    switch (s) {
    case PROFILE_OK:
        return "ok";
    case PROFILE_FAILED:
        return "failed";
    case PROFILE_UNAVAILABLE:
        return "unavailable";
    }
    return "?";
}

json_t *profile_result_json(const struct profile_result *res, const char *candidate)
{
    json_t *doc = json_pack("{s:i, s:s, s:s, s:f}", "version", 1, "candidate", candidate, "status",
                            status_name(res->status), "wall_s", res->wall_s);
    if (!doc)
        return NULL;
    if (res->status != PROFILE_OK) {
        json_object_set_new(doc, "message", json_string(res->message));
        return doc;
    }
    json_t *ks = json_array();
    for (size_t i = 0; ks && i < res->report.nkernels; i++) {
        const struct ncu_kernel *k = &res->report.kernels[i];
        json_t *m = json_object();
        for (int j = 0; m && j < NCU_METRIC_COUNT; j++)
            if (k->have[j])
                json_object_set_new(m, ncu_metric_name((enum ncu_metric)j),
                                    json_pack("{s:f, s:s}", "value", k->value[j], "unit",
                                              ncu_metric_unit((enum ncu_metric)j)));
        json_array_append_new(ks, json_pack("{s:s, s:i, s:o*}", "name", k->name, "launches",
                                            k->launches, "metrics", m));
    }
    json_object_set_new(doc, "case", json_string(res->case_name));
    json_object_set_new(doc, "launches", json_integer(res->launches));
    json_object_set_new(doc, "kernels", ks ? ks : json_null());
    json_object_set_new(doc, "summary", json_string(res->summary));
    return doc;
}

bool profile_describe_host(char *buf, size_t cap)
{
    char root[PATH_MAX];
    if (!hostpaths_ncu(root, sizeof(root))) {
        snprintf(buf, cap,
                 "ncu (Nsight Compute) not found on PATH, in the CUDA toolkit or "
                 "/opt/nvidia/nsight-compute");
        return false;
    }
    const char *base = strrchr(root, '/');
    base = base ? base + 1 : root;
    const char *ver = !strncmp(base, "nsight-compute-", 15) ? base + 15 : base;
    /* The driver's switch, when it publishes one: RmProfilingAdminOnly. */
    char *params = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    const char *counters = "unknown until first use";
    if (fs_read_file("/proc/driver/nvidia/params", 1u << 20, &params, &len, &e) == KILN_OK) {
        const char *at = strstr(params, "RmProfilingAdminOnly: ");
        if (at && at[22] == '1')
            counters = "administrators only (RmProfilingAdminOnly: 1): kiln's unprivileged "
                       "sandbox will be refused, so --profile will say so and go on without";
        else if (at && at[22] == '0')
            counters = "open to all users (RmProfilingAdminOnly: 0)";
    }
    free(params);
    snprintf(buf, cap, "ncu %s at %s; counters: %s", ver, root, counters);
    return true;
}
