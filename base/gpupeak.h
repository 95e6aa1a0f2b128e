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

#include <stdbool.h>

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

/* The kinds of arithmetic unit a workload's flops may use (workload.json
 * "math", workloads/README.md), each with its own peak: the roofline of a
 * workload is the peak of the fastest unit it allows, not the device's
 * fastest unit of all (an fp32 SGEMM that forbids TF32 is judged against
 * the FP32 SIMT peak, not the TF32 tensor one). Numbered: the names cross
 * into verdicts and run records. */
enum gpu_unit {
    GPU_UNIT_FP32_SIMT = 0, /* fp32 FMA lanes (CUDA cores) */
    GPU_UNIT_TF32 = 1,      /* dense TF32 tensor cores */
    GPU_UNIT_FP16 = 2,      /* dense FP16 tensor cores, fp32 accumulation */
    GPU_UNIT_BF16 = 3,      /* dense BF16 tensor cores, fp32 accumulation */
    GPU_UNIT_FP8 = 4,       /* dense FP8 (e4m3/e5m2) tensor cores */
};
#define GPU_UNIT_COUNT   5
#define GPU_UNIT_MASK(u) (1u << (u))
#define GPU_UNITS_ALL    ((1u << GPU_UNIT_COUNT) - 1)

/* "fp32_simt", "tf32_tensor", "fp16_tensor", "bf16_tensor", "fp8_tensor";
 * NULL outside the enum. */
const char *gpu_unit_name(enum gpu_unit u);

/* For people: "FP32 SIMT", "TF32 tensor", ...; "?" outside the enum. */
const char *gpu_unit_label(enum gpu_unit u);

/* gpu_unit_name's inverse; false for any other text. */
bool gpu_unit_parse(const char *name, enum gpu_unit *out);

/* Significand bits (implicit bit included) of the unit's input format:
 * fp32 24, tf32 11, fp16 11, bf16 8, fp8 (e4m3) 4. */
int gpu_unit_significand_bits(enum gpu_unit u);

/* The precision one step below the narrowest of `units` on the ladder
 * fp32 (24 bits) > tf32 and fp16 (11) > bf16 (8) > fp8 e4m3 (4): the
 * precision a cheaper kernel would compute in, which the workload's
 * tolerance must refuse (compare_low_precision_passes). Its significand
 * bits, and in *label its name ("fp8 (e4m3)"); 0 below fp8 or for no unit. */
int gpu_unit_guard_bits(unsigned units, const char **label);

/* The dense rate of `unit` on sm_<major><minor> in flop (2 per FMA) per SM
 * per clock, from the table in gpupeak.c (its sources are cited there);
 * 0 when that architecture has no such unit or kiln knows no rate for it. */
int gpupeak_unit_flop_per_clk_sm(int major, int minor, enum gpu_unit unit);

struct gpu_peaks {
    double bytes_per_s; /* DRAM: 2 transfers per memory clock x bus width; 0 unknown */
    /* Each unit's dense peak: SMs x maximum SM clock x the table's rate;
     * 0 where the architecture has no such unit (or an unknown one). */
    double unit_flop_per_s[GPU_UNIT_COUNT];
    /* The fastest path an fp32 result can come from: the larger of the
     * FP32 FMA units and the dense TF32 tensor cores (FP16 where the
     * architecture has no TF32: a split-precision kernel is exact to fp32);
     * 0 when the architecture is unknown. The impossible-timing guard of a
     * workload whose math is fp32 or tf32 uses it (gpupeak_for_units). */
    double flop_per_s;
};

/* What a workload allowed the units in `units` (a GPU_UNIT_MASK set) is
 * measured against on a device with peaks `p`. */
struct gpu_roofline {
    double flop_per_s;       /* the roofline: the fastest allowed unit's peak; 0 none */
    enum gpu_unit unit;      /* that unit (meaningful when flop_per_s > 0) */
    double guard_flop_per_s; /* the impossible-timing guard's rate: the roofline, or
                                for fp32/tf32 math the fastest path to an fp32-exact
                                result (flop_per_s of gpu_peaks) when that is higher */
};

/* The roofline of `units` (0 means the default, FP32 SIMT) on `p`. */
void gpupeak_for_units(const struct gpu_peaks *p, unsigned units, struct gpu_roofline *out);

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
