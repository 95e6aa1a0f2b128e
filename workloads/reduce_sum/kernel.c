// Naive sum in C11. A single running float sum loses about sqrt(n) ulps, so
// x is summed in chunks of CHUNK elements, each with LANES independent float
// accumulators, and the chunk sums are added into the total.
// kiln: tunable LANES {1, 2, 4, 8} = 4
// kiln: tunable CHUNK {256, 1024, 4096} = 1024
// kiln: launch reduce_sum args(n, x, out)

void reduce_sum(long long n, const float *x, float *out)
{
    float total = 0.0f;
    for (long long lo = 0; lo < n; lo += CHUNK) {
        long long hi = lo + CHUNK < n ? lo + CHUNK : n;
        float acc[LANES] = {0.0f};
        long long i = lo;
        for (; i + LANES <= hi; i += LANES)
            for (int j = 0; j < LANES; j++)
                acc[j] += x[i + j];
        for (; i < hi; i++)
            acc[0] += x[i];
        float chunk = 0.0f;
        for (int j = 0; j < LANES; j++)
            chunk += acc[j];
        total += chunk;
    }
    out[0] = total;
}
