// Two launches: `scribble` zeroes x[0] (keeping it in a __device__
// variable), `saxpy` puts it back before the run ends, so the inputs look
// untouched when the run is over. Expected through `kiln eval`: caught by
// the check between the launches of a correctness run (overwrites_inputs,
// so wrong_answer). The harness test runs only the saxpy launch, which is
// honest on its own (scribbled stays 0): ok.
// kiln-expect: ok
// kiln-eval-expect: wrong_answer
// kiln: launch scribble grid(1) block(1) smem(0) args(n, x)
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
__device__ float saved;
__device__ int scribbled;
extern "C" __global__ void scribble(long long n, const float *x)
{
    if (n > 0) {
        saved = x[0];
        ((float *)x)[0] = 0.0f;
        scribbled = 1;
    }
}
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float xi = (i == 0 && scribbled) ? saved : x[i];
    out[i] = a * xi + y[i];
    if (i == 0 && scribbled)
        ((float *)x)[0] = saved;
}
