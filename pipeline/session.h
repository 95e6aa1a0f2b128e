/*
 * session.h - an evaluation session: one workload on one backend with its
 * inputs and references prepared once, the reference kernel's timings, and
 * a held-out set drawn from a secret seed on first use. `kiln eval` runs one
 * candidate through a session; `kiln optimize` runs many.
 *
 * Given data (given.h): `input_cases` replaces the workload's inputs for the
 * visible cases (checked when the session opens), `reference` replaces its
 * reference.py for every case, held-out ones included. Held-out inputs are
 * always the workload's own, from the secret seed.
 *
 * Opening checks everything cheap first: the workload, the backend, the
 * GPU a cuda session needs, the given data.
 *
 * Lifecycle: eval_session_open -> [eval_session_reference] ->
 * [eval_session_baseline] -> (eval_session_run | eval_session_held_out)* ->
 * eval_session_close.
 */
#ifndef KILN_SESSION_H
#define KILN_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "baseline.h"
#include "evaluate.h"
#include "given.h"
#include "gpuarch.h"
#include "heldout.h"

/* Input sets per performance case of a session (the harness's minimum for a
 * timed case). */
#define EVAL_SESSION_PERF_SETS HARNESS_PLAN_MIN_TIMED_SETS

struct sbexec_runner; /* sbexec.h */
struct plog;          /* plog.h */

struct eval_session_opts {
    const char *workload;      /* directory or built-in name */
    enum kiln_backend backend; /* 0: cuda when a GPU is present and supported, else cpu */
    int gpu;
    const char *work_dir;    /* NULL: a temporary directory removed on close */
    uint64_t seed;           /* base seed of the visible inputs */
    int warmups, iterations; /* 0: harness defaults; warmups EVAL_NO_WARMUPS: none */
    /* Adaptive timing of candidates (visible and held-out): at least
     * `iterations` runs, then until the RSE of the mean is under target_rse
     * or budget_ms per case is spent (0: EVAL_DEFAULT_*). */
    bool adaptive;
    double target_rse, budget_ms;
    bool hot;
    long long run_timeout_ms;   /* 0: the gpu-run policy's default */
    const char *candidate_hint; /* a file name whose extension picks the backend */
    enum compile_tool compiler; /* cuda: nvcc (default) or nvrtc (kiln-nvrtc) */
    bool verbose;               /* progress on stderr */
    const char *arch;           /* cuda: --arch sm_XX; NULL: the GPU's own (gpuarch.h) */
    const char *input_cases;    /* NULL: inputs.py generates the visible inputs */
    const char *reference;      /* NULL: the workload's reference.py */
    /* Non-NULL: the digest (given.h) the given data must have, checked
     * before any work (a run's copies, on resume). */
    const char *input_cases_sha256, *reference_sha256;
    const char *reference_origin;       /* how messages name `reference` (NULL: its path) */
    const struct sbexec_runner *runner; /* where harness runs go (sbexec.h); NULL: this host */
    /* Open generates no inputs: the first run that needs them does. A
     * caller compiles its candidate first (eval_session_compile) so that a
     * candidate that cannot compile fails in seconds, before inputs.py and
     * reference.py run (fail fast). */
    bool defer_inputs;
    const struct plog *log; /* where `verbose` lines go (plog.h); NULL: stderr */
};

struct eval_session;

/* What a cuda session compiles candidates for and checks their plans
 * against: the target architecture ("sm_90"), where it came from ("the
 * GPU", "--arch", "the default": no GPU could be asked), and the limits
 * (queried from the GPU, or CUDA's table for the target; devlimits.h). */
struct eval_target {
    char arch[GPUARCH_NAME_MAX];
    const char *source;
    struct device_limits limits;
};

/* The backend to use: `requested` if set; else from a candidate file's
 * extension (.cu, .c); else cuda when a GPU is present and the workload
 * supports it; else cpu. */
enum kiln_backend eval_backend_auto(enum kiln_backend requested, const char *hint,
                                    const struct workload *w);

/* What the backend needs from this host, checked before anything is made
 * (a run directory, inputs): for cuda an NVIDIA GPU `gpu` with its driver
 * (libcuda.so.1) and, with the nvcc compiler, nvcc (eval_backend_check_gpu
 * only the GPU). Nothing for cpu, or when the harness runs elsewhere
 * (`runner`: a Slurm node has the GPU, not this host). KILN_E_NOTFOUND
 * naming what is missing and the fix (--backend cpu, kiln doctor). */
