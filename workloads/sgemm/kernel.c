// SGEMM in C11, C = A @ B row-major: i-k-j loop order so the inner loop runs
// along rows of B and C (contiguous), over column panels JB wide so the panel
// of C stays in cache while k advances.
// kiln: tunable JB {32, 128, 512, 4096} = 128
// kiln: launch sgemm args(m, n, k, A, B, C)

void sgemm(long long m, long long n, long long k, const float *A, const float *B, float *C)
{
    for (long long j0 = 0; j0 < n; j0 += JB) {
        long long j1 = j0 + JB < n ? j0 + JB : n;
        for (long long i = 0; i < m; i++) {
            float *c = C + i * n;
            for (long long j = j0; j < j1; j++)
                c[j] = 0.0f;
            for (long long p = 0; p < k; p++) {
                float a = A[i * k + p];
                const float *b = B + p * n;
                for (long long j = j0; j < j1; j++)
                    c[j] += a * b[j];
            }
        }
    }
}
