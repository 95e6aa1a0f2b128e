// SGEMM, C = A @ B, row-major, register-blocked. A block computes a BM x BN
// tile of C with (BM/TM) * (BN/TN) threads; each thread accumulates TM x TN
// outputs in registers, spread over the tile (ROW/COL below) so a warp's
// shared-memory reads are conflict-free broadcasts and its stores to C are
// coalesced; with TM, TN multiples of 4 they are float4 reads and stores. K
// advances BK at a time through shared memory. VEC=4 loads float4 from global
// memory when the row length is a multiple of 4 and the pointer is 16-byte
// aligned, and falls back to guarded scalar loads otherwise. Every edge (m, n,
// k not multiples of the tiles) is zero-filled on load and guarded on store.
//
// WTN > 0 tiles by warp: a warp owns a (32/WTN)*TM x WTN*TN sub-tile, its
// lanes WTN wide, so a warp's reads of A and B touch few distinct addresses
// (broadcasts) and its sub-tile stays in L1; WTN = 0 spreads the threads
// over the whole block tile instead.
//
// DBUF: 0 one shared buffer (two barriers a tile); 1 the next K tile is
// loaded into registers while the current one is multiplied, two shared
// buffers; 2 the next tile goes straight to the other shared buffer with
// cp.async (sm_80+; below sm_80 it is register-staged as DBUF=1, same
// layout). cp.async cannot transpose, so with DBUF=2 the A tile is kept
// row-major, rows BK + 4 floats apart (an odd number of 16-byte units: the
// float4 reads of a warp's adjacent rows fall in distinct banks) and read
// as float4 along k; otherwise it is stored transposed, rows BM + 4 apart
// (the pad halves the bank conflicts of the transposing stores).
//
// SPLITK > 1 splits K over grid.z (the launch picks min(SPLITK, ...) slices
// when the tiles alone cannot fill an H200's 132 SMs twice and k >= 512): a
// slice stores its partial tile to a global workspace, and the last slice
// of a tile to arrive (a counter, after a fence) sums all partials in slice
// order and writes C. No float atomics, so the bits never vary between runs
// (kiln fails a candidate whose outputs change: `nondeterministic`), in one
// launch. The counter is reset by that last block, for the next launch.
//
// The defaults are a plain 16x16 shared-memory tiling: the tuner's start.
// Blocks of 128 to 256 threads only: with register blocking, more threads
// per block cost registers and fewer give too little latency hiding.
// kiln: tunable BM {16, 32, 64, 128, 256} = 16
// kiln: tunable BN {16, 32, 64, 128, 256} = 16
// kiln: tunable BK {8, 16, 32} = 16
// kiln: tunable TM {1, 4, 8} = 1
// kiln: tunable TN {1, 4, 8} = 1
// kiln: tunable VEC {1, 4} = 1
// kiln: tunable DBUF {0, 1, 2} = 0
// kiln: tunable WTN {0, 4, 8} = 0
// kiln: tunable SPLITK {1, 8} = 1
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
// Shared memory: (1 or 2 buffers) x (padded A tile + B tile), 48 KiB static.
// kiln: require 4 * (1 + min(DBUF, 1)) * ((BK + 4) * (BM + 4) + BK * BN) <= 49152
// Registers a thread (accumulators, operands: 4 floats a row of A with
// DBUF=2, a tile's loads in registers with DBUF=0 and 1, ~32 of
// addresses) within the 64K register file, and at most 150 by that count:
// ptxas used 249 and 255 (no spill yet) for two that counted 152 and 184;
// at most 233, no spill, in what this allows (nvcc 13.0, sm_90; checked by
// tests/orchestrator_optimizer/kernels_nvcc.sh).
// kiln: require (TM * TN + TM * (1 + 3 * (DBUF / 2)) + TN + 32 + (1 - DBUF / 2) * (BM + BN) * BK * TM * TN / (BM * BN)) * (BM / TM) * (BN / TN) <= DEVICE_REGS_PER_BLOCK
// kiln: require TM * TN + TM * (1 + 3 * (DBUF / 2)) + TN + 32 + (1 - DBUF / 2) * (BM + BN) * BK * TM * TN / (BM * BN) <= 150
// Warp tiling: float4 runs in both directions, whole warp tiles in the block.
// kiln: require min(WTN, 1) * (TM % 4 + TN % 4) == 0
// kiln: require BN % max(WTN * TN, 1) == 0
// kiln: require BM % max((32 / max(WTN, 1)) * TM * min(WTN, 1), 1) == 0
// cp.async copies 16 bytes at a time (VEC=4) into the warp-tiled layout.
// kiln: require (DBUF / 2) * (4 - VEC) == 0
// kiln: require (DBUF / 2) * (1 - min(WTN, 1)) == 0
// Pruned to keep the space within reach of the tuner's budget: register
// blocking only with float4 loads and tiles at least 32 wide; cp.async with
// K tiles of 16 or 32; split-K only
// on the cp.async pipeline (it changes nothing where the tiles fill the GPU,
// as in every timed case, so each value is a configuration timed twice).
// kiln: require (4 - VEC) * (min(TM * TN, 16) - 1) == 0
// kiln: require min(BM, BN) >= 16 + 16 * min(TM * TN - 1, 1)
// kiln: require (SPLITK - 1) * (2 - DBUF) == 0
// kiln: require (DBUF / 2) * (16 - min(BK, 16)) == 0
// cp.async exists from sm_80 on: below, DBUF=2 would time DBUF=1 again.
// kiln: require (DBUF / 2) * (80 - min(DEVICE_CC, 80)) == 0
// kiln: launch sgemm grid(cdiv(n, BN), cdiv(m, BM), max(1, min(SPLITK, min(264 / (cdiv(m, BM) * cdiv(n, BN)), k / 256)))) block((BM / TM) * (BN / TN)) smem(0) args(m, n, k, A, B, C)

