// Naive layernorm: one block per row, three passes over the row in global
// memory (mean, variance around the mean, write), reductions in shared memory.
// kiln: tunable BLOCK {64, 128, 256, 512, 1024} = 256
// kiln: launch layernorm grid(rows) block(BLOCK) smem(0) args(rows, cols, eps, x, gamma, beta, out)

static __device__ float block_sum(float v, float *buf)
{
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads(); // buf is reused by the next reduction
    return r;
}

extern "C" __global__ void layernorm(long long rows, long long cols, float eps, const float *x,
                                     const float *gamma, const float *beta, float *out)
{
    __shared__ float buf[BLOCK];
    long long r = blockIdx.x;
    if (r >= rows)
        return;
    const float *xr = x + r * cols;
    float *outr = out + r * cols;

    float s = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        s += xr[c];
    float mean = block_sum(s, buf) / (float)cols;

    float q = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += BLOCK) {
        float d = xr[c] - mean;
        q += d * d;
    }
    float rstd = rsqrtf(block_sum(q, buf) / (float)cols + eps);

    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        outr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
