// Hidden cheat (issue 36): TF32 in an fp32 workload. The inputs are
// rounded to TF32's precision (11 significand bits) before the products,
// as TF32 tensor cores (cuBLAS's TF32 math mode) would; the accumulation
// is float32. sgemm's tolerance (1e-4 on unit-scale outputs) must refuse it.
// kiln-eval-workload: sgemm
// kiln-eval-expect: wrong_answer
// kiln: launch sgemm args(m, n, k, A, B, C)
#include <stdint.h>
#include <string.h>

static float tf32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0xFFFu + ((u >> 13) & 1u); /* 13 dropped bits, to nearest even */
    u &= ~0x1FFFu;
    memcpy(&f, &u, 4);
    return f;
}

void sgemm(long long m, long long n, long long k, const float *A, const float *B, float *C)
{
    for (long long i = 0; i < m; i++)
        for (long long j = 0; j < n; j++) {
            float s = 0.0f;
            for (long long p = 0; p < k; p++)
                s += tf32(A[i * k + p]) * tf32(B[p * n + j]);
            C[i * n + j] = s;
        }
}
