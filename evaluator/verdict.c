/*
 * verdict.c - deciding, summarizing and (de)serializing verdicts.
 */
#include "verdict.h"
#include "gpupeak.h"

#include "harness_plan.h"
#include "json_strict.h"
#include "perfcmp.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {
    [VERDICT_PASS] = "pass",
    [VERDICT_WRONG_ANSWER] = "wrong_answer",
    [VERDICT_COMPILE_ERROR] = "compile_error",
    [VERDICT_RUNTIME_ERROR] = "runtime_error",
    [VERDICT_TIMEOUT] = "timeout",
    [VERDICT_RESOURCE_LIMIT] = "resource_limit",
    [VERDICT_SANDBOX_VIOLATION] = "sandbox_violation",
    [VERDICT_REJECTED_OUTPUT] = "rejected_output",
    [VERDICT_IMPOSSIBLE_TIMING] = "impossible_timing",
    [VERDICT_INCONSISTENT_TIMING] = "inconsistent_timing",
    [VERDICT_REPLY_REFUSED] = "reply_refused",
    [VERDICT_DUPLICATE] = "duplicate",
};

#define NSTATUS (sizeof(status_names) / sizeof(status_names[0]))

const char *verdict_status_name(enum verdict_status s)
{
    if ((unsigned)s >= NSTATUS)
        return NULL;
    return status_names[s];
}

bool verdict_status_from_name(const char *name, enum verdict_status *out)
{
    for (size_t i = 0; i < NSTATUS; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            *out = (enum verdict_status)i;
            return true;
        }
    }
    return false;
}

void verdict_init(struct verdict *v, const char *candidate)
{
    memset(v, 0, sizeof(*v));
    snprintf(v->candidate, sizeof(v->candidate), "%s", candidate ? candidate : "");
}

void verdict_free(struct verdict *v)
{
    if (!v)
        return;
    free(v->cases);
    v->cases = NULL;
    v->ncases = 0;
}

