/*
 * gpupeak.c - peak rates from device properties (gpupeak.h): a table of
 * dense rates per SM per clock for each architecture and unit, times the
 * SM count and maximum clock the device reports.
 */
#include "gpupeak.h"

#include <stdio.h>
#include <string.h>

/*
 * Dense flop (2 per FMA) per SM per clock, per architecture and unit:
 * NVIDIA's published dense peaks divided by SMs x the clock they were
 * quoted at. Where the figures of an architecture's product lines disagree
 * or no per-SM figure is published, the rate is rounded up (to the larger
 * line's, or one power of two): an overestimated peak only lowers the
 * floor, an underestimated one would call a legitimate kernel impossible.
 *
 *   sm_70 Volta, sm_75 Turing: whitepapers: 64 FP32 lanes and 8 tensor
 *     cores of 64 FP16 FMA per clock per SM; V100 125 TF FP16 = 80 SMs x
 *     1.53 GHz x 1024, T4 65 TF = 40 x 1.59 GHz x 1024. No TF32, BF16 or
 *     FP8 (mma.sync has no bf16 shape before sm_80).
 *   sm_80 A100: whitepaper and datasheet, 108 SMs x 1.41 GHz: FP32 19.5 TF
 *     (128), TF32 156 TF (1024), FP16 and BF16 312 TF (2048). No FP8.
 *   sm_86 GA10x: A40 datasheet, 84 SMs x 1.74 GHz: FP32 37.4 TF (256),
 *     TF32 74.8 TF (512), FP16 and BF16 149.7 TF (1024) (GeForce halves
 *     fp32-accumulating rates: the workstation line is taken).
 *   sm_87, sm_88 Orin-class: Jetson AGX Orin, 16 SMs x 1.3 GHz, 170 sparse
 *     INT8 TOPS = 4096 dense INT8 per SM per clock, twice GA10x: the A100's
 *     tensor rates are taken (2048 FP16), with GA10x's 128 FP32 lanes.
 *   sm_89 Ada: L40S datasheet, 142 SMs x 2.52 GHz: FP32 91.6 TF (256),
 *     TF32 183 TF (512), FP16 and BF16 362 TF (1024), FP8 733 TF (2048).
 *   sm_90 Hopper: H100 SXM datasheet at the 1.83 GHz the tensor figures
 *     were quoted for, 132 SMs: TF32 494.7 TF (2048), FP16 and BF16 989 TF
 *     (4096), FP8 1979 TF (8192); FP32 67 TF = 132 x 1.98 GHz x 256.
 *   sm_100, sm_103, sm_110 Blackwell (B200, B300, Thor): 128 FP32 lanes;
 *     B200's dense 1.1-1.25 PF TF32, 2.25-2.5 PF FP16/BF16, 4.5-5 PF FP8
 *     over 148 SMs give about 4100 / 8200 / 16400 at a 1.9-2.1 GHz clock
 *     NVIDIA does not publish per product: rounded up one power of two.
 *   sm_120, sm_121 (RTX 50, RTX PRO Blackwell, GB10): 128 FP32 lanes; the
 *     RTX PRO 6000's figures give about 512 TF32 / 1024 FP16 / 2048 FP8 at
 *     its boost clock: rounded up one power of two likewise.
 *
 * Columns: FP32 SIMT, TF32, FP16, BF16, FP8 (enum gpu_unit's order).
 */
static const int *unit_rates(int major, int minor)
{
    static const int volta_turing[GPU_UNIT_COUNT] = {128, 0, 1024, 0, 0};
    static const int a100[GPU_UNIT_COUNT] = {128, 1024, 2048, 2048, 0};
    static const int ga10x[GPU_UNIT_COUNT] = {256, 512, 1024, 1024, 0};
    static const int orin[GPU_UNIT_COUNT] = {256, 1024, 2048, 2048, 0};
    static const int ada[GPU_UNIT_COUNT] = {256, 512, 1024, 1024, 2048};
    static const int hopper[GPU_UNIT_COUNT] = {256, 2048, 4096, 4096, 8192};
    static const int blackwell[GPU_UNIT_COUNT] = {256, 8192, 16384, 16384, 32768};
    static const int blackwell_rtx[GPU_UNIT_COUNT] = {256, 1024, 2048, 2048, 4096};
    switch (major) {
    case 7:
        return volta_turing;
    case 8:
        return minor == 0 ? a100 : minor == 6 ? ga10x : minor == 9 ? ada : orin;
    case 9:
        return hopper;
    case 10:
    case 11:
        return blackwell;
    case 12:
        return blackwell_rtx;
    default:
        return NULL;
    }
}

