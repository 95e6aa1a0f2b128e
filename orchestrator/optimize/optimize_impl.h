/*
 * optimize_impl.h - what the files of `kiln optimize` share (not a public
 * API): the run's state and one candidate's steps. optimize.c: a new run and
 * the set-up a resumed one shares; opt_resume.c: `kiln resume`;
 * opt_candidate.c: one candidate's steps and the loop; optimize_jobs.c: the
 * loop with --jobs N; opt_finalize.c: held-out check, best.cu, summary.
 *
 * A candidate goes: opt_propose -> opt_write_proposal -> evaluation (or
 * opt_invalid_outcome) -> opt_finish (its record, then its history entry,
 * then the proposer's feedback). `kiln optimize --jobs N` keeps up to N
 * proposed candidates in a window (optimize_jobs.c): compile workers run
 * ahead, evaluations and records stay one at a time in proposal order.
 */
#ifndef KILN_OPTIMIZE_IMPL_H
#define KILN_OPTIMIZE_IMPL_H

#include <jansson.h>
#include <stdbool.h>

#include "cworker.h"
#include "opt_given.h"
#include "optimize.h"
#include "runrec.h"
#include "session.h"
#include "plog.h"
#include "tuner_findings.h"

#define OPT_MAX_ITER 1000
/* Timing sessions a run may have (one per kiln resume, plus the first). */
#define OPT_MAX_SESSIONS 100000

/* Logs a run keeps (results/README.md): each candidate's log.txt and
 * compile.log at most OPT_LOG_FILE_MAX bytes (head and tail, with a line
 * saying what was cut and the original size), all of a run's at most
 * OPT_LOG_RUN_MAX; past that a log is replaced by a line with its size. */
#define OPT_LOG_FILE_MAX (256u << 10)
#define OPT_LOG_RUN_MAX  (64u << 20)
/* A passing candidate's timings.json / status.json (opt_candidate.c). */
#define OPT_JSON_PASS_MAX (4u << 20)

struct opt_profile;
struct docs_index;
#define OPT_MAX_JOBS 64

/* A proposed candidate not yet recorded. */
struct opt_slot {
    int it;
    struct proposal p;
    struct cworker w;
    bool started; /* its files are written and its compile worker started */
    /* Batches (a runner that takes them: --executor slurm): the window's
     * harness steps go out together; each is judged in its turn. */
    bool begun;                /* evaluated up to the harness: o and pend are set */
    char id[8];                /* "007": the name the pending step keeps */
    struct eval_outcome o;     /* its outcome (final once pend is NULL) */
    struct eval_pending *pend; /* its harness step, out; NULL: none */
};

/* The candidates in flight, oldest first (a ring of `cap`). */
struct opt_window {
    struct opt_slot *slots;
    size_t cap, head, n;
    int next_it; /* the iteration number of the next proposal */
    bool exhausted;
};

/* A finished candidate kiln resume records again: what its record says,
 * so that recording it changes nothing (opt_finish). */
struct opt_replayed {
    bool improved;
    int session; /* the timing session that timed it (verdict.json's timing_session) */
};

