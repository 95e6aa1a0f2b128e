// Computes on the first launch, stashes the result, and afterwards only
// copies the stash, whatever the inputs. Expected: ok with module reloads
// (every launch is a first launch). Without them it serves the first input
// set's result for every set: consistent, so only the parent's reference
// check can fail it (the outputs are wrong: "imprecise" here).
// kiln-expect: ok
// kiln-expect-noreload: imprecise
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
__device__ float stash[1 << 16];
__device__ long long stashed_n;
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || n > (1 << 16))
        return;
    if (stashed_n == n) {
        out[i] = stash[i];
        return;
    }
    out[i] = stash[i] = a * x[i] + y[i];
    __threadfence();
    if (i == 0)
        stashed_n = n; /* later blocks of this launch may already copy: fine */
}
