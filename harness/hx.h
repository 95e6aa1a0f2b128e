/*
 * hx.h - the harness core and the backend ops table it drives. One core
 * (hx_core.c) implements the protocol of harness/HARNESS.md: load inputs,
 * lay out guarded buffers, correctness runs, timed runs with reload,
 * restore, poison, cache flush and fingerprint checks, and the output
 * documents. A backend (hx_cuda.c: CUDA driver API; hx_cpu.c: dlopen'd
 * shared object) supplies memory, copies, fingerprints and the timed
 * execution of one plan. In baseline mode (hx_baseline.c) the same core
 * times a vendor operation the backend runs instead of a candidate.
 *
 * Lifecycle: hx_main() parses the command line, reads the plan, opens the
 * backend through its ops table, runs every case, writes the documents and
 * closes the backend. Everything is owned by hx_main's frame; the one
 * process-wide thing is the CPU backend's crash handler (see hx_cpu.c).
 */
#ifndef KILN_HX_H
#define KILN_HX_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "failure_kind.h"
#include "error.h"
#include "harness_plan.h"

#define KILN_POISON_BYTE 0xFF

/* A backend address: a CUdeviceptr, or a host pointer for the CPU backend. */
typedef uint64_t hx_addr;

struct hx_region {
    hx_addr addr;
    uint64_t bytes;
};

/* Where the harness is, for the log and the CPU crash handler. Strings
 * point into the plan; the core updates it before each run. */
struct hx_where {
    const char *case_name;
    const char *set_name;
    const char *phase; /* "correctness", "warmup", "timed" */
    int run;           /* run index within the phase */
    int launch;        /* launch being executed, -1 outside the plan */
};

/* The outcome of the candidate's part of a run, filled by ops->run. */
struct hx_fault {
    enum failure_kind kind; /* FK_LAUNCH_FAILED, FK_CUDA_ERROR, FK_MODULE; FK_NONE if none */
    char cuda_error[64];    /* CUDA's name for the error, "" on the CPU */
    bool broken;            /* the device can no longer be used (sticky error) */
};

struct hx_backend;

struct hx_ops {
    const char *name;        /* "cuda" or "cpu": must equal the plan's backend */
    const char *module_file; /* "candidate.cubin" or "candidate.so" */
    /* Opens the device and reads the candidate module (not yet loaded);
     * `module_path` is NULL in baseline mode, which has no module. */
    enum kiln_rc (*open)(struct hx_backend **out, const struct harness_plan *plan,
                         const char *module_path, struct hx_where *where, int log_fd,
                         struct kiln_err *err);
    void (*close)(struct hx_backend *b);
    const char *(*device_name)(struct hx_backend *b);
    enum kiln_rc (*alloc)(struct hx_backend *b, uint64_t bytes, hx_addr *out, struct kiln_err *err);
    /* Optional: how many bytes from `a` (an alloc() of `requested` bytes)
     * the candidate could reach without a fault: the allocator's rounding
     * (CUDA's page granularity, the CPU's page size). The core poisons and
     * checks that tail too. NULL: exactly `requested`. */
    uint64_t (*alloc_size)(struct hx_backend *b, hx_addr a, uint64_t requested);
    void (*release)(struct hx_backend *b, hx_addr a);
    enum kiln_rc (*upload)(struct hx_backend *b, hx_addr dst, const void *src, uint64_t n,
                           struct kiln_err *err);
    enum kiln_rc (*download)(struct hx_backend *b, void *dst, hx_addr src, uint64_t n,
                             struct kiln_err *err);
    enum kiln_rc (*copy)(struct hx_backend *b, hx_addr dst, hx_addr src, uint64_t n,
                         struct kiln_err *err);
    enum kiln_rc (*fill)(struct hx_backend *b, hx_addr dst, uint8_t byte, uint64_t n,
                         struct kiln_err *err);
    /* out[i] = hx_fp_finish(sum over region i) for each of n regions. */
    enum kiln_rc (*fingerprint)(struct hx_backend *b, const struct hx_region *r, int n,
                                uint64_t seed, uint64_t *out, struct kiln_err *err);
    /* (Re)loads the candidate module so it starts from a fresh image. A
     * failure that is the candidate's (missing kernel, bad image) fills
     * `fault` and returns KILN_E_REJECTED. */
    enum kiln_rc (*reload)(struct hx_backend *b, struct hx_fault *fault, struct kiln_err *err);
    /* Outside the timed region: wait for the restores, reset any
     * persisting-cache carve-out and flush caches (when `flush`). A GPU
     * backend leaves the device busy (the flush, or a short spin) so the
     * timed region starts when the device reaches the first launch, not
     * when the host enqueues it. */
    enum kiln_rc (*prepare)(struct hx_backend *b, bool flush, struct kiln_err *err);
    /* Runs launches first .. first + count - 1 of case `c` once, timing
     * from before the first to after the last (a timed run is all of them;
     * a correctness run goes one launch at a time, so the core can check
     * the inputs in between). params[l][i] points at launch l's i-th
     * argument value (cuLaunchKernel's kernelParams convention). A failure
     * the candidate caused fills `fault` and returns KILN_E_REJECTED (or
     * KILN_E_CUDA when the context is gone). */
    enum kiln_rc (*run)(struct hx_backend *b, const struct harness_case *c, int first, int count,
                        void *const *const *params, double *ms, struct hx_fault *fault,
                        struct kiln_err *err);

