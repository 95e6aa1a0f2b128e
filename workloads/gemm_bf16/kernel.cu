// bf16 GEMM on tensor cores, C = A @ B, row-major, bf16 in and out, float32
// accumulation (bf16 values travel as unsigned short: the upper half of a
// float32). A block computes a BM x BN tile of C with WARPS_M x WARPS_N
// warps; each warp a (BM / WARPS_M) x (BN / WARPS_N) sub-tile as MT x NT
// tiles of 16 x 8, with mma.sync m16n8k16 (bf16 in, f32 accumulate).
//
// K advances BK at a time through a STAGES-deep ring of shared-memory
// buffers filled by cp.async (16-byte copies, each thread its share): tile
// t + STAGES - 1 is in flight while tile t is multiplied. Operands come out
// of shared memory with ldmatrix (.trans for B, which is stored k-major as
// it is in memory); SWIZZLE 1 XORs each 16-byte chunk's column with its row
// so the 8 rows an ldmatrix phase reads fall in 8 distinct bank groups, 0
// pads each row by one chunk instead (same effect, more memory).
//
// Edges, so odd sizes are right by construction: every 16-byte chunk of a
// tile is either copied whole or zero-filled (cp.async's src-size 0 reads
// nothing), a row or k index past the matrix counting as out; rows of A
// (B) start 16-byte aligned only when k (n) is a multiple of 8 and the
// pointer is aligned, otherwise the chunk is gathered element by element,
// each element guarded. Zeros in the padding multiply to zeros, so the sums
// are exact over the real k. Stores are guarded per element; two adjacent
// columns go out as one 32-bit store when n is even.
//
// GROUP_M > 1 walks the tiles GROUP_M rows of tiles at a time (column by
// column inside the group) so that the B tiles a wave of blocks reads stay
// in L2. WGMMA 1 (sm_90 only; kiln compiles sm_90 GPUs for sm_90a) replaces
// mma.sync by warpgroup wgmma.mma_async m64nNk16 reading both operands from
// shared memory in the 128-byte swizzled layout (see the WGMMA section).
//
// bf16 tensor-core math needs sm_80: on an older GPU the require below
// refuses the kernel before it is compiled ("needs sm_80 or newer").
// kiln: tunable BM {64, 128, 256} = 128
// kiln: tunable BN {64, 128, 256} = 128
// kiln: tunable BK {32, 64} = 32
// kiln: tunable WARPS_M {1, 2, 4, 8} = 2
// kiln: tunable WARPS_N {1, 2, 4} = 4
// kiln: tunable STAGES {2, 3, 4} = 3
// kiln: tunable SWIZZLE {0, 1} = 1
// kiln: tunable GROUP_M {1, 8} = 8
// kiln: tunable WGMMA {0, 1} = 0
// kiln: require DEVICE_CC >= 80
// Warp tiles of whole 16 x 16 pieces (ldmatrix.x4 loads two 8-wide B tiles).
// kiln: require BM % (16 * WARPS_M) == 0
// kiln: require BN % (16 * WARPS_N) == 0
// 4 to 8 warps (2-warp blocks copy 8 chunks a thread a k tile and spill,
// 16 bytes at 64 x 64); accumulators (warp tile / 32 a thread) at most 128 floats
// and, with ~64 registers of fragments and addresses, within the register
// file (ptxas: no spill in what this allows, sm_90, nvcc 13.0).
// kiln: require WARPS_M * WARPS_N >= 4
// kiln: require WARPS_M * WARPS_N <= 8
// kiln: require (BM / WARPS_M) * (BN / WARPS_N) / 32 <= 128
// ptxas (sm_90a, nvcc 13.0) spills warp tiles longer than 64 either way
// (128 x 32, 16 x 256, 32 x 128: 4 to 2400 bytes) and many with BK = 64
// on the mma.sync path (the unrolled k16 steps keep more fragments live),
// in a sample of 45 configurations; kernels_nvcc fails on any spill. So:
// warp tiles at most 64 x 64, BK 32 for mma.sync (64 is wgmma's k tile).
// kiln: require BM / WARPS_M <= 64
// kiln: require BN / WARPS_N <= 64
// kiln: require (1 - WGMMA) * (BK - 32) == 0
// A 64 x 64 warp tile (128 accumulators) fits only when each thread copies
// at most 8 chunks a k tile (256 x 64 on 4 warps, 10 chunks: 200 bytes).
// kiln: require ((BM / WARPS_M) * (BN / WARPS_N) / 32 - 64) * ((BM + BN) * BK / 8 - 8 * 32 * WARPS_M * WARPS_N) <= 0
// Below sm_90 ptxas spills 64 x 64 warp tiles (128 accumulators): 64 there.
// kiln: require ((BM / WARPS_M) * (BN / WARPS_N) / 32 - 64) * (90 - min(DEVICE_CC, 90)) <= 0
// kiln: require 32 * WARPS_M * WARPS_N * ((BM / WARPS_M) * (BN / WARPS_N) / 32 + 64) <= DEVICE_REGS_PER_BLOCK
// kiln: require STAGES * 2 * (BM * (BK + 8 - 8 * SWIZZLE) + BK * (BN + 8 - 8 * SWIZZLE)) <= DEVICE_SMEM_OPTIN
// WGMMA: sm_90 only, one warpgroup (4 warps along M) per 64 rows of the
// block tile, each over all BN columns; 64-element (128-byte) k tiles in
// the swizzled layout. Requires take one comparison: WGMMA * (...) == 0.
// kiln: require WGMMA * (DEVICE_CC - 90) == 0
// kiln: require WGMMA * (WARPS_N - 1) == 0
// kiln: require WGMMA * (WARPS_M % 4) == 0
// kiln: require WGMMA * (BM - 16 * WARPS_M) == 0
// kiln: require WGMMA * (64 - BK) == 0
// kiln: require WGMMA * (1 - SWIZZLE) == 0
// m64n256 spills 1.6 KB and m64n128 16 bytes (sm_90a, nvcc 13.0): n64.
// kiln: require WGMMA * (BN - 64) <= 0
// kiln: launch gemm_bf16 grid(cdiv(m, BM) * cdiv(n, BN)) block(32 * WARPS_M * WARPS_N) smem(STAGES * 2 * (BM * (BK + 8 - 8 * SWIZZLE) + BK * (BN + 8 - 8 * SWIZZLE))) args(m, n, k, A, B, C)

