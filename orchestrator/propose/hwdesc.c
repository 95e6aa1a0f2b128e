/* hwdesc.c - the hardware line of the LLM prompt (hwdesc.h). */
#include "hwdesc.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "evaluate.h"
#include "gpuinfo.h"
#include "gpupeak.h"

#define HWDESC_MODEL_MAX 160

void hwdesc_gpu_format(const char *model, const struct gpu_props *props, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s", model && model[0] ? model : "an NVIDIA GPU");
    if (!props || n < 0 || (size_t)n >= cap)
        return;
    struct gpu_peaks peaks;
    struct kiln_err e;
    kiln_err_clear(&e);
    bool have_peaks = gpupeak_compute(props, &peaks, &e) == KILN_OK && peaks.bytes_per_s > 0;
    n += snprintf(out + n, cap - (size_t)n, ", %d SMs, compute capability %d.%d", props->sm_count,
                  props->cc_major, props->cc_minor);
    if (have_peaks && (size_t)n < cap)
        n += snprintf(out + n, cap - (size_t)n, ", %.2f TB/s peak DRAM bandwidth",
                      peaks.bytes_per_s / 1e12);
    if (props->copy_mb_per_s > 0 && n > 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, " (a device copy measured %.2f TB/s)",
                 props->copy_mb_per_s / 1e6);
}

/* Printable ASCII of `s`, spaces collapsed, trimmed, into out. */
static void plain_copy(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++) {
        char c = *s >= 0x20 && *s < 0x7f ? *s : ' ';
        if (c == ' ' && (n == 0 || out[n - 1] == ' '))
            continue;
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

void hwdesc_cpu(const char *cpuinfo_path, long ncpu, char *out, size_t cap)
{
    char model[HWDESC_MODEL_MAX + 1] = "", line[1024];
    FILE *f = fopen(cpuinfo_path, "re");
    for (int lines = 0; f && lines < 4096 && fgets(line, sizeof(line), f); lines++) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (colon)
            plain_copy(model, sizeof(model), colon + 1);
        break;
    }
    if (f)
        fclose(f);
    snprintf(out, cap, "%s (%ld cores online)", model[0] ? model : "a CPU", ncpu > 0 ? ncpu : 1);
}

void hwdesc_describe(enum kiln_backend b, int gpu, char *out, size_t cap)
{
    out[0] = '\0';
    if (b == KILN_BACKEND_CPU) {
        hwdesc_cpu("/proc/cpuinfo", sysconf(_SC_NPROCESSORS_ONLN), out, cap);
        return;
    }
    struct gpuinfo g[GPUINFO_MAX];
    size_t ng = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (gpuinfo_list("/proc", g, &ng, &e) != KILN_OK || gpu < 0 || (size_t)gpu >= ng)
        return;
    char harness[4096];
    struct gpu_props props;
    struct device_limits lim;
    bool have = eval_harness_path(KILN_BACKEND_CUDA, harness, sizeof(harness), &e) == KILN_OK &&
                eval_device_probe(harness, gpu, &props, &lim, &e) == KILN_OK;
    char model[HWDESC_MODEL_MAX + 1];
    plain_copy(model, sizeof(model), g[gpu].model);
    hwdesc_gpu_format(model, have ? &props : NULL, out, cap);
}
