// Naive deterministic two-pass sum. Pass 1: at most MAX_PARTIALS blocks walk
// x with a grid-stride loop (ITEMS loads per step, BLOCK apart), reduce in
// shared memory and store one partial each. Pass 2: one block sums the
// partials in a fixed order. No float atomics, so the bits never vary.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable ITEMS {1, 2, 4, 8} = 1
// kiln: launch reduce_partial grid(min(cdiv(n, BLOCK * ITEMS), 1024)) block(BLOCK) smem(0) args(n, x)
// kiln: launch reduce_final grid(1) block(1024) smem(0) args(n, out)

#define MAX_PARTIALS 1024 // must match the min(..., 1024) in the first launch

__device__ float partials[MAX_PARTIALS];

static __device__ long long num_partials(long long n)
{
    long long blocks = (n + BLOCK * ITEMS - 1) / (BLOCK * ITEMS);
    return blocks < MAX_PARTIALS ? blocks : MAX_PARTIALS;
}

extern "C" __global__ void reduce_partial(long long n, const float *x)
{
    __shared__ float buf[BLOCK];
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * (BLOCK * ITEMS);
    for (long long base = (long long)blockIdx.x * (BLOCK * ITEMS) + threadIdx.x; base < n;
         base += stride) {
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
            long long i = base + (long long)j * BLOCK;
            if (i < n)
                acc += x[i];
        }
    }
    buf[threadIdx.x] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partials[blockIdx.x] = buf[0];
}

extern "C" __global__ void reduce_final(long long n, float *out)
{
    __shared__ float buf[MAX_PARTIALS];
    long long count = num_partials(n);
    buf[threadIdx.x] = threadIdx.x < count ? partials[threadIdx.x] : 0.0f;
    __syncthreads();
    for (int s = MAX_PARTIALS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[0] = buf[0];
}