#define NT      (32 * WARPS_M * WARPS_N) // threads per block
#define WTM     (BM / WARPS_M)          // warp tile rows
#define WTN     (BN / WARPS_N)          // warp tile columns
#define MT      (WTM / 16)              // 16-row mma tiles per warp
#define NTL     (WTN / 8)               // 8-column mma tiles per warp
#define ACPR    (BK / 8)                // 16-byte chunks in a row of an A tile
#define BCPR    (BN / 8)                // ... of a B tile
#define PAD     (1 - SWIZZLE)           // chunks of padding per row
#define A_STAGE (BM * (ACPR + PAD))     // 16-byte chunks of one stage's A tile
#define B_STAGE (BK * (BCPR + PAD))
#define A_LOADS ((BM * ACPR + NT - 1) / NT) // chunks each thread copies per tile
#define B_LOADS ((BK * BCPR + NT - 1) / NT)

#if BM % (16 * WARPS_M) || BN % (16 * WARPS_N) || BK % 16 || STAGES < 2
#error "gemm_bf16: tile shape invalid (see the require directives)"
#endif

// The path this compile takes: mma.sync on sm_80+ (and under the CPU
// emulator of the tests, KILN_EMU_MMA), wgmma where WGMMA=1 on sm_90a, and
// nothing below sm_80 (the require refuses that GPU; this only keeps the
// file compiling for every architecture kiln builds for).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define PATH_NONE 1
#elif WGMMA && defined(__CUDA_ARCH__)
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "gemm_bf16: WGMMA=1 needs the sm_90a target (kiln compiles sm_90 GPUs for it)"
#endif
#define PATH_WGMMA 1
#elif WGMMA
#define PATH_NONE 1 // the emulator has no wgmma: the tests run WGMMA=0 only
#endif