static const char *const unit_names[GPU_UNIT_COUNT] = {"fp32_simt", "tf32_tensor", "fp16_tensor",
                                                       "bf16_tensor", "fp8_tensor"};
static const char *const unit_labels[GPU_UNIT_COUNT] = {"FP32 SIMT", "TF32 tensor", "FP16 tensor",
                                                        "BF16 tensor", "FP8 tensor"};

const char *gpu_unit_name(enum gpu_unit u)
{
    return (unsigned)u < GPU_UNIT_COUNT ? unit_names[u] : NULL;
}

const char *gpu_unit_label(enum gpu_unit u)
{
    return (unsigned)u < GPU_UNIT_COUNT ? unit_labels[u] : "?";
}

bool gpu_unit_parse(const char *name, enum gpu_unit *out)
{
    for (int u = 0; u < GPU_UNIT_COUNT; u++)
        if (strcmp(name, unit_names[u]) == 0) {
            *out = (enum gpu_unit)u;
            return true;
        }
    return false;
}

int gpu_unit_significand_bits(enum gpu_unit u)
{
    static const int bits[GPU_UNIT_COUNT] = {24, 11, 11, 8, 4};
    return (unsigned)u < GPU_UNIT_COUNT ? bits[u] : 0;
}

int gpu_unit_guard_bits(unsigned units, const char **label)
{
    int narrowest = 0;
    for (int u = 0; u < GPU_UNIT_COUNT; u++)
        if ((units & GPU_UNIT_MASK(u)) &&
            (!narrowest || gpu_unit_significand_bits((enum gpu_unit)u) < narrowest))
            narrowest = gpu_unit_significand_bits((enum gpu_unit)u);
    static const struct {
        int above, bits;
        const char *label;
    } ladder[] = {{24, 11, "tf32"}, {11, 8, "bf16"}, {8, 4, "fp8 (e4m3)"}};
    for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++)
        if (narrowest == ladder[i].above) {
            *label = ladder[i].label;
            return ladder[i].bits;
        }
    *label = NULL;
    return 0;
}

int gpupeak_unit_flop_per_clk_sm(int major, int minor, enum gpu_unit unit)
{
    const int *r = unit_rates(major, minor);
    return r && (unsigned)unit < GPU_UNIT_COUNT ? r[unit] : 0;
}

void gpupeak_for_units(const struct gpu_peaks *p, unsigned units, struct gpu_roofline *out)
{
    memset(out, 0, sizeof(*out));
    if (units == 0)
        units = GPU_UNIT_MASK(GPU_UNIT_FP32_SIMT);
    for (int u = 0; u < GPU_UNIT_COUNT; u++)
        if ((units & GPU_UNIT_MASK(u)) && p->unit_flop_per_s[u] > out->flop_per_s) {
            out->flop_per_s = p->unit_flop_per_s[u];
            out->unit = (enum gpu_unit)u;
        }
    out->guard_flop_per_s = out->flop_per_s;
    /* An fp32 or tf32 result may come exactly from a split-precision
     * kernel on faster tensor cores (3xTF32): never call that impossible. */
    bool fp32_math = units & (GPU_UNIT_MASK(GPU_UNIT_FP32_SIMT) | GPU_UNIT_MASK(GPU_UNIT_TF32));
    if (fp32_math && out->flop_per_s > 0 && p->flop_per_s > out->guard_flop_per_s)
        out->guard_flop_per_s = p->flop_per_s;
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
    const int *rates = unit_rates(p->cc_major, p->cc_minor);
    for (int u = 0; rates && u < GPU_UNIT_COUNT; u++)
        out->unit_flop_per_s[u] = (double)p->sm_count * clk * (double)rates[u];
    if (rates) {
        double split = out->unit_flop_per_s[GPU_UNIT_TF32] > 0
                           ? out->unit_flop_per_s[GPU_UNIT_TF32]
                           : out->unit_flop_per_s[GPU_UNIT_FP16];
        double simt = out->unit_flop_per_s[GPU_UNIT_FP32_SIMT];
        out->flop_per_s = split > simt ? split : simt;
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
