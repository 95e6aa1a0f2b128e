extern "C" __global__ void k(float *o)
{
    printf("%d\n", threadIdx.x);
    o[threadIdx.x] = 1;
}
