// saxpy: a grid-stride loop over ITEMS pieces per thread and step, each VEC
// floats wide, BLOCK apart so a warp's accesses stay coalesced. VEC=4 moves
// float4s when x, y and out are 16-byte aligned (the n % 4 tail is done by
// scalar code) and falls back to scalars otherwise. GRID_CAP bounds the grid
// (a few waves of resident blocks; the loop covers the rest). A step issues
// all its loads before its first store: out may alias x or y, so the compiler
// would otherwise wait for each load pair, and ITEMS would add no memory
// parallelism.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable ITEMS {1, 2, 4, 8} = 1
// kiln: tunable VEC {1, 4} = 1
// kiln: tunable GRID_CAP {1056, 4224, 16896, 2147483647} = 2147483647
// kiln: launch saxpy grid(min(cdiv(n, BLOCK * ITEMS * VEC), GRID_CAP)) block(BLOCK) smem(0) args(n, a, x, y, out)

extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    const long long stride = (long long)gridDim.x * (BLOCK * ITEMS);
    const long long first = (long long)blockIdx.x * (BLOCK * ITEMS) + threadIdx.x;
#if VEC == 4
    if ((((unsigned long long)x | (unsigned long long)y | (unsigned long long)out) & 15) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        const float4 *y4 = reinterpret_cast<const float4 *>(y);
        float4 *o4 = reinterpret_cast<float4 *>(out);
        for (long long base = first; base < n4; base += stride) {
            float4 xv[ITEMS] = {}, yv[ITEMS] = {};
#pragma unroll
            for (int j = 0; j < ITEMS; j++) {
                long long i = base + (long long)j * BLOCK;
                if (i < n4)
                    xv[j] = x4[i], yv[j] = y4[i];
            }
#pragma unroll
            for (int j = 0; j < ITEMS; j++) {
                long long i = base + (long long)j * BLOCK;
                if (i < n4)
                    o4[i] = make_float4(a * xv[j].x + yv[j].x, a * xv[j].y + yv[j].y,
                                        a * xv[j].z + yv[j].z, a * xv[j].w + yv[j].w);
            }
        }
        // The last n % 4 elements: the grid's first threads.
        long long i = n4 * 4 + (long long)blockIdx.x * BLOCK + threadIdx.x;
        if (i < n)
            out[i] = a * x[i] + y[i];
        return;
    }
#endif
    for (long long base = first; base < n; base += stride) {
        float xv[ITEMS] = {}, yv[ITEMS] = {};
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
            long long i = base + (long long)j * BLOCK;
            if (i < n)
                xv[j] = x[i], yv[j] = y[i];
        }
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
            long long i = base + (long long)j * BLOCK;
            if (i < n)
                out[i] = a * xv[j] + yv[j];
        }
    }
}
