/*
 * gpupeak.h - a GPU's peak rates, computed from what the device says about
 * itself (SM count, maximum SM clock, compute capability, memory clock and
 * bus width), for the physics floor (evaluator/VERDICT.md section 5). A
 * floor must never sit below what a legitimate kernel can reach, so every
 * rate here is a theoretical peak, rounded up where in doubt.
 *
 * gpupeak_compute() is pure (unit-tested with synthetic devices). The
 * properties come from `kiln-harness-cuda --device-props BUS_ID`, kiln's own
 * program run outside any sandbox (no candidate code is involved), so the
 * trusted parent never initialises CUDA itself; gpupeak_parse_props() reads
 * its one line strictly.
 */
#ifndef KILN_GPUPEAK_H
#define KILN_GPUPEAK_H

#include "error.h"

/* What the driver reports (cuDeviceGetAttribute). */
struct gpu_props {
    int sm_count;           /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    int sm_clock_khz;       /* CU_DEVICE_ATTRIBUTE_CLOCK_RATE: the maximum (boost) SM clock */
    int cc_major, cc_minor; /* compute capability */
    int mem_clock_khz;      /* CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: peak memory clock */
    int bus_width_bits;     /* CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH */
    /* Measured, not reported: the probe's best device-to-device copy, bytes
     * read plus written, in MB/s; 0 not measured. Shown beside the nominal
     * DRAM peak, never used for the floor (evaluator/devlimits.h). */
    int copy_mb_per_s;
};

struct gpu_peaks {
    double bytes_per_s; /* DRAM: 2 transfers per memory clock x bus width; 0 unknown */
    /* The fastest path an fp32 result can come from: the larger of the
     * FP32 FMA units and the dense TF32 tensor cores (FP16 where the
     * architecture has no TF32); 0 when the architecture is unknown. */
    double flop_per_s;
    int tensor_flop_per_clk_sm; /* the per-SM tensor rate used; 0 unknown */
};

/* Peaks of a device with properties `p`. KILN_E_REJECTED for properties
 * out of any plausible range; an architecture kiln has no tensor rate for
 * is not an error: flop_per_s is 0 (no flop floor) and `err` is left clear. */
enum kiln_rc gpupeak_compute(const struct gpu_props *p, struct gpu_peaks *out,
                             struct kiln_err *err) KILN_NODISCARD;

/* The line the probe prints (GPUPEAK_PROPS_FORMAT, one line, at most
 * 256 bytes), e.g. "sm_count=132 sm_clock_khz=1980000 cc=9.0
 * mem_clock_khz=3201000 bus_width_bits=6144\n": every field, in this
 * order, decimal, nothing else. KILN_E_PARSE otherwise. */
#define GPUPEAK_PROPS_FORMAT                                                                       \
    "sm_count=%d sm_clock_khz=%d cc=%d.%d mem_clock_khz=%d bus_width_bits=%d\n"
enum kiln_rc gpupeak_parse_props(const char *text, struct gpu_props *out,
                                 struct kiln_err *err) KILN_NODISCARD;

#endif
