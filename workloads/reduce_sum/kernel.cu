// Deterministic two-pass sum. Pass 1: GRID blocks (at most GRID_CAP) walk x
// with a grid-stride loop, ITEMS pieces of VEC floats per thread and step,
// each piece into its own accumulators (shorter float32 chains: less
// rounding), reduce through warp shuffles and one shared-memory step, and
// store one partial each. Pass 2: one block sums the partials in a fixed
// order. No float atomics, so the bits never vary. VEC=4 loads float4s when
// x is 16-byte aligned (the n % 4 tail in scalars) and falls back otherwise.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable ITEMS {1, 2, 4, 8} = 1
// kiln: tunable VEC {1, 4} = 1
// kiln: tunable GRID_CAP {264, 528, 1024} = 1024
// kiln: require GRID_CAP <= 1024
// kiln: launch reduce_partial grid(min(cdiv(n, BLOCK * ITEMS * VEC), GRID_CAP)) block(BLOCK) smem(0) args(n, x)
// kiln: launch reduce_final grid(1) block(1024) smem(0) args(n, out)

#define MAX_PARTIALS 1024 // the largest GRID_CAP

__device__ float partials[MAX_PARTIALS];

static __device__ long long num_partials(long long n)
{
    long long blocks = (n + BLOCK * ITEMS * VEC - 1) / (BLOCK * ITEMS * VEC);
    return blocks < GRID_CAP ? blocks : GRID_CAP;
}

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

extern "C" __global__ void reduce_partial(long long n, const float *x)
{
    __shared__ float warp_sums[32];
    float acc[ITEMS * VEC];
#pragma unroll
    for (int j = 0; j < ITEMS * VEC; j++)
        acc[j] = 0.0f;
    const long long stride = (long long)gridDim.x * (BLOCK * ITEMS);
    const long long first = (long long)blockIdx.x * (BLOCK * ITEMS) + threadIdx.x;
#if VEC == 4
    if (((unsigned long long)x & 15) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        for (long long base = first; base < n4; base += stride) {
#pragma unroll
            for (int j = 0; j < ITEMS; j++) {
                long long i = base + (long long)j * BLOCK;
                if (i < n4) {
                    float4 v = x4[i];
                    acc[j * 4 + 0] += v.x;
                    acc[j * 4 + 1] += v.y;
                    acc[j * 4 + 2] += v.z;
                    acc[j * 4 + 3] += v.w;
                }
            }
        }
        // The n % 4 tail: the grid's first threads.
        long long i = n4 * 4 + (long long)blockIdx.x * BLOCK + threadIdx.x;
        if (i < n)
            acc[0] += x[i];
    } else
#endif
    {
        for (long long base = first; base < n; base += stride) {
#pragma unroll
            for (int j = 0; j < ITEMS; j++) {
                long long i = base + (long long)j * BLOCK;
                if (i < n)
                    acc[j * VEC] += x[i];
            }
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < ITEMS * VEC; j++)
        s += acc[j];
    s = block_sum<BLOCK>(s, warp_sums);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = s;
}

extern "C" __global__ void reduce_final(long long n, float *out)
{
    __shared__ float warp_sums[32];
    long long count = num_partials(n);
    float v = threadIdx.x < count ? partials[threadIdx.x] : 0.0f;
    v = block_sum<1024>(v, warp_sums);
    if (threadIdx.x == 0)
        out[0] = v;
}
