// Naive layernorm in C11: per row, the mean, the variance around the mean,
// then the output. Sums run in chunks of CHUNK with LANES accumulators so long
// rows keep float32 accuracy. Self-contained (no libm): 1/sqrt by Newton steps.
// kiln: tunable LANES {1, 2, 4, 8} = 4
// kiln: tunable CHUNK {256, 1024, 4096} = 1024
// kiln: launch layernorm args(rows, cols, eps, x, gamma, beta, out)

#include <stdint.h>
#include <string.h>

// 1/sqrt(v) for v > 0: bit-trick estimate refined by four Newton steps
// (quadratic convergence from ~3% error reaches float32 rounding).
static float inv_sqrt(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits = 0x5f3759dfu - (bits >> 1);
    float y;
    memcpy(&y, &bits, sizeof y);
    for (int i = 0; i < 4; i++)
        y = y * (1.5f - 0.5f * v * y * y);
    return y;
}

// Sum of (x[c] - shift)^power for power 1 or 2, blocked for accuracy.
static float row_sum(const float *x, long long cols, float shift, int power)
{
    float total = 0.0f;
    for (long long lo = 0; lo < cols; lo += CHUNK) {
        long long hi = lo + CHUNK < cols ? lo + CHUNK : cols;
        float acc[LANES] = {0.0f};
        long long c = lo;
        for (; c + LANES <= hi; c += LANES)
            for (int j = 0; j < LANES; j++) {
                float d = x[c + j] - shift;
                acc[j] += power == 2 ? d * d : d;
            }
        for (; c < hi; c++) {
            float d = x[c] - shift;
            acc[0] += power == 2 ? d * d : d;
        }
        float chunk = 0.0f;
        for (int j = 0; j < LANES; j++)
            chunk += acc[j];
        total += chunk;
    }
    return total;
}

void layernorm(long long rows, long long cols, float eps, const float *x, const float *gamma,
               const float *beta, float *out)
{
    for (long long r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *outr = out + r * cols;
        float mean = row_sum(xr, cols, 0.0f, 1) / (float)cols;
        float var = row_sum(xr, cols, mean, 2) / (float)cols;
        float rstd = inv_sqrt(var + eps);
        for (long long c = 0; c < cols; c++)
            outr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
    }
}
