// Transpose in C11, blocked TILE x TILE so both the reads of x and the writes
// of out stay within a few cache lines; TILE 1 is the plain double loop.
// kiln: tunable TILE {1, 8, 16, 32, 64} = 16
// kiln: launch transpose args(rows, cols, x, out)

void transpose(long long rows, long long cols, const float *x, float *out)
{
    for (long long r0 = 0; r0 < rows; r0 += TILE)
        for (long long c0 = 0; c0 < cols; c0 += TILE) {
            long long r1 = r0 + TILE < rows ? r0 + TILE : rows;
            long long c1 = c0 + TILE < cols ? c0 + TILE : cols;
            for (long long r = r0; r < r1; r++)
                for (long long c = c0; c < c1; c++)
                    out[c * rows + r] = x[r * cols + c];
        }
}