struct opt_run {
    struct runrec rr;
    struct opt_options o;
    struct eval_session *s;
    struct proposer *prop;
    struct opt_attempt *hist; /* one per finished iteration */
    char **sources;           /* owned, parallel to hist */
    struct verdict *verdicts; /* parallel to hist */
    size_t n;
    int best; /* index into hist, -1: none */
    json_t *history;
    double t0;
    bool tty;
    bool generated;         /* the workload (and its reference) came from the model */
    char start_file[16];    /* kernel.cu / kernel.c */
    struct opt_profile *op; /* --profile; NULL when not asked for */
    struct opt_given given; /* --input-cases, --reference */
    struct opt_window win;
    struct docs_index *docs;        /* --docs, until the llm proposer takes it */
    struct tuner_findings findings; /* --tuner-run; text NULL without */
    char replay_start[4096];        /* --proposer replay: the replayed run's own start, or "" */
    size_t log_bytes;               /* logs this run has kept so far (OPT_LOG_RUN_MAX) */
    char hardware[384];             /* the prompt's hardware line (hwdesc.h), once asked */
    bool hardware_known;
    int lock_fd; /* runrec_lock's, held until opt_run_free; -1: none */
    /* The run failed before its first candidate: opt_run_free removes its
     * directory (nothing to resume), still under the lock. */
    bool drop_run;
    /* Timing sessions: every number the final table compares comes from
     * one, this process's. 1 for a new run, the next for each kiln resume
     * (run.json "timing_sessions"); a pass timed in an earlier one is
     * timed again in finalize when it could matter, else not compared. */
    int session;
    int *timed_in; /* parallel to hist: the session that timed a pass; 0 when none */
    const struct opt_replayed *replayed; /* while resume records a finished candidate again */
    /* Resume: the start and the vendor baseline are timed when first
     * needed (a candidate passed, or finalize), not before the first new
     * candidate's correctness (fail fast). */
    bool start_deferred;
    /* The status line (opt_progress): drawn on a terminal only, redrawn
     * under each log line (opt_log); its count never goes backwards, also
     * when --jobs N candidates finish out of order. */
    struct plog log;
    char status[256]; /* the line as last drawn; "" when none is on screen */
    int shown_it;
};

/* optimize.c */

/* The caller asked to stop (opt_options.stop). */
static inline bool opt_stopping(const struct opt_run *r)
{
    return r->o.stop && *r->o.stop;
}

/* KILN_E_CANCELLED with the message that says where the run is. */
enum kiln_rc opt_interrupted(const struct opt_run *r, struct kiln_err *err) KILN_NODISCARD;

/* Seconds on the monotonic clock (progress lines, elapsed_s). */
double opt_now_s(void);

/* A candidate file's extension for backend `b`: "cu" or "c". */
const char *opt_ext_of(enum kiln_backend b);

/* hist, sources, verdicts (max_iterations + 1 each), the empty history array. */
enum kiln_rc opt_alloc_history(struct opt_run *r, struct kiln_err *err) KILN_NODISCARD;

/* Session (reference, vendor baseline, --profile), proposer and window. */
enum kiln_rc opt_open_run(struct opt_run *r, struct kiln_err *err) KILN_NODISCARD;

/* --docs: opens the index (kiln's, or with --docs-dir the user's corpus
 * too, checked now) into r->docs, before anything slow runs. */
enum kiln_rc opt_docs_open(struct opt_run *r, struct kiln_err *err) KILN_NODISCARD;
/* environment.json's `when` ("before_timing", "after_timing"): this host's
 * GPU, driver, toolkit, compilers and clocks now (envcap.h). */
enum kiln_rc opt_record_environment(struct opt_run *r, const char *when,
                                    struct kiln_err *err) KILN_NODISCARD;

/* The candidates this run will really evaluate: --max-iterations, or the
 * proposer's plan when smaller (the tuner's 4 configurations of saxpy):
 * the progress line's N and the loop's bound. */
int opt_budget(const struct opt_run *r);

/* Times the starting kernel and the vendor baseline in this session when
 * resume deferred them (start_deferred); nothing otherwise. */
enum kiln_rc opt_time_start(struct opt_run *r, struct kiln_err *err) KILN_NODISCARD;

/* Frees everything the run holds (not the run itself). */
void opt_run_free(struct opt_run *r);

/* opt_candidate.c */

/* Asks the proposer for candidate `it`; *exhausted (and KILN_OK) when it has
 * nothing more. `replaying`: resume rebuilding the proposer's state (no
 * progress line, no message). */
enum kiln_rc opt_propose(struct opt_run *r, int it, bool replaying, struct proposal *p,
                         bool *exhausted, struct kiln_err *err) KILN_NODISCARD;

