// Starting kernel for KernelBench level 1 problem 47
// (47_Sum_reduction_over_a_dimension): out[b, 0, j] = sum over i < dim1 of
// x[b, i, j], x of shape (batch_size, dim1, dim2), float32. One thread per
// output column (b, j): a warp reads 32 consecutive j of a row, so every load
// is coalesced; each thread keeps ACC partial sums (rows i, i + ACC, ...) so
// long reductions round less and issue independent adds.
// kiln: tunable BLOCK {64, 128, 256, 512} = 256
// kiln: tunable ACC {1, 2, 4} = 1
// kiln: launch sum_dim1 grid(cdiv(batch_size * dim2, BLOCK)) block(BLOCK) smem(0) args(batch_size, dim1, dim2, x, out)

extern "C" __global__ void sum_dim1(long long batch_size, long long dim1, long long dim2,
                                    const float *x, float *out)
{
    long long t = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (t >= batch_size * dim2)
        return;
    long long b = t / dim2, j = t % dim2;
    const float *col = x + b * dim1 * dim2 + j;
    float acc[ACC];
#pragma unroll
    for (int a = 0; a < ACC; a++)
        acc[a] = 0.0f;
    long long i = 0;
    for (; i + ACC <= dim1; i += ACC)
#pragma unroll
        for (int a = 0; a < ACC; a++)
            acc[a] += col[(i + a) * dim2];
    for (; i < dim1; i++)
        acc[0] += col[i * dim2];
    float s = 0.0f;
#pragma unroll
    for (int a = 0; a < ACC; a++)
        s += acc[a];
    out[t] = s; // out is (batch_size, 1, dim2): element b * dim2 + j
}