typedef unsigned short bf16_t;
typedef unsigned int u32;

#if !defined(PATH_NONE)
#if defined(__CUDA_ARCH__)
static __device__ __forceinline__ u32 smem_addr(const void *p)
{
    return (u32)__cvta_generic_to_shared(p);
}
// Copies 16 bytes, of which the first src_bytes (16 or 0) come from src;
// the rest is zero-filled. Both addresses 16-byte aligned.
static __device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(src_bytes));
}
static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#if !WGMMA
static __device__ __forceinline__ void ldmatrix_x4(u32 *r, const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(row)));
}
static __device__ __forceinline__ void ldmatrix_x4_trans(u32 *r, const void *row)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(row)));
}
// d = a (16x16, row) * b (16x8, col) + d, bf16 in, f32 accumulate.
static __device__ __forceinline__ void mma_16816(float *d, const u32 *a, const u32 *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
// Two floats rounded to nearest bf16, lo in the low half.
static __device__ __forceinline__ u32 pack_bf16x2(float lo, float hi)
{
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
#elif defined(KILN_EMU_MMA)
// The tests' CPU emulator (cuda_emu.h): warp-collective ldmatrix and mma
// after the PTX ISA's fragment layouts, cp.async deferred to its wait.
static inline void cp_async16(void *dst, const void *src, int src_bytes)
{
    emu_cp_async(dst, src, 16, (unsigned)src_bytes);
}
static inline void cp_async_commit()
{
    emu_cp_async_commit();
}
template <int N> static inline void cp_async_wait()
{
    emu_cp_async_wait(N);
}
static inline void ldmatrix_x4(u32 *r, const void *row)
{
    emu_ldmatrix_x4(r, row, false);
}
static inline void ldmatrix_x4_trans(u32 *r, const void *row)
{
    emu_ldmatrix_x4(r, row, true);
}
static inline void mma_16816(float *d, const u32 *a, const u32 *b)
{
    emu_mma_16816_bf16(d, a, b);
}
static inline u32 pack_bf16x2(float lo, float hi)
{
    return (u32)emu_bf16_rn(lo) | ((u32)emu_bf16_rn(hi) << 16);
}
#endif

// Where chunk (r, c) of a tile with `cpr` 16-byte chunks a row lives, in
// chunks from the tile's start. SWIZZLE: the row's 8-chunk groups keep
// their place and the chunk moves within its group by r (cpr >= 8), or by
// r / 2 for 64-byte rows (cpr 4: two rows share a 128-byte bank line), so
// rows r0 .. r0+7 of one column hit 8 distinct bank groups.
static __device__ __forceinline__ int chunk_at(int r, int c, int cpr)
{
#if SWIZZLE
    return cpr >= 8 ? r * cpr + ((c & ~7) | ((c ^ r) & 7)) : r * cpr + (c ^ ((r >> 1) & 3));
#else
    return r * (cpr + 1) + c;
#endif
}

// Which tile of C this block computes: GROUP_M rows of tiles at a time.
static __device__ __forceinline__ void tile_of_block(long long m, long long n, long long *tm,
                                                     long long *tn)
{
    const long long tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
    const long long id = blockIdx.x, per_group = (long long)GROUP_M * tiles_n;
    const long long first_m = id / per_group * GROUP_M;
    const long long rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
    *tm = first_m + id % per_group % rows;
    *tn = id % per_group / rows;
}

#if !defined(PATH_NONE)
// One 16-byte chunk (8 elements of one row) of a source matrix with `cols`
// columns into shared memory: copied asynchronously when the row is 16-byte
// aligned (`vec`), gathered element by element otherwise; a chunk past the
// last row, or elements past the last column, read as zeros.
template <bool VEC>
static __device__ __forceinline__ void load_chunk(uint4 *dst, const bf16_t *src, long long rows,
                                                  long long cols, long long r, long long c)
{
    if constexpr (VEC) {
        const bool in = r < rows && c < cols; // cols % 8 == 0: the whole chunk is in
        cp_async16(dst, in ? src + r * cols + c : src, in ? 16 : 0);
    } else {
        u32 w[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            u32 lo = r < rows && c + 2 * q < cols ? src[r * cols + c + 2 * q] : 0;
            u32 hi = r < rows && c + 2 * q + 1 < cols ? src[r * cols + c + 2 * q + 1] : 0;
            w[q] = lo | hi << 16;
        }
        *dst = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

// Issues the copies of k tile `t` into stage buffers As, Bs.
template <bool AV, bool BV>
static __device__ __forceinline__ void load_tile(uint4 *As, uint4 *Bs, const bf16_t *A,
                                                 const bf16_t *B, long long m, long long n,
                                                 long long k, long long row0, long long col0,
                                                 long long t)
{
    const long long k0 = t * BK;
#pragma unroll
    for (int i = 0; i < A_LOADS; i++) {
        const int c = (int)threadIdx.x + i * NT;
        if (BM * ACPR % NT == 0 || c < BM * ACPR)
            load_chunk<AV>(As + chunk_at(c / ACPR, c % ACPR, ACPR), A, m, k, row0 + c / ACPR,
                           k0 + c % ACPR * 8);
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; i++) {
        const int c = (int)threadIdx.x + i * NT;
        if (BK * BCPR % NT == 0 || c < BK * BCPR)
            load_chunk<BV>(Bs + chunk_at(c / BCPR, c % BCPR, BCPR), B, k, n, k0 + c / BCPR,
                           col0 + c % BCPR * 8);
    }
}
#endif

#if !defined(PATH_NONE) && !defined(PATH_WGMMA)
// One k tile from stage buffers As, Bs into the warp's accumulators. Per
// k16 step the warp's A fragments are loaded once, then B two 8-wide tiles
// at a time, each pair used at once: few fragment registers stay live
// beside the accumulators.
static __device__ __forceinline__ void multiply_tile(float (*acc)[NTL][4], const uint4 *As,
                                                     const uint4 *Bs, int wm, int wn, int lane)
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
        u32 a[MT][4];
        // Lane l addresses row l % 16 of the 16 x 16 piece, chunk l / 16 of
        // its k16 step: matrices 0..3 = rows 0-7 / 8-15 x k 0-7 / 8-15,
        // exactly the a0..a3 registers mma.sync wants.
#pragma unroll
        for (int i = 0; i < MT; i++)
            ldmatrix_x4(a[i], As + chunk_at(wm * WTM + i * 16 + lane % 16, kk * 2 + lane / 16, ACPR));
        // B is k-major in shared memory: .trans turns rows of k into the
        // column fragments; matrices 0..3 = k 0-7 / 8-15 x n 0-7 / 8-15,
        // i.e. {b0, b1} of 8-wide tile j, then of tile j + 1.
#pragma unroll
        for (int j = 0; j < NTL; j += 2) {
            u32 b[4];
            ldmatrix_x4_trans(b, Bs + chunk_at(kk * 16 + lane % 16, (wn * WTN + j * 8) / 8 + lane / 16,
                                               BCPR));
#pragma unroll
            for (int i = 0; i < MT; i++) {
                mma_16816(acc[i][j], a[i], b);
                mma_16816(acc[i][j + 1], a[i], b + 2);
            }
        }
    }
}

// The warp's accumulators to C: element (row g, cols 2t, 2t+1) and row g+8
// of each 16 x 8 tile, g = lane / 4, t = lane % 4; rounded once to bf16.
static __device__ __forceinline__ void store_tile(const float (*acc)[NTL][4], bf16_t *C,
                                                  long long m, long long n, long long row0,
                                                  long long col0, int wm, int wn, int lane)
{
    const bool pairs = n % 2 == 0 && ((unsigned long long)C & 3) == 0;
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NTL; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const long long r = row0 + wm * WTM + i * 16 + lane / 4 + h * 8;
                const long long c = col0 + wn * WTN + j * 8 + lane % 4 * 2;
                const u32 v = pack_bf16x2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                if (r >= m || c >= n)
                    continue;
                if (pairs && c + 1 < n) { // c is even, so is r * n + c: 4-byte aligned
                    *reinterpret_cast<u32 *>(C + r * n + c) = v;
                    continue;
                }
                C[r * n + c] = (bf16_t)(v & 0xFFFF);
                if (c + 1 < n)
                    C[r * n + c + 1] = (bf16_t)(v >> 16);
            }
}
#endif

#if defined(PATH_WGMMA)
// ---- WGMMA (sm_90a): warpgroup matrix multiply from shared memory ----
//
// Each warpgroup (4 warps) owns 64 rows of the block tile and all BN
// columns: per k16 step one wgmma.mma_async m64nBNk16 reads A (64 x 16,
// k-major) and B (16 x BN, n-major: B's rows of n are contiguous in memory)
// through matrix descriptors. The tiles are laid out as the 128-byte
// swizzle expects, which is chunk_at's SWIZZLE=1 layout for 8-chunk rows:
// 16-byte chunk c of row r at (c ^ r % 8) within the row's 128 bytes,
// 8-row atoms of 1024 bytes. BK = 64 gives A rows of exactly 128 bytes.
// B rows are BN * 2 bytes, BCPR chunks: each 64-column slab of B is its own
// stack of 128-byte rows, so B is copied slab by slab (b_chunk_at).
static __device__ __forceinline__ int b_chunk_at(int r, int c)
{
    // slab c / 8 of BK rows x 8 chunks, swizzled like an A tile
    return (c / 8) * (BK * 8) + r * 8 + ((c ^ r) & 7);
}

// A shared-memory matrix descriptor: start address, leading and stride
// byte offsets (16-byte units), 128-byte swizzle (mode 1).
static __device__ __forceinline__ unsigned long long wg_desc(const void *p, u32 lead, u32 stride)
{
    unsigned long long d = 0;
    d |= (unsigned long long)((smem_addr(p) & 0x3FFFF) >> 4);
    d |= (unsigned long long)((lead & 0x3FFFF) >> 4) << 16;
    d |= (unsigned long long)((stride & 0x3FFFF) >> 4) << 32;
    d |= 1ull << 62;
    return d;
}

#define WG_ACC (BN / 2) // f32 accumulators a thread holds for m64nBN

template <int N> struct wg_mma;
#define WG_REGS_64                                                                                 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "   \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
template <> struct wg_mma<64> {
    static __device__ __forceinline__ void run(float *d, unsigned long long da,
                                               unsigned long long db)
    {
        // scale-d 1 (accumulate), A and B unscaled, A k-major (0), B
        // n-major (1: transposed against the k-major default).
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " WG_REGS_64
                     ", %32, %33, p, 1, 1, 0, 1;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                       "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                       "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
                       "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                       "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]),
                       "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(1));
    }
};
// Wider N: the same instruction repeated over 64-column slabs keeps the
// asm to one operand list (at most 64 accumulators a statement).
template <int N> struct wg_mma {
    static __device__ __forceinline__ void run(float *d, unsigned long long da,
                                               unsigned long long db)
    {
#pragma unroll
        for (int s = 0; s < N / 64; s++) // slab s of B starts BK * 128 bytes further
            wg_mma<64>::run(d + s * 32, da, db + (unsigned long long)((s * BK * 128) >> 4));
    }
};

