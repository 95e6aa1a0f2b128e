// printf from every thread, a million times each: the device FIFO is capped
// at 1 MiB (overflow is dropped on the device), and the harness's per-case
// watchdog ends the case long before the sandbox's 300 s. Expected: a
// `timeout` failure naming the case, documents written, exit status 0.
// kiln-expect: timeout
// kiln-eval-expect: timeout
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
#include <cstdio>
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < (1 << 20); k++)
        printf("thread %lld line %d: kiln, look at me\n", i, k);
    if (i < n)
        out[i] = a * x[i] + y[i];
}