enum kiln_rc eval_backend_check(enum kiln_backend b, int gpu, enum compile_tool compiler,
                                const struct sbexec_runner *runner,
                                struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc eval_backend_check_gpu(int gpu, struct kiln_err *err) KILN_NODISCARD;
/* The compiler alone (the compile sandbox's side): nvcc where it is used.
 * KILN_E_NOTFOUND naming where it was looked for and the fix. */
enum kiln_rc eval_compiler_check(enum compile_tool compiler, struct kiln_err *err) KILN_NODISCARD;

/* A fresh base seed for the visible inputs, from the kernel's CSPRNG, in
 * 0 .. 2^52-1 (exact in JSON and numpy): the default of every evaluation,
 * so no candidate can precompute answers for inputs it can predict. The
 * caller records it (verdict, run record) so `--seed N` reproduces. */
enum kiln_rc eval_fresh_seed(uint64_t *seed, struct kiln_err *err) KILN_NODISCARD;

/* A workload argument: a directory, or the name of a built-in workload in
 * the data directory's workloads/. */
enum kiln_rc workload_resolve_dir(const char *arg, char *out, size_t cap,
                                  struct kiln_err *err) KILN_NODISCARD;

/* True when `arg` names a directory here that hides the built-in workload
 * of the same name (whose path goes into builtin[cap]): the directory
 * wins, which a user who meant the built-in would not see. */
bool workload_shadows_builtin(const char *arg, char *builtin, size_t cap);

/* Says so on `log` (NULL: stderr) when workload_shadows_builtin. */
void workload_warn_shadow(const char *arg, const struct plog *log);

enum kiln_rc eval_session_open(const struct eval_session_opts *opts, struct eval_session **out,
                               struct kiln_err *err) KILN_NODISCARD;

/* Evaluates the workload's starting kernel; its per-case medians become the
 * reference for every later verdict's speedups. The outcome is kept and
 * readable with eval_session_reference_outcome. A workload without one
 * (eval_session_has_start false) has nothing to evaluate: KILN_OK, the
 * outcome stays NULL and speedups vs the start stay unknown (0); a verbose
 * session says so once. Likewise eval_session_check_reference. */
enum kiln_rc eval_session_reference(struct eval_session *s, struct kiln_err *err) KILN_NODISCARD;

/* Fail fast: parses, plans and compiles the starting kernel alone, before
 * any input exists (defer_inputs); KILN_E_CHILD with the compiler's
 * messages when it does not compile. eval_session_reference then runs that
 * compiled result. */
enum kiln_rc eval_session_check_reference(struct eval_session *s,
                                          struct kiln_err *err) KILN_NODISCARD;

const struct eval_outcome *eval_session_reference_outcome(const struct eval_session *s);

/* The workload has a starting kernel for the session's backend. */
bool eval_session_has_start(const struct eval_session *s);

/* Times the workload's vendor baseline once (baseline.h), in its own
 * sandboxed harness process; its per-case medians become every later
 * verdict's baseline_ms. A baseline that cannot be timed is a state with a
 * reason (eval_session_baseline_result), not an error. */
enum kiln_rc eval_session_baseline(struct eval_session *s, struct kiln_err *err) KILN_NODISCARD;

/* The baseline's outcome; NULL before eval_session_baseline ran. */
const struct eval_baseline *eval_session_baseline_result(const struct eval_session *s);

/* A passing outcome's speedups recomputed against what the session has
 * timed now: the starting kernel's medians and the vendor baseline's
 * (verdict_finish again on the same samples). For a candidate run before
 * them (correctness first: kiln eval runs the candidate, then times the
 * start and the baseline only when it passed), or timed in an earlier
 * session of a resumed run. Anything but a pass is left as it is. */
void eval_session_rescore(const struct eval_session *s, struct eval_outcome *o);

/* Times the next visible-case runs with `iterations` (a short run: the
 * tuner's early rungs rank many candidates cheaply); 0 restores the
 * session's count. Held-out runs always use the session's. */
void eval_session_set_short_run(struct eval_session *s, int iterations);

/* Compiler messages about candidate `name` name its source `shown` (the
 * user's file as they typed it) instead of the sandbox's copy; the
 * reference is named by its workload file (kernel.cu). One name at a time. */
void eval_session_show_source(struct eval_session *s, const char *name, const char *shown);

/* Evaluates one candidate on the visible cases. */
enum kiln_rc eval_session_run(struct eval_session *s, const char *name, const char *src, size_t len,
                              const int64_t *tunables, struct eval_outcome *out,
                              struct kiln_err *err) KILN_NODISCARD;

/* Split evaluation (`kiln optimize --jobs`, fail fast): eval_session_compile
 * runs the parse, plan and compile stages alone, leaving the compile result
 * in the candidate's scratch directory (it is what a compile worker process
 * runs); it needs no generated inputs (defer_inputs). A candidate those
 * stages eliminate gets its compile_error verdict in *out (status not
 * VERDICT_PASS, out->stage parse, plan or compile). eval_session_run_compiled
 * is eval_session_run using that result when it is there and matches (else
 * it compiles itself). */
enum kiln_rc eval_session_compile(struct eval_session *s, const char *name, const char *src,
                                  size_t len, const int64_t *tunables, struct eval_outcome *out,
                                  struct kiln_err *err) KILN_NODISCARD;

enum kiln_rc eval_session_run_compiled(struct eval_session *s, const char *name, const char *src,
                                       size_t len, const int64_t *tunables,
                                       struct eval_outcome *out,
                                       struct kiln_err *err) KILN_NODISCARD;

/* Batches (the runner takes them: eval_session_batches): start is
 * eval_session_run_compiled up to the harness, whose step is submitted
 * (evaluate.h's eval_candidate_start; *pend NULL: out is already final);
 * finish waits for it, judges, and cleans the scratch as run_compiled
 * does. Candidates started before the first finish run at once. Give a
 * started one up with eval_pending_drop. */
bool eval_session_batches(const struct eval_session *s);
enum kiln_rc eval_session_start_compiled(struct eval_session *s, const char *name, const char *src,
                                         size_t len, const int64_t *tunables,
                                         struct eval_outcome *out, struct eval_pending **pend,
                                         struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc eval_session_finish(struct eval_session *s, const char *name,
                                 struct eval_pending *pend, struct eval_outcome *out,
                                 struct kiln_err *err) KILN_NODISCARD;

/* Re-verifies a candidate on the held-out cases: on first use the session
 * takes a secret seed from getrandom, draws the cases from it within the
 * workload's ranges (heldout.h: sizes nobody saw, some of them timed) and
 * generates their inputs from it; every later candidate gets the same
 * draw. Neither is shown before the check ran. */
enum kiln_rc eval_session_held_out(struct eval_session *s, const char *name, const char *src,
                                   size_t len, const int64_t *tunables, struct eval_outcome *out,
                                   struct kiln_err *err) KILN_NODISCARD;

/* Folds a held-out outcome into the visible one: a failure there fails the
 * candidate (stage "held_out"); held-out times that do not fit the visible
 * ones scaled by work make it `inconsistent_timing` (VERDICT.md section 9);
 * else it is marked re-verified. */
void eval_session_apply_held_out(const struct eval_session *s, struct eval_outcome *visible,
                                 const struct eval_outcome *held);

/* The held-out draw (seed, cases); NULL before eval_session_held_out ran. */
const struct heldout_set *eval_session_held_out_draw(const struct eval_session *s);

/* The scratch directory of candidate `name` (compile/, run/, cases/). */
void eval_session_candidate_dir(const struct eval_session *s, const char *name, bool held,
                                char *out, size_t cap);

const struct workload *eval_session_workload(const struct eval_session *s);

/* The target from --arch `arch` (NULL: none) and the limits `probed` from
 * GPU `gpu` (NULL: no GPU could be asked): --arch, else the GPU's own, else
 * GPUARCH_DEFAULT ("the default"); limits the GPU's, else CUDA's table for
 * the target. KILN_E_USAGE for an --arch whose code the GPU cannot run,
 * KILN_E_UNSUPPORTED for an architecture the toolkit cannot compile for. */
enum kiln_rc eval_target_resolve(const char *arch, const struct device_limits *probed, int gpu,
                                 struct eval_target *t, struct kiln_err *err) KILN_NODISCARD;

/* The target of a cuda session; NULL for cpu. */
const struct eval_target *eval_session_target(const struct eval_session *s);

/* {"arch": "sm_90", "from": "the GPU" | "--arch" | "the default",
 * "limits": "queried" | "table", "smem_optin": N}, or null for NULL (cpu):
 * run.json's and kiln eval --json's "target" (a new reference; NULL: no
 * memory). */
struct json_t;
struct json_t *eval_target_json(const struct eval_target *t);
enum kiln_backend eval_session_backend(const struct eval_session *s);
const char *eval_session_dir(const struct eval_session *s);
/* Wall time spent generating the visible inputs and references so far (a
 * part of kiln eval's turnaround). */
double eval_session_inputs_seconds(const struct eval_session *s);
uint64_t eval_session_secret_seed(const struct eval_session *s);

/* The given input cases and reference script in use; NULL when none. */
const struct given_inputs *eval_session_given_inputs(const struct eval_session *s);
const struct given_reference *eval_session_given_reference(const struct eval_session *s);

void eval_session_close(struct eval_session *s);

#endif