static __device__ __forceinline__ void wg_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void wg_wait0()
{
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// Copies of k tile t: A as chunk_at's swizzled 128-byte rows, B slab by slab.
template <bool AV, bool BV>
static __device__ __forceinline__ void wg_load_tile(uint4 *As, uint4 *Bs, const bf16_t *A,
                                                    const bf16_t *B, long long m, long long n,
                                                    long long k, long long row0, long long col0,
                                                    long long t)
{
    const long long k0 = t * BK;
#pragma unroll
    for (int i = 0; i < A_LOADS; i++) {
        const int c = (int)threadIdx.x + i * NT;
        if (BM * ACPR % NT == 0 || c < BM * ACPR)
            load_chunk<AV>(As + chunk_at(c / ACPR, c % ACPR, ACPR), A, m, k, row0 + c / ACPR,
                           k0 + c % ACPR * 8);
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; i++) {
        const int c = (int)threadIdx.x + i * NT;
        if (BK * BCPR % NT == 0 || c < BK * BCPR)
            load_chunk<BV>(Bs + b_chunk_at(c / BCPR, c % BCPR), B, k, n, k0 + c / BCPR,
                           col0 + c % BCPR * 8);
    }
}

// The accumulator layout of m64nN: warp w of the warpgroup holds rows
// 16w + lane / 4 and + 8; register 4p + {0,1} columns 8p + 2(lane % 4) + {0,1}
// of the first row, 4p + {2,3} of the second.
static __device__ __forceinline__ void wg_store(const float *acc, bf16_t *C, long long m,
                                                long long n, long long row0, long long col0,
                                                int wg, int warp_in_wg, int lane)
{
    const bool pairs = n % 2 == 0 && ((unsigned long long)C & 3) == 0;
#pragma unroll
    for (int p = 0; p < BN / 8; p++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const long long r = row0 + wg * 64 + warp_in_wg * 16 + lane / 4 + h * 8;
            const long long c = col0 + p * 8 + lane % 4 * 2;
            const u32 v = pack_bf16x2(acc[4 * p + 2 * h], acc[4 * p + 2 * h + 1]);
            if (r >= m || c >= n)
                continue;
            if (pairs && c + 1 < n) {
                *reinterpret_cast<u32 *>(C + r * n + c) = v;
                continue;
            }
            C[r * n + c] = (bf16_t)(v & 0xFFFF);
            if (c + 1 < n)
                C[r * n + c + 1] = (bf16_t)(v >> 16);
        }
}
#endif

#if !defined(PATH_NONE)
// The whole product of this block's tile, for one combination of aligned
// (16-byte copies) and unaligned (gathered) operands: compiled apart, so
// the aligned path carries none of the gather's registers.
template <bool AV, bool BV>
static __device__ __forceinline__ void gemm_tile(long long m, long long n, long long k,
                                                 const bf16_t *A, const bf16_t *B, bf16_t *C,
                                                 uint4 *dsmem, long long row0, long long col0)
{
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const long long ktiles = (k + BK - 1) / BK;
#if defined(PATH_WGMMA)
    float acc[WG_ACC];
#pragma unroll
    for (int i = 0; i < WG_ACC; i++)
        acc[i] = 0.0f;
    const int wg = warp / 4;
#define LOAD_TILE wg_load_tile<AV, BV>
#else
    float acc[MT][NTL][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NTL; j++)
#pragma unroll
            for (int q = 0; q < 4; q++)
                acc[i][j][q] = 0.0f;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
#define LOAD_TILE load_tile<AV, BV>
#endif
    // Prologue: tiles 0 .. STAGES-2 in flight, one commit group each
    // (empty past the last tile: the waits below count groups).
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles)
            LOAD_TILE(dsmem + s * (A_STAGE + B_STAGE), dsmem + s * (A_STAGE + B_STAGE) + A_STAGE,
                      A, B, m, n, k, row0, col0, s);
        cp_async_commit();
    }
    for (long long t = 0; t < ktiles; t++) {
        // Groups so far: STAGES - 1 + t; all but the newest STAGES - 2 have
        // landed, so tiles 0 .. t have; the barrier makes every thread's
        // copies visible and ends every warp's use of tile t - 1's buffer,
        // which the next copy reuses.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const long long next = t + STAGES - 1;
        if (next < ktiles) {
            uint4 *s = dsmem + (int)(next % STAGES) * (A_STAGE + B_STAGE);
            LOAD_TILE(s, s + A_STAGE, A, B, m, n, k, row0, col0, next);
        }
        cp_async_commit();
        const uint4 *cur = dsmem + (int)(t % STAGES) * (A_STAGE + B_STAGE);
#if defined(PATH_WGMMA)
        // Shared memory written by cp.async (or plain stores) and read by
        // the tensor cores through the async proxy: each writer fences its
        // landed writes, then a barrier, before any wgmma reads them.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            // A: rows 64 wg .. +63, k bytes 32 kk within the 128-byte row;
            // 8-row atoms 1024 bytes apart (stride), no leading offset.
            const unsigned long long da =
                wg_desc(cur + wg * 64 * ACPR, 16, 1024) + (unsigned long long)((kk * 32) >> 4);
            // B: k rows 16 kk .. +15 of slab 0, n-major: 8-row atoms 1024
            // bytes apart along k (stride), 64-column slabs BK * 128 bytes
            // apart along n (leading).
            const unsigned long long db = wg_desc(cur + A_STAGE + kk * 16 * 8, BK * 128, 1024);
            wg_mma<BN>::run(acc, da, db);
        }
        wg_commit();
        wg_wait0();
