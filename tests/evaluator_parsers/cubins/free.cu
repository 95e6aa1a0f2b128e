extern "C" __global__ void k(float *o)
{
    free((void *)o);
}
