/*
 * torch_baseline.h - the torch baseline of a workload written by `kiln
 * import kernelbench` (workload.json "baseline": {"kind": "torch"}): the
 * problem's own torch Model timed the way kiln times candidates, as
 * KernelBench's baselines are (torch eager and torch.compile), and reported
 * as the workload's vendor columns.
 *
 * kiln's script harness/hx_torch.py (embedded at build) runs in a sandbox
 * with the workload's inputs.py, whose definitions build the Model with the
 * case's constants; it draws every visible input set of every performance
 * case from the set's seed exactly as inputs.py does (so torch sees the
 * values the candidates see), and times forward() with kiln's rule: the
 * session's warmups and iterations, sets in random permutation blocks, the
 * cache flushed before every run, CUDA events (CPU: the monotonic clock).
 * Each mode is its own sandbox, eager first, so a torch.compile that fails
 * (no inductor, a compiler missing, a syscall the policy refuses) costs only
 * its own column, with the reason.
 *
 *   cuda: the `torch-gpu` policy and image (the script policy's processes,
 *         the GPU's device nodes and driver ioctls; the driver's libraries
 *         and torch's caches under /tmp);
 *   cpu:  the `script` policy and image: torch CPU eager (and
 *         torch.compile where that torch has it).
 *
 * The documents come back as timings.json and status.json in the harness's
 * formats, parsed by the same strict parsers (timings_parse,
 * hstatus_parse); a case's median is the geometric mean of its sets'
 * medians, as for candidates. A baseline that cannot be timed is a state
 * with a reason, never an error of the candidate or the session.
 */
#ifndef KILN_TORCH_BASELINE_H
#define KILN_TORCH_BASELINE_H

#include "baseline.h"

/* Times torch eager into out->medians and torch.compile into out->compile
 * on every performance case of `req->backend` among req->sets. KILN_OK
 * whatever the baseline's state (out->state, out->compile_state); an error
 * only when kiln could not write its own scratch files. */
enum kiln_rc torch_baseline_run(const struct eval_baseline_request *req, struct eval_baseline *out,
                                struct kiln_err *err) KILN_NODISCARD;

/* A level's eager times at the problems' own sizes (kiln bench
 * kernelbench --baseline-only): every problem file of `dir` run in ONE
 * sandbox as KernelBench runs it (its module constants as written, seed 0,
 * the tensors made on the device), timed by the same rule, one set each. */
struct torch_problem_time {
    char file[256];   /* in: the file's name in dir */
    double ms;        /* out: torch eager's median; 0 when there is none */
    char detail[256]; /* out: why not */
};

struct torch_problems_request {
    const char *dir;      /* the level's folder, bound read-only at /in/problems */
    const char *work_dir; /* scratch: the plan and the sandbox's documents (created) */
    enum kiln_backend backend;
    int gpu;
    int warmups, iterations; /* 0: the harness's defaults; warmups EVAL_NO_WARMUPS: none */
    long long timeout_ms;    /* the sandbox's; 0: the policy's */
    double deadline_s;       /* no problem starts after this many seconds */
};

/* Fills p[i].ms or p[i].detail for each of the n problems; `detail` gets
 * why none could be timed (the sandbox failed). KILN_OK whatever the
 * problems did; an error only for kiln's own scratch files. */
enum kiln_rc torch_baseline_problems(const struct torch_problems_request *req,
                                     struct torch_problem_time *p, size_t n, char *detail,
                                     size_t cap, struct kiln_err *err) KILN_NODISCARD;

#endif
