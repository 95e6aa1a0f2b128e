/*
 * opt_finalize.c - the end of a run: the held-out check of the best
 * candidates in rank order, best.cu|c with the winning configuration pinned,
 * summary.json, the report (heatmap.svg, report.html), the printed table.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "candidate.h"
#include "fsutil.h"
#include "opt_given.h"
#include "fastp.h"
#include "optimize_impl.h"
#include "rank.h"
#include "report.h"
#include "runrec.h"
#include "opt_pin.h"
#include "session.h"
#include "text.h"

static json_t *medians_json(const struct eval_medians *m)
{
    json_t *o = json_object();
    for (size_t i = 0; m && i < m->n; i++)
        json_object_set_new(o, m->cases[i].name, json_real(m->cases[i].ms));
    return o;
}

/* candidates/NNN/verdict.json once the held-out check has run: the
 * verdict as it ends (status, detail, summary, reverified; stage held_out
 * when it failed there), so the file says what summary.json and the final
 * table say. */
static enum kiln_rc record_held_out(struct opt_run *r, int cand, struct kiln_err *err)
{
    enum kiln_rc rc = opt_rewrite_verdict(r, (size_t)cand, err);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "recording candidate %s's held-out check", r->hist[cand].id);
    return rc;
}

/* How many passes finalize considers as contenders, by their speedups over
 * their own sessions' starting kernels (as many as the held-out check may
 * try): those timed in an earlier session (before an interruption) are
 * timed again; earlier ones past them are shown, never compared. */
#define OPT_RETIME_MAX 3

struct contender {
    size_t i;
    double speedup, ms;
};

/* Fastest first: the higher speedup over its session's start, else (no
 * start) the lower geomean; then the earlier candidate. */
