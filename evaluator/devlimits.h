/*
 * devlimits.h - what a GPU allows one launch: threads, block and grid
 * dimensions, shared memory and registers per block and per SM, and its
 * compute capability. Launch plans are checked against them (plan.h), the
 * embedded tuner prunes with them, and `// kiln: require` directives read
 * them as DEVICE_* names (evaluator/CANDIDATE.md).
 *
 * They come from the device that will run the candidate (`kiln-harness-cuda
 * --device-props`, kiln's own program, outside any sandbox), or, where no
 * device can be asked (no GPU here, a Slurm node not yet reached), from
 * CUDA's table of compute capabilities for the target architecture, with
 * `queried` false so that callers say so.
 */
#ifndef KILN_DEVLIMITS_H
#define KILN_DEVLIMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "expr.h"

struct gpu_props; /* gpupeak.h */

struct device_limits {
    int cc;       /* compute capability x10: 75 (T4), 80 (A100), 90 (H100, H200) */
    bool queried; /* asked from the device; false: CUDA's table for `cc` */
    int64_t max_threads_per_block;
    int64_t max_block_dim[3];
    int64_t max_grid[3];
    int64_t max_smem_optin;  /* dynamic shared memory per block, with opt-in, bytes */
    int64_t max_smem_per_sm; /* bytes */
    int64_t max_regs_per_block;
    int64_t max_regs_per_sm;
    int64_t max_threads_per_sm;
};

/* The H200 (sm_90), the limits when neither a device nor a target is known. */
#define DEVICE_LIMITS_H200                                                                         \
    {                                                                                              \
        .cc = 90, .queried = false, .max_threads_per_block = 1024,                                 \
        .max_block_dim = {1024, 1024, 64}, .max_grid = {2147483647, 65535, 65535},                 \
        .max_smem_optin = 232448, .max_smem_per_sm = 233472, .max_regs_per_block = 65536,          \
        .max_regs_per_sm = 65536, .max_threads_per_sm = 2048                                       \
    }

/* The limits of architecture `cc` from CUDA's table ("Technical
 * Specifications per Compute Capability"), queried false. An architecture
 * with no row gets the smallest row's limits (sm_75: a configuration that
 * fits it fits every GPU kiln supports) and returns false. */
bool devlimits_for_arch(int cc, struct device_limits *out);

/* The second line `kiln-harness-cuda --device-props` prints. */
#define DEVLIMITS_FORMAT                                                                           \
    "limits threads_per_block=%lld block=%lld,%lld,%lld grid=%lld,%lld,%lld smem_optin=%lld "      \
    "smem_per_sm=%lld regs_per_block=%lld regs_per_sm=%lld threads_per_sm=%lld\n"
#define DEVLIMITS_LINE_MAX 320

/* The third line: the measured copy bandwidth (gpu_props.copy_mb_per_s). */
#define DEVCOPY_FORMAT "copy mb_per_s=%d\n"

/* The probe's whole output: gpupeak's line (gpupeak_parse_props), the
 * limits line, then the copy line, each canonical, nothing else; every
 * limit in a plausible range, the copy figure 0 (not measured) to
 * 100 000 000 MB/s. `lim` gets the compute capability from the first line
 * and queried true. KILN_E_PARSE naming the line otherwise. */
enum kiln_rc devprobe_parse(const char *text, struct gpu_props *props, struct device_limits *lim,
                            struct kiln_err *err) KILN_NODISCARD;

/* The names a require directive may use besides tunables, with `l`'s
 * values: DEVICE_CC, DEVICE_SMEM_OPTIN, DEVICE_SMEM_PER_SM,
 * DEVICE_REGS_PER_BLOCK, DEVICE_REGS_PER_SM, DEVICE_THREADS_PER_SM. */
#define DEVLIMITS_NVARS 6
void devlimits_vars(const struct device_limits *l, struct expr_var vars[DEVLIMITS_NVARS]);

/* "sm_90, queried from the GPU" or "sm_80, from CUDA's table (no GPU
 * queried)": how messages name where the limits came from. */
void devlimits_describe(const struct device_limits *l, char *out, size_t cap);

#endif
