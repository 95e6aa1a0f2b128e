/*
 * hx_cublaslt.h - the cublaslt_bf16 baseline of the CUDA backend (HARNESS.md
 * section 7): row-major C = A B with bfloat16 A, B and C, float32 compute
 * and scale (CUBLAS_COMPUTE_32F), the algorithm cuBLASLt's heuristic ranks
 * first for the shape, and a fixed workspace. libcublasLt.so.<major> is
 * opened with dlopen, so the harness never links it and starts without it.
 *
 * Lifecycle: hx_cublaslt_load() once per harness process (on the backend's
 * context and stream) -> per case hx_cublaslt_prepare() outside the timed
 * region (descriptors and the heuristic, cached while the shape stays) ->
 * per run hx_cublaslt_run() between the timing events -> hx_cublaslt_unload().
 */
#ifndef KILN_HX_CUBLASLT_H
#define KILN_HX_CUBLASLT_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

struct hx_cublaslt;

/* Fixed workspace: what NVIDIA recommends for Hopper (32 MiB). */
#define HX_CUBLASLT_WORKSPACE ((size_t)32 << 20)

/* Loads the library (the toolkit's major first, then 13, 12, 11), makes a
 * handle and allocates the workspace. NULL with `why` saying what failed
 * ("cannot load ...", "... cublasStatus_t 3"); `note` gets a line for the
 * harness's log on success. */
struct hx_cublaslt *hx_cublaslt_load(char *why, size_t why_cap, char *note, size_t note_cap);

/* Makes the descriptors of an m x n x k product and asks the heuristic for
 * its best algorithm, unless the last call had the same shape. 0 on
 * success, else the cublasStatus_t with `step` naming the call (a status
 * of -1: the heuristic found no algorithm). */
int hx_cublaslt_prepare(struct hx_cublaslt *lt, int64_t m, int64_t n, int64_t k, const char **step);

/* Enqueues the prepared product on `stream`; the cublasStatus_t. */
int hx_cublaslt_run(struct hx_cublaslt *lt, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C,
                    CUstream stream);

void hx_cublaslt_unload(struct hx_cublaslt *lt);

#endif