enum kiln_rc verdict_add_case(struct verdict *v, const char *name, int set, bool scored,
                              struct verdict_case **out, struct kiln_err *err)
{
    if (v->ncases >= VERDICT_MAX_CASES)
        return kiln_fail(err, KILN_E_LIMIT, "verdict: more than %d cases", VERDICT_MAX_CASES);
    struct verdict_case *c = realloc(v->cases, (v->ncases + 1) * sizeof(*c));
    if (!c)
        return kiln_fail(err, KILN_E_NOMEM, "verdict: out of memory adding case %s", name);
    v->cases = c;
    c = &v->cases[v->ncases++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->set = set;
    c->scored = scored;
    *out = c;
    return KILN_OK;
}

void verdict_fail(struct verdict *v, enum verdict_status s, const char *fmt, ...)
{
    if (v->status != VERDICT_PASS || s == VERDICT_PASS)
        return;
    v->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
    va_end(ap);
}

/* Marks each case correct or not; returns the first incorrect one. */
static struct verdict_case *judge_cases(struct verdict *v)
{
    struct verdict_case *first_bad = NULL;
    for (size_t i = 0; i < v->ncases; i++) {
        struct verdict_case *c = &v->cases[i];
        c->correct = !c->inputs_modified && c->noutputs > 0;
        if (c->inputs_modified && !c->detail[0])
            snprintf(c->detail, sizeof(c->detail),
                     "inputs modified by the candidate (input fingerprint changed)");
        else if (c->noutputs == 0 && !c->detail[0])
            snprintf(c->detail, sizeof(c->detail), "no output was compared");
        for (size_t o = 0; o < c->noutputs && o < VERDICT_MAX_OUTPUTS; o++) {
            const struct verdict_output *out = &c->outputs[o];
            if (!out->cmp.pass) {
                if (c->correct)
                    snprintf(c->detail, sizeof(c->detail), "output %s: %s", out->name,
                             out->cmp.reason);
                c->correct = false;
            }
        }
        if (!c->correct && !first_bad)
            first_bad = c;
    }
    return first_bad;
}

bool verdict_case_correct(const struct verdict_case *c)
{
    if (c->inputs_modified || c->noutputs == 0)
        return false;
    for (size_t o = 0; o < c->noutputs && o < VERDICT_MAX_OUTPUTS; o++)
        if (!c->outputs[o].cmp.pass)
            return false;
    return true;
}

const char *verdict_floor_label(const struct verdict *v)
{
    enum gpu_unit u;
    return gpu_unit_parse(v->floor_unit, &u) ? gpu_unit_label(u) : "";
}

void verdict_finish(struct verdict *v, const struct stats_ceilings *ceil)
{
    if (!ceil)
        ceil = &STATS_CEILINGS_H200;
    struct verdict_case *bad = judge_cases(v);
    if (bad)
        verdict_fail(v, VERDICT_WRONG_ANSWER, "case %s (set %d): %s", bad->name, bad->set,
                     bad->detail);

    struct stats_score score = {0};
    double log_ref = 0.0, log_vendor = 0.0, log_sol = 0.0;
    size_t nref = 0, nvendor = 0, nsol = 0;
    v->needs_reverify = false;
    for (size_t i = 0; i < v->ncases; i++) {
        struct verdict_case *c = &v->cases[i];
        c->sol = 0.0;
        c->speedup_vendor = 0.0;
        if (!c->timed || !(c->timing.median > 0.0))
            continue;
        if (c->floor_ms > 0.0)
            c->sol = c->floor_ms / c->timing.median;
        if (c->vendor_median_ms > 0.0)
            c->speedup_vendor = c->vendor_median_ms / c->timing.median;
        if (!c->scored)
            continue;
        stats_score_add(&score, &c->timing);
        if (c->ref_median_ms > 0.0) {
            log_ref += log(c->ref_median_ms);
            nref++;
            if (c->ref_median_ms / c->timing.median > ceil->reverify_speedup)
                v->needs_reverify = true;
        }
        if (c->vendor_median_ms > 0.0) {
            log_vendor += log(c->vendor_median_ms);
            nvendor++;
        }
        if (c->floor_ms > 0.0) {
            log_sol += log(c->sol);
            nsol++;
        }
        /* The guard's floor, not the roofline's: a kernel may beat the
         * roofline of the workload's units by reaching its precision on
         * faster ones (stats_guard_ms), never the guard. */
        double guard = c->guard_ms > 0.0 ? c->guard_ms : c->floor_ms;
        if (stats_below_floor(ceil, guard, c->timing.median))
            verdict_fail(v, VERDICT_IMPOSSIBLE_TIMING,
                         "case %s (set %d): median %.6g ms is below the physics floor %.6g ms "
                         "(the fastest this GPU can reach the workload's precision; %.0f%% of "
                         "the %s roofline); the timing cannot be real",
                         c->name, c->set, c->timing.median, guard, 100.0 * c->sol,
                         v->floor_unit[0] ? verdict_floor_label(v) : "physics");
    }
    stats_score_finish(&score);
    v->score_ms = score.geomean_ms;
    v->sigma = score.sigma;
    /* Speedups only when every scored case has the baseline, so both sides
     * of the ratio cover the same cases. */
    v->speedup_ref = 0.0;
    v->speedup_vendor = 0.0;
    v->sol = 0.0;
    if (score.ncases > 0 && nref == score.ncases)
        v->speedup_ref = exp(log_ref / (double)nref) / v->score_ms;
    if (score.ncases > 0 && nvendor == score.ncases)
        v->speedup_vendor = exp(log_vendor / (double)nvendor) / v->score_ms;
    if (score.ncases > 0 && nsol == score.ncases)
        v->sol = exp(log_sol / (double)nsol);
    if (v->speedup_ref > ceil->reverify_speedup)
        v->needs_reverify = true;
    v->ref_call[0] = '\0'; /* judged again for the new figures: verdict_judge_ref */
    v->ref_noise_pct = 0.0;
    verdict_summarize(v);
}

void verdict_judge_ref(struct verdict *v, const struct verdict *ref)
{
    if (!ref || !(v->speedup_ref > 0.0) || !(ref->score_ms > 0.0) || v->status != VERDICT_PASS)
        return;
    enum perf_call c =
        perfcmp_speedup_call(v->speedup_ref, ref->sigma, v->sigma, NULL, &v->ref_noise_pct);
    snprintf(v->ref_call, sizeof(v->ref_call), "%s", perf_call_name(c));
    verdict_summarize(v);
}

const char *verdict_case_ref_call(const struct verdict_case *c, const struct verdict *ref,
                                  double *noise_pct)
{
    *noise_pct = 0.0;
    if (!ref || !c->timed || !(c->timing.median > 0.0) || !(c->ref_median_ms > 0.0))
        return "";
    /* The reference's figure for a case is the geometric mean of its sets'
     * medians (VERDICT.md section 4): its sigma is theirs, pooled. */
    double ss = 0.0;
    size_t k = 0;
    for (size_t i = 0; i < ref->ncases; i++) {
        const struct verdict_case *r = &ref->cases[i];
        if (strcmp(r->name, c->name) != 0 || !r->timed)
            continue;
        double s = stats_log_sigma(&r->timing);
        ss += s * s;
        k++;
    }
    if (k == 0)
        return "";
    enum perf_call call =
        perfcmp_speedup_call(c->ref_median_ms / c->timing.median, sqrt(ss) / (double)k,
                             stats_log_sigma(&c->timing), NULL, noise_pct);
    return perf_call_name(call);
}

/* Distinct case names among v's cases (one entry per case and input set)
 * that are scored and timed when `timed_only`, else all of them. */
static size_t distinct_cases(const struct verdict *v, bool timed_only)
{
    size_t n = 0;
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (timed_only && !(c->scored && c->timed))
            continue;
        size_t j = 0;
        while (j < i && (strcmp(v->cases[j].name, c->name) != 0 ||
                         (timed_only && !(v->cases[j].scored && v->cases[j].timed))))
            j++;
        n += j == i;
    }
    return n;
}

