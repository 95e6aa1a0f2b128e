/*
 * gpupeak.c - peak rates from device properties (gpupeak.h). The tensor
 * rates are NVIDIA's published dense figures divided back to flop per SM
 * per clock, rounded up to the next power of two where a product line's
 * figures disagree: an overestimated peak only lowers the floor, while an
 * underestimated one would call a legitimate kernel impossible.
 */
#include "gpupeak.h"

#include <stdio.h>
#include <string.h>

/* Dense tensor flop per SM per clock of the fastest type an fp32 result can
 * be computed from within fp32 tolerance: TF32 (a 3xTF32 split kernel is
 * exact to fp32 and runs at about a third of it, a plain TF32 one may pass a
 * loose tolerance at the full rate), FP16 on Volta and Turing, which have
 * no TF32. 0: unknown, no flop floor. */
static int tensor_flop_per_clk_sm(int major, int minor)
{
    switch (major) {
    case 7: /* V100: 125 TF fp16 / (80 SMs x 1.53 GHz); T4, 2080 Ti likewise */
        return 1024;
    case 8:
        if (minor == 0) /* A100: 156 TF tf32 / (108 x 1.41 GHz) */
            return 1024;
        return 512; /* A40, L40S: 512; consumer GA10x/AD10x: 256 */
    case 9:         /* H100, H200: 495 TF tf32 / (132 x 1.83 GHz) = 2048 */
        return 2048;
    case 10: /* B200: ~1.1-1.25 PF tf32 / (148 x ~1.9 GHz) ~ 4100: rounded up */
    case 11:
        return 8192;
    case 12: /* RTX 50, RTX PRO Blackwell: ~256; generous */
        return 1024;
    default:
        return 0;
    }
}

/* FP32 FMA lanes per SM (each 2 flop per clock). */
static int fp32_lanes_sm(int major, int minor)
{
    if (major == 7 || (major == 8 && minor == 0))
        return 64;
    return 128;
}

enum kiln_rc gpupeak_compute(const struct gpu_props *p, struct gpu_peaks *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (p->sm_count < 1 || p->sm_count > 4096 || p->sm_clock_khz < 1000 ||
        p->sm_clock_khz > 10000000 || p->cc_major < 1 || p->cc_major > 99 || p->cc_minor < 0 ||
        p->cc_minor > 9 || p->mem_clock_khz < 0 || p->mem_clock_khz > 100000000 ||
        p->bus_width_bits < 0 || p->bus_width_bits > 65536)
        return kiln_fail(err, KILN_E_REJECTED,
                         "implausible device properties (SM count %d, SM clock %d kHz, sm_%d%d, "
                         "memory clock %d kHz, bus %d bits): no physics floor can be derived",
                         p->sm_count, p->sm_clock_khz, p->cc_major, p->cc_minor, p->mem_clock_khz,
                         p->bus_width_bits);
    double clk = (double)p->sm_clock_khz * 1e3;
    /* The driver reports the memory clock such that DRAM moves data twice
     * per clock (H100 SXM: 2619 MHz x 5120 bits x 2 = 3.35 TB/s). */
    out->bytes_per_s = 2.0 * (double)p->mem_clock_khz * 1e3 * (double)p->bus_width_bits / 8.0;
    int tensor = tensor_flop_per_clk_sm(p->cc_major, p->cc_minor);
    out->tensor_flop_per_clk_sm = tensor;
    if (tensor > 0) {
        int simt = 2 * fp32_lanes_sm(p->cc_major, p->cc_minor);
        out->flop_per_s = (double)p->sm_count * clk * (double)(tensor > simt ? tensor : simt);
    }
    return KILN_OK;
}

enum kiln_rc gpupeak_parse_props(const char *text, struct gpu_props *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    size_t len = strnlen(text, 257);
    char again[257];
    int n = -1;
    if (len > 256 ||
        sscanf(text, "sm_count=%d sm_clock_khz=%d cc=%d.%d mem_clock_khz=%d bus_width_bits=%d%n",
               &out->sm_count, &out->sm_clock_khz, &out->cc_major, &out->cc_minor,
               &out->mem_clock_khz, &out->bus_width_bits, &n) != 6 ||
        n < 0 || strcmp(text + n, "\n") != 0)
        return kiln_fail(err, KILN_E_PARSE,
                         "device properties: expected one line \"sm_count=N sm_clock_khz=N cc=M.m "
                         "mem_clock_khz=N bus_width_bits=N\", got \"%.80s\"",
                         text);
    /* sscanf accepts signs and spaces %d would skip; the canonical form is
     * what the probe prints, so anything else is refused. */
    snprintf(again, sizeof(again), GPUPEAK_PROPS_FORMAT, out->sm_count, out->sm_clock_khz,
             out->cc_major, out->cc_minor, out->mem_clock_khz, out->bus_width_bits);
    if (strcmp(again, text) != 0)
        return kiln_fail(err, KILN_E_PARSE, "device properties: not in canonical form: \"%.80s\"",
                         text);
    return KILN_OK;
}
