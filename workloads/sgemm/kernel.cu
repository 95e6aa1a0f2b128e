// SGEMM, C = A @ B, row-major, register-blocked. A block computes a BM x BN
// tile of C with (BM/TM) * (BN/TN) threads; each thread accumulates TM x TN
// outputs in registers, spread over the tile (ROW/COL below) so a warp's
// shared-memory reads are conflict-free broadcasts and its stores to C are
// coalesced; with TM, TN multiples of 4 they are float4 reads and stores. K advances BK at a time through shared
// memory (A staged transposed). VEC=4 loads float4 from global memory when
// the row length is a multiple of 4 and the pointer is 16-byte aligned, and
// falls back to guarded scalar loads otherwise. DBUF=1 prefetches the next K
// tile into registers while the current one is multiplied and swaps two
// shared buffers (one barrier per tile instead of two). Every edge (m, n, k
// not multiples of the tiles) is zero-filled on load and guarded on store.
// The defaults are a plain 16x16 shared-memory tiling: the tuner's start.
// Blocks of 128 to 256 threads only: with register blocking, more threads
// per block cost registers and fewer give too little latency hiding.
// kiln: tunable BM {16, 32, 64, 128, 256} = 16
// kiln: tunable BN {16, 32, 64, 128, 256} = 16
// kiln: tunable BK {8, 16} = 16
// kiln: tunable TM {1, 4, 8} = 1
// kiln: tunable TN {1, 4, 8} = 1
// kiln: tunable VEC {1, 4} = 1
// kiln: tunable DBUF {0, 1} = 0
// kiln: require (BM / TM) * (BN / TN) <= 256
// kiln: require (BM / TM) * (BN / TN) >= 128
// kiln: require BM % TM == 0
// Register blocking of at least 4x4 outputs a thread (below that, shared
// memory bandwidth bounds any current GPU); the plain tiling (TM * TN == 1)
// only as the start, 16x16. Directives take one comparison and no `||`, hence
// the arithmetic: the first keeps TM * TN == 1 or >= 16, the second allows
// BM * BN > 256 only when TM * TN > 1.
// kiln: require (min(TM * TN, 16) - 1) * (16 - min(TM * TN, 16)) == 0
// kiln: require BM * BN <= 256 + 65280 * min(TM * TN - 1, 1)
// kiln: require BN % TN == 0
// kiln: require 4 * BK * (BM + BN) * (1 + DBUF) <= 49152
// kiln: require (TM * TN + TM + TN + 32) * (BM / TM) * (BN / TN) <= 65536
// kiln: launch sgemm grid(cdiv(n, BN), cdiv(m, BM)) block((BM / TM) * (BN / TN)) smem(0) args(m, n, k, A, B, C)

#define NT       ((BM / TM) * (BN / TN)) // threads per block
#define A_CHUNKS (BM * BK / VEC)         // VEC-wide pieces of an A tile
#define B_CHUNKS (BK * BN / VEC)
#define A_PER    ((A_CHUNKS + NT - 1) / NT) // pieces per thread
#define B_PER    ((B_CHUNKS + NT - 1) / NT)

#if BM % TM || BN % TN || NT > 1024
#error "sgemm: tile shape invalid (BM % TM, BN % TN, threads <= 1024)"
#endif

static __device__ __forceinline__ void load_a(float *ra, const float *A, long long m, long long k,
                                              long long row0, long long k0, bool vec_ok)
{
#pragma unroll
    for (int p = 0; p < A_PER; p++) {
        int c = threadIdx.x + p * NT;
        int r = c / (BK / VEC), kq = (c % (BK / VEC)) * VEC;
        long long gr = row0 + r, gk = k0 + kq;
        bool in = c < A_CHUNKS && gr < m;
#if VEC == 4
        // vec_ok: k % 4 == 0 and A 16-byte aligned, so gk < k means all four are in.
        if (in && vec_ok && gk < k) {
            float4 v = *reinterpret_cast<const float4 *>(A + gr * k + gk);
            ra[p * 4 + 0] = v.x;
            ra[p * 4 + 1] = v.y;
            ra[p * 4 + 2] = v.z;
            ra[p * 4 + 3] = v.w;
            continue;
        }
#endif
#pragma unroll
        for (int q = 0; q < VEC; q++)
            ra[p * VEC + q] = (in && gk + q < k) ? A[gr * k + gk + q] : 0.0f;
    }
}

static __device__ __forceinline__ void load_b(float *rb, const float *B, long long n, long long k,
                                              long long col0, long long k0, bool vec_ok)
{
#pragma unroll
    for (int p = 0; p < B_PER; p++) {
        int c = threadIdx.x + p * NT;
        int kr = c / (BN / VEC), cq = (c % (BN / VEC)) * VEC;
        long long gk = k0 + kr, gc = col0 + cq;
        bool in = c < B_CHUNKS && gk < k;
#if VEC == 4
        // vec_ok: n % 4 == 0 and B 16-byte aligned; col0 and cq are multiples of 4.
        if (in && vec_ok && gc < n) {
            float4 v = *reinterpret_cast<const float4 *>(B + gk * n + gc);
            rb[p * 4 + 0] = v.x;
            rb[p * 4 + 1] = v.y;
            rb[p * 4 + 2] = v.z;
            rb[p * 4 + 3] = v.w;
            continue;
        }
#endif
#pragma unroll
        for (int q = 0; q < VEC; q++)
            rb[p * VEC + q] = (in && gc + q < n) ? B[gk * n + gc + q] : 0.0f;
    }
}

