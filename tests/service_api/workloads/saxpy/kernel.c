// Naive saxpy in C11: a plain loop, unrolled UNROLL times with a scalar tail.
// kiln: tunable UNROLL {1, 2, 4, 8} = 4
// kiln: launch saxpy args(n, a, x, y, out)

void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = 0;
    for (; i + UNROLL <= n; i += UNROLL)
        for (int j = 0; j < UNROLL; j++)
            out[i + j] = a * x[i + j] + y[i + j];
    for (; i < n; i++)
        out[i] = a * x[i] + y[i];
}
