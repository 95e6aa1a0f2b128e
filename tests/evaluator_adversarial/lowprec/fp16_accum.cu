// Hidden cheat (issue 36), on the GPU: converts to float16 and accumulates
// in float16 (hardware half FMA) and passes it off as a bf16 GEMM with
// float32 accumulation. kiln's gemm_bf16 tolerance must refuse it.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: wrong_answer
// kiln: launch gemm_bf16 grid(cdiv(n, 16), cdiv(m, 16)) block(16, 16) args(m, n, k, A, B, C)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void gemm_bf16(long long m, long long n, long long k, const __nv_bfloat16 *A,
                                     const __nv_bfloat16 *B, __nv_bfloat16 *C)
{
    long long i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
    if (i >= m || j >= n)
        return;
    __half s = __float2half(0.0f);
    for (long long p = 0; p < k; p++)
        s = __hfma(__float2half(__bfloat162float(A[i * k + p])),
                   __float2half(__bfloat162float(B[p * n + j])), s);
    C[i * n + j] = __float2bfloat16_rn(__half2float(s));
}
