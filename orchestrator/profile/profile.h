/*
 * profile.h - `kiln optimize --profile`: Nsight Compute (ncu) metrics of a
 * candidate that passed, fed back to the proposer as a short text block.
 *
 * What runs: kiln's own CUDA harness on the candidate's compiled cubin, for
 * ONE performance case (the one with the most tensor bytes) on one input
 * set, as an untimed case (a correctness run and its recheck: two plan
 * executions; kiln's timings are not taken from this run), with ncu around
 * it: `ncu --csv --print-units base --print-metric-name name
 * --cache-control all --clock-control none --metrics <ncu_metrics_arg()>
 * -k regex:^(<the plan's kernels>)$ -c <2 x launches> /in/kiln-harness
 * /in/plan.json --out /tmp`, in the `profile` sandbox
 * (policies/profile.json, images/profile.json: gpu-run widened for ncu,
 * each addition explained there and in SECURITY.md). ncu's output comes
 * back on the sandbox's stdout and is parsed by ncu_csv_parse (hostile).
 *
 * Unavailability is decided once per profiler and then sticks, with one
 * message (profiler_why): the cpu backend (no counters), ncu not found,
 * counters refused to the sandbox's unprivileged user (ERR_NVGPUCTRPERM),
 * the sandbox refusing a syscall this ncu needs, or two failed profiles in
 * a row. A failure of one profile (no launch profiled, a timeout) is that
 * candidate's: recorded, and the run goes on.
 *
 * Lifecycle: profiler_open -> (profiler_run -> profile_result_json)* ->
 * profiler_close.
 */
#ifndef KILN_PROFILE_H
#define KILN_PROFILE_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

#include "backend.h"
#include "error.h"
#include "ncu_csv.h"

#define PROFILE_SUMMARY_MAX 1024 /* the prompt block */
#define PROFILE_TIMEOUT_MS  180000

enum profile_status {
    PROFILE_OK = 0,          /* metrics in report and summary */
    PROFILE_FAILED = 1,      /* this candidate could not be profiled: message */
    PROFILE_UNAVAILABLE = 2, /* not on this host or backend: message */
};

/* A candidate that passed: its evaluation scratch (plan.json, cases/) and
 * the cubin it was compiled to. */
struct profile_target {
    const char *name;     /* "005", "reference" */
    const char *cand_dir; /* eval_session_candidate_dir(): plan.json, cases/ */
    const char *cubin;    /* eval_outcome.compile.artifact */
};

struct profile_result {
    enum profile_status status;
    char message[640];
    char case_name[33];
    int launches; /* profiled launches in all */
    struct ncu_report report;
    char summary[PROFILE_SUMMARY_MAX]; /* "" unless PROFILE_OK */
    double wall_s;
};

struct profiler;

/* Opens a profiler for GPU `gpu` (-1: none granted, for tests with a
 * stand-in ncu) of backend `b`; scratch goes under `work_dir`.
 * Unavailability is not an error (profiler_why says why). */
enum kiln_rc profiler_open(enum kiln_backend b, int gpu, const char *work_dir,
                           struct profiler **out, struct kiln_err *err) KILN_NODISCARD;

/* NULL while profiling is possible; else the one message saying why not. */
const char *profiler_why(const struct profiler *p);

/* Profiles `t`. KILN_OK whenever *res says what happened (ok, failed,
 * unavailable); an error only when kiln itself failed (memory, I/O). */
enum kiln_rc profiler_run(struct profiler *p, const struct profile_target *t,
                          struct profile_result *res, struct kiln_err *err) KILN_NODISCARD;

/* profile.json (results/README.md): status, message or case, kernels with
 * their metrics and units, the summary. NULL on allocation failure. */
json_t *profile_result_json(const struct profile_result *res, const char *candidate);

/* The prompt block of a parsed report: one line per kernel. */
void profile_summarize(const struct ncu_report *r, const char *case_name, int launches, char *buf,
                       size_t cap);

void profiler_close(struct profiler *p);

/* For `kiln doctor`: "ncu 2025.3.0 at DIR; counters: ..." (cheap: no ncu
 * run). Returns false when ncu was not found. */
bool profile_describe_host(char *buf, size_t cap);

#endif
