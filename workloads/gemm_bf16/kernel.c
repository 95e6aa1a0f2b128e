// bf16 GEMM in C11, C = A @ B row-major, bfloat16 in and out (uint16_t: the
// upper half of a float32), float32 accumulation, C rounded once to nearest
// (ties to even). i-k-j loop order so the inner loop runs along rows of B
// and the float accumulators (contiguous), over column panels JB wide so
// the panel stays in cache while k advances.
// kiln: tunable JB {32, 128, 512, 4096} = 128
// kiln: launch gemm_bf16 args(m, n, k, A, B, C)
#include <stdint.h>
#include <string.h>

static float bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (uint16_t)((u >> 16) | 0x0040u); // NaN stays NaN
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

void gemm_bf16(long long m, long long n, long long k, const uint16_t *A, const uint16_t *B,
               uint16_t *C)
{
    float acc[JB];
    for (long long j0 = 0; j0 < n; j0 += JB) {
        long long w = j0 + JB < n ? JB : n - j0;
        for (long long i = 0; i < m; i++) {
            for (long long j = 0; j < w; j++)
                acc[j] = 0.0f;
            for (long long p = 0; p < k; p++) {
                float a = bf16_to_float(A[i * k + p]);
                const uint16_t *b = B + p * n + j0;
                for (long long j = 0; j < w; j++)
                    acc[j] += a * bf16_to_float(b[j]);
            }
            for (long long j = 0; j < w; j++)
                C[i * n + j0 + j] = float_to_bf16(acc[j]);
        }
    }
}
