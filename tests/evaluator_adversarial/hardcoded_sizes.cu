// Special-cases the one size it was shown (n = 4099, the test's timed case)
// and does nothing otherwise. Expected: other sizes (the correctness case,
// held-out cases) keep the poison: the parent fails it (wrong_answer).
// kiln-expect: poison
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (n != 4099)
        return;
    if (i < 4099)
        out[i] = a * x[i] + y[i];
}
