/*
 * wlgen.h - `kiln optimize --description TEXT`: the model writes the
 * workload (signature, inputs.py, reference.py, the starting kernel) before
 * the loop starts, and kiln validates it as it validates any workload from
 * a stranger.
 *
 * One attempt: prompt (the description, this run's backend, the workload
 * and candidate formats, the built-in saxpy as an example, and for a retry
 * the previous answer with every problem found) -> the model's answer
 * (llm_chat, or the recorded reply of an earlier run) -> wlgen_reply_parse
 * -> kiln sets "provenance": "model-generated" in workload.json -> the
 * files are written to generate/NN/workload/ -> workload_load (the strict
 * parser) -> wlcheck_run (`kiln workload check`: every visible and held-out
 * case's scripts in the script sandbox, tensors against the signature,
 * weak cases) -> the starting kernel compiled, run and verified against the
 * reference once. The first attempt that passes all of it becomes the run's
 * workload/ (a directory rename, so it appears whole or not at all); a
 * failed one is fed back, up to max_attempts. Everything is recorded in the
 * run (results/README.md): generation.json and generate/NN/.
 *
 * The workload's reference then comes from the same model that may write
 * the kernels it judges: it is no independent oracle, and every place that
 * shows the run's results says so (workload.json provenance, run.json,
 * summary.json, the final table, report.html, kiln eval; SECURITY.md).
 */
#ifndef KILN_WLGEN_H
#define KILN_WLGEN_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "proposer.h"
#include "runrec.h"

#define WLGEN_DEFAULT_ATTEMPTS 3
#define WLGEN_MAX_ATTEMPTS     10
#define WLGEN_DESC_MAX         4096 /* bytes of --description */

struct wlgen_request {
    const char *description;        /* the user's words (at most WLGEN_DESC_MAX bytes) */
    enum kiln_backend backend;      /* the run's: the workload must list it */
    int gpu;                        /* for the starting kernel's check (cuda) */
    const struct runrec *rr;        /* the run: generate/NN/, generation.json, workload/ */
    const char *work_dir;           /* the run's work/: the input cache the loop reuses */
    uint64_t seed;                  /* base seed of the inputs (the run's) */
    int max_attempts;               /* 1..WLGEN_MAX_ATTEMPTS; 0: WLGEN_DEFAULT_ATTEMPTS */
    const struct llm_settings *llm; /* the endpoint; unused when replaying */
    const char *replay_dir;         /* non-NULL: replay the generation recorded in that run */
    bool verbose;                   /* progress on stderr */
};

struct wlgen_result {
    int attempts; /* attempts made */
    int accepted; /* the attempt that became workload/ (1-based); 0: none */
};

/*
 * Generates the run's workload/. KILN_OK: workload/ holds a workload that
 * passed every check. Errors: KILN_E_REJECTED when no attempt passed (the
 * message names the last problems and where the attempts are recorded),
 * KILN_E_USAGE for a bad request (no model, a description the recorded run
 * was not made with), KILN_E_NOTFOUND when the replayed run recorded no (or
 * too few) generation replies, the model call's own error when it failed
 * after its retries, and the host's errors (I/O, the sandbox).
 */
enum kiln_rc wlgen_generate(const struct wlgen_request *req, struct wlgen_result *res,
                            struct kiln_err *err) KILN_NODISCARD;

/* The checks wlgen_generate makes before it asks anything (the description,
 * a model, for a replay that the recorded run was generated from the same
 * description for the same backend), so a bad request fails before the run
 * directory exists; req->rr and req->work_dir are not used. */
enum kiln_rc wlgen_check(const struct wlgen_request *req, struct kiln_err *err) KILN_NODISCARD;

/* The user prompt of one attempt (exposed for tests): `problems` and
 * `previous` (the last answer) are NULL on the first attempt. NULL when out
 * of memory or when kiln's own format documents cannot be read (err says
 * which file). */
char *wlgen_build_prompt(const char *description, enum kiln_backend backend, const char *problems,
                         const char *previous, struct kiln_err *err);

/* The system prompt. */
const char *wlgen_system_prompt(void);

#endif
