// Deterministic sum in one launch. GRID blocks (at most GRID_CAP) walk x
// with a grid-stride loop, ITEMS pieces of VEC floats per thread and step,
// each piece into its own accumulators (shorter float32 chains: less
// rounding), reduce through warp shuffles and one shared-memory step, and
// store one partial each. The last block to finish (a counter, after a
// fence) sums the partials in a fixed order: no float atomics, so the bits
// never vary, and no second launch (a few microseconds, 5% of a 64M-element
// sum on an H200). VEC=4 loads float4s when x is 16-byte aligned (the n % 4
// tail in scalars) and falls back otherwise. GRID_CAP values are multiples
// of 132 (an H200's SMs): a grid of whole waves.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable ITEMS {1, 2, 4, 8} = 1
// kiln: tunable VEC {1, 4} = 1
// kiln: tunable GRID_CAP {264, 528, 1056, 2112} = 1056
// kiln: require GRID_CAP <= 2112
// kiln: launch reduce_sum grid(min(cdiv(n, BLOCK * ITEMS * VEC), GRID_CAP)) block(BLOCK) smem(0) args(n, x, out)

#define MAX_PARTIALS 2112 // the largest GRID_CAP

__device__ float partials[MAX_PARTIALS];
// Blocks of the current launch that have stored their partial; zero between
// launches (the last block resets it).
__device__ unsigned int blocks_done;

// Sum over the block, in a fixed order; the result is valid in thread 0.
template <int THREADS> static __device__ float block_sum(float v, float *warp_sums)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (THREADS > 32) {
        if ((threadIdx.x & 31) == 0)
            warp_sums[threadIdx.x / 32] = v;
        __syncthreads();
        if (threadIdx.x < 32) {
            v = threadIdx.x < THREADS / 32 ? warp_sums[threadIdx.x] : 0.0f;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
        }
    }
    return v;
}

extern "C" __global__ void reduce_sum(long long n, const float *x, float *out)
{
    __shared__ float warp_sums[32];
    __shared__ bool last;
    float acc[ITEMS * VEC];
#pragma unroll
    for (int j = 0; j < ITEMS * VEC; j++)
        acc[j] = 0.0f;
    // Thread t of T reads pieces t, t + T, t + 2T, ...: ITEMS of them per
    // step, then single pieces for what is left. Every thread does the same
    // number of steps and at most ITEMS - 1 extra pieces, so no block runs
    // a step longer than the rest (block-sized chunks left up to 1/8 of the
    // grid idle through the last step at 64M elements).
    const long long T = (long long)gridDim.x * BLOCK;
    const long long t = (long long)blockIdx.x * BLOCK + threadIdx.x;
#if VEC == 4
    if (((unsigned long long)x & 15) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        long long i = t;
        for (; i + (ITEMS - 1) * T < n4; i += ITEMS * T) {
            float4 v[ITEMS];
#pragma unroll
            for (int j = 0; j < ITEMS; j++) // every load issued before the adds
                v[j] = x4[i + j * T];
#pragma unroll
            for (int j = 0; j < ITEMS; j++) {
                acc[j * 4 + 0] += v[j].x;
                acc[j * 4 + 1] += v[j].y;
                acc[j * 4 + 2] += v[j].z;
                acc[j * 4 + 3] += v[j].w;
            }
        }
#pragma unroll
        for (int j = 0; j < ITEMS - 1; j++) { // constant indices keep acc in registers
            if (i + j * T < n4) {
                float4 v = x4[i + j * T];
                acc[j * 4 + 0] += v.x;
                acc[j * 4 + 1] += v.y;
                acc[j * 4 + 2] += v.z;
                acc[j * 4 + 3] += v.w;
            }
        }
        // The n % 4 tail: the grid's first threads.
        if (n4 * 4 + t < n)
            acc[0] += x[n4 * 4 + t];
    } else
#endif
    {
        long long i = t;
        for (; i + (ITEMS - 1) * T < n; i += ITEMS * T) {
            float v[ITEMS];
#pragma unroll
            for (int j = 0; j < ITEMS; j++)
                v[j] = x[i + j * T];
#pragma unroll
            for (int j = 0; j < ITEMS; j++)
                acc[j * VEC] += v[j];
        }
#pragma unroll
        for (int j = 0; j < ITEMS - 1; j++)
            if (i + j * T < n)
                acc[j * VEC] += x[i + j * T];
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < ITEMS * VEC; j++)
        s += acc[j];
    s = block_sum<BLOCK>(s, warp_sums);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = s;
        __threadfence(); // the partial is visible device-wide before the count
        last = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    // Every other block's partial is stored and fenced; read past L1.
    const volatile float *p = partials;
    float v = 0.0f;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += BLOCK)
        v += p[i];
    v = block_sum<BLOCK>(v, warp_sums);
    if (threadIdx.x == 0) {
        out[0] = v;
        blocks_done = 0;
    }
}
