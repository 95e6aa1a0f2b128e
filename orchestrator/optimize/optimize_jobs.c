/*
 * optimize_jobs.c - `kiln optimize --jobs N`: up to N proposed candidates in
 * flight. Their compile stages run in worker processes (cworker.h) while the
 * parent runs the oldest on the GPU; runs, records and the proposer's
 * feedback stay one at a time in proposal order, so history.json is written
 * as with --jobs 1.
 *
 * The order of proposer calls depends only on N, never on timing:
 * propose 1..N, then for each i: feedback i, propose i+N. Resume asks the
 * proposer again in that same order (opt_window_repropose), which gives the
 * tuner back its exact state and the in-flight candidates their exact
 * configurations; run.json records N for that.
 *
 * With a runner that takes batches (--executor slurm), when the oldest
 * candidate has not been evaluated yet, every candidate in the window is
 * evaluated up to its harness run and the runs go out together (one job
 * array); then each is collected, judged and recorded in turn, exactly as
 * one at a time. The next batch starts when the window's oldest is again a
 * candidate proposed after the batch went out, so the proposer's calls
 * keep their order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optimize_impl.h"

size_t opt_jobs(const struct opt_run *r)
{
    int j = r->o.jobs > 0 ? r->o.jobs : 1;
    return r->prop && proposer_looks_ahead(r->prop) ? (size_t)j : 1;
}

enum kiln_rc opt_window_init(struct opt_run *r, struct kiln_err *err)
{
    struct opt_window *w = &r->win;
    memset(w, 0, sizeof(*w));
    w->cap = opt_jobs(r);
    w->next_it = 1;
    w->slots = calloc(w->cap, sizeof(*w->slots));
    return w->slots ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "the candidates in flight");
}

static struct opt_slot *slot_at(struct opt_window *w, size_t k)
{
    return &w->slots[(w->head + k) % w->cap];
}

static void pop_head(struct opt_window *w)
{
    struct opt_slot *sl = slot_at(w, 0);
    cworker_kill(&sl->w);
    eval_pending_drop(sl->pend); /* a batch member given up: its job is cancelled */
    if (sl->begun)
        eval_outcome_free(&sl->o);
    proposal_free(&sl->p);
    memset(sl, 0, sizeof(*sl));
    w->head = (w->head + 1) % w->cap;
    w->n--;
}

void opt_window_free(struct opt_run *r)
{
    struct opt_window *w = &r->win;
    while (w->slots && w->n > 0)
        pop_head(w);
    free(w->slots);
    memset(w, 0, sizeof(*w));
}

/* Proposes until the window is full, the budget is spent or the proposer
 * has nothing more. */
static enum kiln_rc fill(struct opt_run *r, bool replaying, struct kiln_err *err)
{
    struct opt_window *w = &r->win;
    enum kiln_rc rc = KILN_OK;
    while (rc == KILN_OK && !w->exhausted && w->n < w->cap && w->next_it <= opt_budget(r)) {
        struct opt_slot *sl = slot_at(w, w->n);
        memset(sl, 0, sizeof(*sl));
        rc = opt_propose(r, w->next_it, replaying, &sl->p, &w->exhausted, err);
        if (rc == KILN_OK && !w->exhausted) {
            sl->it = w->next_it++;
            w->n++;
        } else {
            proposal_free(&sl->p);
            if (rc == KILN_E_LIMIT && w->n > 0) {
                /* The proposer waits for verdicts in flight (the tuner
                 * between rungs): propose again after the next one. */
                kiln_err_clear(err);
                rc = KILN_OK;
                break;
            }
        }
    }
    return rc;
}

enum kiln_rc opt_window_repropose(struct opt_run *r, int it, struct proposal *again,
                                  struct kiln_err *err)
{
    struct opt_window *w = &r->win;
    memset(again, 0, sizeof(*again));
    enum kiln_rc rc = fill(r, true, err);
    if (rc != KILN_OK)
        return rc;
    if (w->n == 0 || slot_at(w, 0)->it != it)
        return kiln_fail(err, KILN_E_PARSE,
                         "the %s proposer no longer proposes candidate %03d: the run's records "
                         "do not match its proposer (was run.json edited?)",
                         proposer_name(r->prop), it);
    *again = slot_at(w, 0)->p;
    memset(&slot_at(w, 0)->p, 0, sizeof(again[0]));
    pop_head(w);
    return KILN_OK;
}

/* Writes the candidate's proposal files and starts its compile worker. */
static enum kiln_rc start(struct opt_run *r, struct opt_slot *sl, struct kiln_err *err)
{
    if (sl->started)
        return KILN_OK;
    enum kiln_rc rc = opt_write_proposal(r, sl->it, &sl->p, err);
    if (rc == KILN_OK && !sl->p.invalid[0]) {
        char id[8];
        snprintf(id, sizeof(id), "%03d", sl->it);
        rc = cworker_start(r->s, id, sl->p.source, sl->p.len,
                           sl->p.has_config ? sl->p.config : NULL, &sl->w, err);
    }
    sl->started = rc == KILN_OK;
    return rc;
}

/* Waits for the candidate's compile worker; false when it left no result. */
static enum kiln_rc wait_compile(struct opt_run *r, struct opt_slot *sl, struct kiln_err *err)
{
    bool left = true;
    char why[64] = "";
    enum kiln_rc rc = KILN_OK;
    if (sl->w.pid > 0) {
        opt_progress(r, sl->it, "compile");
        rc = cworker_wait(&sl->w, &left, why, sizeof(why), err);
    }
    if (rc == KILN_OK && !left && !r->o.quiet && !r->o.json)
        opt_log(r, "kiln: the compile worker of %s ended (%s); compiling it here\n", sl->id, why);
    return rc;
}

