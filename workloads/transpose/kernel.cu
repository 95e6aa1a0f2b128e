// Transpose through shared memory: each block moves one TILE x TILE tile
// (padded by one column against bank conflicts) with TILE x ROWS threads,
// each thread TILE / ROWS rows of it, so reads and writes are both
// coalesced. Tiles are numbered in a 1-D grid, so no grid dimension limits
// the shape; partial tiles at the edges are guarded.
// kiln: tunable TILE {16, 32, 64} = 16
// kiln: tunable ROWS {2, 4, 8, 16, 32} = 16
// kiln: require ROWS <= TILE
// kiln: require TILE * ROWS >= 64
// kiln: require 4 * TILE * (TILE + 1) <= 49152
// kiln: launch transpose grid(cdiv(rows, TILE) * cdiv(cols, TILE)) block(TILE, ROWS) smem(0) args(rows, cols, x, out)

extern "C" __global__ void transpose(long long rows, long long cols, const float *x, float *out)
{
    __shared__ float tile[TILE][TILE + 1];
    const long long tiles_c = (cols + TILE - 1) / TILE;
    const long long r0 = (long long)(blockIdx.x / tiles_c) * TILE;
    const long long c0 = (long long)(blockIdx.x % tiles_c) * TILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int i = ty; i < TILE; i += ROWS)
        if (r0 + i < rows && c0 + tx < cols)
            tile[i][tx] = x[(r0 + i) * cols + c0 + tx];
    __syncthreads();
    // out[c0 + i][r0 + tx] = x[r0 + tx][c0 + i]
#pragma unroll
    for (int i = ty; i < TILE; i += ROWS)
        if (c0 + i < cols && r0 + tx < rows)
            out[(c0 + i) * rows + r0 + tx] = tile[tx][i];
}
