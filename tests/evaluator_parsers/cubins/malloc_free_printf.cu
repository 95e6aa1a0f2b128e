extern "C" __global__ void k(float *o)
{
    float *p = (float *)malloc(64);
    p[0] = 1;
    o[0] = p[0];
    free(p);
    printf("x %d\n", threadIdx.x);
}
extern "C" __global__ void k2(float *o)
{
    void *p = __nv_aligned_device_malloc(64, 16);
    o[0] = (float)(size_t)p;
}