#define NT       ((BM / TM) * (BN / TN)) // threads per block
#define A_CHUNKS (BM * BK / VEC)         // VEC-wide pieces of an A tile
#define B_CHUNKS (BK * BN / VEC)
#define A_PER    ((A_CHUNKS + NT - 1) / NT) // pieces per thread
#define B_PER    ((B_CHUNKS + NT - 1) / NT)
#define AROW     (DBUF == 2) // A tile row-major in shared memory (else transposed)
#define A_LD     (AROW ? BK + 4 : BM + 4) // floats between rows of the A tile
#define A_TILE   (AROW ? BM * A_LD : BK * A_LD)
#define B_TILE   (BK * BN)
#define NBUF     (DBUF ? 2 : 1)

#if BM % TM || BN % TN || NT > 1024
#error "sgemm: tile shape invalid (BM % TM, BN % TN, threads <= 1024)"
#endif
#if WTN && (TM % 4 || TN % 4 || BN % (WTN * TN) || BM % ((32 / WTN) * TM))
#error "sgemm: warp tiling needs TM, TN multiples of 4 and whole warp tiles"
#endif
#if DBUF == 2 && (WTN == 0 || VEC != 4)
#error "sgemm: DBUF=2 needs WTN > 0 and VEC=4"
#endif

// cp.async: the real instruction on sm_80+; under the CPU emulator of the
// tests (KILN_EMU_CP_ASYNC) copies deferred to the wait, as the hardware may;
// elsewhere DBUF=2 is register-staged.
#if DBUF == 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ASYNC 1
static __device__ __forceinline__ void cp_async16(float *dst, const float *src)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}
// Copies src_bytes (4 or 0) of src and zero-fills the rest of 4 bytes.
static __device__ __forceinline__ void cp_async4(float *dst, const float *src, int src_bytes)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src),
                 "r"(src_bytes));
}
static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}
static __device__ __forceinline__ void cp_async_wait1()
{
    asm volatile("cp.async.wait_group 1;\n" ::);
}
#elif DBUF == 2 && defined(KILN_EMU_CP_ASYNC)
#define ASYNC 1
static inline void cp_async16(float *dst, const float *src)
{
    emu_cp_async(dst, src, 16, 16);
}
static inline void cp_async4(float *dst, const float *src, int src_bytes)
{
    emu_cp_async(dst, src, 4, src_bytes);
}
static inline void cp_async_commit()
{
    emu_cp_async_commit();
}
static inline void cp_async_wait1()
{
    emu_cp_async_wait(1);
}
#else
#define ASYNC 0
#endif

// Where the thread's outputs are. WTN = 0: thread (tr, tc) of the block's
// (BM/TM) x (BN/TN) grid; with TM % 4 == 0 it owns TM / 4 runs of 4 adjacent
// rows, the runs BM * 4 / TM apart, so its operands come out of shared
// memory as float4 (one LDS.128 instead of four LDS.32). WTN > 0: warp
// (tr, tc) of the block's warp grid, lane (lr, lc) inside it; runs of 4
// columns; rows in runs of 4 (A transposed) or one row per lane, adjacent
// lanes on adjacent rows (A row-major, read along k: see A_LD).
#define WTM (WTN ? 32 / WTN : 1)
#define AV  (TM % 4 == 0)
#define BV  (TN % 4 == 0)
#if WTN
#define ROW(i)                                                                                     \
    (tr * (WTM * TM) +                                                                             \
     (AROW ? (i) * WTM + lr : ((i) / 4) * (WTM * 4) + lr * 4 + (i) % 4))
