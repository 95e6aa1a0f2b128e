/*
 * hx_bf16.h - bfloat16 for the harness's baselines (HARNESS.md section 7):
 * conversions, and the plain C GEMM the cpu backend times as the vendor
 * baseline of a bf16 matrix product (cublaslt_bf16 has no cuBLASLt there).
 * bfloat16 is the upper half of a float32 (formats/npy.h's convention).
 */
#ifndef KILN_HX_BF16_H
#define KILN_HX_BF16_H

#include <stdint.h>

/* Round to nearest, ties to even; a NaN stays a (quiet) NaN. */
uint16_t hx_bf16_from_float(float f);

float hx_bf16_to_float(uint16_t b);

/* C[m, n] = A[m, k] B[k, n], row-major bfloat16, accumulated in float32 in
 * k order and rounded once: what cuBLASLt's bf16 GEMM with fp32 compute
 * computes, as plain loops (i, then k, then j: rows of B and C stream).
 * `row` is scratch for n floats. */
void hx_bf16_gemm_ref(int64_t m, int64_t n, int64_t k, const uint16_t *A, const uint16_t *B,
                      uint16_t *C, float *row);

#endif
