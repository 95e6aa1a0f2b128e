// Naive saxpy: each thread handles ITEMS elements, BLOCK apart, so a warp's
// loads stay coalesced for every ITEMS.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable ITEMS {1, 2, 4, 8} = 1
// kiln: launch saxpy grid(cdiv(n, BLOCK * ITEMS)) block(BLOCK) smem(0) args(n, a, x, y, out)

extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long base = (long long)blockIdx.x * (BLOCK * ITEMS) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < ITEMS; j++) {
        long long i = base + (long long)j * BLOCK;
        if (i < n)
            out[i] = a * x[i] + y[i];
    }
}
