// Direct convolution, NCHW, stride 1, zero padding. A block owns one image b
// (grid z), a group of KB output channels (grid y) and BLOCK output pixel
// groups; each thread computes PX neighbouring pixels of one output row for
// the KB channels in registers, so each input value loaded is used KB times
// and each weight PX times. The group's weights are staged in shared memory
// CC input channels at a time (dynamic shared memory: 4 * KB * CC * r * s
// bytes), read as warp-wide broadcasts. Every tap is bounds-checked against
// the image, and channels and pixels past k and q are guarded.
// The defaults (KB=1, PX=1, CC=1) are close to one thread per output pixel.
// kiln: tunable BLOCK {64, 128, 256} = 128
// kiln: tunable KB {1, 2, 4, 8} = 1
// kiln: tunable PX {1, 2, 4} = 1
// kiln: tunable CC {1, 4, 8} = 1
// kiln: require KB * PX <= 32
// kiln: launch conv2d grid(cdiv(p * cdiv(q, PX), BLOCK), cdiv(k, KB), n) block(BLOCK) smem(4 * KB * CC * r * s) args(n, c, h, w, k, r, s, p, q, pad_h, pad_w, x, weight, out)

extern "C" __global__ void conv2d(long long n, long long c, long long h, long long w, long long k,
                                  long long r, long long s, long long p, long long q,
                                  long long pad_h, long long pad_w, const float *x,
                                  const float *weight, float *out)
{
    extern __shared__ float ws[]; // [KB][CC][r][s] of the current input channels
    (void)n;
    const long long qg = (q + PX - 1) / PX;
    const long long t = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const bool live = t < p * qg;
    const long long y = live ? t / qg : 0, z0 = live ? (t % qg) * PX : 0;
    const long long o0 = (long long)blockIdx.y * KB, b = blockIdx.z;
    const long long rs = r * s;
    float acc[KB][PX];
#pragma unroll
    for (int kb = 0; kb < KB; kb++)
#pragma unroll
        for (int px = 0; px < PX; px++)
            acc[kb][px] = 0.0f;
    for (long long c0 = 0; c0 < c; c0 += CC) {
        for (long long i = threadIdx.x; i < KB * CC * rs; i += BLOCK) {
            long long kb = i / (CC * rs), rem = i % (CC * rs), cc = rem / rs;
            ws[i] = (o0 + kb < k && c0 + cc < c) ? weight[((o0 + kb) * c + c0 + cc) * rs + rem % rs]
                                                 : 0.0f;
        }
        __syncthreads();
        if (live) {
            for (int cc = 0; cc < CC && c0 + cc < c; cc++) {
                const float *xc = x + (b * c + c0 + cc) * h * w;
                const float *wc = ws + cc * rs;
                for (long long i = 0; i < r; i++) {
                    long long iy = y - pad_h + i;
                    if (iy < 0 || iy >= h)
                        continue;
                    for (long long j = 0; j < s; j++) {
                        float wv[KB];
#pragma unroll
                        for (int kb = 0; kb < KB; kb++)
                            wv[kb] = wc[kb * CC * rs + i * s + j];
#pragma unroll
                        for (int px = 0; px < PX; px++) {
                            long long iz = z0 + px - pad_w + j;
                            if (z0 + px < q && iz >= 0 && iz < w) {
                                float xv = xc[iy * w + iz];
#pragma unroll
                                for (int kb = 0; kb < KB; kb++)
                                    acc[kb][px] += xv * wv[kb];
                            }
                        }
                    }
                }
            }
        }
        __syncthreads(); // ws is refilled by the next chunk
    }
    if (!live)
        return;
#pragma unroll
    for (int kb = 0; kb < KB; kb++)
#pragma unroll
        for (int px = 0; px < PX; px++)
            if (o0 + kb < k && z0 + px < q)
                out[((b * k + o0 + kb) * p + y) * q + z0 + px] = acc[kb][px];
}
