// gpu_probe.cu - runs inside `kiln sandbox --policy gpu-run`: counts the
// devices it can see, then allocates, launches and copies back, checking
// every element. Prints one line per fact for gpu.sh to compare.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void twice(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = 2.0f * x[i] + 1.0f;
}

int main()
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("no device: %s\n", e != cudaSuccess ? cudaGetErrorName(e) : "count 0");
        return 3;
    }
    printf("devices %d\n", n);
    const int N = 1 << 20;
    static float host[1 << 20];
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    float *dev = nullptr;
    if ((e = cudaMalloc(&dev, N * sizeof(float))) != cudaSuccess ||
        (e = cudaMemcpy(dev, host, N * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess) {
        printf("alloc/copy failed: %s\n", cudaGetErrorName(e));
        return 4;
    }
    twice<<<(N + 255) / 256, 256>>>(dev, N);
    if ((e = cudaDeviceSynchronize()) != cudaSuccess ||
        (e = cudaMemcpy(host, dev, N * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess) {
        printf("launch/copy back failed: %s\n", cudaGetErrorName(e));
        return 5;
    }
    for (int i = 0; i < N; i++)
        if (host[i] != 2.0f * (float)i + 1.0f) {
            printf("wrong result at %d: %f\n", i, host[i]);
            return 6;
        }
    cudaFree(dev);
    printf("ok\n");
    return 0;
}