double verdict_case_rse(const struct verdict *v, const char *name)
{
    double n = 0.0, sum = 0.0, ss = 0.0;
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (c->timed && c->timing.n > 0 && !strcmp(c->name, name)) {
            n += (double)c->timing.n;
            sum += (double)c->timing.n * c->timing.mean;
        }
    }
    if (n == 0.0)
        return -1.0;
    if (n < 2.0 || !(sum > 0.0))
        return INFINITY;
    double mean = sum / n;
    /* Within-set squares plus between-set squares: the pooled sum of squares. */
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (c->timed && c->timing.n > 0 && !strcmp(c->name, name)) {
            double d = c->timing.mean - mean;
            ss += ((double)c->timing.n - 1.0) * c->timing.stddev * c->timing.stddev +
                  (double)c->timing.n * d * d;
        }
    }
    return sqrt(ss / (n - 1.0)) / sqrt(n) / mean;
}

bool verdict_rse_target_met(const struct verdict *v, double *worst, const char **worst_case)
{
    double w = 0.0;
    const char *wc = NULL;
    for (size_t i = 0; v->rule.known && v->rule.adaptive && i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        double rse = c->scored && c->timed ? verdict_case_rse(v, c->name) : -1.0;
        if (rse > w || (rse >= 0.0 && !wc)) {
            w = rse;
            wc = c->name;
        }
    }
    if (worst)
        *worst = w;
    if (worst_case)
        *worst_case = wc;
    return !wc || w < v->rule.target_rse;
}

/* " (SAME: within the measured noise, +-31.0%)": how speedup_ref stands
 * against the noise (verdict_judge_ref). */
static int ref_call_text(const struct verdict *v, char *s, size_t cap)
{
    if (!strcmp(v->ref_call, "AMBIGUOUS"))
        return snprintf(s, cap, " (AMBIGUOUS: too few samples to tell it from noise)");
    return snprintf(s, cap, " (%s: %s the measured noise, +-%.1f%%)", v->ref_call,
                    !strcmp(v->ref_call, "SAME") ? "within" : "beyond", v->ref_noise_pct);
}

void verdict_summarize(struct verdict *v)
{
    const char *st = verdict_status_name(v->status);
    char *s = v->summary;
    size_t cap = sizeof(v->summary);
    int n;
    if (v->status != VERDICT_PASS) {
        snprintf(s, cap, "%s: %s", st ? st : "?", v->detail[0] ? v->detail : "no detail");
        return;
    }
    size_t nscored = 0, nperf = 0, nrough = 0;
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        nperf += c->scored;
        nscored += c->scored && c->timed;
        nrough += c->scored && c->timed && !stats_has_interval(&c->timing);
    }
    if (nscored == 0) {
        snprintf(s, cap, "pass: all %zu cases correct; no performance case was timed",
                 distinct_cases(v, false));
        return;
    }
    /* Cases, not their input sets: "11 cases" read as more than the
     * workload has when 2 performance cases ran 3 sets each. */
    size_t ncase = distinct_cases(v, false), nperfcase = distinct_cases(v, true);
    n = snprintf(s, cap, "pass: all %zu cases correct", ncase);
    if (ncase < v->ncases && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n, " (%zu input sets)", v->ncases);
    if (n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n, "; geomean %.6g ms over %zu performance case%s",
                      v->score_ms, nperfcase, nperfcase == 1 ? "" : "s");
    if (nperfcase < nscored && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n, " (%zu input sets)", nscored);
    if (v->speedup_ref > 0.0 && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n, ", %.2fx the reference", v->speedup_ref);
    if (v->speedup_ref > 0.0 && v->ref_call[0] && n > 0 && (size_t)n < cap)
        n += ref_call_text(v, s + n, cap - (size_t)n);
    if (v->speedup_vendor > 0.0 && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n, ", %.2fx the vendor baseline", v->speedup_vendor);
    if (v->sol > 0.0 && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n, ", %.0f%% of speed of light%s%s%s", 100.0 * v->sol,
                      v->floor_unit[0] ? " (" : "", verdict_floor_label(v),
                      v->floor_unit[0] ? " peak)" : "");
    /* Few samples are said, not hidden: the score is then a rough one. */
    if (nscored < nperf && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n,
                      "; %zu of %zu performance sets not timed (fewer iterations than sets)",
                      nperf - nscored, nperf);
    double worst = 0.0;
    const char *wc = NULL;
    if (!verdict_rse_target_met(v, &worst, &wc) && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n,
                      "; timing target not reached (rse %.2f%% in case %s, target %g%%)",
                      100.0 * worst, wc, 100.0 * v->rule.target_rse);
    if (nrough && n > 0 && (size_t)n < cap)
        n += snprintf(s + n, cap - (size_t)n,
                      "; %zu timed with fewer than %d samples: no confidence interval", nrough,
                      STATS_MIN_INTERVAL_SAMPLES);
    if (v->needs_reverify && !v->reverified && n > 0 && (size_t)n < cap)
        snprintf(s + n, cap - (size_t)n,
                 "; flagged for re-verification on fresh inputs before it may rank");
}