static int contender_cmp(const void *pa, const void *pb)
{
    const struct contender *a = pa, *b = pb;
    if (a->speedup != b->speedup)
        return a->speedup > b->speedup ? -1 : 1;
    if (a->ms != b->ms)
        return a->ms < b->ms ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* One earlier pass timed again here: a full run in this session. */
static enum kiln_rc retime_one(struct opt_run *r, size_t i, struct kiln_err *err)
{
    const struct opt_attempt *a = &r->hist[i];
    if (!r->o.quiet && !r->o.json)
        opt_log(r,
                "kiln: timing %s again: it was timed in session %d, before an interruption; "
                "this session (%d) timed the start\n",
                a->id, r->timed_in[i], r->session);
    opt_progress(r, (int)r->n, "retime");
    struct eval_outcome o;
    memset(&o, 0, sizeof(o));
    enum kiln_rc rc = eval_session_run(r->s, a->id, r->sources[i], a->len,
                                       a->has_config ? a->config : NULL, &o, err);
    const struct eval_outcome *ref = eval_session_reference_outcome(r->s);
    if (rc == KILN_OK) {
        verdict_judge_ref(&o.v, ref ? &ref->v : NULL);
        rc = opt_record_retimed(r, i, &o, err);
    }
    eval_outcome_free(&o);
    return rc;
}

/* Every number the final table compares comes from this session: the
 * start and the baseline are timed here (resume deferred them), and so
 * are the passes of earlier sessions that could be the result; the rest
 * are marked not compared (rank.h), never mixed in. */
static enum kiln_rc one_session(struct opt_run *r, struct kiln_err *err)
{
    enum kiln_rc rc = opt_time_start(r, err);
    struct contender *c = calloc(r->n + 1, sizeof(*c));
    if (!c)
        return kiln_fail(err, KILN_E_NOMEM, "finalize: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->verdicts[i].status == VERDICT_PASS)
            c[n++] = (struct contender){i, r->verdicts[i].speedup_ref, r->verdicts[i].score_ms};
    qsort(c, n, sizeof(*c), contender_cmp);
    for (size_t k = 0; rc == KILN_OK && k < n && k < OPT_RETIME_MAX; k++)
        if (r->timed_in[c[k].i] != r->session)
            rc = retime_one(r, c[k].i, err);
    free(c);
    for (size_t i = 0; rc == KILN_OK && i < r->n; i++)
        r->verdicts[i].not_compared =
            r->verdicts[i].status == VERDICT_PASS && r->timed_in[i] != r->session;
    return rc;
}

/* The order in which opt_finalize() tries candidates on the held-out cases:
 * the ranking, with every pass allowed to rank. */
static enum kiln_rc held_out_order(const struct opt_run *r, struct rank_entry **order,
                                   struct kiln_err *err)
{
    *order = NULL;
    if (r->n == 0)
        return KILN_OK;
    struct verdict *v = malloc(r->n * sizeof(*v));
    if (!v)
        return kiln_fail(err, KILN_E_NOMEM, "finalize: out of memory");
    memcpy(v, r->verdicts, r->n * sizeof(*v)); /* shallow: only read by the ranking */
    for (size_t i = 0; i < r->n; i++)
        if (v[i].status == VERDICT_PASS)
            v[i].reverified = true;
    enum kiln_rc rc = rank_verdicts(v, r->n, NULL, order, err);
    free(v);
    return rc;
}

/* A ratio or JSON null when there is none (0 in C), never 0.0. */
static json_t *ratio_or_null(double x)
{
    return x > 0 ? json_real(x) : json_null();
}

/* The geometric mean of `m` over the performance cases; null unless every
 * one has a time. */
static json_t *geomean_over(const struct eval_medians *m, const json_t *perf_cases)
{
    double lsum = 0;
    size_t n = 0, want = json_array_size(perf_cases);
    for (size_t i = 0; m && i < want; i++)
        for (size_t k = 0; k < m->n; k++)
            if (!strcmp(m->cases[k].name, json_string_value(json_array_get(perf_cases, i)))) {
                lsum += log(m->cases[k].ms);
                n++;
            }
    return n > 0 && n == want ? json_real(exp(lsum / (double)n)) : json_null();
}

/* summary.json's "baseline": the vendor baseline's kind, status, reason and
 * per-case medians, plus their geometric mean over the performance cases
 * ("geomean_ms", null unless every one has a time); the torch baseline's
 * "compile" column likewise. */
static json_t *baseline_summary_json(const struct opt_run *r, const json_t *perf_cases)
{
    const struct eval_baseline *b = eval_session_baseline_result(r->s);
    struct eval_baseline none;
    memset(&none, 0, sizeof(none));
    none.kind = eval_session_workload(r->s)->baseline;
    json_t *j = eval_baseline_json(b ? b : &none);
    if (j)
        json_object_set_new(j, "geomean_ms", geomean_over(b ? &b->medians : NULL, perf_cases));
    json_t *compile = j ? json_object_get(j, "compile") : NULL;
    if (compile)
        json_object_set_new(compile, "geomean_ms",
                            geomean_over(b ? &b->compile : NULL, perf_cases));
    return j;
}

/* best.passed_over: one line per candidate that measured faster than the
 * result but was passed over, and why (rank_passed_over). */
static json_t *passed_over_json(const struct opt_run *r, const struct rank_pick *pick,
                                const struct verdict *start)
{
    json_t *a = json_array();
    char line[RANK_REASON_MAX + VERDICT_DETAIL_MAX];
    for (size_t i = 0; a && i < r->n; i++)
        if (rank_passed_over(r->verdicts, r->n, i, pick, start, NULL, line, sizeof(line)))
            json_array_append_new(
                a, json_pack("{s:s, s:s}", "candidate", r->hist[i].id, "reason", line));
    return a;
}

/* The unit whose peak fraction_of_floor was measured against, or null. */
static json_t *floor_unit_json(const struct verdict *v)
{
    return v->floor_unit[0] ? json_string(v->floor_unit) : json_null();
}

/* summary.json's best when no candidate beat the starting kernel: the
 * starting kernel itself (best.cu|c is its source). */
static json_t *start_best_json(const struct verdict *start, const char *why)
{
    return json_pack("{s:s, s:o, s:f, s:o, s:o, s:o, s:n, s:s, s:s}", "candidate", "start",
                     "geomean_ms", ratio_or_null(start->score_ms), "speedup_vs_reference", 1.0,
                     "speedup_vs_baseline", ratio_or_null(start->speedup_vendor),
                     "fraction_of_floor", ratio_or_null(start->sol), "floor_unit",
                     floor_unit_json(start), "held_out", "summary", why, "why", why);
}

/* Without --keep-inputs: the generated inputs and references go once the
 * summary is written (a run stopped before keeps them for kiln resume).
 * Only what the session generated: given/ is part of the record. */
static enum kiln_rc drop_inputs(struct opt_run *r, struct kiln_err *err)
{
    static const char *const dirs[] = {"work/inputs", "work/inputs-held"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char path[PATH_MAX];
        enum kiln_rc rc = runrec_path(&r->rr, dirs[i], path, sizeof(path), err);
        if (rc == KILN_OK && access(path, F_OK) == 0)
            rc = fs_remove_tree(path, err);
        if (rc != KILN_OK) {
            kiln_err_prefix(err, "removing the run's %s (--keep-inputs keeps it)", dirs[i]);
            return rc;
        }
    }
    return KILN_OK;
}

/* Under the final table: why the result is what it is, and why each
 * faster candidate was passed over. The lines may quote a candidate's
 * failure (compiler or harness text): escaped for the terminal. */
static void print_why(const struct rank_pick *pick, const json_t *passed_over)
{
    char text[(RANK_REASON_MAX + VERDICT_DETAIL_MAX) * 4];
    if (pick->best >= 0 || pick->start_kept)
        printf("  why: %s\n", text_escape_control(text, sizeof(text), pick->why));
    for (size_t i = 0; i < json_array_size(passed_over); i++) {
        const char *line =
            json_string_value(json_object_get(json_array_get(passed_over, i), "reason"));
        printf("  passed over: %s\n", text_escape_control(text, sizeof(text), line ? line : ""));
    }
}

/* What opt_finalize() works out, step by step, for best.cu|c, summary.json
 * and the printed table. */
struct final {
    const struct workload *wl;
    enum kiln_backend b;
    const struct eval_outcome *ref; /* the starting kernel's, or NULL */
    struct rank_pick pick;
    int top;  /* the best candidate, whether or not it beat the start */
    int best; /* the result: pick.best, -1 for none or the start kept */
    int generated;
    struct rank_entry *rank; /* every candidate in rank order */
    json_t *passed_over, *cases, *cands, *ranking, *candj, *bestj;
};

/* One candidate's held-out check: its verdict updated, and recorded. Sets
 * *best to it when it passes. */
static enum kiln_rc held_out_one(struct opt_run *r, int cand, int *best, struct kiln_err *err)
{
    struct eval_outcome held;
    memset(&held, 0, sizeof(held));
    enum kiln_rc rc =
        eval_session_held_out(r->s, r->hist[cand].id, r->sources[cand], r->hist[cand].len,
                              r->hist[cand].has_config ? r->hist[cand].config : NULL, &held, err);
    if (rc != KILN_OK) {
        eval_outcome_free(&held);
        return rc;
    }
    struct eval_outcome vis;
    memset(&vis, 0, sizeof(vis));
    vis.v = r->verdicts[cand];
    snprintf(vis.stage, sizeof(vis.stage), "pass");
    eval_session_apply_held_out(r->s, &vis, &held);
    r->verdicts[cand] = vis.v;
    if (vis.v.status != VERDICT_PASS) {
        r->hist[cand].status = vis.v.status;
        snprintf(r->hist[cand].stage, sizeof(r->hist[cand].stage), "held_out");
        text_copy_utf8(r->hist[cand].reason, sizeof(r->hist[cand].reason), vis.v.detail);
    } else {
        *best = cand;
    }
    eval_outcome_free(&held);
    return record_held_out(r, cand, err);
}

/* Held-out check in rank order (the order summary.json reports, noise-
 * aware: within noise the earlier candidate keeps its place), counting
 * passes that await re-verification as eligible since this check is their
 * re-verification. A failure there eliminates the candidate and the next
 * one is checked (at most three). *best: the one that passed, or -1. */
static enum kiln_rc check_held_out(struct opt_run *r, int *best, struct kiln_err *err)
{
    *best = -1;
    struct rank_entry *order = NULL;
    enum kiln_rc rc = held_out_order(r, &order, err);
    if (rc != KILN_OK)
        return rc;
    for (size_t k = 0, tries = 0; k < r->n && tries < 3 && *best < 0; k++) {
        int cand = (int)order[k].index;
        if (r->verdicts[cand].status != VERDICT_PASS)
            continue;
        if (r->verdicts[cand].reverified) { /* checked before an interruption */
            *best = cand;
            break;
        }
        tries++;
        if ((rc = held_out_one(r, cand, best, err)) != KILN_OK)
            break;
    }
    free(order);
    return rc;
}

/* The result: the best candidate after the check, and whether it beat the
 * starting kernel, which is a candidate too. */
static void pick_result(struct opt_run *r, struct final *f, int best, const struct rank_entry *rank)
{
    if (r->n && rank[0].place == 1 && r->verdicts[rank[0].index].reverified)
        best = (int)rank[0].index;
    f->ref = eval_session_reference_outcome(r->s);
    rank_pick_best(r->verdicts, r->n, best, f->ref ? &f->ref->v : NULL, NULL, &f->pick);
    f->top = best;
    f->best = f->pick.best;
}

/* summary.json's perf_cases: the performance cases this backend runs. */
static json_t *perf_cases_json(const struct workload *wl, enum kiln_backend b)
{
    json_t *cases = json_array();
    for (size_t c = 0; c < wl->ncases; c++)
        if (wl->cases[c].kind == WL_CASE_PERFORMANCE && (wl->cases[c].backends & b))
            json_array_append_new(cases, json_string(wl->cases[c].name));
    return cases;
}

/* One entry of summary.json's candidates. */
static json_t *candidate_json(const struct opt_run *r, size_t i)
{
    const struct verdict *v = &r->verdicts[i];
    /* A pass of an earlier session not timed again has no figure here. */
    bool pass = v->status == VERDICT_PASS && !v->not_compared;
    json_t *cj =
        json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "id", r->hist[i].id, "status",
                  verdict_status_name(r->hist[i].status), "stage", r->hist[i].stage, "reason",
                  r->hist[i].reason, "geomean_ms", ratio_or_null(pass ? v->score_ms : 0.0),
                  "speedup_vs_reference", ratio_or_null(pass ? v->speedup_ref : 0.0), "case_ms",
                  verdict_case_ms_json(v));
    /* A candidate failed at the held-out check keeps its visible times: no
     * speedup is claimed for it (null, as for every failure). */
    if (cj)
        json_object_set_new(cj, "speedup_vs_baseline",
                            ratio_or_null(pass ? v->speedup_vendor : 0.0));
    if (cj && v->not_compared)
        json_object_set_new(cj, "case_ms", json_null());
    if (cj) { /* which session timed it; compared: its figures are this session's */
        json_object_set_new(cj, "timing_session",
                            r->timed_in[i] ? json_integer(r->timed_in[i]) : json_null());
        json_object_set_new(cj, "compared", json_boolean(!v->not_compared));
        json_object_set_new(cj, "speedup_vs_reference_call",
                            pass && v->ref_call[0] ? json_string(v->ref_call) : json_null());
    }
    return cj;
}

/* summary.json's candidates (in id order) and ranking (in rank order). */
static void candidates_json(const struct opt_run *r, const struct rank_entry *rank, struct final *f)
{
    f->cands = json_array();
    f->ranking = json_array();
    for (size_t i = 0; i < r->n; i++) {
        json_array_append_new(f->cands, candidate_json(r, i));
        const struct verdict *rv = &r->verdicts[rank[i].index];
        json_array_append_new(f->ranking,
                              json_pack("{s:s, s:i, s:b, s:s, s:s}", "candidate",
                                        r->hist[rank[i].index].id, "place", rank[i].place, "tie",
                                        rank[i].tie, "status", verdict_status_name(rv->status),
                                        "reason", rank[i].reason));
    }
}

/* summary.json's best_candidate: the top candidate, or null. */
static json_t *best_candidate_json(const struct opt_run *r, int top)
{
    if (top < 0)
        return json_null();
    const struct verdict *v = &r->verdicts[top];
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:s, s:s}", "candidate", r->hist[top].id,
                     "geomean_ms", ratio_or_null(v->score_ms), "speedup_vs_reference",
                     ratio_or_null(v->speedup_ref), "speedup_vs_baseline",
                     ratio_or_null(v->speedup_vendor), "fraction_of_floor", ratio_or_null(v->sol),
                     "floor_unit", floor_unit_json(v), "held_out", "pass", "summary", v->summary);
}

