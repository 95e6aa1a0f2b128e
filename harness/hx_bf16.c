/*
 * hx_bf16.c - bfloat16 conversions and the cpu backend's reference GEMM
 * (hx_bf16.h).
 */
#include "hx_bf16.h"

#include <string.h>

uint16_t hx_bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (uint16_t)((u >> 16) | 0x0040u); /* NaN: keep it one, quiet */
    /* Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float hx_bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

void hx_bf16_gemm_ref(int64_t m, int64_t n, int64_t k, const uint16_t *A, const uint16_t *B,
                      uint16_t *C, float *row)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++)
            row[j] = 0.0f;
        for (int64_t p = 0; p < k; p++) {
            float a = hx_bf16_to_float(A[i * k + p]);
            const uint16_t *b = B + p * n;
            for (int64_t j = 0; j < n; j++)
                row[j] += a * hx_bf16_to_float(b[j]);
        }
        for (int64_t j = 0; j < n; j++)
            C[i * n + j] = hx_bf16_from_float(row[j]);
    }
}
