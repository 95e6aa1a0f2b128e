/*
 * bench_kb.h - `kiln bench kernelbench LEVEL_DIR`: a KernelBench level run
 * the way the field runs it, in one command that can be stopped and run
 * again. Per problem (the level's *.py, in problem-number order):
 *
 *   import   kiln import kernelbench FILE (the problem's code only in the
 *            script sandbox; the run below checks every case, so the
 *            import's own check is not run twice)
 *   run      kiln optimize WORKLOAD --proposer P: inputs and references,
 *            the torch baseline (eager and torch.compile), candidates,
 *            the held-out check; an interrupted run is continued with
 *            kiln resume, never started again
 *   archive  kiln archive RUN (one sealed run-NNN.tar.zst per problem)
 *
 * Each step is a kiln process of its own (its budgets, its failure, a
 * command a user can run by hand: bench.json records it), its output kept
 * in OUT/logs/. OUT/bench.json records every problem's state after every
 * step (written atomically), so the same command again continues where the
 * last one stopped (Ctrl-C, kill -9, a time budget) and a finished bench
 * only prints its table: per problem its status, the best candidate's time
 * against torch eager and torch.compile, then KernelBench's fast_0, fast_1
 * and fast_2 against each (fastp.h; a problem refused, failed or without a
 * passing candidate counts as not correct), and the exploit classes kiln
 * refused along the way (every candidate's final status in each run's
 * summary.json, grouped by the public record's classes).
 *
 * Layout of OUT: bench.json, workloads/<stem>/, runs/<stem>/run-NNN/,
 * archives/<stem>.tar.zst, logs/<stem>-<step>.log; <stem> is the problem
 * file's name without .py, reduced to [A-Za-z0-9_.-].
 */
#ifndef KILN_BENCH_KB_H
#define KILN_BENCH_KB_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "fastp.h"

#define BENCH_MAX_PROBLEMS 1024
#define BENCH_MAX_ARGS     40 /* options handed to every kiln optimize */
#define BENCH_STEM_MAX     96
#define BENCH_REASON_MAX   512

/* Where a problem stands. The order is the order of the steps. */
enum bench_state {
    BENCH_NEW = 0,  /* nothing done yet */
    BENCH_REFUSED,  /* the import refused it (reason) */
    BENCH_SKIPPED,  /* not run: replay without recorded replies for it (reason) */
    BENCH_IMPORTED, /* workloads/<stem> written */
    BENCH_RUNNING,  /* runs/<stem>/run-NNN started: resume it */
    BENCH_FAILED,   /* kiln optimize failed (reason); not retried */
    BENCH_RAN,      /* the run finished (summary.json) */
    BENCH_ARCHIVED, /* archives/<stem>.tar.zst written: done */
};

struct bench_problem {
    char file[256];            /* the *.py's name in LEVEL_DIR */
    char stem[BENCH_STEM_MAX]; /* file without .py, [A-Za-z0-9_.-] */
    long number;               /* its leading number, -1 when none */
    char workload[64];         /* the imported workload's name ("" before) */
    enum bench_state state;
    char reason[BENCH_REASON_MAX];
    char run[BENCH_STEM_MAX + 32]; /* "runs/<stem>/run-NNN" once started */
};

struct bench {
    char out[4096];   /* OUT, absolute */
    char level[4096]; /* LEVEL_DIR, absolute */
    char backend[8];  /* cuda or cpu, resolved at the start and kept */
    char proposer[16];
    char replay[4096]; /* --replay: an earlier bench's OUT ("" without) */
    /* --workloads: imported workloads to take instead of importing
     * (DIR/<stem>/, e.g. an earlier bench's OUT/workloads); "" without */
    char workloads[4096];
    /* The options every kiln optimize gets (after the workload), as given. */
    char *args[BENCH_MAX_ARGS];
    size_t nargs;
    struct bench_problem *p; /* in problem-number order */
    size_t n;
};

/* What one invocation does, beside the bench's own settings. */
struct bench_run_opts {
    double time_budget_s;              /* start no problem after this many seconds; 0: none */
    bool archive;                      /* archive each finished run (default) */
    bool quiet;                        /* no progress lines on stderr */
    const volatile sig_atomic_t *stop; /* set by SIGINT/SIGTERM (cli_catch_stop) */
};

/* Opens OUT: a new bench (OUT absent or empty) lists LEVEL_DIR's problems;
 * an existing one is read back from bench.json (untrusted: strict parse,
 * every name checked) and must have been started with the same level,
 * backend, proposer, replay source and options (else KILN_E_USAGE naming
 * what differs). `b` is filled by the caller (level, out, backend,
 * proposer, replay, workloads, args) and completed here; bench_free releases it. */
enum kiln_rc bench_open(struct bench *b, struct kiln_err *err) KILN_NODISCARD;

/* bench.json's one reader (`len` bytes of `text`, at most 16 MiB): into
 * b->p, checked as bench_open says. Exposed for the fuzzer. */
enum kiln_rc bench_record_parse(struct bench *b, const char *text, size_t len,
                                struct kiln_err *err) KILN_NODISCARD;

/* LEVEL_DIR's regular *.py files (links are not problems) into b->p, in
 * problem-number order, with their stems. */
enum kiln_rc bench_list_level(struct bench *b, struct kiln_err *err) KILN_NODISCARD;

/* --baseline-only: torch eager of every problem at its own sizes, in one
 * sandbox (torch_baseline_problems), no import and no run; the table on
 * stdout (json: a document) and OUT/eager.json. `timeout_s` bounds the
 * sandbox, and no problem starts after 90% of it. */
enum kiln_rc bench_eager(struct bench *b, int gpu, int warmups, int iterations, long timeout_s,
                         bool json, struct kiln_err *err) KILN_NODISCARD;

/* Takes every problem as far as it goes: KILN_OK when the bench ran to
 * the end or stopped at the time budget (*complete says which),
 * KILN_E_CANCELLED when a signal stopped it (bench.json says where). */
enum kiln_rc bench_run(struct bench *b, const struct bench_run_opts *o, bool *complete,
                       struct kiln_err *err) KILN_NODISCARD;

/* The problems as fastp sees them: a finished run's summary.json, else
 * not correct. probs has b->n entries. */
void bench_fastp(const struct bench *b, struct fastp_problem *probs);

/* "refused", "skipped", ... as bench.json and the table write them. */
const char *bench_state_name(enum bench_state s);

/* Prints the table (text) or the --json document on stdout. */
void bench_print(const struct bench *b, bool json, bool complete);

void bench_free(struct bench *b);

#endif
