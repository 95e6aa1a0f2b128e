// The honest kernel, the control for the adversarial ones. Expected: ok.
// kiln-expect: ok
// kiln-expect-noreload: ok
// kiln-eval-expect: pass
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}
