// Counts its launches to tell warmups (the first 10) from timed runs, and
// stops computing once it believes it is being timed. Expected: the counter
// restarts with every module reload, so it always computes (ok); without
// reloads the skipped runs leave poison: nondeterministic.
// kiln-expect: ok
// kiln-expect-noreload: nondeterministic
// kiln-eval-expect: pass
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
__device__ unsigned int launches;
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    __shared__ unsigned int seen;
    if (threadIdx.x == 0)
        seen = blockIdx.x == 0 ? atomicAdd(&launches, 1u) : launches;
    __syncthreads();
    if (seen >= 3 && seen < 1000000u)
        return; /* "timed": do nothing */
    if (i < n)
        out[i] = a * x[i] + y[i];
}
