/*
 * evaluate.h - stages "compile", "run", "verify" and "score" for one
 * candidate: parse its directives, resolve its plan for every case, compile
 * it in the `compile` sandbox, run kiln's harness on it in the `gpu-run`
 * sandbox (a fresh process, one GPU or none), then judge what came back in
 * the trusted parent: strict ingestion, comparison with the references,
 * timing statistics, the physics floor. The candidate never sees a
 * reference and never measures itself.
 *
 * The outcome is a verdict (evaluator/verdict.h) plus what the optimizer
 * feeds back: the stage that eliminated the candidate, the compiler's
 * diagnostics and resource usage, and the harness log.
 */
#ifndef KILN_EVALUATE_H
#define KILN_EVALUATE_H

#include <stdbool.h>
#include <stdint.h>

#include "compile.h"
#include "inputs.h"
#include "plan.h"
#include "sbspec.h"
#include "stats.h"
#include "turnaround.h"
#include "verdict.h"
#include "workload.h"

struct sbexec_runner; /* sbexec.h */

#define EVAL_MAX_CASE_REFS 128

/* eval_request.warmups (and the session's, the baseline's): no warmup run. */
#define EVAL_NO_WARMUPS (-1)
/* Adaptive timing (--until-rse): GPU MODE's and nvbench's rule, a relative
 * standard error of the mean under 0.5%, or a per-case budget. */
#define EVAL_DEFAULT_TARGET_RSE 0.005
#define EVAL_DEFAULT_BUDGET_MS  2000.0

/* The warmup count a request's `warmups` stands for (`iterations` likewise):
 * what run records write, so a resumed run times the same way. */
int eval_warmups_resolved(int warmups);
int eval_iterations_resolved(int iterations);

/* Per-case medians of another kernel (the reference kernel, a baseline). */
struct eval_case_ms {
    char name[64];
    double ms;
};

struct eval_medians {
    struct eval_case_ms cases[EVAL_MAX_CASE_REFS];
    size_t n;
};

/* Case `name`'s median in `m` (NULL: none), 0 when absent. */
double eval_medians_find(const struct eval_medians *m, const char *name);

/* A case's median in `t` (timings.h): the geometric mean of its input
 * sets' medians, the statistic of a verdict's case_ms and of every
 * reference and baseline; 0 when the case has no samples. */
struct timings;
double eval_case_median(const struct timings *t, const char *name);

/* Split evaluation, for `kiln optimize --jobs` (a compile worker process
 * runs the first half while the parent runs an earlier candidate). */
enum eval_mode {
    EVAL_ALL = 0,      /* every stage */
    EVAL_COMPILE_ONLY, /* stop after "compile", leaving compile/result.json */
    EVAL_PRECOMPILED,  /* use compile/result.json when valid, else compile */
};

struct eval_request {
    const struct workload *wl;
    enum kiln_backend backend;
    const char *name;   /* candidate id for the verdict ("001", "start") */
    const char *source; /* the candidate file */
    size_t len;
    const int64_t *tunables; /* NULL: the declared defaults */
    const struct input_sets *sets;
    const char *work_dir; /* the candidate's scratch directory (created) */
    const char *harness;  /* path of kiln-harness-cuda / kiln-harness-cpu */
    int gpu;              /* GPU index for cuda; ignored for cpu */
    const char *arch;     /* cuda: the target, "sm_90" (gpuarch.h); NULL: the default */
    /* 0: the harness defaults (10, 100); warmups EVAL_NO_WARMUPS: none at
     * all (0 cannot say so: zeroed requests mean "the defaults"). */
    int warmups, iterations;
    bool adaptive; /* stop on target_rse or budget (0: the defaults below) */
    double target_rse, budget_ms;
    bool hot;                                     /* no L2 flush between runs */
    const struct device_limits *limits;           /* the target's; NULL: the H200's */
    const struct stats_ceilings *ceilings;        /* NULL: asked from the device (cuda only) */
    const struct eval_medians *reference;         /* NULL: no reference timings */
    const struct eval_medians *baseline;          /* NULL: no vendor baseline timings */
    long long compile_timeout_ms, run_timeout_ms; /* 0: the policies' defaults */
    enum eval_mode mode;
    enum compile_tool compiler;         /* cuda: nvcc (default) or NVRTC */
    const char *nvrtc;                  /* COMPILE_NVRTC: the kiln-nvrtc program */
    const char *source_name;            /* how compiler messages name the source (compile.h) */
    const struct sbexec_runner *runner; /* where the harness runs; NULL: this host */
};