/* A slot's evaluation begins: its id set, an invalid proposal judged at
 * once (*judged), else its compile waited for. */
static enum kiln_rc slot_start(struct opt_run *r, struct opt_slot *sl, bool *judged,
                               struct kiln_err *err)
{
    memset(&sl->o, 0, sizeof(sl->o));
    sl->begun = true;
    snprintf(sl->id, sizeof(sl->id), "%03d", sl->it);
    if (sl->p.invalid[0]) {
        opt_invalid_outcome(&sl->p, sl->it, &sl->o);
        *judged = true;
        return KILN_OK;
    }
    enum kiln_rc rc = wait_compile(r, sl, err); /* reaped either way */
    if (rc == KILN_OK && opt_duplicate_outcome(r, &sl->p, sl->it, &sl->o))
        *judged = true;
    return rc;
}

/* Evaluates the candidate up to its harness run, which is submitted on the
 * batch runner (the outcome is final when there is none to run). */
static enum kiln_rc begin(struct opt_run *r, struct opt_slot *sl, struct kiln_err *err)
{
    if (sl->begun)
        return KILN_OK;
    bool judged = false;
    enum kiln_rc rc = slot_start(r, sl, &judged, err);
    if (rc != KILN_OK || judged)
        return rc;
    eval_session_set_short_run(r->s, sl->p.iterations);
    rc =
        eval_session_start_compiled(r->s, sl->id, sl->p.source, sl->p.len,
                                    sl->p.has_config ? sl->p.config : NULL, &sl->o, &sl->pend, err);
    eval_session_set_short_run(r->s, 0);
    return rc;
}

/* The oldest candidate's outcome: its compile waited for, then run here,
 * or (batches) collected from the batch it went out in. */
static enum kiln_rc evaluate_head(struct opt_run *r, struct opt_slot *sl, struct kiln_err *err)
{
    struct opt_window *w = &r->win;
    enum kiln_rc rc = KILN_OK;
    if (eval_session_batches(r->s)) {
        bool new_batch = !sl->begun;
        for (size_t k = 0; rc == KILN_OK && new_batch && k < w->n; k++)
            rc = begin(r, slot_at(w, k), err);
        if (rc == KILN_OK && sl->pend) {
            opt_progress(r, sl->it, "evaluate");
            rc = eval_session_finish(r->s, sl->id, sl->pend, &sl->o, err);
            sl->pend = NULL;
        }
        return rc;
    }
    bool judged = false;
    rc = slot_start(r, sl, &judged, err);
    if (rc == KILN_OK && !judged) {
        opt_progress(r, sl->it, "evaluate");
        eval_session_set_short_run(r->s, sl->p.iterations);
        rc = eval_session_run_compiled(r->s, sl->id, sl->p.source, sl->p.len,
                                       sl->p.has_config ? sl->p.config : NULL, &sl->o, err);
        eval_session_set_short_run(r->s, 0);
    }
    return rc;
}

/* Evaluates the oldest candidate and records it. */
static enum kiln_rc finish_head(struct opt_run *r, struct kiln_err *err)
{
    struct opt_slot *sl = slot_at(&r->win, 0);
    enum kiln_rc rc = evaluate_head(r, sl, err);
    if (rc != KILN_OK && opt_stopping(r)) { /* cut short: resume redoes it; finished: kept */
        kiln_err_clear(err);
        rc = opt_interrupted(r, err);
    }
    if (rc == KILN_OK)
        rc = opt_finish(r, sl->it, &sl->p, &sl->o, err);
    pop_head(&r->win);
    return rc;
}

enum kiln_rc opt_loop_jobs(struct opt_run *r, int first, struct kiln_err *err)
{
    struct opt_window *w = &r->win;
    if (w->n == 0)
        w->next_it = first;
    else if (slot_at(w, 0)->it != first)
        return kiln_fail(err, KILN_E_INTERNAL, "the window starts at %03d, not %03d",
                         slot_at(w, 0)->it, first);
    enum kiln_rc rc = KILN_OK;
    for (;;) {
        if (opt_stopping(r)) {
            rc = opt_interrupted(r, err);
            break;
        }
        rc = fill(r, false, err);
        for (size_t k = 0; rc == KILN_OK && k < w->n; k++)
            rc = start(r, slot_at(w, k), err);
        if (rc != KILN_OK || w->n == 0)
            break;
        rc = finish_head(r, err);
        if (rc != KILN_OK)
            break;
    }
    /* Interrupted: the compile workers end by themselves (their sandboxes
     * see the stop, interrupt.h), each removing its sandbox and cgroup;
     * killed, they could not. On an error, the workers still running die
     * here (the run's record stays resumable: their candidates were not
     * recorded). */
    for (size_t k = 0; rc == KILN_E_CANCELLED && k < w->n; k++) {
        struct opt_slot *sl = slot_at(w, k);
        bool left = true;
        char why[64];
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        if (sl->started && sl->w.pid > 0)
            (void)(cworker_wait(&sl->w, &left, why, sizeof(why), &ignore) == KILN_OK);
    }
    opt_window_free(r);
    return rc;
}
