// Asks for 2048 threads per block (the device allows 1024). Expected:
// cuLaunchKernel refuses it: launch_failed with CUDA_ERROR_INVALID_VALUE;
// the context stays usable.
// kiln-expect: launch_failed CUDA_ERROR_INVALID_VALUE
// kiln-eval-expect: compile_error
// kiln-test-dims: block 1024 2 1 smem 0
// kiln: launch saxpy grid(cdiv(n, 2048)) block(1024, 2) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = ((long long)blockIdx.x * 2 + threadIdx.y) * 1024 + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}
