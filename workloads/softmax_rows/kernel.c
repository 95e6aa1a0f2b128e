// Naive row softmax in C11: per row, max, sum of exp, then scale. Self-contained
// (its own expf) so the library needs no libm. LANES independent accumulators
// break the dependency chains of the max and sum loops; the sum runs in
// chunks of CHUNK because one running float sum over a long, nearly uniform row
// drifts by more than the tolerance.
// kiln: tunable LANES {1, 2, 4, 8} = 4
// kiln: tunable CHUNK {256, 1024, 4096} = 1024
// kiln: launch softmax_rows args(rows, cols, x, out)

#include <stdint.h>
#include <string.h>

// exp(v) for v <= 0: v = k*ln2 + t with |t| <= ln2/2, exp(t) by its degree-7
// Taylor polynomial (error < 1e-8 relative), times 2^k built in the exponent.
static float exp_nonpositive(float v)
{
    if (v < -87.0f)
        return 0.0f; // below FLT_MIN: contributes nothing at float32 precision
    float kf = v * 1.44269504f;
    int k = (int)(kf - 0.5f); // round to nearest for kf <= 0
    float t = (v - (float)k * 0.693145752f) - (float)k * 1.42860677e-6f;
    float p = 1.0f / 5040.0f;
    p = p * t + 1.0f / 720.0f;
    p = p * t + 1.0f / 120.0f;
    p = p * t + 1.0f / 24.0f;
    p = p * t + 1.0f / 6.0f;
    p = p * t + 0.5f;
    p = p * t + 1.0f;
    p = p * t + 1.0f;
    uint32_t bits = (uint32_t)(k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

void softmax_rows(long long rows, long long cols, const float *x, float *out)
{
    for (long long r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *outr = out + r * cols;
        float m[LANES];
        for (int j = 0; j < LANES; j++)
            m[j] = xr[0];
        long long c = 0;
        for (; c + LANES <= cols; c += LANES)
            for (int j = 0; j < LANES; j++)
                m[j] = xr[c + j] > m[j] ? xr[c + j] : m[j];
        for (; c < cols; c++)
            m[0] = xr[c] > m[0] ? xr[c] : m[0];
        float mx = m[0];
        for (int j = 1; j < LANES; j++)
            mx = m[j] > mx ? m[j] : mx;

        // Sum in chunks of CHUNK so no float accumulator grows over a long row.
        float sum = 0.0f;
        for (long long lo = 0; lo < cols; lo += CHUNK) {
            long long hi = lo + CHUNK < cols ? lo + CHUNK : cols;
            float s[LANES] = {0.0f};
            for (c = lo; c + LANES <= hi; c += LANES)
                for (int j = 0; j < LANES; j++) {
                    float e = exp_nonpositive(xr[c + j] - mx);
                    outr[c + j] = e;
                    s[j] += e;
                }
            for (; c < hi; c++) {
                outr[c] = exp_nonpositive(xr[c] - mx);
                s[0] += outr[c];
            }
            float chunk = 0.0f;
            for (int j = 0; j < LANES; j++)
                chunk += s[j];
            sum += chunk;
        }
        float inv = 1.0f / sum;
        for (c = 0; c < cols; c++)
            outr[c] *= inv;
    }
}
