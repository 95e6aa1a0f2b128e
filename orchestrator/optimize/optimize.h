/*
 * optimize.h - `kiln optimize`: the loop. Explicit stages, each recorded as
 * it happens in results/run-NNN/ (results/README.md documents every file):
 *
 *   load workload -> inputs and references -> baselines (the starting
 *   kernel; the physics floor) -> propose -> compile -> run -> verify ->
 *   score -> feedback -> stop or repeat -> finalize (held-out check of the
 *   best, best.cu, summary.json, heatmap.svg, report.html).
 *
 * Every file is written atomically; a candidate's record is complete before
 * its history entry is appended, so `kill -9` loses at most the candidates
 * in flight (one, or up to --jobs) and optimize_resume() continues without
 * redoing finished ones.
 */
#ifndef KILN_OPTIMIZE_H
#define KILN_OPTIMIZE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "compile.h"
#include "error.h"
#include "proposer.h"

struct opt_options {
    const char *workload;      /* directory or built-in name; NULL with description */
    const char *description;   /* generate the workload from these words (wlgen.h) */
    int gen_attempts;          /* generation attempts; 0: the default (3) */
    const char *results_dir;   /* default "results" */
    enum kiln_backend backend; /* 0: auto */
    int gpu;
    int max_iterations;         /* budget of candidates (default 7) */
    int jobs;                   /* candidates in flight: compiles ahead of the run (default 1) */
    enum compile_tool compiler; /* cuda: nvcc (default) or nvrtc */
    const char *proposer;       /* tune (default), llm, replay */
    const char *model, *base_url;
    const char *replay_dir;     /* replay: the run whose replies to replay */
    const char *initial_kernel; /* replaces the workload's starting kernel */
    const char *input_cases;    /* replace the visible inputs (given.h); NULL: generated */
    const char *reference;      /* replaces reference.py (given.h); NULL: the workload's */
    const char *dotenv;         /* NULL: ./.env */
    uint64_t seed;              /* base seed of the inputs and the tuner */
    bool seed_random;           /* drawn fresh (no --seed): recorded as such in run.json */
    int warmups, iterations;    /* as in eval_request (evaluate.h) */
    bool adaptive;              /* --until-rse: as in eval_session_opts (session.h) */
    double target_rse, budget_ms;
    const char *arch; /* --arch (session.h); NULL: the GPU's own */
    bool quiet, json;
    bool profile; /* --profile: Nsight Compute on each new best (opt_profile.h) */
    /* --keep-inputs: work/inputs* stay after finalize; otherwise they are
     * removed once summary.json is written (they can be GBs). */
    bool keep_inputs;
    const struct sbexec_runner *runner; /* where harness runs go (--executor); NULL: here */
    /* Set (by the caller's signal handler) to stop: the candidate being
     * evaluated is not recorded, the run stops before the next one and
     * returns KILN_E_CANCELLED, its record resumable. NULL: never. */
    const volatile sig_atomic_t *stop;
    int argc; /* the command line, for run.json */
    char **argv;

    int docs;             /* --docs K: passages per llm prompt (docs_prompt.h); 0: none */
    const char *docs_dir; /* --docs-dir: a user's corpus searched too (docs_index.h) */
    /* --tuner-run: an earlier tuner run of the workload whose findings go
     * into the llm prompt and whose best kernel this run starts from
     * (tuner_findings.h); NULL: none */
    const char *tuner_run;
};

/* With jobs > 1 (and a proposer that can look ahead: tune, replay) up to
 * `jobs` proposed candidates are in flight: the later ones compile in
 * worker processes while the oldest runs; runs and records stay in
 * proposal order. kill -9 loses at most those in flight. */

/* Runs a new optimization; *run_dir gets its directory. Returns KILN_OK
 * when the run completed (whether or not a candidate beat the start). */
enum kiln_rc optimize_run(const struct opt_options *o, char *run_dir, size_t cap,
                          struct kiln_err *err) KILN_NODISCARD;

/* Continues an interrupted run from its records. */
enum kiln_rc optimize_resume(const char *run_dir, bool quiet, bool json,
                             struct kiln_err *err) KILN_NODISCARD;

/* What `kiln resume` takes from its command line rather than the record:
 * a run directory may come from anyone, so the API key goes only to the
 * default server or to `base_url` given here (opt_resume.c). */
struct opt_resume_options {
    bool quiet, json;
    const char *base_url;               /* --base-url; NULL: the recorded one, without the key */
    const char *dotenv;                 /* --env-file; NULL: ./.env */
    const volatile sig_atomic_t *stop;  /* as opt_options.stop */
    const struct sbexec_runner *runner; /* --executor; NULL: this host, whatever run.json says */
};

enum kiln_rc optimize_resume_with(const char *run_dir, const struct opt_resume_options *ro,
                                  struct kiln_err *err) KILN_NODISCARD;

#endif
