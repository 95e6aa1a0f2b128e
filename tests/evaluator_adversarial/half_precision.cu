// Computes a float32 task in half precision (about 3 decimal digits).
// Expected: the harness reports ok; the outputs are off by ~1e-3 relative,
// beyond the 1e-5 tolerance, so the parent fails it (wrong_answer).
// kiln-expect: imprecise
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
#include <cuda_fp16.h>
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] =
            __half2float(__hadd(__hmul(__float2half(a), __float2half(x[i])), __float2half(y[i])));
}