/* best.cu|c: the result's source, the winner's configuration pinned (the
 * directives' defaults and #defines: opt_pin.h); and summary.json's best. */
static enum kiln_rc write_best(struct opt_run *r, struct final *f, struct kiln_err *err)
{
    char name[16];
    snprintf(name, sizeof(name), "best.%s", opt_ext_of(f->b));
    char *best_src = NULL;
    if (f->pick.start_kept) {
        f->bestj = start_best_json(&f->ref->v, f->pick.why);
        enum wl_file wf = f->b == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
        best_src = opt_pin_config(f->wl->files[wf].data, f->wl->files[wf].len, f->b, NULL, 0);
    } else if (f->best < 0) {
        f->bestj = json_null();
        return KILN_OK;
    } else {
        const struct opt_attempt *a = &r->hist[f->best];
        f->bestj = json_deep_copy(f->candj);
        json_object_set_new(f->bestj, "why", json_string(f->pick.why));
        const char *src = r->sources[f->best];
        best_src =
            opt_pin_config(src, strlen(src), f->b, a->config, a->has_config ? a->nconfig : 0);
    }
    if (!best_src)
        return kiln_fail(err, KILN_E_NOMEM, "writing %s", name);
    enum kiln_rc rc = runrec_write(&r->rr, name, best_src, strlen(best_src), err);
    free(best_src);
    return rc;
}

