// Asks for 300000 bytes of dynamic shared memory (sm_90 allows 227 KiB).
// Expected: the opt-in attribute is refused: launch_failed with
// CUDA_ERROR_INVALID_VALUE; the context stays usable.
// kiln-expect: launch_failed CUDA_ERROR_INVALID_VALUE
// kiln-eval-expect: compile_error
// kiln-test-dims: block 256 1 1 smem 300000
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(300000) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    extern __shared__ float buf[];
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? a * x[i] + y[i] : 0.0f;
    __syncthreads();
    if (i < n)
        out[i] = buf[threadIdx.x];
}