#define COL(j) (tc * (WTN * TN) + ((j) / 4) * (WTN * 4) + lc * 4 + (j) % 4)
#else
#define ROW(i) (AV ? ((i) / 4) * (BM * 4 / TM) + tr * 4 + (i) % 4 : tr + (i) * (BM / TM))
#define COL(j) (BV ? ((j) / 4) * (BN * 4 / TN) + tc * 4 + (j) % 4 : tc + (j) * (BN / TN))
#endif

#if !ASYNC // register-staged loads
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
            for (int q = 0; q < VEC; q++) {
                if (AROW)
                    As[r * A_LD + kq + q] = ra[p * VEC + q];
                else
                    As[(kq + q) * A_LD + r] = ra[p * VEC + q];
            }
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

#endif

#if ASYNC
// Issues the copies of the K tile at k0 into As, Bs (same layout as
// store_tiles); the edges are zero-filled by the copies themselves.
static __device__ __forceinline__ void async_tiles(float *As, float *Bs, const float *A,
                                                   const float *B, long long m, long long n,
                                                   long long k, long long row0, long long col0,
                                                   long long k0, bool a_vec, bool b_vec)
{
#pragma unroll
    for (int p = 0; p < A_PER; p++) {
        int c = threadIdx.x + p * NT;
        if (c >= A_CHUNKS)
            break;
        int r = c / (BK / 4), kq = (c % (BK / 4)) * 4;
        long long gr = row0 + r, gk = k0 + kq;
        float *dst = As + r * A_LD + kq;
        if (a_vec && gr < m && gk < k) {
            cp_async16(dst, A + gr * k + gk);
            continue;
        }
#pragma unroll
        for (int q = 0; q < 4; q++) {
            bool in = gr < m && gk + q < k; // out: nothing read, zeros written
            cp_async4(dst + q, in ? A + gr * k + gk + q : A, in ? 4 : 0);
        }
    }
#pragma unroll
    for (int p = 0; p < B_PER; p++) {
        int c = threadIdx.x + p * NT;
        if (c >= B_CHUNKS)
            break;
        int kr = c / (BN / 4), cq = (c % (BN / 4)) * 4;
        long long gk = k0 + kr, gc = col0 + cq;
        float *dst = Bs + kr * BN + cq;
        if (b_vec && gk < k && gc < n) {
            cp_async16(dst, B + gk * n + gc);
            continue;
        }
#pragma unroll
        for (int q = 0; q < 4; q++) {
            bool in = gk < k && gc + q < n;
            cp_async4(dst + q, in ? B + gk * n + gc + q : B, in ? 4 : 0);
        }
    }
}
#endif

static __device__ __forceinline__ void multiply_tile(float (*acc)[TN], const float *As,
                                                     const float *Bs, int tr, int tc, int lr,
                                                     int lc)
{
    (void)lr, (void)lc;
#if AROW
    // A row-major: a float4 along k per row serves 4 steps of kk.
#pragma unroll
    for (int k4 = 0; k4 < BK; k4 += 4) {
        float a4[TM][4];
#pragma unroll
        for (int i = 0; i < TM; i++) {
            float4 v = *reinterpret_cast<const float4 *>(As + ROW(i) * A_LD + k4);
            a4[i][0] = v.x, a4[i][1] = v.y, a4[i][2] = v.z, a4[i][3] = v.w;
        }
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float b[TN];
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                float4 v = *reinterpret_cast<const float4 *>(Bs + (k4 + q) * BN + COL(j));
                b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(a4[i][q], b[j], acc[i][j]);
        }
    }
#else
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
        float a[TM], b[TN];
#if AV
#pragma unroll
        for (int i = 0; i < TM; i += 4) {
            float4 v = *reinterpret_cast<const float4 *>(As + kk * A_LD + ROW(i));
            a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
        }
#else
#pragma unroll
        for (int i = 0; i < TM; i++)
            a[i] = As[kk * A_LD + ROW(i)];
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
#endif
}

#if SPLITK > 1
// The launch makes tiles * slices <= WS_TILES whenever slices > 1.
#define WS_TILES 264
__device__ float splitk_partials[WS_TILES * BM * BN];
// Slices of each tile that have stored their partial; zero between launches.
__device__ unsigned int splitk_arrived[WS_TILES];