/* summary.json; takes f's cases, cands, ranking, candj and bestj (NULL
 * when out of memory). */
static json_t *summary_json(struct opt_run *r, struct final *f)
{
    char runname[32];
    snprintf(runname, sizeof(runname), "run-%03d", r->rr.number);
    const struct eval_outcome *ref = f->ref;
    json_t *summary = json_pack(
        "{s:i, s:s, s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:I}", "version", SUMMARY_VERSION,
        "run", runname, "workload", f->wl->name, "backend", kiln_backend_name(f->b),
        "reference_generated_by_model", f->generated, "perf_cases", f->cases, "reference_ms",
        medians_json(ref ? &ref->medians : NULL), "reference_geomean_ms",
        ratio_or_null(ref ? ref->v.score_ms : 0.0), "best", f->bestj, "candidates", f->cands,
        "ranking", f->ranking, "held_out_seed", (json_int_t)eval_session_secret_seed(r->s));
    if (summary) {
        json_object_set_new(summary, "best_candidate", f->candj);
        f->candj = NULL;
    }
    json_decref(f->candj);
    f->candj = NULL;
    if (!summary)
        return NULL; /* json_pack took the "o" values, freed with it */
    json_object_set_new(summary, "baseline",
                        baseline_summary_json(r, json_object_get(summary, "perf_cases")));
    if (json_is_object(f->bestj))
        json_object_set(f->bestj, "passed_over", f->passed_over);
    opt_given_add_json(&r->given, summary);
    /* The session every compared figure comes from (the start's too). */
    json_object_set_new(summary, "timing_session", json_integer(r->session));
    /* The starting kernel's file; null when the workload has none (then
     * every speedup_vs_reference is null: there is nothing to compare). */
    json_object_set_new(summary, "starting_kernel",
                        ref ? json_string(workload_file_name(workload_kernel_file(f->b)))
                            : json_null());
    /* The drawn held-out sizes, recorded only now that the check is over. */
    const struct heldout_set *draw = eval_session_held_out_draw(r->s);
    json_object_set_new(summary, "held_out_draw", draw ? heldout_json(f->wl, draw) : json_null());
    return summary;
}