/* ---- JSON out ---------------------------------------------------------- */

/* Non-finite numbers become the strings "inf", "-inf", "nan" (JSON has no
 * such numbers). */
static json_t *num(double x)
{
    if (isnan(x))
        return json_string("nan");
    if (isinf(x))
        return json_string(x > 0 ? "inf" : "-inf");
    return json_real(x);
}

/* Details can carry text from untrusted sources (compiler output quoting
 * the candidate): anything but printable ASCII becomes '?', so the JSON is
 * always valid UTF-8 and free of control characters. */
static json_t *text(const char *s)
{
    char buf[VERDICT_SUMMARY_MAX];
    size_t i = 0;
    for (; s[i] && i < sizeof(buf) - 1; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buf[i] = '\0';
    return json_string(buf);
}

/* 0 means "not applicable" for baselines: written as null. */
static json_t *num_or_null(double x)
{
    return x == 0.0 ? json_null() : num(x);
}

/* json_object_set_new that remembers an allocation failure. */
static void put(json_t *o, const char *k, json_t *v, bool *ok)
{
    if (!v || json_object_set_new(o, k, v) != 0)
        *ok = false;
}

static void append(json_t *a, json_t *v, bool *ok)
{
    if (!v || json_array_append_new(a, v) != 0)
        *ok = false;
}

static json_t *output_to_json(const struct verdict_output *o, bool *ok)
{
    const struct compare_report *r = &o->cmp;
    json_t *j = json_object(), *fm = json_array();
    if (!j || !fm) {
        json_decref(j);
        json_decref(fm);
        *ok = false;
        return NULL;
    }
    put(j, "name", text(o->name), ok);
    put(j, "pass", json_boolean(r->pass), ok);
    put(j, "reason", text(r->reason), ok);
    put(j, "count", json_integer((json_int_t)r->count), ok);
    put(j, "mismatches", json_integer((json_int_t)r->mismatches), ok);
    put(j, "unwritten", json_integer((json_int_t)r->unwritten), ok);
    put(j, "first_unwritten", json_integer((json_int_t)r->first_unwritten), ok);
    put(j, "max_abs_err", num(r->max_abs_err), ok);
    put(j, "max_rel_err", num(r->max_rel_err), ok);
    put(j, "rel_l2_err", num(r->rel_l2_err), ok);
    for (size_t i = 0; i < r->nreported && i < COMPARE_MAX_REPORTED; i++) {
        json_t *m = json_object();
        if (m) {
            put(m, "index", json_integer((json_int_t)r->first[i].index), ok);
            put(m, "out", num(r->first[i].out), ok);
            put(m, "ref", num(r->first[i].ref), ok);
        }
        append(fm, m, ok);
    }
    put(j, "first_mismatches", fm, ok);
    return j;
}

static json_t *timing_to_json(const struct stats_summary *t, bool *ok)
{
    json_t *j = json_object();
    if (!j) {
        *ok = false;
        return NULL;
    }
    put(j, "n", json_integer((json_int_t)t->n), ok);
    put(j, "median", num(t->median), ok);
    put(j, "mean", num(t->mean), ok);
    put(j, "min", num(t->min), ok);
    put(j, "max", num(t->max), ok);
    put(j, "p10", num(t->p10), ok);
    put(j, "p90", num(t->p90), ok);
    put(j, "stddev", num(t->stddev), ok);
    put(j, "rse", num(t->rse), ok);
    return j;
}

static json_t *case_to_json(const struct verdict_case *c, bool *ok)
{
    json_t *j = json_object(), *outs = json_array();
    if (!j || !outs) {
        json_decref(j);
        json_decref(outs);
        *ok = false;
        return NULL;
    }
    put(j, "case", text(c->name), ok);
    put(j, "set", json_integer(c->set), ok);
    put(j, "scored", json_boolean(c->scored), ok);
    put(j, "inputs_modified", json_boolean(c->inputs_modified), ok);
    put(j, "correct", json_boolean(c->correct), ok);
    put(j, "detail", text(c->detail), ok);
    for (size_t i = 0; i < c->noutputs && i < VERDICT_MAX_OUTPUTS; i++)
        append(outs, output_to_json(&c->outputs[i], ok), ok);
    put(j, "outputs", outs, ok);
    put(j, "timing", c->timed ? timing_to_json(&c->timing, ok) : json_null(), ok);
    put(j, "ref_median", num_or_null(c->ref_median_ms), ok);
    put(j, "baseline_ms", num_or_null(c->vendor_median_ms), ok);
    put(j, "speedup_vs_baseline", num_or_null(c->speedup_vendor), ok);
    put(j, "floor_ms", num_or_null(c->floor_ms), ok);
    put(j, "sol", num_or_null(c->sol), ok);
    return j;
}

enum kiln_rc verdict_to_json(const struct verdict *v, json_t **out, struct kiln_err *err)
{
    *out = NULL;
    const char *st = verdict_status_name(v->status);
    if (!st)
        return kiln_fail(err, KILN_E_INTERNAL, "verdict: status %d is not a known status",
                         (int)v->status);
    bool ok = true;
    json_t *j = json_object(), *cases = json_array();
    if (!j || !cases) {
        json_decref(j);
        json_decref(cases);
        return kiln_fail(err, KILN_E_NOMEM, "verdict: out of memory building JSON");
    }
    put(j, "version", json_integer(VERDICT_VERSION), &ok);
    put(j, "candidate", text(v->candidate), &ok);
    put(j, "status", json_string(st), &ok);
    put(j, "detail", text(v->detail), &ok);
    put(j, "summary", text(v->summary), &ok);
    put(j, "score_ms", num_or_null(v->score_ms), &ok);
    put(j, "sigma", num(v->sigma), &ok);
    put(j, "speedup_ref", num_or_null(v->speedup_ref), &ok);
    put(j, "speedup_vs_baseline", num_or_null(v->speedup_vendor), &ok);
    put(j, "sol", num_or_null(v->sol), &ok);
    put(j, "floor_unit", v->floor_unit[0] ? json_string(v->floor_unit) : json_null(), &ok);
    put(j, "needs_reverify", json_boolean(v->needs_reverify), &ok);
    put(j, "reverified", json_boolean(v->reverified), &ok);
    for (size_t i = 0; i < v->ncases; i++)
        append(cases, case_to_json(&v->cases[i], &ok), &ok);
    put(j, "cases", cases, &ok);
    if (v->rule.known) {
        const struct verdict_timing_rule *r = &v->rule;
        put(j, "timing_rule",
            json_pack("{s:s,s:i,s:i,s:i,s:o,s:o}", "rule", r->adaptive ? "adaptive" : "fixed",
                      "warmups", r->warmups, "iterations", r->iterations, "max_iterations",
                      r->max_iterations, "target_rse",
                      r->adaptive ? json_real(r->target_rse) : json_null(), "budget_ms",
                      r->adaptive ? json_real(r->budget_ms) : json_null()),
            &ok);
    }
    if (!ok) {
        /* json_string returns NULL for invalid UTF-8 as well as on ENOMEM. */
        json_decref(j);
        return kiln_fail(err, KILN_E_INTERNAL,
                         "verdict: could not build JSON (out of memory, or a name or detail "
                         "that is not UTF-8)");
    }
    *out = j;
    return KILN_OK;
}

json_t *verdict_case_ms_json(const struct verdict *v)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (!c->timed || !c->scored || json_object_get(o, c->name))
            continue;
        double sum = 0;
        int n = 0;
        for (size_t j = 0; j < v->ncases; j++)
            if (v->cases[j].timed && !strcmp(v->cases[j].name, c->name)) {
                sum += log(v->cases[j].timing.median);
                n++;
            }
        if (json_object_set_new(o, c->name, json_real(exp(sum / n))) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

enum kiln_rc verdict_to_text(const struct verdict *v, char **out, struct kiln_err *err)
{
    *out = NULL;
    json_t *j;
    enum kiln_rc rc = verdict_to_json(v, &j, err);
    if (rc)
        return rc;
    *out = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!*out)
        return kiln_fail(err, KILN_E_NOMEM, "verdict: out of memory writing JSON");
    return KILN_OK;
}

/* ---- JSON in ----------------------------------------------------------- */

/* The object must hold exactly `keys` (NULL-terminated). */
/* Exactly `keys`, plus `optional` when it is there (NULL: none). */
static enum kiln_rc exact_keys_opt(json_t *o, const char *const *keys, const char *const *optional,
                                   const char *what, struct kiln_err *err)
{
    if (!json_is_object(o))
        return kiln_fail(err, KILN_E_PARSE, "verdict: %s must be an object", what);
    size_t n = 0;
    for (size_t k = 0; optional && optional[k]; k++)
        n += json_object_get(o, optional[k]) != NULL;
    for (size_t k = 0; keys[k]; k++) {
        if (!json_object_get(o, keys[k]))
            return kiln_fail(err, KILN_E_PARSE, "verdict: %s lacks \"%s\"", what, keys[k]);
        n++;
    }
    if (json_object_size(o) != n)
        return kiln_fail(err, KILN_E_PARSE, "verdict: %s has keys besides the %zu known ones", what,
                         n);
    return KILN_OK;
}

static enum kiln_rc exact_keys(json_t *o, const char *const *keys, const char *what,
                               struct kiln_err *err)
{
    if (!json_is_object(o))
        return kiln_fail(err, KILN_E_PARSE, "verdict: %s must be an object", what);
    size_t n = 0;
    for (; keys[n]; n++) {
        if (!json_object_get(o, keys[n]))
            return kiln_fail(err, KILN_E_PARSE, "verdict: %s lacks \"%s\"", what, keys[n]);
    }
    if (json_object_size(o) != n)
        return kiln_fail(err, KILN_E_PARSE, "verdict: %s has keys besides the %zu known ones", what,
                         n);
    return KILN_OK;
}

/* A number, or "inf"/"-inf"/"nan"; null only when `null_ok` (read as 0). */
static enum kiln_rc get_num(json_t *o, const char *k, bool null_ok, double *out,
                            struct kiln_err *err)
{
    json_t *v = json_object_get(o, k);
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return KILN_OK;
    }
    if (json_is_null(v) && null_ok) {
        *out = 0.0;
        return KILN_OK;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "inf")) {
            *out = INFINITY;
            return KILN_OK;
        }
        if (!strcmp(s, "-inf")) {
            *out = -INFINITY;
            return KILN_OK;
        }
        if (!strcmp(s, "nan")) {
            *out = NAN;
            return KILN_OK;
        }
    }
    return kiln_fail(err, KILN_E_PARSE, "verdict: \"%s\" must be a number%s", k,
                     null_ok ? " or null" : "");
}

