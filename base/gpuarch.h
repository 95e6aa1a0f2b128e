/*
 * gpuarch.h - NVIDIA GPU architectures by name: "sm_86" is compute
 * capability 8.6, kept as the integer 86 (major * 10 + minor; Blackwell's
 * 10.0 is 100, 12.1 is 121).
 *
 * The supported list is what the CUDA toolkit kiln was built with compiles
 * for (`nvcc --list-gpu-code` at configure time), from Turing (sm_75) on:
 * the helper kernels are built for each of them, and --arch may name only
 * them. GPUARCH_DEFAULT is the H200's, used only where no device is known
 * (and then said so by the caller).
 */
#ifndef KILN_GPUARCH_H
#define KILN_GPUARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define GPUARCH_DEFAULT    90 /* sm_90: the H200, kiln's reference GPU */
#define GPUARCH_NAME_MAX   16 /* "sm_121" and its NUL, with room */
#define GPUARCH_LIST_MAX   32
#define GPUARCH_LIST_CHARS (GPUARCH_LIST_MAX * 8)

/* Whether a cubin compiled for `target` loads on a GPU of `device`: SASS
 * runs on its own major version at the same or a higher minor (sm_80 code
 * on an sm_86 GPU, not on sm_90). */
bool gpuarch_runs_on(int target, int device);

/* "sm_" and the compute capability: sm_86 -> "sm_86". */
void gpuarch_name(int cc, char out[GPUARCH_NAME_MAX]);

/* `arch`, or GPUARCH_DEFAULT's name written into `buf` when it is NULL. */
const char *gpuarch_or_default(const char *arch, char buf[GPUARCH_NAME_MAX]);

/* The compiler's target for candidates compiled for `arch` (a supported
 * "sm_XY"): "sm_90a" for sm_90, else `arch` itself, into `out`. A cubin
 * for sm_90a runs on every compute capability 9.0 GPU (the only 9.x there
 * is) and may use its architecture-specific instructions (wgmma,
 * setmaxnreg), which plain sm_90 code may not. The recorded target stays
 * "sm_90". */
const char *gpuarch_compile_target(const char *arch, char out[GPUARCH_NAME_MAX]);

/* "sm_XY" or "sm_XYZ" (digits only, 75..999) -> *cc; KILN_E_USAGE naming
 * the expected form otherwise ("compute_90", "sm_90a" and "9.0" are not
 * targets kiln compiles candidates for). */
enum kiln_rc gpuarch_parse(const char *name, int *cc, struct kiln_err *err) KILN_NODISCARD;

/* The supported architectures, ascending; returns how many (0: kiln was
 * built without CUDA). */
size_t gpuarch_supported(int *out, size_t cap);

/* The supported list as text: "sm_75 sm_80 ... sm_121". */
void gpuarch_supported_text(char out[GPUARCH_LIST_CHARS]);

bool gpuarch_is_supported(int cc);

/* gpuarch_parse, then the supported list: KILN_E_UNSUPPORTED naming the
 * architectures this toolkit does support. `what` names the source in
 * messages ("--arch", "the GPU"). */
enum kiln_rc gpuarch_check(const char *name, const char *what, int *cc,
                           struct kiln_err *err) KILN_NODISCARD;

/* An architecture `cc` the toolkit must support (the GPU's own, queried):
 * KILN_E_UNSUPPORTED naming the GPU's arch and the supported ones. */
enum kiln_rc gpuarch_require(int cc, const char *what, struct kiln_err *err) KILN_NODISCARD;

#endif
