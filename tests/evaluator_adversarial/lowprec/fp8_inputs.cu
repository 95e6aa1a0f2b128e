// Hidden cheat (issue 36), on the GPU: computes in fp8 (inputs converted
// to e4m3 with the hardware's conversion, sm_89+; software below) and
// accumulates in float32, passing the result off as a bf16 GEMM with fp32
// accumulation. kiln's gemm_bf16 tolerance must refuse it.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: wrong_answer
// kiln: launch gemm_bf16 grid(cdiv(n, 16), cdiv(m, 16)) block(16, 16) args(m, n, k, A, B, C)
#include <cuda_bf16.h>
#include <cuda_fp8.h>

extern "C" __global__ void gemm_bf16(long long m, long long n, long long k, const __nv_bfloat16 *A,
                                     const __nv_bfloat16 *B, __nv_bfloat16 *C)
{
    long long i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
    if (i >= m || j >= n)
        return;
    float s = 0.0f;
    for (long long p = 0; p < k; p++) {
        float a = float(__nv_fp8_e4m3(__bfloat162float(A[i * k + p])));
        float b = float(__nv_fp8_e4m3(__bfloat162float(B[p * n + j])));
        s += a * b;
    }
    C[i * n + j] = __float2bfloat16_rn(s);
}