/* candidates/NNN/exchange.json and candidate.cu|c. */
enum kiln_rc opt_write_proposal(struct opt_run *r, int it, const struct proposal *p,
                                struct kiln_err *err) KILN_NODISCARD;

/* The outcome of an invalid proposal (stage "propose"). */
void opt_invalid_outcome(const struct proposal *p, int it, struct eval_outcome *o);
/* When `p` repeats a recorded candidate (same source, same tunables): its
 * outcome, status duplicate naming the earlier one, and true; it is not
 * evaluated again. */
bool opt_duplicate_outcome(const struct opt_run *r, const struct proposal *p, int it,
                           struct eval_outcome *o);

/* Records candidate `it` (takes the verdict's cases out of *o), appends its
 * history entry, feeds the proposer back. A new pass's speedups are
 * computed against this session's start first (timed now if resume
 * deferred it) and judged against the noise. */
enum kiln_rc opt_finish(struct opt_run *r, int it, const struct proposal *p, struct eval_outcome *o,
                        struct kiln_err *err) KILN_NODISCARD;

/* The progress line on stderr (none with quiet or json). */
void opt_progress(struct opt_run *r, int it, const char *stage);

/* A log line of the run (printf-style, ending in '\n') on stderr: on a
 * terminal it clears the status line, prints, and redraws it. */
void opt_log(struct opt_run *r, const char *fmt, ...) KILN_PRINTF(2, 3);

/* Sets r->log up (the session's sink for its log lines). */
void opt_log_init(struct opt_run *r);

/* Candidates `first`.. up to the budget (a window with --jobs), then opt_finalize(). */
enum kiln_rc opt_loop(struct opt_run *r, int first, struct kiln_err *err) KILN_NODISCARD;

/* candidates/NNN/verdict.json of finished candidate `i` rewritten from
 * r->verdicts[i] (the held-out check's outcome, a new timing): the record
 * says what summary.json and the final table say; kiln's extra keys
 * (note, config, turnaround_s, ...) are kept, stage and timing_session
 * set from hist and timed_in. */
enum kiln_rc opt_rewrite_verdict(struct opt_run *r, size_t i, struct kiln_err *err) KILN_NODISCARD;

/* Finished candidate `i`, timed again in this session (finalize, after a
 * resume): *o's verdict replaces its own (taking o's cases), its record
 * (verdict.json with timing_session, timings.json, log.txt) is rewritten. */
enum kiln_rc opt_record_retimed(struct opt_run *r, size_t i, struct eval_outcome *o,
                                struct kiln_err *err) KILN_NODISCARD;

/* opt_finalize.c */

/* Held-out check in rank order, best.cu|c, summary.json, report, printed table. */
enum kiln_rc opt_finalize(struct opt_run *r, struct kiln_err *err) KILN_NODISCARD;

/* optimize_jobs.c */

/* The window's size: --jobs when the proposer can look ahead, else 1. */
size_t opt_jobs(const struct opt_run *r);

enum kiln_rc opt_window_init(struct opt_run *r, struct kiln_err *err) KILN_NODISCARD;

/* Kills the workers still running and frees the proposals in flight. */
void opt_window_free(struct opt_run *r);

/* Resume: the proposal for finished candidate `it`, asked again in the
 * order the run asked (up to `jobs - 1` ahead, as its window did), so the
 * proposer's state comes back as it was. Proposals beyond the finished
 * ones stay in the window: the candidates that were in flight, redone. */
enum kiln_rc opt_window_repropose(struct opt_run *r, int it, struct proposal *again,
                                  struct kiln_err *err) KILN_NODISCARD;

/* The loop with a window: candidates `first`.. up to the budget. */
enum kiln_rc opt_loop_jobs(struct opt_run *r, int first, struct kiln_err *err) KILN_NODISCARD;

#endif
