/*
 * hostpaths.h - where this host keeps the CUDA toolkit, the driver's
 * libcuda and Nsight Compute. Probes only (stat, access, readdir): nothing
 * is run. The callers of the sandbox pass what these find as values for an
 * image's placeholders (images/README.md); the sandbox itself knows none
 * of these paths.
 */
#ifndef KILN_HOSTPATHS_H
#define KILN_HOSTPATHS_H

#include <stddef.h>

/* The CUDA toolkit root: $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda, the
 * first holding an executable bin/nvcc. Returns 1 and its real path, or 0. */
int hostpaths_cuda(char *out, size_t cap);

/* The directory holding the driver's libcuda.so.1 (/usr/local/nvidia/lib64,
 * then the distribution's library directories). Returns 1 or 0. */
int hostpaths_nvidia_libs(char *out, size_t cap);

/* Nsight Compute's install directory (it holds the `ncu` launcher and
 * target/): from $KILN_NCU (the ncu program or its directory) if set, else
 * `ncu` on $PATH, else the CUDA toolkit's newest nsight-compute-*, else
 * /opt/nvidia/nsight-compute/<newest>. Returns 1 and the real path, or 0. */
int hostpaths_ncu(char *root, size_t cap);

#endif