static __device__ __forceinline__ void store_tiles(float *As, float *Bs, const float *ra,
                                                   const float *rb)
{
#pragma unroll
    for (int p = 0; p < A_PER; p++) {
        int c = threadIdx.x + p * NT;
        if (c < A_CHUNKS) {
            int r = c / (BK / VEC), kq = (c % (BK / VEC)) * VEC;
#pragma unroll
            for (int q = 0; q < VEC; q++)
                As[(kq + q) * BM + r] = ra[p * VEC + q];
        }
    }
#pragma unroll
    for (int p = 0; p < B_PER; p++) {
        int c = threadIdx.x + p * NT;
        if (c < B_CHUNKS) {
            int kr = c / (BN / VEC), cq = (c % (BN / VEC)) * VEC;
#pragma unroll
            for (int q = 0; q < VEC; q++)
                Bs[kr * BN + cq + q] = rb[p * VEC + q];
        }
    }
}

// Output rows (and columns) of thread tr (tc). With TM % 4 == 0 a thread owns
// TM / 4 runs of 4 adjacent rows, the runs BM * 4 / TM apart, so its operands
// come out of shared memory as float4 (one LDS.128 instead of four LDS.32,
// which bounds the FMA rate of the scalar layout) and a warp still reads
// broadcasts (A) or 512 contiguous bytes (B); otherwise rows are strided by
// the thread grid, one float at a time.
#define AV (TM % 4 == 0)
#define BV (TN % 4 == 0)
#define ROW(i) (AV ? ((i) / 4) * (BM * 4 / TM) + tr * 4 + (i) % 4 : tr + (i) * (BM / TM))
#define COL(j) (BV ? ((j) / 4) * (BN * 4 / TN) + tc * 4 + (j) % 4 : tc + (j) * (BN / TN))

static __device__ __forceinline__ void multiply_tile(float (*acc)[TN], const float *As,
                                                     const float *Bs, int tr, int tc)
{
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
        float a[TM], b[TN];
#if AV
#pragma unroll
        for (int i = 0; i < TM; i += 4) {
            float4 v = *reinterpret_cast<const float4 *>(As + kk * BM + ROW(i));
            a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
        }
#else
#pragma unroll
        for (int i = 0; i < TM; i++)
            a[i] = As[kk * BM + ROW(i)];
#endif
#if BV
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            float4 v = *reinterpret_cast<const float4 *>(Bs + kk * BN + COL(j));
            b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
        }
#else
#pragma unroll
        for (int j = 0; j < TN; j++)
            b[j] = Bs[kk * BN + COL(j)];
#endif
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

extern "C" __global__ void sgemm(long long m, long long n, long long k, const float *A,
                                 const float *B, float *C)
{
    __shared__ __align__(16) float As[(1 + DBUF) * BK * BM];
    __shared__ __align__(16) float Bs[(1 + DBUF) * BK * BN];
    const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN);
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const bool a_vec = VEC == 4 && k % 4 == 0 && ((unsigned long long)A & 15) == 0;
    const bool b_vec = VEC == 4 && n % 4 == 0 && ((unsigned long long)B & 15) == 0;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;
    float ra[A_PER * VEC], rb[B_PER * VEC];
    const long long ntiles = (k + BK - 1) / BK;
#if DBUF
    load_a(ra, A, m, k, row0, 0, a_vec);
    load_b(rb, B, n, k, col0, 0, b_vec);
    store_tiles(As, Bs, ra, rb);
    __syncthreads();
    for (long long t = 0; t < ntiles; t++) {
        const int cur = (int)(t & 1);
        const bool more = t + 1 < ntiles; // the same for the whole block
        if (more) {                       // in flight while this tile is multiplied
            load_a(ra, A, m, k, row0, (t + 1) * BK, a_vec);
            load_b(rb, B, n, k, col0, (t + 1) * BK, b_vec);
        }
        multiply_tile(acc, As + cur * BK * BM, Bs + cur * BK * BN, tr, tc);
        if (more)
            store_tiles(As + (cur ^ 1) * BK * BM, Bs + (cur ^ 1) * BK * BN, ra, rb);
        __syncthreads();
    }
#else
    for (long long t = 0; t < ntiles; t++) {
        load_a(ra, A, m, k, row0, t * BK, a_vec);
        load_b(rb, B, n, k, col0, t * BK, b_vec);
        store_tiles(As, Bs, ra, rb);
        __syncthreads();
        multiply_tile(acc, As, Bs, tr, tc);
        __syncthreads();
    }
#endif
#pragma unroll
    for (int i = 0; i < TM; i++) {
        long long r = row0 + ROW(i);
        if (r >= m)
            continue;
#if BV
        // float4 stores where the thread's 4 adjacent columns are inside C and
        // aligned (n % 4 == 0, C 16-byte aligned); guarded scalars elsewhere.
        const bool c_vec = n % 4 == 0 && ((unsigned long long)C & 15) == 0;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            long long c = col0 + COL(j);
            if (c_vec && c + 3 < n) {
                *reinterpret_cast<float4 *>(C + r * n + c) =
                    make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                continue;
            }
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (c + q < n)
                    C[r * n + c + q] = acc[i][j + q];
        }
#else
#pragma unroll
        for (int j = 0; j < TN; j++) {
            long long c = col0 + COL(j);
            if (c < n)
                C[r * n + c] = acc[i][j];
        }
#endif
    }
}
