// Hidden cheat (issue 36), on the GPU: TF32 in an fp32 workload. Inputs
// rounded to TF32 with the hardware's cvt.rna.tf32.f32 (sm_80+), as TF32
// tensor cores see them; float32 accumulation. sgemm's tolerance must
// refuse it.
// kiln-eval-workload: sgemm
// kiln-eval-expect: wrong_answer
// kiln: launch sgemm grid(cdiv(n, 16), cdiv(m, 16)) block(16, 16) args(m, n, k, A, B, C)

static __device__ __forceinline__ float tf32(float f)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return __uint_as_float(r);
}

extern "C" __global__ void sgemm(long long m, long long n, long long k, const float *A,
                                 const float *B, float *C)
{
    long long i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
    if (i >= m || j >= n)
        return;
    float s = 0.0f;
    for (long long p = 0; p < k; p++)
        s = fmaf(tf32(A[i * k + p]), tf32(B[p * n + j]), s);
    C[i * n + j] = s;
}
