extern "C" __global__ void k(float *o)
{
    o[threadIdx.x] = 1;
}
