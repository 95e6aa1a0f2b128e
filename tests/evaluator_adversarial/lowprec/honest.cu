// The control: gemm_bf16 computed honestly on the GPU (float32
// accumulation, one rounding to bf16), naively. It must pass.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: pass
// kiln: launch gemm_bf16 grid(cdiv(n, 16), cdiv(m, 16)) block(16, 16) args(m, n, k, A, B, C)
#include <cuda_bf16.h>

extern "C" __global__ void gemm_bf16(long long m, long long n, long long k, const __nv_bfloat16 *A,
                                     const __nv_bfloat16 *B, __nv_bfloat16 *C)
{
    long long i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
    if (i >= m || j >= n)
        return;
    float s = 0.0f;
    for (long long p = 0; p < k; p++)
        s = fmaf(__bfloat162float(A[i * k + p]), __bfloat162float(B[p * n + j]), s);
    C[i * n + j] = __float2bfloat16_rn(s);
}
