// SGEMM, C = A @ B, row-major. One thread per C element in a BX x BY block.
// TILED=0: naive, each thread walks a row of A and a column of B in global
// memory. TILED=1: the block stages BY x KT tiles of A and KT x BX tiles of B
// in shared memory, so each global element is loaded once per block.
// kiln: tunable BX {8, 16, 32} = 16
// kiln: tunable BY {4, 8, 16, 32} = 16
// kiln: tunable TILED {0, 1} = 0
// kiln: launch sgemm grid(cdiv(n, BX), cdiv(m, BY)) block(BX, BY) smem(0) args(m, n, k, A, B, C)

#define KT 16

extern "C" __global__ void sgemm(long long m, long long n, long long k, const float *A,
                                 const float *B, float *C)
{
    long long row = (long long)blockIdx.y * BY + threadIdx.y;
    long long col = (long long)blockIdx.x * BX + threadIdx.x;
    float acc = 0.0f;
#if TILED
    __shared__ float As[BY][KT];
    __shared__ float Bs[KT][BX];
    int tid = threadIdx.y * BX + threadIdx.x;
    long long row0 = (long long)blockIdx.y * BY, col0 = (long long)blockIdx.x * BX;
    for (long long k0 = 0; k0 < k; k0 += KT) {
        for (int i = tid; i < BY * KT; i += BX * BY) {
            long long r = row0 + i / KT, kk = k0 + i % KT;
            As[i / KT][i % KT] = (r < m && kk < k) ? A[r * k + kk] : 0.0f;
        }
        for (int i = tid; i < KT * BX; i += BX * BY) {
            long long kk = k0 + i / BX, c = col0 + i % BX;
            Bs[i / BX][i % BX] = (kk < k && c < n) ? B[kk * n + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < KT; kk++)
            acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
        __syncthreads();
    }
#else
    if (row < m && col < n)
        for (long long kk = 0; kk < k; kk++)
            acc += A[row * k + kk] * B[kk * n + col];
#endif
    if (row < m && col < n)
        C[row * n + col] = acc;
}
