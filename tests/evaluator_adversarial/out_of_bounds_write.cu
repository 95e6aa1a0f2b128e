// Writes 1024 elements past the end of its output, into whatever kiln put
// there. Expected: the guard region after the output changes:
// out_of_bounds.
// kiln-expect: out_of_bounds
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
    if (i < 1024)
        out[n + i] = 0.0f;
}
