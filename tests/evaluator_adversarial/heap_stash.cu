// Keeps its results in the device malloc heap, which survives module
// reloads (and whose limit of 0 the driver does not enforce). Expected:
// refused before it is loaded, because the cubin imports malloc (the parent
// and the harness read its ELF symbol table: formats/cubin.h).
// kiln-expect: module
// kiln-eval-expect: compile_error
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
__device__ float *heap_copy;
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0 && !heap_copy)
        heap_copy = (float *)malloc(sizeof(float) * 64);
    if (i < n)
        out[i] = a * x[i] + y[i];
    if (i < 64 && i < n && heap_copy)
        heap_copy[i] = out[i];
}