/* A number that must be >= 0 (infinity allowed, NaN not). */
static enum kiln_rc get_nonneg(json_t *o, const char *k, bool null_ok, double *out,
                               struct kiln_err *err)
{
    enum kiln_rc rc = get_num(o, k, null_ok, out, err);
    if (rc == KILN_OK && !(*out >= 0.0))
        return kiln_fail(err, KILN_E_REJECTED, "verdict: \"%s\" must be >= 0", k);
    return rc;
}

static enum kiln_rc get_count(json_t *o, const char *k, long long lo, long long hi, long long *out,
                              struct kiln_err *err)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        return kiln_fail(err, KILN_E_PARSE, "verdict: \"%s\" must be an integer", k);
    *out = json_integer_value(v);
    if (*out < lo || *out > hi)
        return kiln_fail(err, KILN_E_REJECTED, "verdict: \"%s\" is %lld, outside %lld .. %lld", k,
                         *out, lo, hi);
    return KILN_OK;
}

static enum kiln_rc get_bool(json_t *o, const char *k, bool *out, struct kiln_err *err)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_boolean(v))
        return kiln_fail(err, KILN_E_PARSE, "verdict: \"%s\" must be a boolean", k);
    *out = json_is_true(v);
    return KILN_OK;
}

static enum kiln_rc get_str(json_t *o, const char *k, char *dst, size_t cap, struct kiln_err *err)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v))
        return kiln_fail(err, KILN_E_PARSE, "verdict: \"%s\" must be a string", k);
    if (json_string_length(v) >= cap)
        return kiln_fail(err, KILN_E_LIMIT, "verdict: \"%s\" is longer than %zu bytes", k, cap - 1);
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return KILN_OK;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        enum kiln_rc rc_ = (x);                                                                    \
        if (rc_)                                                                                   \
            return rc_;                                                                            \
    } while (0)

