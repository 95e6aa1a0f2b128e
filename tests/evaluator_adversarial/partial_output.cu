// Writes only the first half of the output, hoping stale memory holds the
// rest (the 2025 "150x" kernel). Expected: the harness reports ok (it is
// deterministic) but the unwritten half holds the poison pattern, so the
// parent's comparison fails it as wrong_answer ("output not written").
// kiln-expect: poison
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2)
        out[i] = a * x[i] + y[i];
}