struct eval_outcome {
    struct verdict v;
    char stage[16]; /* "pass", or where it was eliminated: parse, plan, compile, run, verify */
    struct compile_result compile;
    char *log_tail;              /* the harness log, capped; may be NULL */
    struct eval_medians medians; /* per performance case median (ms), passing or not */
    int64_t config[64];          /* the tunable values used */
    size_t nconfig;
    struct eval_turnaround t; /* where the time went (turnaround.h) */
    bool precompiled;         /* the compile result came from compile/result.json */
    /* The harness died of SIGKILL or SIGTERM that kiln did not send (kiln's
     * own kills are timeouts and limits): the host's OOM killer or an
     * operator as likely as the candidate. The verdict says runtime_error;
     * the service retries instead of judging (service/worker.c). */
    bool host_killed;
    char arch[16];   /* cuda: the architecture it was compiled for ("sm_90"); "" for cpu */
    char where[256]; /* where the harness ran, when not on this host ("slurm job ...") */
    struct sbnode_device ran_on; /* that host's GPU as it reported it; present false otherwise */
    /* The physics floor came from ran_on's properties: this host had no
     * GPU to ask (a submit host of --executor slurm). */
    bool floor_from_node;
    struct stats_ceilings node_ceilings;
};

/*
 * Evaluates one candidate. KILN_OK whenever a verdict was reached, whatever
 * it is (read out->v.status); an error only when kiln itself could not do
 * its job (sandbox set-up, I/O). Free `out` with eval_outcome_free always.
 * EVAL_COMPILE_ONLY reaches a verdict only for a candidate that parse, plan
 * or compile eliminated (compile_error; out->stage says which); otherwise
 * out->compile holds the result and out->v is not a verdict yet.
 */
enum kiln_rc eval_candidate(const struct eval_request *req, struct eval_outcome *out,
                            struct kiln_err *err) KILN_NODISCARD;

/*
 * Batches (`kiln optimize --executor slurm`): eval_candidate_start runs the
 * stages before the harness and submits the harness step on req->runner,
 * which must take batches (sbexec_can_batch); *pend receives it, or NULL
 * when the candidate ended before the run (out is then final).
 * eval_candidate_finish waits for that step and judges it: out is then
 * what eval_candidate would have given, through the same ingest and judge.
 * Steps started before the first finish run at once. eval_pending_drop
 * gives a started candidate up (its job is cancelled). What req points to
 * must outlive the pending step, except work_dir and ceilings (copied);
 * `out` stays where it is until finished (the step reads its artifact).
 */
struct eval_pending;
enum kiln_rc eval_candidate_start(const struct eval_request *req, struct eval_outcome *out,
                                  struct eval_pending **pend, struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc eval_candidate_finish(struct eval_pending *pend, struct eval_outcome *out,
                                   struct kiln_err *err) KILN_NODISCARD;
void eval_pending_drop(struct eval_pending *pend);

/* Where the harness ran, for verdict.json's "ran_on": null when on this
 * host, else {"where": "slurm job 42, node n1, ...", "device": the node's
 * GPU or null, "floor_from_node": bool}. A new reference (NULL: no memory). */
struct json_t;
struct json_t *eval_ran_on_json(const struct eval_outcome *out);

/* The architecture it was compiled for, for verdict.json's "arch": a
 * string ("sm_90"), or null for cpu (a new reference, NULL: no memory). */
struct json_t *eval_arch_json(const struct eval_outcome *out);

void eval_outcome_free(struct eval_outcome *out);

/* What GPU `gpu` (kiln's index, gpuinfo.h) says about itself, from
 * `harness_cuda --device-props` (kiln's own program, no sandbox needed):
 * the physics floor's properties and the launch limits (devlimits.h). */
struct gpu_props;
enum kiln_rc eval_device_probe(const char *harness_cuda, int gpu, struct gpu_props *props,
                               struct device_limits *limits, struct kiln_err *err) KILN_NODISCARD;

/* The physics floor's ceilings of a GPU with properties `props` (peaks from
 * gpupeak_compute) for a workload whose flops may use `units` (its
 * "math", GPU_UNIT_MASK bits; gpupeak_for_units). On failure `out` holds
 * no ceilings (no floor). */
enum kiln_rc eval_ceilings_of(const struct gpu_props *props, unsigned units,
                              struct stats_ceilings *out, struct kiln_err *err) KILN_NODISCARD;

/* Both: the ceilings of GPU `gpu`, probed. */
enum kiln_rc eval_device_ceilings(const char *harness_cuda, int gpu, unsigned units,
                                  struct stats_ceilings *out, struct kiln_err *err) KILN_NODISCARD;

/* The harness program next to the running kiln binary (or $KILN_HARNESS_DIR). */
enum kiln_rc eval_harness_path(enum kiln_backend b, char *out, size_t cap,
                               struct kiln_err *err) KILN_NODISCARD;

/* Any of kiln's in-sandbox programs ("kiln-nvrtc"), found the same way. */
enum kiln_rc eval_program_path(const char *name, char *out, size_t cap,
                               struct kiln_err *err) KILN_NODISCARD;

#endif
