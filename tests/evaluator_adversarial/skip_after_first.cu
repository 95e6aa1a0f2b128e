// Computes only on the first launch and returns at once afterwards,
// leaving whatever the output buffer held. Expected: ok with reloads (each
// launch is the first); without them the poisoned output of the skipped
// launches differs from the verified one: nondeterministic.
// kiln-expect: ok
// kiln-expect-noreload: nondeterministic
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
__device__ int launched;
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    if (launched)
        return;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
    if (i == 0)
        launched = 1;
}
