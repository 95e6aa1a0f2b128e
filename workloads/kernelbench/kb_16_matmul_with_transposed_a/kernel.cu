// Starting kernel for KernelBench level 1 problem 16 (16_Matmul_with_transposed_A): out = A^T @ B with A stored K x M, float32,
// row-major. The register-blocked SGEMM of workloads/sgemm/kernel.cu (read its
// header for the tiling) as a device function, with A read transposed (TRANS_A);
// the defaults are a 64x64 tile with 4x4 outputs per thread.
// kiln: tunable BM {16, 32, 64, 128, 256} = 64
// kiln: tunable BN {16, 32, 64, 128, 256} = 64
// kiln: tunable BK {8, 16} = 8
// kiln: tunable TM {1, 4, 8} = 4
// kiln: tunable TN {1, 4, 8} = 4
// kiln: tunable VEC {1, 4} = 1
// kiln: tunable DBUF {0, 1} = 0
// kiln: require (BM / TM) * (BN / TN) <= 256
// kiln: require (BM / TM) * (BN / TN) >= 128
// kiln: require BM % TM == 0
// kiln: require BN % TN == 0
// kiln: require 4 * BK * (BM + BN) * (1 + DBUF) <= 49152
// kiln: require (TM * TN + TM + TN + 32) * (BM / TM) * (BN / TN) <= 65536
// kiln: launch matmul_tn grid(cdiv(N, BN), cdiv(M, BM)) block((BM / TM) * (BN / TN)) smem(0) args(M, K, N, A, B, out)

#define TRANS_A 1

#define NT       ((BM / TM) * (BN / TN)) // threads per block
#define A_CHUNKS (BM * BK / VEC)         // VEC-wide pieces of an A tile
#define B_CHUNKS (BK * BN / VEC)
#define A_PER    ((A_CHUNKS + NT - 1) / NT) // pieces per thread
#define B_PER    ((B_CHUNKS + NT - 1) / NT)

#if BM % TM || BN % TN || NT > 1024
#error "sgemm: tile shape invalid (BM % TM, BN % TN, threads <= 1024)"
#endif

#if TRANS_A
// A is stored K x M (C = A^T B): a piece runs along m, contiguous in memory.
static __device__ __forceinline__ void load_a(float *ra, const float *A, long long m, long long k,
                                              long long row0, long long k0, bool vec_ok)
{
#pragma unroll
    for (int p = 0; p < A_PER; p++) {
        int c = threadIdx.x + p * NT;
        int kk = c / (BM / VEC), rq = (c % (BM / VEC)) * VEC;
        long long gk = k0 + kk, gr = row0 + rq;
        bool in = c < A_CHUNKS && gk < k;
#if VEC == 4
        // vec_ok: m % 4 == 0 and A 16-byte aligned; row0 and rq are multiples of 4.
        if (in && vec_ok && gr < m) {
            float4 v = *reinterpret_cast<const float4 *>(A + gk * m + gr);
            ra[p * 4 + 0] = v.x;
            ra[p * 4 + 1] = v.y;
            ra[p * 4 + 2] = v.z;
            ra[p * 4 + 3] = v.w;
            continue;
        }
#endif
#pragma unroll
        for (int q = 0; q < VEC; q++)
            ra[p * VEC + q] = (in && gr + q < m) ? A[gk * m + gr + q] : 0.0f;
    }
}
#else
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

#endif

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
#if TRANS_A
            int kk = c / (BM / VEC), rq = (c % (BM / VEC)) * VEC;
#pragma unroll
            for (int q = 0; q < VEC; q++)
                As[kk * BM + rq + q] = ra[p * VEC + q];
#else
            int r = c / (BK / VEC), kq = (c % (BK / VEC)) * VEC;
#pragma unroll
            for (int q = 0; q < VEC; q++)
                As[(kq + q) * BM + r] = ra[p * VEC + q];
#endif
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

static __device__ __forceinline__ void multiply_tile(float (*acc)[TN], const float *As,
                                                     const float *Bs, int tr, int tc)
{
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; i++)
            a[i] = As[kk * BM + tr + i * (BM / TM)];
#pragma unroll
        for (int j = 0; j < TN; j++)
            b[j] = Bs[kk * BN + tc + j * (BN / TN)];
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

static __device__ __forceinline__ void sgemm_body(long long m, long long n, long long k,
                                                  const float *A, const float *B, float *C)
{
    __shared__ float As[(1 + DBUF) * BK * BM];
    __shared__ float Bs[(1 + DBUF) * BK * BN];
    const int tr = threadIdx.x / (BN / TN), tc = threadIdx.x % (BN / TN);
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const bool a_vec = VEC == 4 && (TRANS_A ? m : k) % 4 == 0 && ((unsigned long long)A & 15) == 0;
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
        long long r = row0 + tr + i * (BM / TM);
        if (r >= m)
            continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            long long c = col0 + tc + j * (BN / TN);
            if (c < n)
                C[r * n + c] = acc[i][j];
        }
    }
}

extern "C" __global__ void matmul_tn(long long M, long long K, long long N, const float *A,
                                     const float *B, float *out)
{
    sgemm_body(M, N, K, A, B, out);
}