// Stores this slice's partial; in the last slice of the tile to arrive,
// replaces acc by the sum of all slices in slice order. False elsewhere:
// that block has nothing more to do.
static __device__ bool splitk_reduce(float (*acc)[TN], int slices)
{
    const int tile = blockIdx.y * gridDim.x + blockIdx.x, me = blockIdx.z;
    float *part = splitk_partials + (long long)tile * slices * (BM * BN);
    __shared__ bool last;
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) // thread-major: coalesced
            part[(long long)me * (BM * BN) + (i * TN + j) * NT + threadIdx.x] = acc[i][j];
    __threadfence(); // the partial is visible before the count says so
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(&splitk_arrived[tile], 1u) == (unsigned)slices - 1;
    __syncthreads();
    if (!last)
        return false;
    __threadfence();
    const volatile float *all = part; // other blocks' stores: not through L1
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) {
            float s = 0.0f;
            for (int z = 0; z < slices; z++)
                s += z == me ? acc[i][j] : all[(long long)z * (BM * BN) + (i * TN + j) * NT + threadIdx.x];
            acc[i][j] = s;
        }
    if (threadIdx.x == 0)
        splitk_arrived[tile] = 0; // for the next launch
    return true;
}
#endif

extern "C" __global__ void sgemm(long long m, long long n, long long k, const float *A,
                                 const float *B, float *C)
{
    __shared__ __align__(16) float As[NBUF * A_TILE];
    __shared__ __align__(16) float Bs[NBUF * B_TILE];
#if WTN
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tr = warp / (BN / (WTN * TN)), tc = warp % (BN / (WTN * TN));
    const int lr = lane / WTN, lc = lane % WTN;
#else
    const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN), lr = 0, lc = 0;
#endif
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const bool a_vec = VEC == 4 && k % 4 == 0 && ((unsigned long long)A & 15) == 0;
    const bool b_vec = VEC == 4 && n % 4 == 0 && ((unsigned long long)B & 15) == 0;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;
    // This block's K tiles [t0, t1): all of them, or its slice's.
    const long long ntiles = (k + BK - 1) / BK;
#if SPLITK > 1
    const int slices =
        (long long)gridDim.x * gridDim.y * gridDim.z <= WS_TILES ? (int)gridDim.z : 1;
    if ((int)blockIdx.z >= slices)
        return; // only if the launch broke its bound: slice 0 does all of K
    const long long per = (ntiles + slices - 1) / slices;
    const long long t0 = blockIdx.z * per, t1 = t0 + per < ntiles ? t0 + per : ntiles;
#else
    const long long t0 = 0, t1 = ntiles;
#endif
#if ASYNC
    if (t0 < t1)
        async_tiles(As, Bs, A, B, m, n, k, row0, col0, t0 * BK, a_vec, b_vec);
    cp_async_commit();
    for (long long t = t0; t < t1; t++) {
        const int cur = (int)((t - t0) & 1);
        if (t + 1 < t1) // into the other buffer, in flight while this tile is multiplied
            async_tiles(As + (cur ^ 1) * A_TILE, Bs + (cur ^ 1) * B_TILE, A, B, m, n, k, row0,
                        col0, (t + 1) * BK, a_vec, b_vec);
        cp_async_commit(); // possibly empty: the wait below counts groups
        cp_async_wait1();  // all but the newest group: tile t has landed
        __syncthreads();
        multiply_tile(acc, As + cur * A_TILE, Bs + cur * B_TILE, tr, tc, lr, lc);
        __syncthreads(); // before the next iteration overwrites this buffer
    }
#elif DBUF
    float ra[A_PER * VEC], rb[B_PER * VEC];
    if (t0 < t1) {
        load_a(ra, A, m, k, row0, t0 * BK, a_vec);
        load_b(rb, B, n, k, col0, t0 * BK, b_vec);
        store_tiles(As, Bs, ra, rb);
    }
    __syncthreads();
    for (long long t = t0; t < t1; t++) {
        const int cur = (int)((t - t0) & 1);
        const bool more = t + 1 < t1; // the same for the whole block
        if (more) {                   // in flight while this tile is multiplied
            load_a(ra, A, m, k, row0, (t + 1) * BK, a_vec);
            load_b(rb, B, n, k, col0, (t + 1) * BK, b_vec);
        }
        multiply_tile(acc, As + cur * A_TILE, Bs + cur * B_TILE, tr, tc, lr, lc);
        if (more)
            store_tiles(As + (cur ^ 1) * A_TILE, Bs + (cur ^ 1) * B_TILE, ra, rb);
        __syncthreads();
    }
#else
    float ra[A_PER * VEC], rb[B_PER * VEC];
    for (long long t = t0; t < t1; t++) {
        load_a(ra, A, m, k, row0, t * BK, a_vec);
        load_b(rb, B, n, k, col0, t * BK, b_vec);
        store_tiles(As, Bs, ra, rb);
        __syncthreads();
        multiply_tile(acc, As, Bs, tr, tc, lr, lc);
        __syncthreads();
    }
#endif
#if SPLITK > 1
    if (slices > 1 && !splitk_reduce(acc, slices))
        return;
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
