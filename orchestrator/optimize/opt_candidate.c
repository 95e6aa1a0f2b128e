/*
 * opt_candidate.c - one candidate in steps (optimize_impl.h): propose, write
 * its proposal, evaluate (compile, run, verify, score), record it, feed the
 * proposer back; and the loop that runs them one at a time (--jobs 1;
 * optimize_jobs.c runs them in a window), then finalizes.
 */
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "candidate.h"
#include "digest.h"
#include "fdio.h"
#include "fsutil.h"
#include "hwdesc.h"
#include "opt_profile.h"
#include "optimize_impl.h"
#include "rank.h"
#include "runrec.h"
#include "session.h"
#include "text.h"

/* The plog sink: on a terminal the status line is cleared first and
 * redrawn after, so the two never share a row. All of it goes out in one
 * write(2): input generation logs from several worker processes at once,
 * and three writes of theirs could interleave into "status" + "kiln: ..."
 * on one row (seen in CI). */
static void log_line(void *ctx, const char *text)
{
    struct opt_run *r = ctx;
    bool redraw = r->tty && r->status[0];
    char buf[2048];
    int n = snprintf(buf, sizeof(buf), "%s%s%s", redraw ? "\r\033[K" : "", text,
                     redraw ? r->status : "");
    if (n < 0)
        return;
    fflush(stderr);
    (void)fd_write_all_errno(STDERR_FILENO, buf,
                             (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void opt_log_init(struct opt_run *r)
{
    r->log = (struct plog){.line = log_line, .ctx = r};
}

void opt_log(struct opt_run *r, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    log_line(r, text);
}

void opt_progress(struct opt_run *r, int it, const char *stage)
{
    if (r->o.quiet || r->o.json)
        return;
    /* With --jobs N a later candidate can report before an earlier one. */
    if (it > r->shown_it)
        r->shown_it = it;
    /* The best is never slower than the start: the start until a candidate
     * of this timing session beat it beyond noise (opt_finish). */
    char best[64] = "none yet";
    const struct eval_outcome *ref = r->s ? eval_session_reference_outcome(r->s) : NULL;
    if (r->best >= 0 && r->timed_in[r->best] == r->session)
        snprintf(best, sizeof(best), "%s %.4g ms", r->hist[r->best].id,
                 r->hist[r->best].geomean_ms);
    else if (ref && ref->v.score_ms > 0)
        snprintf(best, sizeof(best), "start %.4g ms", ref->v.score_ms);
    char line[sizeof(r->status)];
    snprintf(line, sizeof(line), "[%d/%d] %-8s best: %-20s %6.1f s", r->shown_it, opt_budget(r),
             stage, best, opt_now_s() - r->t0);
    if (r->tty) {
        snprintf(r->status, sizeof(r->status), "%s", line);
        fprintf(stderr, "\r\033[K%s", line);
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

static void attempt_feedback(struct opt_attempt *a, const struct eval_outcome *o)
{
    size_t off = (size_t)snprintf(a->feedback, sizeof(a->feedback), "%s", o->v.summary);
    for (size_t k = 0; k < o->compile.nkernels && off < sizeof(a->feedback); k++) {
        const struct compile_kernel_usage *u = &o->compile.kernels[k];
        off += (size_t)snprintf(a->feedback + off, sizeof(a->feedback) - off,
                                "; %s: %d registers, %d B smem, %d B spilled", u->name,
                                u->registers, u->smem_bytes, u->spill_stores);
    }
    if (o->v.status == VERDICT_COMPILE_ERROR && o->compile.diagnostics && off < sizeof(a->feedback))
        snprintf(a->feedback + off, sizeof(a->feedback) - off, "; compiler: %.500s",
                 compile_first_error(o->compile.diagnostics));
    utf8_trim_partial(a->feedback); /* the prompt must stay UTF-8 */
}

/* The log as kept: all of it when it fits the file cap and the run's
 * budget; else its head and tail around a line saying what was cut; past
 * the budget only that line. head/tail are the file's first and last
 * bytes (all of it in head when tail_len is 0); `orig` its size. */
static char *cut_log(struct opt_run *r, const char *head, size_t head_len, const char *tail,
                     size_t tail_len, size_t orig, size_t *out_len)
{
    size_t left = r->log_bytes < OPT_LOG_RUN_MAX ? OPT_LOG_RUN_MAX - r->log_bytes : 0;
    size_t cap = left < OPT_LOG_FILE_MAX ? left : OPT_LOG_FILE_MAX;
    char note[256];
    int nl;
    size_t keep_head = 0, keep_tail = 0;
    if (orig <= cap && tail_len == 0) {
        keep_head = orig;
        nl = 0;
        note[0] = '\0';
    } else if (cap >= 4096) {
        keep_head = (cap - 256) / 2 < head_len ? (cap - 256) / 2 : head_len;
        const char *src = tail_len ? tail : head;
        size_t src_len = tail_len ? tail_len : head_len;
        keep_tail = (cap - 256) / 2 < src_len ? (cap - 256) / 2 : src_len;
        tail = src + src_len - keep_tail;
        nl = snprintf(note, sizeof(note),
                      "\n[kiln: log truncated: %zu bytes, of which the first %zu and the last "
                      "%zu are kept (at most %u KiB per log, %u MiB per run)]\n",
                      orig, keep_head, keep_tail, OPT_LOG_FILE_MAX >> 10, OPT_LOG_RUN_MAX >> 20);
    } else {
        nl = snprintf(note, sizeof(note),
                      "[kiln: log not kept: %zu bytes; the run's log budget of %u MiB is spent]\n",
                      orig, OPT_LOG_RUN_MAX >> 20);
    }
    size_t n = keep_head + (size_t)nl + keep_tail;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    memcpy(out, head, keep_head);
    memcpy(out + keep_head, note, (size_t)nl);
    if (keep_tail)
        memcpy(out + keep_head + (size_t)nl, tail, keep_tail);
    out[n] = '\0';
    *out_len = n;
    r->log_bytes += n;
    return out;
}

/* Keeps a log of the candidate's scratch (never through a link; a log of
 * any size is read as its head and tail only). */
static void keep_log_file(struct opt_run *r, const char *from_dir, const char *name, const char *id)
{
    char path[PATH_MAX + 32], rel[96];
    snprintf(path, sizeof(path), "%s/%s", from_dir, name);
    snprintf(rel, sizeof(rel), "candidates/%s/%s", id, name);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return;
    }
    size_t size = (size_t)st.st_size, part = OPT_LOG_FILE_MAX;
    bool whole = size <= part;
    char *head = malloc(whole ? size + 1 : part), *tail = whole ? NULL : malloc(part);
    ssize_t hn = head ? pread(fd, head, whole ? size : part, 0) : -1;
    ssize_t tn = tail ? pread(fd, tail, part, (off_t)(size - part)) : 0;
    close(fd);
    if (hn >= 0 && tn >= 0 && (whole || tail)) {
        size_t len = 0;
        char *kept =
            cut_log(r, head, (size_t)hn, tail, (size_t)tn, whole ? (size_t)hn : size, &len);
        struct kiln_err e;
        kiln_err_clear(&e);
        if (kept)
            (void)(runrec_write(&r->rr, rel, kept, len, &e) == KILN_OK);
        free(kept);
    }
    free(head);
    free(tail);
}

/* Copies a JSON file the harness returned (timings.json, status.json) into
 * the candidate's record. The sandbox lets it grow to TIMINGS_MAX_BYTES, and
 * a candidate shares the harness's process on the cpu backend: a passing
 * candidate's is kept up to OPT_JSON_PASS_MAX (a legitimate one is KBs), a
 * failed one's up to OPT_LOG_FILE_MAX, both within the run's log budget.
 * A JSON document cut in two would not parse: one over its cap is not
 * kept, and candidates/NNN/cut.txt says which file, how big, and why. */
static void keep_json_file(struct opt_run *r, const char *from_dir, const char *name,
                           const char *id, bool passed)
{
    char path[PATH_MAX + 32], rel[96];
    snprintf(path, sizeof(path), "%s/%s", from_dir, name);
    snprintf(rel, sizeof(rel), "candidates/%s/%s", id, name);
    size_t left = r->log_bytes < OPT_LOG_RUN_MAX ? OPT_LOG_RUN_MAX - r->log_bytes : 0;
    size_t cap = passed ? OPT_JSON_PASS_MAX : OPT_LOG_FILE_MAX;
    cap = cap < left ? cap : left;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    struct kiln_err e;
    kiln_err_clear(&e);
    if ((size_t)st.st_size > cap) {
        char note[512];
        int n = snprintf(note, sizeof(note),
                         "%s not kept: %lld bytes, over the %zu KiB kiln keeps of it for a %s "
                         "candidate (run budget %u MiB; results/README.md \"Log limits\")\n",
                         name, (long long)st.st_size, cap >> 10, passed ? "passing" : "failed",
                         OPT_LOG_RUN_MAX >> 20);
        snprintf(rel, sizeof(rel), "candidates/%s/cut.txt", id);
        char *old = NULL, *both = NULL;
        size_t olen = 0;
        if (runrec_read(&r->rr, rel, 64u << 10, &old, &olen, &e) != KILN_OK)
            olen = 0;
        kiln_err_clear(&e);
        both = malloc(olen + (size_t)n);
        if (both) {
            if (olen)
                memcpy(both, old, olen);
            memcpy(both + olen, note, (size_t)n);
            (void)(runrec_write(&r->rr, rel, both, olen + (size_t)n, &e) == KILN_OK);
        }
        free(old);
        free(both);
        return;
    }
    char *data;
    size_t len;
    if (fs_read_file(path, cap, &data, &len, &e) == KILN_OK) {
        r->log_bytes += len;
        (void)(runrec_write(&r->rr, rel, data, len, &e) == KILN_OK);
        free(data);
    }
}

static json_t *config_json(const struct opt_attempt *a, const char *src, enum kiln_backend b)
{
    json_t *c = json_object();
    if (!c || !a->has_config || !src)
        return c;
    /* The tunables' names come from the source; a source that does not
     * parse gives an empty object (its failure is recorded elsewhere). */
    struct candidate *cand = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (candidate_parse(src, strlen(src), b, &cand, &e) == KILN_OK)
        for (size_t i = 0; i < cand->ntunables && i < a->nconfig; i++)
            json_object_set_new(c, cand->tunables[i].name, json_integer(a->config[i]));
    candidate_free(cand);
    return c;
}

/* A new best: a pass faster than the starting kernel of its session
 * beyond noise (so the best is never slower than the start) and than the
 * best so far (by their speedups over their sessions' starts). */
static bool improves(const struct opt_run *r, const struct verdict *v)
{
    if (v->status != VERDICT_PASS)
        return false;
    const struct eval_outcome *ref = eval_session_reference_outcome(r->s);
    if (ref && rank_vs_start(v, &ref->v, NULL) <= 0)
        return false;
    return r->best < 0 || rank_compare(&r->verdicts[r->best], v, NULL) > 0;
}

/* The finished candidate as r's next attempt; it takes o's verdict. */
static struct opt_attempt *record_attempt(struct opt_run *r, int it, const struct proposal *p,
                                          struct eval_outcome *o)
{
    struct opt_attempt *a = &r->hist[r->n];
    memset(a, 0, sizeof(*a));
    snprintf(a->id, sizeof(a->id), "%03d", it);
    a->status = o->v.status;
    snprintf(a->stage, sizeof(a->stage), "%s", o->stage);
    /* Cut on characters: these go into history.json and the next prompt. */
    text_copy_utf8(a->reason, sizeof(a->reason), o->v.detail);
    text_copy_utf8(a->note, sizeof(a->note), p->note);
    a->geomean_ms = o->v.status == VERDICT_PASS ? o->v.score_ms : 0;
    a->has_config = p->has_config;
    a->nconfig = p->nconfig;
    memcpy(a->config, p->config, sizeof(a->config));
    attempt_feedback(a, o);
    r->sources[r->n] = p->source ? strdup(p->source) : NULL;
    a->source = r->sources[r->n];
    a->len = p->source ? p->len : 0;
    /* Resume records a finished candidate as its record says. */
    a->improved = r->replayed ? r->replayed->improved : improves(r, &o->v);
    r->timed_in[r->n] = a->status != VERDICT_PASS ? 0
                        : r->replayed             ? r->replayed->session
                                                  : r->session;
    r->verdicts[r->n] = o->v; /* takes ownership of the cases */
    memset(&o->v, 0, sizeof(o->v));
    return a;
}

/* candidates/NNN/verdict.json: the verdict with kiln's own keys. */
static enum kiln_rc write_verdict(struct opt_run *r, const struct opt_attempt *a,
                                  const struct proposal *p, const struct eval_outcome *o,
                                  struct kiln_err *err)
{
    char rel[96];
    json_t *vj = NULL;
    enum kiln_rc rc = verdict_to_json(&r->verdicts[r->n], &vj, err);
    if (rc == KILN_OK) {
        json_object_set_new(vj, "stage", json_string(a->stage));
        json_object_set_new(vj, "proposer", json_string(proposer_name(r->prop)));
        json_object_set_new(vj, "note", json_string(p->note));
        json_object_set_new(vj, "config", config_json(a, p->source, eval_session_backend(r->s)));
        json_object_set_new(vj, "turnaround_s", eval_turnaround_json(&o->t));
        json_object_set_new(vj, "ran_on", eval_ran_on_json(o));
        json_object_set_new(vj, "arch", eval_arch_json(o));
        if (r->timed_in[r->n] > 0) /* which start its speedups divide (opt_run.session) */
            json_object_set_new(vj, "timing_session", json_integer(r->timed_in[r->n]));
        snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", a->id);
        rc = runrec_write_json(&r->rr, rel, vj, err);
    }
    json_decref(vj);
    return rc;
}

/* candidates/NNN/compile.log and compile.json, when it compiled. */
static enum kiln_rc write_compile(struct opt_run *r, const struct opt_attempt *a,
                                  const struct eval_outcome *o, struct kiln_err *err)
{
    char rel[96];
    enum kiln_rc rc = KILN_OK;
    if (o->compile.diagnostics) {
        size_t dl = strlen(o->compile.diagnostics), kl = 0;
        char *kept = cut_log(r, o->compile.diagnostics, dl, NULL, 0, dl, &kl);
        snprintf(rel, sizeof(rel), "candidates/%s/compile.log", a->id);
        rc = kept ? runrec_write(&r->rr, rel, kept, kl, err)
                  : kiln_fail(err, KILN_E_NOMEM, "keeping %s", rel);
        free(kept);
    }
    if (rc == KILN_OK && o->compile.started > 0) {
        /* When and how it compiled (in a worker with --jobs). */
        char *cj = NULL;
        snprintf(rel, sizeof(rel), "candidates/%s/compile.json", a->id);
        rc = compile_result_to_json(&o->compile, &cj, err);
        if (rc == KILN_OK)
            rc = runrec_write(&r->rr, rel, cj, strlen(cj), err);
        free(cj);
    }
    return rc;
}

/* What the harness left is kept within the log budget, then its scratch
 * removed. Returns the --profile record of a new best (NULL if none or
 * when ok is false). */
static json_t *keep_outputs(struct opt_run *r, const struct opt_attempt *a,
                            const struct eval_outcome *o, bool ok)
{
    char cdir[PATH_MAX];
    eval_session_candidate_dir(r->s, a->id, false, cdir, sizeof(cdir));
    char run_out[PATH_MAX + 8];
    snprintf(run_out, sizeof(run_out), "%s/run", cdir);
    keep_json_file(r, run_out, "timings.json", a->id, a->status == VERDICT_PASS);
    keep_json_file(r, run_out, "status.json", a->id, a->status == VERDICT_PASS);
    keep_log_file(r, run_out, "log.txt", a->id);
    /* --profile: a new best is profiled while its scratch still exists. */
    json_t *prof =
        ok ? opt_profile_on_record(r->op, a->id, a->improved, cdir, o->compile.artifact) : NULL;
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    (void)(fs_remove_tree(cdir, &ignore) == KILN_OK); /* big outputs: not kept */
    /* Its held-out check's scratch too: one per candidate, they add up. */
    eval_session_candidate_dir(r->s, a->id, true, cdir, sizeof(cdir));
    (void)(fs_remove_tree(cdir, &ignore) == KILN_OK);
    return prof;
}

enum kiln_rc opt_rewrite_verdict(struct opt_run *r, size_t i, struct kiln_err *err)
{
    char rel[96];
    snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", r->hist[i].id);
    json_t *old = NULL, *vj = NULL;
    enum kiln_rc rc = runrec_read_json(&r->rr, rel, VERDICT_MAX_JSON, &old, err);
    if (rc == KILN_OK)
        rc = verdict_to_json(&r->verdicts[i], &vj, err);
    if (rc == KILN_OK) {
        const char *key;
        json_t *val;
        json_object_foreach(old, key, val)
        {
            if (!json_object_get(vj, key))
                json_object_set(vj, key, val);
        }
        json_object_set_new(vj, "stage", json_string(r->hist[i].stage));
        if (r->timed_in[i] > 0)
            json_object_set_new(vj, "timing_session", json_integer(r->timed_in[i]));
        else
            json_object_del(vj, "timing_session");
        rc = runrec_write_json(&r->rr, rel, vj, err);
    }
    json_decref(vj);
    json_decref(old);
    return rc;
}

enum kiln_rc opt_record_retimed(struct opt_run *r, size_t i, struct eval_outcome *o,
                                struct kiln_err *err)
{
    struct opt_attempt *a = &r->hist[i];
    verdict_free(&r->verdicts[i]);
    r->verdicts[i] = o->v; /* takes ownership of the cases */
    memset(&o->v, 0, sizeof(o->v));
    const struct verdict *v = &r->verdicts[i];
    a->status = v->status;
    snprintf(a->stage, sizeof(a->stage), "%s", o->stage);
    text_copy_utf8(a->reason, sizeof(a->reason), v->detail);
    a->geomean_ms = v->status == VERDICT_PASS ? v->score_ms : 0;
    r->timed_in[i] = v->status == VERDICT_PASS ? r->session : 0;
    enum kiln_rc rc = opt_rewrite_verdict(r, i, err);
    json_decref(keep_outputs(r, a, o, false)); /* the new samples replace the old */
    if (rc != KILN_OK)
        kiln_err_prefix(err, "recording candidate %s timed again", a->id);
    return rc;
}

/* The attempt counted, and its entry appended to history.json; takes prof. */
static enum kiln_rc append_history(struct opt_run *r, int it, const struct opt_attempt *a,
                                   const struct proposal *p, json_t *prof, struct kiln_err *err)
{
    if (a->improved)
        r->best = (int)r->n;
    r->n++;
    json_t *h =
        json_pack("{s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s?, s:o, s:f}", "version",
                  RUNREC_HISTORY_VERSION, "iteration", it, "candidate", a->id, "proposer",
                  proposer_name(r->prop), "note", p->note, "status", verdict_status_name(a->status),
                  "stage", a->stage, "reason", a->reason, "improved", a->improved, "best",
                  r->best >= 0 ? r->hist[r->best].id : NULL, "geomean_ms",
                  a->geomean_ms > 0 ? json_real(a->geomean_ms) : json_null(), "elapsed_s",
                  opt_now_s() - r->t0);
    if (!h) {
        json_decref(prof);
        return kiln_fail(err, KILN_E_NOMEM, "history entry");
    }
    if (prof)
        json_object_set_new(h, "profile", prof);
    if (p->cost_usd >= 0)
        json_object_set_new(h, "cost_usd", json_real(p->cost_usd));
    if (p->prompt_tokens >= 0)
        json_object_set_new(h, "tokens",
                            json_pack("{s:I, s:I}", "prompt", (json_int_t)p->prompt_tokens,
                                      "completion", (json_int_t)p->completion_tokens));
    json_array_append_new(r->history, h);
    return runrec_write_json(&r->rr, "history.json", r->history, err);
}

/* Records one finished candidate, then appends its history entry. */
static enum kiln_rc record(struct opt_run *r, int it, const struct proposal *p,
                           struct eval_outcome *o, struct kiln_err *err)
{
    struct opt_attempt *a = record_attempt(r, it, p, o);
    enum kiln_rc rc = write_verdict(r, a, p, o, err);
    if (rc == KILN_OK)
        rc = write_compile(r, a, o, err);
    json_t *prof = keep_outputs(r, a, o, rc == KILN_OK);
    if (rc != KILN_OK) {
        json_decref(prof);
        return rc;
    }
    return append_history(r, it, a, p, prof, err);
}

/* ---- one candidate in steps (optimize_jobs.c runs them in a window) ---- */

enum kiln_rc opt_propose(struct opt_run *r, int it, bool replaying, struct proposal *p,
                         bool *exhausted, struct kiln_err *err)
{
    const struct workload *wl = eval_session_workload(r->s);
    enum wl_file sf =
        eval_session_backend(r->s) == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
    struct opt_state st = {.wl = wl,
                           .backend = eval_session_backend(r->s),
                           .start_source = wl->files[sf].data,
                           .start_len = wl->files[sf].len,
                           .best = r->best >= 0 ? &r->hist[r->best] : NULL,
                           .history = r->hist,
                           .nhistory = r->n,
                           .reference = eval_session_reference_outcome(r->s),
                           .iteration = it,
                           .max_iterations = opt_budget(r),
                           .profile = opt_profile_text(r->op),
                           .findings = r->findings.text};
    if (!r->hardware_known && strcmp(proposer_name(r->prop), "llm") == 0) {
        /* Asked once: the prompt names the device the candidates run on;
         * with --executor slurm that is a node's, not this host's: none. */
        if (!r->o.runner)
            hwdesc_describe(st.backend, r->o.gpu, r->hardware, sizeof(r->hardware));
        r->hardware_known = true;
    }
    st.hardware = r->hardware;
    if (!replaying)
        opt_progress(r, it, "propose");
    enum kiln_rc rc = proposer_propose(r->prop, &st, p, err);
    if (rc == KILN_E_NOTFOUND) {
        char esc[KILN_ERR_MSG_MAX * 4];
        *exhausted = true;
        if (!r->o.quiet && !r->o.json && !replaying)
            opt_log(r, "kiln: stopping early: %s\n",
                    text_escape_control(esc, sizeof(esc), err->msg));
        kiln_err_clear(err);
        return KILN_OK;
    }
    return rc;
}

enum kiln_rc opt_write_proposal(struct opt_run *r, int it, const struct proposal *p,
                                struct kiln_err *err)
{
    char id[8], rel[96];
    snprintf(id, sizeof(id), "%03d", it);
    enum kiln_rc rc = KILN_OK;
    if (p->exchange) {
        snprintf(rel, sizeof(rel), "candidates/%s/exchange.json", id);
        rc = runrec_write(&r->rr, rel, p->exchange, strlen(p->exchange), err);
    }
    if (rc == KILN_OK && p->source) {
        snprintf(rel, sizeof(rel), "candidates/%s/candidate.%s", id,
                 opt_ext_of(eval_session_backend(r->s)));
        rc = runrec_write(&r->rr, rel, p->source, p->len, err);
    }
    return rc;
}

/* A proposal with no candidate to compile (the model call failed, or its
 * reply was refused: not JSON, a field missing, another language): its
 * own status, so neither the model nor a reader takes it for a compiler's
 * verdict on a kernel. */
void opt_invalid_outcome(const struct proposal *p, int it, struct eval_outcome *o)
{
    char id[8];
    snprintf(id, sizeof(id), "%03d", it);
    memset(o, 0, sizeof(*o));
    verdict_init(&o->v, id);
    verdict_fail(&o->v, VERDICT_REPLY_REFUSED, "%s", p->invalid);
    verdict_finish(&o->v, NULL);
    snprintf(o->stage, sizeof(o->stage), "propose");
}

/* The recorded candidate `p` repeats byte for byte (its source, and its
 * tunable values when it has them), or -1. */
static int duplicate_of(const struct opt_run *r, const struct proposal *p)
{
    if (!p->source)
        return -1;
    for (size_t i = 0; i < r->n; i++) {
        const struct opt_attempt *a = &r->hist[i];
        if (!a->source || a->len != p->len || memcmp(a->source, p->source, p->len) != 0 ||
            a->has_config != p->has_config)
            continue;
        if (p->has_config && (a->nconfig != p->nconfig ||
                              memcmp(a->config, p->config, p->nconfig * sizeof(p->config[0]))))
            continue;
        return (int)i;
    }
    return -1;
}

bool opt_duplicate_outcome(const struct opt_run *r, const struct proposal *p, int it,
                           struct eval_outcome *o)
{
    int d = p->invalid[0] ? -1 : duplicate_of(r, p);
    if (d < 0)
        return false;
    const struct opt_attempt *a = &r->hist[d];
    char id[8], hex[SHA256_HEX_LEN + 1];
    snprintf(id, sizeof(id), "%03d", it);
    sha256_hex_of(p->source, p->len, hex);
    memset(o, 0, sizeof(*o));
    verdict_init(&o->v, id);
    verdict_fail(&o->v, VERDICT_DUPLICATE,
                 "duplicate of %s: the same source (SHA-256 %.16s)%s, not evaluated again; %s "
                 "was %s%s%.200s",
                 a->id, hex, p->has_config ? " and tunables" : "", a->id,
                 verdict_status_name(a->status), a->reason[0] ? ": " : "", a->reason);
    verdict_finish(&o->v, NULL);
    snprintf(o->stage, sizeof(o->stage), "propose");
    return true;
}

enum kiln_rc opt_finish(struct opt_run *r, int it, const struct proposal *p, struct eval_outcome *o,
                        struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    if (!r->replayed && o->v.status == VERDICT_PASS) {
        /* Resume times the start once a candidate passed (correctness
         * first); a candidate evaluated before it (or in flight with
         * --jobs) gets its speedups now, judged against the noise. */
        rc = opt_time_start(r, err);
        const struct eval_outcome *ref = eval_session_reference_outcome(r->s);
        if (rc == KILN_OK)
            eval_session_rescore(r->s, o);
        if (rc == KILN_OK)
            verdict_judge_ref(&o->v, ref ? &ref->v : NULL);
    }
    if (rc == KILN_OK)
        rc = record(r, it, p, o, err);
    if (rc == KILN_OK)
        proposer_feedback(r->prop, p, r->hist[r->n - 1].status == VERDICT_PASS,
                          r->hist[r->n - 1].improved, r->hist[r->n - 1].geomean_ms);
    return rc;
}

static enum kiln_rc one_iteration(struct opt_run *r, int it, bool *exhausted, struct kiln_err *err)
{
    struct proposal p;
    enum kiln_rc rc = opt_propose(r, it, false, &p, exhausted, err);
    if (rc != KILN_OK || *exhausted)
        return rc;
    char id[8];
    snprintf(id, sizeof(id), "%03d", it);
    rc = opt_write_proposal(r, it, &p, err);
    struct eval_outcome o;
    memset(&o, 0, sizeof(o));
    if (rc == KILN_OK && p.invalid[0]) {
        opt_invalid_outcome(&p, it, &o);
    } else if (rc == KILN_OK && opt_duplicate_outcome(r, &p, it, &o)) {
        /* judged: the model hears it in the next prompt's history */
    } else if (rc == KILN_OK) {
        opt_progress(r, it, "evaluate");
        eval_session_set_short_run(r->s, p.iterations);
        rc = eval_session_run(r->s, id, p.source, p.len, p.has_config ? p.config : NULL, &o, err);
        eval_session_set_short_run(r->s, 0);
    }
    /* Stopped meanwhile: a step the stop cut short is not recorded (resume
     * evaluates this candidate again); one that finished is kept, since a
     * sandbox runs in its own session and no Ctrl-C reaches the candidate:
     * its verdict is its own. The loop stops before the next. */
    if (rc != KILN_OK && opt_stopping(r)) {
        kiln_err_clear(err);
        rc = opt_interrupted(r, err);
    }
    if (rc == KILN_OK)
        rc = opt_finish(r, it, &p, &o, err);
    eval_outcome_free(&o);
    proposal_free(&p);
    return rc;
}

enum kiln_rc opt_loop(struct opt_run *r, int first, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    bool exhausted = false;
    if (r->op) {
        /* --profile: from here on profiles run (the starting kernel's first,
         * when nothing passed yet); replayed records were read back. */
        char ref_dir[PATH_MAX];
        eval_session_candidate_dir(r->s, "reference", false, ref_dir, sizeof(ref_dir));
        const struct eval_outcome *ref = eval_session_reference_outcome(r->s);
        rc = opt_profile_go_live(r->op, r->best >= 0, ref_dir, ref ? ref->compile.artifact : "",
                                 err);
        if (rc != KILN_OK)
            return rc;
    }
    if (opt_jobs(r) > 1 || r->win.n > 0)
        rc = opt_loop_jobs(r, first, err); /* --jobs N: optimize_jobs.c */
    else
        for (int it = first; rc == KILN_OK && !exhausted && it <= opt_budget(r); it++)
            rc = opt_stopping(r) ? opt_interrupted(r, err) : one_iteration(r, it, &exhausted, err);
    if (rc == KILN_OK && opt_stopping(r))
        rc = opt_interrupted(r, err);
    if (rc == KILN_OK)
        rc = opt_finalize(r, err);
    if (rc != KILN_OK && opt_stopping(r)) {
        kiln_err_clear(err); /* a step the stop cut short: say where the run is */
        rc = opt_interrupted(r, err);
    }
    return rc;
}
