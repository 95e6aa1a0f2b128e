/*
 * hx_fp.h - the fingerprint both backends compute: a keyed 64-bit hash of a
 * byte region whose per-word terms are summed, so any reduction order (GPU
 * blocks, atomics) gives the same value, while each term mixes in the word's
 * position, so moving data changes it. Word j is bytes 8j..8j+7 read
 * little-endian, the last one zero-padded; the sum is finished with the
 * length. The seed comes from getrandom per harness process, so a candidate
 * cannot aim for a collision. Not cryptographic; it detects, it does not
 * authenticate.
 *
 * Included by C (CPU backend, core) and by the CUDA helper kernels.
 */
#ifndef KILN_HX_FP_H
#define KILN_HX_FP_H

#include <stdint.h>

#ifdef __CUDACC__
#define HX_FP_FN static __host__ __device__ __forceinline__
#else
#define HX_FP_FN static inline
#endif

#define HX_FP_STEP 0x9E3779B97F4A7C15ull

/* splitmix64's finalizer: a bijection with full avalanche. */
HX_FP_FN uint64_t hx_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

/* The term of word `w` at word index `i`. */
HX_FP_FN uint64_t hx_fp_term(uint64_t w, uint64_t i, uint64_t seed)
{
    return hx_mix64(w ^ (seed + i * HX_FP_STEP));
}

/* The fingerprint of a region of `nbytes` whose terms sum to `sum`. */
HX_FP_FN uint64_t hx_fp_finish(uint64_t sum, uint64_t nbytes, uint64_t seed)
{
    return hx_mix64(sum ^ hx_mix64(nbytes ^ ~seed));
}

#endif
