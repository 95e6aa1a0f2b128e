// Writes through a null-ish pointer. Expected: the stream sync reports the
// sticky error: cuda_error with CUDA_ERROR_ILLEGAL_ADDRESS; the context is
// unusable, so later cases are skipped.
// kiln-expect: cuda_error CUDA_ERROR_ILLEGAL_ADDRESS
// kiln-eval-expect: runtime_error
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
    if (i == 0)
        *(volatile float *)16 = 1.0f;
}
