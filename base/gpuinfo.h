/*
 * gpuinfo.h - the NVIDIA GPUs on this host, read from the driver's /proc
 * files (no CUDA library needed), in PCI bus order. kiln's GPU index N is
 * the N-th entry: the order CUDA uses with CUDA_DEVICE_ORDER=PCI_BUS_ID.
 * The sandbox maps index N to /dev/nvidia<minor> of that entry only.
 */
#ifndef KILN_GPUINFO_H
#define KILN_GPUINFO_H

#include <stddef.h>

#include "error.h"

#define GPUINFO_MAX 16

struct gpuinfo {
    char bus_id[32]; /* e.g. "0000:00:05.0" */
    char model[128]; /* "NVIDIA H200" */
    int minor;       /* /dev/nvidia<minor> */
    char uuid[64];   /* "GPU-..." or "" when the driver does not say */
};

/*
 * Fills `gpus` (up to GPUINFO_MAX) from `proc_root`/driver/nvidia/gpus
 * (`proc_root` is "/proc" except in tests). No GPUs is not an error: *n = 0.
 * Fails on unreadable or malformed driver files.
 */
enum kiln_rc gpuinfo_list(const char *proc_root, struct gpuinfo *gpus, size_t *n,
                          struct kiln_err *err) KILN_NODISCARD;

/* The driver version from `proc_root`/driver/nvidia/version ("580.159.04"),
 * or KILN_E_NOTFOUND when no NVIDIA driver is loaded. */
enum kiln_rc gpuinfo_driver_version(const char *proc_root, char *out, size_t cap,
                                    struct kiln_err *err) KILN_NODISCARD;

#endif
