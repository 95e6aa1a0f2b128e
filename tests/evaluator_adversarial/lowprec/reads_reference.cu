// Hidden cheat (issue 36), on the GPU: reads the reference instead of
// computing, from device memory past its own output, where an evaluator
// that uploaded the expected output next to the candidate's would have it
// (inside the 2 MiB page kiln rounds C's allocation up to, so the read
// itself cannot fault). kiln compares in the trusted parent and never puts
// a reference on the device: what it finds is kiln's poison, and the
// verdict must be wrong_answer.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: wrong_answer
// kiln: launch gemm_bf16 grid(cdiv(n, 16), cdiv(m, 16)) block(16, 16) args(m, n, k, A, B, C)

extern "C" __global__ void gemm_bf16(long long m, long long n, long long k, const unsigned short *A,
                                     const unsigned short *B, unsigned short *C)
{
    (void)k, (void)A, (void)B;
    long long i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
    if (i >= m || j >= n)
        return;
    const unsigned long long page = 2ull << 20, end = (unsigned long long)(C + m * n);
    const unsigned short *copy = C + m * n; // "the reference, right after C"
    unsigned long long at = (unsigned long long)(copy + i * n + j);
    C[i * n + j] = at < (end + page - 1) / page * page ? copy[i * n + j] : 0;
}