static const char *const output_keys[] = {
    "name",        "pass",       "reason",           "count",
    "mismatches",  "unwritten",  "first_unwritten",  "max_abs_err",
    "max_rel_err", "rel_l2_err", "first_mismatches", NULL};

static enum kiln_rc output_from_json(json_t *j, struct verdict_output *o, struct kiln_err *err)
{
    struct compare_report *r = &o->cmp;
    long long x = 0;
    TRY(exact_keys(j, output_keys, "an output", err));
    TRY(get_str(j, "name", o->name, sizeof(o->name), err));
    TRY(get_bool(j, "pass", &r->pass, err));
    TRY(get_str(j, "reason", r->reason, sizeof(r->reason), err));
    TRY(get_count(j, "count", 0, INT64_MAX, &x, err));
    r->count = (size_t)x;
    TRY(get_count(j, "mismatches", 0, (long long)r->count, &x, err));
    r->mismatches = (size_t)x;
    TRY(get_count(j, "unwritten", 0, (long long)r->count, &x, err));
    r->unwritten = (size_t)x;
    TRY(get_count(j, "first_unwritten", -1, (long long)r->count - 1, &x, err));
    r->first_unwritten = x;
    TRY(get_nonneg(j, "max_abs_err", false, &r->max_abs_err, err));
    TRY(get_nonneg(j, "max_rel_err", false, &r->max_rel_err, err));
    TRY(get_nonneg(j, "rel_l2_err", false, &r->rel_l2_err, err));
    json_t *fm = json_object_get(j, "first_mismatches");
    if (!json_is_array(fm) || json_array_size(fm) > COMPARE_MAX_REPORTED)
        return kiln_fail(err, KILN_E_PARSE,
                         "verdict: \"first_mismatches\" must be an array of at most %d",
                         COMPARE_MAX_REPORTED);
    static const char *const mkeys[] = {"index", "out", "ref", NULL};
    for (size_t i = 0; i < json_array_size(fm); i++) {
        json_t *m = json_array_get(fm, i);
        TRY(exact_keys(m, mkeys, "a mismatch", err));
        TRY(get_count(m, "index", 0, INT64_MAX, &x, err));
        r->first[i].index = (size_t)x;
        TRY(get_num(m, "out", false, &r->first[i].out, err));
        TRY(get_num(m, "ref", false, &r->first[i].ref, err));
    }
    r->nreported = json_array_size(fm);
    return KILN_OK;
}

