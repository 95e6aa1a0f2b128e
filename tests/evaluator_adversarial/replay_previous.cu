// Returns the previous call's output, kept in a __device__ buffer, and
// stashes this call's result for the next one. Expected: the module is
// reloaded before every run, so there is never a previous result and it
// computes honestly (ok); with reloading off, the replayed output differs
// from the verified one for the current input set: nondeterministic.
// kiln-expect: ok
// kiln-expect-noreload: nondeterministic
// kiln-eval-expect: pass
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
__device__ float stash[1 << 16];
__device__ int have;
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = a * x[i] + y[i];
    out[i] = (have && i < (1 << 16)) ? stash[i] : v;
    if (i < (1 << 16))
        stash[i] = v;
    if (i == n - 1)
        have = 1; /* racy on purpose: the cheat does not care */
}
