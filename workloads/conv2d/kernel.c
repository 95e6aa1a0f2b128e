// Naive direct convolution in C11 (zero padding, stride 1). For each image
// and group of KB output channels, every tap (ci, i, j) is applied to the
// whole in-bounds range of output pixels at once, so the inner loop runs
// along contiguous rows of x and out.
// kiln: tunable KB {1, 2, 4} = 2
// kiln: launch conv2d args(n, c, h, w, k, r, s, p, q, pad_h, pad_w, x, weight, out)

void conv2d(long long n, long long c, long long h, long long w, long long k, long long r,
            long long s, long long p, long long q, long long pad_h, long long pad_w, const float *x,
            const float *weight, float *out)
{
    for (long long b = 0; b < n; b++)
        for (long long o0 = 0; o0 < k; o0 += KB) {
            long long kb = k - o0 < KB ? k - o0 : KB;
            float *ob = out + (b * k + o0) * p * q;
            for (long long e = 0; e < kb * p * q; e++)
                ob[e] = 0.0f;
            for (long long ci = 0; ci < c; ci++)
                for (long long i = 0; i < r; i++)
                    for (long long jj = 0; jj < s; jj++) {
                        // Output pixels whose tap (i, jj) lands inside the image.
                        long long y0 = pad_h - i > 0 ? pad_h - i : 0;
                        long long y1 = h + pad_h - i < p ? h + pad_h - i : p;
                        long long z0 = pad_w - jj > 0 ? pad_w - jj : 0;
                        long long z1 = w + pad_w - jj < q ? w + pad_w - jj : q;
                        float wv[KB];
                        for (long long j = 0; j < kb; j++)
                            wv[j] = weight[(((o0 + j) * c + ci) * r + i) * s + jj];
                        for (long long y = y0; y < y1; y++) {
                            const float *xr = x + ((b * c + ci) * h + y - pad_h + i) * w - pad_w + jj;
                            for (long long j = 0; j < kb; j++) {
                                float *orow = ob + (j * p + y) * q;
                                for (long long z = z0; z < z1; z++)
                                    orow[z] += xr[z] * wv[j];
                            }
                        }
                    }
        }
}
