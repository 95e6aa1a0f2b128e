// Starting kernel for KernelBench level 1 problem 19 (19_ReLU): out = max(x, 0)
// elementwise over x (batch_size, dim), float32. The grid-stride loop of
// workloads/saxpy/kernel.cu (ITEMS pieces of VEC floats per thread and step,
// float4 when aligned, a scalar tail).
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable ITEMS {1, 2, 4, 8} = 1
// kiln: tunable VEC {1, 4} = 1
// kiln: tunable GRID_CAP {1056, 4224, 16896, 2147483647} = 2147483647
// kiln: launch relu grid(min(cdiv(batch_size * dim, BLOCK * ITEMS * VEC), GRID_CAP)) block(BLOCK) smem(0) args(batch_size, dim, x, out)

extern "C" __global__ void relu(long long batch_size, long long dim, const float *x, float *out)
{
    const long long n = batch_size * dim;
    const long long stride = (long long)gridDim.x * (BLOCK * ITEMS);
    const long long first = (long long)blockIdx.x * (BLOCK * ITEMS) + threadIdx.x;
#if VEC == 4
    if ((((unsigned long long)x | (unsigned long long)out) & 15) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        float4 *o4 = reinterpret_cast<float4 *>(out);
        for (long long base = first; base < n4; base += stride) {
#pragma unroll
            for (int j = 0; j < ITEMS; j++) {
                long long i = base + (long long)j * BLOCK;
                if (i < n4) {
                    float4 v = x4[i];
                    o4[i] = make_float4(fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f), fmaxf(v.z, 0.0f),
                                        fmaxf(v.w, 0.0f));
                }
            }
        }
        // The last n % 4 elements: the grid's first threads.
        long long i = n4 * 4 + (long long)blockIdx.x * BLOCK + threadIdx.x;
        if (i < n)
            out[i] = fmaxf(x[i], 0.0f);
        return;
    }
#endif
    for (long long base = first; base < n; base += stride) {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
            long long i = base + (long long)j * BLOCK;
            if (i < n)
                out[i] = fmaxf(x[i], 0.0f);
        }
    }
}
