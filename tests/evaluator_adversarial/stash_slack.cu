// Stashes the first input value past the end of kiln's tensor allocation:
// `out` is the last tensor, followed by its guard (guard_bytes, 65536 by
// default), and the allocation is rounded up to the allocator's 2 MiB page,
// so the bytes past the guard are mapped, survive every run and reload, and
// (before issue 13 item 3) nobody looked at them. Expected: the harness
// poisons and fingerprints that slack too and fails the run.
// kiln-expect: allocation_slack
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
    if (i == 0) {
        unsigned char *end = (unsigned char *)out + ((n * 4 + 255) / 256 * 256) + 65536;
        float *stash = (float *)(end + 64);
        stash[0] = x[0];
        stash[1] = 12345.0f;
    }
}