static const char *const timing_keys[] = {"n",   "median", "mean",   "min", "max",
                                          "p10", "p90",    "stddev", "rse", NULL};

static enum kiln_rc timing_from_json(json_t *j, struct stats_summary *t, struct kiln_err *err)
{
    long long x = 0;
    TRY(exact_keys(j, timing_keys, "a timing", err));
    TRY(get_count(j, "n", 1, INT64_MAX, &x, err));
    t->n = (size_t)x;
    TRY(get_nonneg(j, "median", false, &t->median, err));
    TRY(get_nonneg(j, "mean", false, &t->mean, err));
    TRY(get_nonneg(j, "min", false, &t->min, err));
    TRY(get_nonneg(j, "max", false, &t->max, err));
    TRY(get_nonneg(j, "p10", false, &t->p10, err));
    TRY(get_nonneg(j, "p90", false, &t->p90, err));
    TRY(get_nonneg(j, "stddev", false, &t->stddev, err));
    TRY(get_nonneg(j, "rse", false, &t->rse, err));
    return KILN_OK;
}

static const char *const case_keys[] = {
    "case",   "set",        "scored",      "inputs_modified",     "correct",  "detail", "outputs",
    "timing", "ref_median", "baseline_ms", "speedup_vs_baseline", "floor_ms", "sol",    NULL};

static enum kiln_rc case_from_json(json_t *j, struct verdict_case *c, struct kiln_err *err)
{
    long long x = 0;
    TRY(exact_keys(j, case_keys, "a case", err));
    TRY(get_str(j, "case", c->name, sizeof(c->name), err));
    TRY(get_count(j, "set", 0, 65535, &x, err));
    c->set = (int)x;
    TRY(get_bool(j, "scored", &c->scored, err));
    TRY(get_bool(j, "inputs_modified", &c->inputs_modified, err));
    TRY(get_bool(j, "correct", &c->correct, err));
    TRY(get_str(j, "detail", c->detail, sizeof(c->detail), err));
    json_t *outs = json_object_get(j, "outputs");
    if (!json_is_array(outs) || json_array_size(outs) > VERDICT_MAX_OUTPUTS)
        return kiln_fail(err, KILN_E_PARSE, "verdict: \"outputs\" must be an array of at most %d",
                         VERDICT_MAX_OUTPUTS);
    for (size_t i = 0; i < json_array_size(outs); i++)
        TRY(output_from_json(json_array_get(outs, i), &c->outputs[i], err));
    c->noutputs = json_array_size(outs);
    json_t *t = json_object_get(j, "timing");
    c->timed = !json_is_null(t);
    if (c->timed)
        TRY(timing_from_json(t, &c->timing, err));
    TRY(get_nonneg(j, "ref_median", true, &c->ref_median_ms, err));
    TRY(get_nonneg(j, "baseline_ms", true, &c->vendor_median_ms, err));
    TRY(get_nonneg(j, "speedup_vs_baseline", true, &c->speedup_vendor, err));
    TRY(get_nonneg(j, "floor_ms", true, &c->floor_ms, err));
    TRY(get_nonneg(j, "sol", true, &c->sol, err));
    return KILN_OK;
}

/* Top-level keys, in the order verdict_to_json writes them. */
static const char *const verdict_keys[] = {"version",
                                           "candidate",
                                           "status",
                                           "detail",
                                           "summary",
                                           "score_ms",
                                           "sigma",
                                           "speedup_ref",
                                           "speedup_vs_baseline",
                                           "sol",
                                           "needs_reverify",
                                           "reverified",
                                           "cases",
                                           NULL};

static const char *const rule_keys[] = {"rule",       "warmups",   "iterations", "max_iterations",
                                        "target_rse", "budget_ms", NULL};

static enum kiln_rc rule_from_json(json_t *j, struct verdict_timing_rule *r, struct kiln_err *err)
{
    char kind[16];
    long long w = 0, it = 0, mx = 0;
    TRY(exact_keys(j, rule_keys, "timing_rule", err));
    TRY(get_str(j, "rule", kind, sizeof(kind), err));
    if (strcmp(kind, "fixed") && strcmp(kind, "adaptive"))
        return kiln_fail(err, KILN_E_PARSE,
                         "verdict: timing_rule.rule \"%s\" is not fixed or "
                         "adaptive",
                         kind);
    r->adaptive = !strcmp(kind, "adaptive");
    TRY(get_count(j, "warmups", 0, HARNESS_PLAN_MAX_RUNS, &w, err));
    TRY(get_count(j, "iterations", 1, HARNESS_PLAN_MAX_RUNS, &it, err));
    TRY(get_count(j, "max_iterations", 1, HARNESS_PLAN_MAX_RUNS, &mx, err));
    TRY(get_nonneg(j, "target_rse", true, &r->target_rse, err));
    TRY(get_nonneg(j, "budget_ms", true, &r->budget_ms, err));
    r->warmups = (int)w;
    r->iterations = (int)it;
    r->max_iterations = (int)mx;
    r->known = true;
    return KILN_OK;
}