#else
        multiply_tile(acc, cur, cur + A_STAGE, wm, wn, lane);
#endif
    }
#undef LOAD_TILE
#if defined(PATH_WGMMA)
    wg_store(acc, C, m, n, row0, col0, wg, warp % 4, lane);
#else
    store_tile(acc, C, m, n, row0, col0, wm, wn, lane);
#endif
}
#endif

#endif // !PATH_NONE

extern "C" __global__ void __launch_bounds__(NT) gemm_bf16(long long m, long long n, long long k,
                                                           const bf16_t *A, const bf16_t *B,
                                                           bf16_t *C)
{
#if defined(PATH_NONE)
    (void)m, (void)n, (void)k, (void)A, (void)B, (void)C;
#if defined(__CUDA_ARCH__)
    __trap(); // unreachable: the require keeps this kernel off GPUs below sm_80
#endif
#else
#if defined(PATH_WGMMA)
    // The 128-byte swizzle is a function of address bits 4-9: tiles start
    // on 1024-byte boundaries (every stage and tile size is a multiple).
    extern __shared__ __align__(1024) uint4 dsmem_wg[];
    uint4 *const dsmem = dsmem_wg;
#else
    extern __shared__ uint4 dsmem[];
#endif
    long long tm, tn;
    tile_of_block(m, n, &tm, &tn);
    const long long row0 = tm * BM, col0 = tn * BN;
    // Rows start 16-byte aligned when the row length is a multiple of 8
    // elements and the matrix itself is aligned; the same for every block.
    const bool a_vec = k % 8 == 0 && ((unsigned long long)A & 15) == 0;
    const bool b_vec = n % 8 == 0 && ((unsigned long long)B & 15) == 0;
    if (a_vec && b_vec)
        gemm_tile<true, true>(m, n, k, A, B, C, dsmem, row0, col0);
    else if (a_vec)
        gemm_tile<true, false>(m, n, k, A, B, C, dsmem, row0, col0);
    else if (b_vec)
        gemm_tile<false, true>(m, n, k, A, B, C, dsmem, row0, col0);
    else
        gemm_tile<false, false>(m, n, k, A, B, C, dsmem, row0, col0);
#endif
}