/* A candidate's place in the ranking as the table shows it: "2", "3="
 * (within the noise of the one ranked just above: a tie the earlier
 * candidate wins), "-" when it does not rank. */
static void place_text(const struct final *f, size_t n, size_t i, char *out, size_t cap)
{
    snprintf(out, cap, "-");
    for (size_t k = 0; f->rank && k < n; k++)
        if (f->rank[k].index == i && f->rank[k].place > 0)
            snprintf(out, cap, "%d%s", f->rank[k].place, f->rank[k].tie ? "=" : "");
}

/* The table's candidate rows. The note is the model's rationale, the
 * reason may quote the compiler or the candidate: escaped for the
 * terminal. A pass of an earlier session not timed again shows no
 * figure: every number in the table is this session's. */
static void print_candidate_rows(const struct opt_run *r, const struct final *f)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct verdict *v = &r->verdicts[i];
        char g[32] = "-", sp[32] = "-", place[16], old[128] = "";
        if (v->status == VERDICT_PASS && !v->not_compared) {
            snprintf(g, sizeof(g), "%.4f", v->score_ms);
            if (v->speedup_ref > 0)
                snprintf(sp, sizeof(sp), "%.2fx", v->speedup_ref);
        }
        if (v->not_compared)
            snprintf(old, sizeof(old),
                     "not compared: timed in session %d (before an interruption), not again; ",
                     r->timed_in[i]);
        place_text(f, r->n, i, place, sizeof(place));
        char stage[sizeof(r->hist[i].stage) * 4], text[sizeof(r->hist[i].reason) * 4];
        printf("  %-4s %-18s %-9s %12s %9s %5s  %s%s%s\n", r->hist[i].id,
               verdict_status_name(r->hist[i].status),
               text_escape_control(stage, sizeof(stage), r->hist[i].stage), g, sp, place,
               (int)i == f->best ? "BEST " : "", old,
               text_escape_control(text, sizeof(text),
                                   r->hist[i].status == VERDICT_PASS ? r->hist[i].note
                                                                     : r->hist[i].reason));
    }
}

