// Keeps one stash per input set, keyed on a few input values (x[0], y[0]),
// and copies the matching stash when the key repeats. Against a fixed set
// order this passes a fingerprint check; module reloads leave it nothing
// to copy. Expected: ok (it computes on every run).
// kiln-expect: ok
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
#define SLOTS 4
__device__ float stash[SLOTS][1 << 13];
__device__ unsigned long long keys[SLOTS];
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || n > (1 << 13))
        return;
    unsigned long long key =
        ((unsigned long long)__float_as_uint(x[0]) << 32) | __float_as_uint(y[0]) | 1ull;
    int slot = (int)(key % SLOTS);
    if (keys[slot] == key) {
        out[i] = stash[slot][i];
        return;
    }
    out[i] = stash[slot][i] = a * x[i] + y[i];
    if (i == 0)
        keys[slot] = key;
}
