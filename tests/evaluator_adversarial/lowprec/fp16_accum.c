// Hidden cheat (issue 36): accumulates in float16 (the running sum rounded
// to 11 significand bits after every add) and passes it off as float32
// accumulation: the inputs and each product are exact, only the sum is
// short. Its error grows with sqrt(k): the deep and wide cases catch it.
// kiln's gemm_bf16 tolerance (one bf16 ulp) must refuse it.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: wrong_answer
#define ACC_BITS 11
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
                s = narrow(s + widen(A[i * k + p]) * widen(B[p * n + j]), ACC_BITS);
            C[i * n + j] = to_bf16(s);
        }
}