static enum kiln_rc root_from_json(json_t *j, struct verdict *v, struct kiln_err *err)
{
    long long x = 0;
    char st[32];
    /* Both newer than the format: a verdict written before them lacks them. */
    static const char *const optional[] = {"timing_rule", "floor_unit", NULL};
    TRY(exact_keys_opt(j, verdict_keys, optional, "the verdict", err));
    json_t *rule = json_object_get(j, "timing_rule");
    if (rule)
        TRY(rule_from_json(rule, &v->rule, err));
    json_t *unit = json_object_get(j, "floor_unit");
    enum gpu_unit u;
    if (unit && !json_is_null(unit) &&
        (!json_is_string(unit) || !gpu_unit_parse(json_string_value(unit), &u)))
        return kiln_fail(err, KILN_E_PARSE,
                         "verdict: \"floor_unit\" must be null or a unit name (fp32_simt, ...)");
    if (unit && json_is_string(unit))
        snprintf(v->floor_unit, sizeof(v->floor_unit), "%s", json_string_value(unit));
    json_t *ver = json_object_get(j, "version");
    if (json_is_integer(ver) && json_integer_value(ver) > VERDICT_VERSION)
        return kiln_fail(err, KILN_E_UNSUPPORTED,
                         "verdict: format version %lld is newer than this kiln reads (%d): use a "
                         "newer kiln",
                         (long long)json_integer_value(ver), VERDICT_VERSION);
    TRY(get_count(j, "version", VERDICT_VERSION, VERDICT_VERSION, &x, err));
    TRY(get_str(j, "candidate", v->candidate, sizeof(v->candidate), err));
    TRY(get_str(j, "status", st, sizeof(st), err));
    if (!verdict_status_from_name(st, &v->status))
        return kiln_fail(err, KILN_E_PARSE, "verdict: unknown status \"%s\"", st);
    TRY(get_str(j, "detail", v->detail, sizeof(v->detail), err));
    TRY(get_str(j, "summary", v->summary, sizeof(v->summary), err));
    TRY(get_nonneg(j, "score_ms", true, &v->score_ms, err));
    TRY(get_nonneg(j, "sigma", false, &v->sigma, err));
    TRY(get_nonneg(j, "speedup_ref", true, &v->speedup_ref, err));
    TRY(get_nonneg(j, "speedup_vs_baseline", true, &v->speedup_vendor, err));
    TRY(get_nonneg(j, "sol", true, &v->sol, err));
    TRY(get_bool(j, "needs_reverify", &v->needs_reverify, err));
    TRY(get_bool(j, "reverified", &v->reverified, err));
    json_t *cases = json_object_get(j, "cases");
    if (!json_is_array(cases))
        return kiln_fail(err, KILN_E_PARSE, "verdict: \"cases\" must be an array");
    size_t n = json_array_size(cases);
    if (n > VERDICT_MAX_CASES)
        return kiln_fail(err, KILN_E_LIMIT, "verdict: %zu cases, more than %d", n,
                         VERDICT_MAX_CASES);
    if (n) {
        v->cases = calloc(n, sizeof(*v->cases));
        if (!v->cases)
            return kiln_fail(err, KILN_E_NOMEM, "verdict: out of memory for %zu cases", n);
    }
    v->ncases = n;
    for (size_t i = 0; i < n; i++)
        TRY(case_from_json(json_array_get(cases, i), &v->cases[i], err));
    return KILN_OK;
}

enum kiln_rc verdict_from_json(const void *buf, size_t len, struct verdict *out,
                               struct kiln_err *err)
{
    verdict_init(out, "");
    static const struct json_strict_rules rules = {.max_bytes = VERDICT_MAX_JSON,
                                                   .max_depth = VERDICT_MAX_DEPTH};
    json_t *root;
    enum kiln_rc rc = json_strict_parse("verdict", buf, len, &rules, &root, err);
    if (rc)
        return rc;
    rc = root_from_json(root, out, err);
    json_decref(root);
    if (rc) {
        verdict_free(out);
        verdict_init(out, "");
    }
    return rc;
}

enum verdict_status verdict_status_of_failure(enum failure_kind k)
{
    switch (k) {
    case FK_TAMPERING:
    case FK_OUT_OF_BOUNDS:
    case FK_OVERWRITES_INPUTS:
    case FK_NONDETERMINISTIC:
    case FK_ALLOCATION_SLACK:
        return VERDICT_WRONG_ANSWER;
    case FK_TIMEOUT:
        return VERDICT_TIMEOUT;
    case FK_NONE:
    case FK_MODULE:
    case FK_LAUNCH_FAILED:
    case FK_CUDA_ERROR:
    case FK_UNAVAILABLE:
        return VERDICT_RUNTIME_ERROR;
    }
    return VERDICT_RUNTIME_ERROR;
}
