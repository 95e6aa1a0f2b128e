// Transpose. TILED=0: naive, one element per thread, coalesced reads and
// strided writes. TILED=1: each block moves one 32x32 tile through shared
// memory (padded against bank conflicts) so reads and writes are both
// coalesced; tiles are numbered in a 1-D grid so no grid dimension limits the
// shape. The grid expression picks the element count or the tile count.
// kiln: tunable BLOCK {128, 256, 512, 1024} = 256
// kiln: tunable TILED {0, 1} = 0
// kiln: launch transpose grid(TILED * cdiv(rows, 32) * cdiv(cols, 32) + (1 - TILED) * cdiv(rows * cols, BLOCK)) block(BLOCK) smem(0) args(rows, cols, x, out)

#define TILE 32

extern "C" __global__ void transpose(long long rows, long long cols, const float *x, float *out)
{
#if TILED
    __shared__ float tile[TILE][TILE + 1];
    long long tiles_c = (cols + TILE - 1) / TILE;
    long long r0 = (long long)(blockIdx.x / tiles_c) * TILE;
    long long c0 = (long long)(blockIdx.x % tiles_c) * TILE;
    for (int i = threadIdx.x; i < TILE * TILE; i += BLOCK) {
        int tr = i / TILE, tc = i % TILE;
        if (r0 + tr < rows && c0 + tc < cols)
            tile[tr][tc] = x[(r0 + tr) * cols + c0 + tc];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TILE * TILE; i += BLOCK) {
        int oc = i / TILE, orow = i % TILE; // out[c0 + oc][r0 + orow]
        if (c0 + oc < cols && r0 + orow < rows)
            out[(c0 + oc) * rows + r0 + orow] = tile[orow][oc];
    }
#else
    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;
    if (i < rows * cols) {
        long long r = i / cols, c = i % cols;
        out[c * rows + r] = x[i];
    }
#endif
}
