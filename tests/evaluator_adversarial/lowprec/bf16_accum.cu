// Hidden cheat (issue 36), on the GPU: accumulates in bfloat16 (hardware
// bf16 FMA, sm_80+) and passes it off as float32 accumulation. kiln's
// gemm_bf16 tolerance must refuse it.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: wrong_answer
// kiln: launch gemm_bf16 grid(cdiv(n, 16), cdiv(m, 16)) block(16, 16) args(m, n, k, A, B, C)
#include <cuda_bf16.h>

extern "C" __global__ void gemm_bf16(long long m, long long n, long long k, const __nv_bfloat16 *A,
                                     const __nv_bfloat16 *B, __nv_bfloat16 *C)
{
    long long i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
    if (i >= m || j >= n)
        return;
    __nv_bfloat16 s = __float2bfloat16_rn(0.0f);
    for (long long p = 0; p < k; p++)
        s = __hfma(A[i * k + p], B[p * n + j], s);
    C[i * n + j] = s;
}
