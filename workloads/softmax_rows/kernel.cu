// Naive row softmax: one block per row, three passes over the row in global
// memory (max, sum of exp, write), each reduction through shared memory.
// kiln: tunable BLOCK {64, 128, 256, 512, 1024} = 256
// kiln: launch softmax_rows grid(rows) block(BLOCK) smem(0) args(rows, cols, x, out)

static __device__ float block_reduce(float v, float *buf, bool is_max)
{
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            float o = buf[threadIdx.x + s];
            buf[threadIdx.x] = is_max ? fmaxf(buf[threadIdx.x], o) : buf[threadIdx.x] + o;
        }
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads(); // buf is reused by the next reduction
    return r;
}

extern "C" __global__ void softmax_rows(long long rows, long long cols, const float *x, float *out)
{
    __shared__ float buf[BLOCK];
    long long r = blockIdx.x;
    if (r >= rows)
        return;
    const float *xr = x + r * cols;
    float *outr = out + r * cols;

    float m = -INFINITY;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        m = fmaxf(m, xr[c]);
    m = block_reduce(m, buf, true);

    float s = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        s += expf(xr[c] - m);
    s = block_reduce(s, buf, false);

    float inv = 1.0f / s;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        outr[c] = expf(xr[c] - m) * inv;
}
