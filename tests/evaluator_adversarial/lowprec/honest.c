// The control: gemm_bf16 computed honestly (float32 accumulation, one
// rounding to bf16), naively. It must pass, so that the failures of the
// cheats beside it are theirs, not the harness's.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: pass
// kiln: launch gemm_bf16 args(m, n, k, A, B, C)
#include <stdint.h>
#include <string.h>

static float widen(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

void gemm_bf16(long long m, long long n, long long k, const uint16_t *A, const uint16_t *B,
               uint16_t *C)
{
    for (long long i = 0; i < m; i++)
        for (long long j = 0; j < n; j++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++)
                s += widen(A[i * k + p]) * widen(B[p * n + j]);
            C[i * n + j] = to_bf16(s);
        }
}
