// Starting kernel for KernelBench level 1 problem 47
// (47_Sum_reduction_over_a_dimension): out[b, 0, j] = sum over i < dim1 of
// x[b, i, j], x of shape (batch_size, dim1, dim2), float32. A block covers
// BLOCK / SPLIT consecutive output columns (b, j) with SPLIT threads each: a
// warp reads 32 consecutive j of a row, so every load is coalesced; thread r
// of a column sums rows r, r + SPLIT, ... into ACC partial sums (long
// reductions round less and issue independent adds), and the SPLIT sums of a
// column are added in a fixed order through shared memory. SPLIT > 1 is for
// problems with few columns (KernelBench's 16 x 256 leaves most of a GPU idle
// with one thread per column); the start is SPLIT = 1.
// kiln: tunable BLOCK {64, 128, 256, 512} = 256
// kiln: tunable ACC {1, 2, 4} = 1
// kiln: tunable SPLIT {1, 2, 4, 8, 16} = 1
// kiln: require BLOCK / SPLIT >= 32
// kiln: launch sum_dim1 grid(cdiv(batch_size * dim2, BLOCK / SPLIT)) block(BLOCK) smem(0) args(batch_size, dim1, dim2, x, out)

#define COLS (BLOCK / SPLIT) // output columns per block

extern "C" __global__ void sum_dim1(long long batch_size, long long dim1, long long dim2,
                                    const float *x, float *out)
{
    const int c = threadIdx.x % COLS, r = threadIdx.x / COLS;
    const long long t = (long long)blockIdx.x * COLS + c;
    const bool in = t < batch_size * dim2;
    float s = 0.0f;
    if (in) {
        long long b = t / dim2, j = t % dim2;
        const float *col = x + b * dim1 * dim2 + j;
        float acc[ACC];
#pragma unroll
        for (int a = 0; a < ACC; a++)
            acc[a] = 0.0f;
        long long i = r;
        for (; i + (long long)(ACC - 1) * SPLIT < dim1; i += (long long)ACC * SPLIT)
#pragma unroll
            for (int a = 0; a < ACC; a++)
                acc[a] += col[(i + (long long)a * SPLIT) * dim2];
        for (; i < dim1; i += SPLIT)
            acc[0] += col[i * dim2];
#pragma unroll
        for (int a = 0; a < ACC; a++)
            s += acc[a];
    }
#if SPLIT > 1
    __shared__ float part[BLOCK];
    part[threadIdx.x] = s;
    __syncthreads(); // every thread reaches it: none returned early
    if (r != 0)
        return;
    for (int q = 1; q < SPLIT; q++)
        s += part[q * COLS + c];
#endif
    if (in)
        out[t] = s; // out is (batch_size, 1, dim2): element b * dim2 + j
}