/* Under the table, when it shows one: what "2=" means. */
static void print_tie_legend(const struct final *f, size_t n)
{
    for (size_t k = 0; f->rank && k < n; k++)
        if (f->rank[k].tie) {
            printf("  rank N=: within the measured noise of the candidate ranked just above it (a "
                   "tie: the earlier candidate keeps the higher place)\n");
            return;
        }
}

/* The final table on stdout: the start, every candidate, why, the result. */
static void print_table(struct opt_run *r, const struct final *f)
{
    const char *ext = opt_ext_of(f->b);
    if (r->tty && r->status[0])
        fputc('\n', stderr);
    r->status[0] = '\0';
    printf("kiln optimize %s (%s): %zu candidates, results in %s\n", f->wl->name,
           kiln_backend_name(f->b), r->n, r->rr.dir);
    if (f->generated)
        printf("  reference generated by the model: not an independent oracle\n");
    printf("  %-4s %-18s %-9s %12s %9s %5s  %s\n", "id", "status", "stage", "geomean ms",
           "vs start", "rank", "note");
    if (f->ref)
        printf("  %-4s %-18s %-9s %12.4f %9s %5s  %sthe starting kernel\n", "ref", "pass", "-",
               f->ref->v.score_ms, "1.00x", "-", f->pick.start_kept ? "BEST " : "");
    else
        printf("  (no starting kernel: speedups are not computed)\n");
    print_candidate_rows(r, f);
    print_tie_legend(f, r->n);
    print_why(&f->pick, f->passed_over);
    char sum[sizeof(r->verdicts[0].summary) * 4];
    if (f->pick.start_kept)
        printf("best: the starting kernel, kept; written to %s/best.%s\n", r->rr.dir, ext);
    else if (f->best >= 0)
        printf("best: candidate %s, %s; written to %s/best.%s\n", r->hist[f->best].id,
               text_escape_control(sum, sizeof(sum), r->verdicts[f->best].summary), r->rr.dir, ext);
    else
        printf("no candidate passed every check (see %s/report.html)\n", r->rr.dir);
}

enum kiln_rc opt_finalize(struct opt_run *r, struct kiln_err *err)
{
    opt_progress(r, (int)r->n, "finalize");
    struct final f = {.wl = eval_session_workload(r->s), .b = eval_session_backend(r->s)};
    int best;
    enum kiln_rc rc = one_session(r, err);
    if (rc == KILN_OK)
        rc = check_held_out(r, &best, err);
    if (rc == KILN_OK)
        rc = rank_verdicts(r->verdicts, r->n, NULL, &f.rank, err);
    if (rc != KILN_OK)
        return rc;
    pick_result(r, &f, best, f.rank);
    f.passed_over = passed_over_json(r, &f.pick, f.ref ? &f.ref->v : NULL);
    f.cases = perf_cases_json(f.wl, f.b);
    candidates_json(r, f.rank, &f);
    f.candj = best_candidate_json(r, f.top);
    rc = write_best(r, &f, err);
    if (rc == KILN_OK) /* every timing (held-out included) is done */
        rc = opt_record_environment(r, "after_timing", err);
    f.generated = r->generated || f.wl->provenance == WL_PROVENANCE_MODEL;
    json_t *summary = summary_json(r, &f);
    if (rc == KILN_OK && !summary)
        rc = kiln_fail(err, KILN_E_NOMEM, "summary.json");
    if (rc == KILN_OK)
        rc = runrec_write_json(&r->rr, "summary.json", summary, err);
    if (rc == KILN_OK)
        rc = report_write_run(&r->rr, err);
    if (rc == KILN_OK && !r->o.keep_inputs)
        rc = drop_inputs(r, err);
    if (rc == KILN_OK && r->o.json)
        json_dumpf(summary, stdout, JSON_INDENT(2)), putchar('\n');
    if (rc == KILN_OK && !r->o.json)
        print_table(r, &f);
    json_decref(summary);
    json_decref(f.passed_over);
    free(f.rank);
    return rc;
}
