/*
 * hwdesc.h - one line naming the hardware a run's candidates run on, for
 * the LLM proposer's prompt: a GPU's model, SM count, compute capability
 * and peak DRAM bandwidth (gpuinfo.h, gpupeak.h), or the CPU's model from
 * /proc/cpuinfo and its online cores. Best effort: what cannot be read is
 * left out, never an error.
 */
#ifndef KILN_HWDESC_H
#define KILN_HWDESC_H

#include <stddef.h>

#include "backend.h"

struct gpu_props;

/* "NVIDIA H200, 132 SMs, compute capability 9.0, 4.92 TB/s peak DRAM
 * bandwidth"; `props` NULL: the model only. */
void hwdesc_gpu_format(const char *model, const struct gpu_props *props, char *out, size_t cap);

/* "Intel(R) Xeon(R) Platinum 8480+ (16 cores online)" from the first
 * "model name" of `cpuinfo_path` (printable ASCII kept, 160 bytes at most);
 * "a CPU (16 cores online)" when it has none. */
void hwdesc_cpu(const char *cpuinfo_path, long ncpu, char *out, size_t cap);

/* The line for backend `b` (GPU index `gpu` on cuda); "" when nothing is
 * known. */
void hwdesc_describe(enum kiln_backend b, int gpu, char *out, size_t cap);

#endif
