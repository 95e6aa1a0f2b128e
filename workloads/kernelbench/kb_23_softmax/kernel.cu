// Starting kernel for KernelBench level 1 problem 23 (23_Softmax): softmax
// over dim 1 of x (batch_size, dim), float32. The row softmax of
// workloads/softmax_rows/kernel.cu (its header explains the two passes and
// the warp- or block-per-row choice), launched with rows = batch_size and
// cols = dim.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable WARP_MAX {0, 1024, 2048, 8192} = 0
// kiln: tunable VEC {1, 4} = 1
// kiln: launch softmax_rows grid((1 - min(1, dim / (WARP_MAX + 1))) * cdiv(batch_size, BLOCK / 32) + min(1, dim / (WARP_MAX + 1)) * batch_size) block(BLOCK) smem(0) args(batch_size, dim, x, out)

struct ms {
    float m, s; // running maximum, sum of exp(x - m)
};

static __device__ __forceinline__ void add_value(ms &a, float v)
{
    if (v > a.m) {
        a.s = a.s * expf(a.m - v) + 1.0f; // expf(-inf) = 0 for the first value
        a.m = v;
    } else {
        a.s += expf(v - a.m);
    }
}

static __device__ __forceinline__ ms merge(ms a, ms b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) // both empty
        return a;
    return ms{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

static __device__ __forceinline__ ms warp_merge(ms a)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        ms b = {__shfl_xor_sync(0xffffffffu, a.m, o), __shfl_xor_sync(0xffffffffu, a.s, o)};
        a = merge(a, b);
    }
    return a;
}

// One row, `lanes` threads starting at `lane` (a warp, or the block).
static __device__ __forceinline__ ms row_stats(const float *xr, long long cols, int lane,
                                               int lanes, bool vec)
{
    ms a = {-INFINITY, 0.0f};
#if VEC == 4
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (long long c = lane; c < cols / 4; c += lanes) {
            float4 v = x4[c];
            add_value(a, v.x);
            add_value(a, v.y);
            add_value(a, v.z);
            add_value(a, v.w);
        }
        return a;
    }
#endif
    (void)vec;
    for (long long c = lane; c < cols; c += lanes)
        add_value(a, xr[c]);
    return a;
}

static __device__ __forceinline__ void row_write(const float *xr, float *outr, long long cols,
                                                 int lane, int lanes, bool vec, ms a)
{
    const float inv = 1.0f / a.s;
#if VEC == 4
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        float4 *o4 = reinterpret_cast<float4 *>(outr);
        for (long long c = lane; c < cols / 4; c += lanes) {
            float4 v = x4[c];
            o4[c] = make_float4(expf(v.x - a.m) * inv, expf(v.y - a.m) * inv,
                                expf(v.z - a.m) * inv, expf(v.w - a.m) * inv);
        }
        return;
    }
#endif
    for (long long c = lane; c < cols; c += lanes)
        outr[c] = expf(xr[c] - a.m) * inv;
}

extern "C" __global__ void softmax_rows(long long rows, long long cols, const float *x, float *out)
{
    __shared__ ms warp_part[BLOCK / 32];
    const bool vec = VEC == 4 && cols % 4 == 0 &&
                     (((unsigned long long)x | (unsigned long long)out) & 15) == 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (cols <= WARP_MAX) { // one warp per row
        long long r = (long long)blockIdx.x * (BLOCK / 32) + warp;
        if (r >= rows)
            return;
        ms a = warp_merge(row_stats(x + r * cols, cols, lane, 32, vec));
        row_write(x + r * cols, out + r * cols, cols, lane, 32, vec, a);
        return;
    }
    long long r = blockIdx.x; // one block per row
    if (r >= rows)
        return;
    ms a = warp_merge(row_stats(x + r * cols, cols, threadIdx.x, BLOCK, vec));
    if (lane == 0)
        warp_part[warp] = a;
    __syncthreads();
    a = warp_part[0];
#pragma unroll
    for (int w = 1; w < BLOCK / 32; w++) // the same order in every thread
        a = merge(a, warp_part[w]);
    row_write(x + r * cols, out + r * cols, cols, threadIdx.x, BLOCK, vec, a);
}
