/*
 * hostvars.h - what a sandboxed step needs from this host that the sandbox
 * itself does not know (sandbox/ is mechanism only): the values of its
 * image's placeholders and the device nodes of a granted GPU.
 *
 * Placeholders the shipped images use (images/README.md):
 *   python_prefix, python_base_prefix, python_bin  the python3 that imports
 *                        numpy (base/pyfind.h; probed once per process and
 *                        per interpreter identity)
 *   cuda                 the CUDA toolkit (base/hostpaths.h)
 *   nvidia_libs          the directory of the driver's libcuda.so.1
 *   ncu                  Nsight Compute's install directory
 * Only the names an image uses are looked up, so a compile step never
 * probes python. A name the host lacks is left out: the image then skips
 * an optional bind or fails naming a required one.
 */
#ifndef KILN_HOSTVARS_H
#define KILN_HOSTVARS_H

#include <limits.h>

#include "error.h"

#define HOSTVARS_MAX 8

struct hostvars {
    char *vars[HOSTVARS_MAX + 1]; /* "name=value", NULL-terminated: sandbox_spec.vars */
    char *devices[4];             /* NULL-terminated: sandbox_spec.devices */
    char store[HOSTVARS_MAX][PATH_MAX + 32];
    char dev_store[3][32];
    size_t n_vars;
};

/* Fills hv->vars for image `image` (in data_dir, NULL: the default). When
 * the image needs python3 and none imports numpy, fails with pyfind's
 * message. hv needs no freeing. */
enum kiln_rc hostvars_for_image(const char *data_dir, const char *image, struct hostvars *hv,
                                struct kiln_err *err) KILN_NODISCARD;

/* Fills hv->devices for kiln GPU index `gpu` (base/gpuinfo.h order): its
 * /dev/nvidia<minor>, nvidiactl and nvidia-uvm; none for gpu < 0. The
 * images that take a GPU set CUDA_DEVICE_ORDER=PCI_BUS_ID, the order of
 * kiln's indices. */
enum kiln_rc hostvars_gpu(int gpu, struct hostvars *hv, struct kiln_err *err) KILN_NODISCARD;

#endif
