// Hidden cheat (issue 36): computes in fp8 and passes it off as bf16. Each
// input is rounded to e4m3's precision (4 significand bits) before the
// products, as an fp8 tensor-core kernel would see them; the accumulation
// is float32 and the output bf16, so only the precision is wrong. kiln's
// gemm_bf16 tolerance (one bf16 ulp) must refuse it.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: wrong_answer
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

/* Rounds f to `bits` significand bits, to nearest, ties to even. */
static float narrow(float f, int bits)
{
    uint32_t u, drop = 24 - (uint32_t)bits;
    memcpy(&u, &f, 4);
    u += ((1u << (drop - 1)) - 1) + ((u >> drop) & 1);
    u &= ~((1u << drop) - 1);
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    f = narrow(f, 8);
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

void gemm_bf16(long long m, long long n, long long k, const uint16_t *A, const uint16_t *B,
               uint16_t *C)
{
    for (long long i = 0; i < m; i++)
        for (long long j = 0; j < n; j++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++)
                s += narrow(widen(A[i * k + p]), 4) * narrow(widen(B[p * n + j]), 4);
            C[i * n + j] = to_bf16(s);
        }
}
