/*
 * cuda_emu_kernels.h - the entry point of each built-in workload's
 * kernel.cu that cuda_emu_check.cpp calls, selected by -DWL_<name>. The
 * kernel is compiled apart (cuda_emu_kernel.cpp, once per configuration)
 * from the check (once per workload), which is what keeps kernels_emu
 * cheap; the kernel's translation unit includes this file too, so a
 * kernel.cu whose signature differs from the one declared here does not
 * compile ("conflicting declaration") instead of being called wrongly.
 */
#ifndef KILN_CUDA_EMU_KERNELS_H
#define KILN_CUDA_EMU_KERNELS_H

#if defined(WL_sgemm)
extern "C" void sgemm(long long m, long long n, long long k, const float *A, const float *B,
                      float *C);
#elif defined(WL_saxpy)
extern "C" void saxpy(long long n, float a, const float *x, const float *y, float *out);
#elif defined(WL_reduce_sum)
extern "C" void reduce_sum(long long n, const float *x, float *out);
#elif defined(WL_transpose)
extern "C" void transpose(long long rows, long long cols, const float *x, float *out);
#elif defined(WL_softmax_rows)
extern "C" void softmax_rows(long long rows, long long cols, const float *x, float *out);
#elif defined(WL_layernorm)
extern "C" void layernorm(long long rows, long long cols, float eps, const float *x,
                          const float *gamma, const float *beta, float *out);
#elif defined(WL_kb_1_square_matrix_multiplication)
extern "C" void matmul(long long N, const float *A, const float *B, float *out);
#elif defined(WL_kb_16_matmul_with_transposed_a)
extern "C" void matmul_tn(long long M, long long K, long long N, const float *A, const float *B,
                          float *out);
#elif defined(WL_kb_47_sum_reduction_over_a_dimension)
extern "C" void sum_dim1(long long batch_size, long long dim1, long long dim2, const float *x,
                         float *out);
#elif defined(WL_kb_19_relu)
extern "C" void relu(long long batch_size, long long dim, const float *x, float *out);
#elif defined(WL_conv2d)
extern "C" void conv2d(long long n, long long c, long long h, long long w, long long k, long long r,
                       long long s, long long p, long long q, long long pad_h, long long pad_w,
                       const float *x, const float *weight, float *out);
#elif defined(WL_gemm_bf16)
extern "C" void gemm_bf16(long long m, long long n, long long k, const unsigned short *A,
                          const unsigned short *B, unsigned short *C);
#else
#error "cuda_emu_kernels.h: no known -DWL_<workload>"
#endif

#endif