    /* ---- baseline mode (HARNESS.md section 7): no candidate module ---- */
    /* Makes baseline `kind` ready (CUDA cublas_sgemm: dlopen libcublas and
     * create a handle, once). One this backend or host cannot run fills
     * `fault` (kind "unavailable") and returns KILN_E_REJECTED, err saying
     * why ("baseline unavailable: ..."). */
    enum kiln_rc (*baseline_open)(struct hx_backend *b, enum harness_baseline kind,
                                  struct hx_fault *fault, struct kiln_err *err);
    /* One timed execution of the vendor operation for case `c`, after
     * prepare() like a candidate's run: memcpy copies ceil(bytes / 2) bytes
     * from buf[1] to buf[0]; cublas_sgemm computes row-major float32
     * C = A B with A = buf[0] (m x k), B = buf[1] (k x n), C = buf[2]. */
    enum kiln_rc (*baseline_run)(struct hx_backend *b, enum harness_baseline kind,
                                 const struct harness_case *c, const hx_addr *buf, double *ms,
                                 struct hx_fault *fault, struct kiln_err *err);
    /* Optional: the host pointer behind address `a` when the backend's
     * memory is ordinary host memory (CPU), so files are read into it and
     * written from it directly. NULL (the op or its result) otherwise: the
     * core then goes through upload/download. */
    void *(*host_ptr)(struct hx_backend *b, hx_addr a);
};

/* The backends; each file that defines one is linked into its own binary. */
extern const struct hx_ops hx_cpu_ops;
extern const struct hx_ops hx_cuda_ops;

/* `kiln-harness-cuda --device-props BUS_ID`: prints the GPU's properties
 * in base/gpupeak.h's GPUPEAK_PROPS_FORMAT, then its launch limits in
 * evaluator/devlimits.h's DEVLIMITS_FORMAT, on stdout and returns 0, or a
 * reason on stderr and 1. Runs no candidate. */
int hx_cuda_device_props(const char *bus_id);

/* The whole harness program: argv as main's. Returns the exit status:
 * 0 when the documents were written (whatever the candidate did), 1 when
 * the harness itself could not run (the reason is on stderr and in log.txt). */
int hx_main(const struct hx_ops *ops, int argc, char **argv);

/* CLOCK_MONOTONIC in milliseconds. */
double hx_now_ms(void);

/* Adaptive timing (--until-rse) has spent its budget: `timed_ms` of the
 * kernel's own measured runs reached plan.budget_ms (the work around each
 * run does not count), or `wall_ms` of timing reached half the case's time
 * limit (so the watchdog never ends a case that is only being timed). */
bool hx_adaptive_spent(const struct harness_plan *p, double timed_ms, double wall_ms);

/* One log line "<ms since t0_ms> ms  <text>\n", written with a single
 * unbuffered write so a crash never loses what came before; fd < 0: none. */
void hx_log_vline(int fd, double t0_ms, const char *fmt, va_list ap) KILN_PRINTF(3, 0);

#endif
