/*
 * baseline.h - the workload's vendor baseline (workloads/README.md,
 * `baseline`): a device-to-device copy of the declared bytes, cuBLAS SGEMM
 * or a cuBLASLt bf16 GEMM on the declared m, n, k (on the cpu backend: a
 * memcpy, or a plain C bf16 GEMM), timed per performance case by kiln's own
 * harness in baseline mode (harness/HARNESS.md section 7), in its own
 * gpu-run sandbox, with the same warmups, iterations and cache flush as the
 * candidates. Its medians become each verdict's `baseline_ms`.
 *
 * Workloads imported from KernelBench declare the torch baseline instead
 * (torch_baseline.h): the problem's Model, eager and compiled.
 *
 * A baseline that cannot be timed (none declared, cuBLAS on the cpu
 * backend, libcublas missing, a case too large, the process failing) is a
 * state with a reason, never an error of the candidate or of the session:
 * the verdicts then carry null where a baseline time would be.
 *
 * Lifecycle: eval_baseline_run() fills a caller-owned struct eval_baseline
 * (no heap memory inside); eval_baseline_json() builds its JSON form.
 */
#ifndef KILN_BASELINE_H
#define KILN_BASELINE_H

#include <jansson.h>
#include <stdbool.h>

#include "evaluate.h"

enum eval_baseline_state {
    EVAL_BASELINE_NONE = 0,    /* the workload declares none */
    EVAL_BASELINE_OK,          /* timed on at least one performance case */
    EVAL_BASELINE_UNAVAILABLE, /* declared, but no case could be timed */
};

struct eval_baseline {
    enum wl_baseline_kind kind;
    enum eval_baseline_state state;
    char detail[512];            /* why (some) cases have no time; "" when all do */
    struct eval_medians medians; /* per performance case that was timed */
    double t_run;                /* seconds in the sandbox */
    /* kind torch only (torch_baseline.h): `medians` are torch eager's, and
     * these torch.compile's, a column of their own that verdicts do not
     * divide by. compile_state is NONE for every other kind. */
    enum eval_baseline_state compile_state;
    char compile_detail[512];
    struct eval_medians compile;
};

struct sbexec_runner; /* sbexec.h */

struct eval_baseline_request {
    const struct workload *wl;
    enum kiln_backend backend;
    const char *harness;  /* kiln-harness-cuda / kiln-harness-cpu */
    const char *work_dir; /* scratch: plan.json and the harness's run/ (created) */
    int gpu;
    int warmups, iterations; /* 0: harness defaults; warmups EVAL_NO_WARMUPS: none */
    bool hot;
    long long run_timeout_ms;           /* 0: the gpu-run policy's default */
    const struct sbexec_runner *runner; /* where the harness runs; NULL: this host */
    /* kind torch: the visible sets (laid out is enough: their cases and
     * seeds), so torch runs on the values the candidates get */
    const struct input_sets *sets;
};

/* Times the baseline of every performance case of `req->backend`. KILN_OK
 * whatever the baseline's state (read out->state); an error only when kiln
 * could not write its own scratch files. */
enum kiln_rc eval_baseline_run(const struct eval_baseline_request *req, struct eval_baseline *out,
                               struct kiln_err *err) KILN_NODISCARD;

/* For the baselines' own modules (torch_baseline.c): runs `step` (its
 * out_dir receives status.json and timings.json in the harness's formats)
 * and adds a median per case that was timed to *m (the geometric mean of
 * its sets' medians, as for candidates) and the first reason a case was
 * not to `detail` (`what` names the step: "the baseline harness"). Adds
 * the sandbox's wall time to *t_run. KILN_OK whatever the baseline did. */
struct sbexec_step; /* sbexec.h */
enum kiln_rc eval_baseline_sandboxed(const struct sbexec_step *step, const char *what,
                                     struct eval_medians *m, char *detail, size_t cap,
                                     double *t_run, struct kiln_err *err) KILN_NODISCARD;

/* "memcpy", "cublas_sgemm", "cublaslt_bf16", "torch", or NULL for none. */
const char *eval_baseline_kind_name(enum wl_baseline_kind k);

/* "none", "ok", "unavailable". */
const char *eval_baseline_state_name(enum eval_baseline_state s);

/* {"kind": "memcpy" | "cublas_sgemm" | "cublaslt_bf16" | "torch" | null, "status": "ok" |
 * "unavailable" | "none", "detail": "...", "ms": {case: median, ...}}, and
 * for torch "compile": {"status", "detail", "ms"} (torch.compile's; "ms" is
 * torch eager's); NULL on ENOMEM. */
json_t *eval_baseline_json(const struct eval_baseline *b);

#endif
