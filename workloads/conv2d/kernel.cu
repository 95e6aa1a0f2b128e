// Naive direct convolution: one thread per output pixel (b, y, z) and group of
// KB output channels, so each input value loaded is reused KB times. Every
// tap is bounds-checked against the image (zero padding).
// kiln: tunable BLOCK {64, 128, 256, 512} = 128
// kiln: tunable KB {1, 2, 4, 8} = 1
// kiln: launch conv2d grid(cdiv(n * cdiv(k, KB) * p * q, BLOCK)) block(BLOCK) smem(0) args(n, c, h, w, k, r, s, p, q, pad_h, pad_w, x, weight, out)

extern "C" __global__ void conv2d(long long n, long long c, long long h, long long w, long long k,
                                  long long r, long long s, long long p, long long q,
                                  long long pad_h, long long pad_w, const float *x,
                                  const float *weight, float *out)
{
    long long groups = (k + KB - 1) / KB;
    long long idx = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (idx >= n * groups * p * q)
        return;
    long long z = idx % q;
    long long t = idx / q;
    long long y = t % p;
    t /= p;
    long long o0 = (t % groups) * KB;
    long long b = t / groups;

    float acc[KB];
#pragma unroll
    for (int j = 0; j < KB; j++)
        acc[j] = 0.0f;
    for (long long ci = 0; ci < c; ci++)
        for (long long i = 0; i < r; i++) {
            long long iy = y - pad_h + i;
            if (iy < 0 || iy >= h)
                continue;
            for (long long jj = 0; jj < s; jj++) {
                long long iz = z - pad_w + jj;
                if (iz < 0 || iz >= w)
                    continue;
                float xv = x[((b * c + ci) * h + iy) * w + iz];
#pragma unroll
                for (int j = 0; j < KB; j++)
                    if (o0 + j < k)
                        acc[j] += xv * weight[(((o0 + j) * c + ci) * r + i) * s + jj];
            }
        }
#pragma unroll
    for (int j = 0; j < KB; j++)
        if (o0 + j < k)
            out[((b * k + o0 + j) * p + y) * q + z] = acc[j];
}
