/*
 * kiln_helpers.cu - the harness's own kernels, compiled at build time into a
 * fatbin (SASS for every supported architecture from sm_75 on, plus PTX of
 * the lowest) embedded in kiln-harness-cuda.
 *
 * kiln_fingerprint: *out += the sum of hx_fp_term over the region's words
 * (hx_fp.h). The sum is order-independent, so blocks reduce with atomics
 * and any launch geometry gives the same value; the host finishes it with
 * hx_fp_finish. *out must be zeroed before the launch.
 *
 * kiln_l2_flush: reads `n16` 16-byte words (twice the L2) so that every line
 * the last run left in L2 is evicted (its dirty lines written back here,
 * outside the timed region) and L2 ends holding only clean lines: the timed
 * run then starts as under ncu's --cache-control all, with no write-back of
 * someone else's data to pay for. A flush by memset left L2 full of dirty
 * lines, and the run after it paid their write-back (kiln read 3% above ncu
 * on saxpy). `*sink` is written only if the XOR of everything read equals
 * `key`, which the compiler cannot know: the loads cannot be dropped.
 *
 * kiln_spin: one thread that busy-waits `ns` nanoseconds of %globaltimer,
 * enqueued before a timed run in the hot (no flush) mode so the device is
 * busy while the host enqueues the start event and the launches.
 */
#include <stdint.h>

#include "hx_fp.h"

#define HX_FP_THREADS 256

extern "C" __global__ void __launch_bounds__(HX_FP_THREADS)
    kiln_fingerprint(const unsigned char *p, unsigned long long nbytes, unsigned long long seed,
                     unsigned long long *out)
{
    const unsigned long long nwords = nbytes / 8;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long acc = 0;

    if (((uintptr_t)p & 15) == 0) {
        /* Tensors start 256-aligned: two words per 16-byte load. */
        const ulonglong2 *v = (const ulonglong2 *)p;
        const unsigned long long npairs = nwords / 2;
        for (unsigned long long i = tid; i < npairs; i += stride) {
            ulonglong2 w = v[i];
            acc += hx_fp_term(w.x, 2 * i, seed) + hx_fp_term(w.y, 2 * i + 1, seed);
        }
        if (tid == 0 && (nwords & 1))
            acc += hx_fp_term(((const unsigned long long *)p)[nwords - 1], nwords - 1, seed);
    } else {
        /* Guard regions may start anywhere: assemble words bytewise. */
        for (unsigned long long i = tid; i < nwords; i += stride) {
            unsigned long long w = 0;
            for (int j = 0; j < 8; j++)
                w |= (unsigned long long)p[8 * i + j] << (8 * j);
            acc += hx_fp_term(w, i, seed);
        }
    }
    if (tid == 0 && (nbytes & 7)) {
        unsigned long long w = 0;
        for (unsigned long long j = 0; j < (nbytes & 7); j++)
            w |= (unsigned long long)p[8 * nwords + j] << (8 * j);
        acc += hx_fp_term(w, nwords, seed);
    }

    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    __shared__ unsigned long long warp_sum[HX_FP_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        warp_sum[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x / 32) ? warp_sum[lane] : 0;
        for (int off = 16; off > 0; off >>= 1)
            acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0)
            atomicAdd(out, acc);
    }
}

extern "C" __global__ void kiln_l2_flush(const uint4 *p, unsigned long long n16,
                                         unsigned long long key, unsigned long long *sink)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned int acc = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16;
         i += stride) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == key)
        *sink = acc;
}

extern "C" __global__ void kiln_spin(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}
