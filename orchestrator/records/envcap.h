/*
 * envcap.h - the environment a timing depends on, as this host shows it
 * now: GPU model and UUID, driver, CUDA toolkit (kiln's build and nvcc on
 * PATH), host compiler, SM and memory clocks, temperature, persistence
 * mode, host kernel, host load (a busy host explains a SLOW case; it is
 * shown, never counted as drift). `kiln archive` stores it beside what the run itself
 * recorded, and `kiln replay` compares the two before judging any timing.
 * Probes run trusted host tools (nvidia-smi, nvcc, cc) with a timeout;
 * a missing tool gives "unavailable", never an error.
 */
#ifndef KILN_ENVCAP_H
#define KILN_ENVCAP_H

#include <jansson.h>

#include "error.h"

/* A flat object of strings: "gpu_model", "gpu_uuid", "driver",
 * "cuda_toolkit_kiln", "nvcc", "cc", "sm_clock_mhz", "mem_clock_mhz",
 * "temperature_c", "persistence_mode", "host_kernel", "host_load" ("1.52
 * 0.98 0.60 on 2 CPUs": the 1, 5 and 15 minute load averages). `gpu` is
 * kiln's GPU index (PCI order); -1 for no GPU fields. */
enum kiln_rc envcap_now(int gpu, json_t **out, struct kiln_err *err) KILN_NODISCARD;

/* The same keys from a run's run.json (and environment.json when the run
 * wrote one), "not recorded" for what the run did not record. */
json_t *envcap_from_run(const json_t *run_json, const json_t *env_json);

/* The keys whose values differ between `a` and `b` and matter for timing
 * (model, driver, toolkit, compiler, clocks), one line each into `out`,
 * skipping values that either side does not know; returns the count. */
size_t envcap_drift(const json_t *a, const json_t *b, char *out, size_t cap);

#endif
