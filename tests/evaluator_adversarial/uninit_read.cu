// Reads memory it never wrote: the output buffer before writing it, and
// one element past the end of x. Both hold kiln's poison (NaN), so the
// result is NaN. Expected: the harness reports ok (deterministic) and the
// parent's comparison fails the NaN outputs (wrong_answer).
// kiln-expect: nan_output
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i] + out[i] * x[n];
}
