// Layer normalization in two passes over the row. Pass 1 sums d = x - x0 and
// d * d, where x0 is the row's first element: shifting by a value of the row
// keeps sum(d^2)/n - mean(d)^2 well conditioned (means up to 4 standard
// deviations away from 0 would cancel catastrophically without it). Partial
// sums merge across lanes (warp shuffles) and warps (shared memory) in a
// fixed order. Pass 2 writes (x - mean) * rstd * gamma + beta (its reads of
// x mostly hit L2). Rows of at most WARP_MAX columns get one warp each
// (BLOCK / 32 rows per block), longer rows a whole block; the grid
// expression makes the same choice from cols (cols / (WARP_MAX + 1) is 0
// exactly when cols <= WARP_MAX). VEC=4 moves float4s when cols % 4 == 0 and
// every pointer is 16-byte aligned, scalars otherwise.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable WARP_MAX {0, 1024, 2048, 8192} = 0
// kiln: tunable VEC {1, 4} = 1
// kiln: launch layernorm grid((1 - min(1, cols / (WARP_MAX + 1))) * cdiv(rows, BLOCK / 32) + min(1, cols / (WARP_MAX + 1)) * rows) block(BLOCK) smem(0) args(rows, cols, eps, x, gamma, beta, out)

static __device__ __forceinline__ float2 warp_sum2(float2 a)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        a.x += __shfl_xor_sync(0xffffffffu, a.x, o);
        a.y += __shfl_xor_sync(0xffffffffu, a.y, o);
    }
    return a;
}

static __device__ __forceinline__ float2 row_sums(const float *xr, float x0, long long cols,
                                                  int lane, int lanes, bool vec)
{
    float2 a = {0.0f, 0.0f};
#if VEC == 4
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (long long c = lane; c < cols / 4; c += lanes) {
            float4 v = x4[c];
            float d0 = v.x - x0, d1 = v.y - x0, d2 = v.z - x0, d3 = v.w - x0;
            a.x += (d0 + d1) + (d2 + d3);
            a.y += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
        }
        return a;
    }
#endif
    (void)vec;
    for (long long c = lane; c < cols; c += lanes) {
        float d = xr[c] - x0;
        a.x += d;
        a.y += d * d;
    }
    return a;
}

static __device__ __forceinline__ void row_write(const float *xr, const float *gamma,
                                                 const float *beta, float *outr, long long cols,
                                                 int lane, int lanes, bool vec, float mean,
                                                 float rstd)
{
#if VEC == 4
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
        const float4 *b4 = reinterpret_cast<const float4 *>(beta);
        float4 *o4 = reinterpret_cast<float4 *>(outr);
        for (long long c = lane; c < cols / 4; c += lanes) {
            float4 v = x4[c], g = g4[c], b = b4[c];
            o4[c] = make_float4((v.x - mean) * rstd * g.x + b.x, (v.y - mean) * rstd * g.y + b.y,
                                (v.z - mean) * rstd * g.z + b.z, (v.w - mean) * rstd * g.w + b.w);
        }
        return;
    }
#endif
    for (long long c = lane; c < cols; c += lanes)
        outr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}

static __device__ __forceinline__ void moments(float2 s, float x0, long long cols, float eps,
                                               float *mean, float *rstd)
{
    float md = s.x / (float)cols;
    float var = fmaxf(s.y / (float)cols - md * md, 0.0f);
    *mean = x0 + md;
    *rstd = rsqrtf(var + eps);
}

extern "C" __global__ void layernorm(long long rows, long long cols, float eps, const float *x,
                                     const float *gamma, const float *beta, float *out)
{
    __shared__ float2 warp_part[BLOCK / 32];
    const bool vec = VEC == 4 && cols % 4 == 0 &&
                     (((unsigned long long)x | (unsigned long long)gamma |
                       (unsigned long long)beta | (unsigned long long)out) &
                      15) == 0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float mean, rstd;
    if (cols <= WARP_MAX) { // one warp per row
        long long r = (long long)blockIdx.x * (BLOCK / 32) + warp;
        if (r >= rows)
            return;
        const float *xr = x + r * cols;
        float x0 = xr[0];
        moments(warp_sum2(row_sums(xr, x0, cols, lane, 32, vec)), x0, cols, eps, &mean, &rstd);
        row_write(xr, gamma, beta, out + r * cols, cols, lane, 32, vec, mean, rstd);
        return;
    }
    long long r = blockIdx.x; // one block per row
    if (r >= rows)
        return;
    const float *xr = x + r * cols;
    float x0 = xr[0];
    float2 s = warp_sum2(row_sums(xr, x0, cols, threadIdx.x, BLOCK, vec));
    if (lane == 0)
        warp_part[warp] = s;
    __syncthreads();
    s = warp_part[0];
#pragma unroll
    for (int w = 1; w < BLOCK / 32; w++) { // the same order in every thread
        s.x += warp_part[w].x;
        s.y += warp_part[w].y;
    }
    moments(s, x0, cols, eps, &mean, &rstd);
    row_write(xr, gamma, beta, out + r * cols, cols, threadIdx.x, BLOCK, vec, mean, rstd);
}
