extern "C" __global__ void k(float *o)
{
    void *p = __nv_aligned_device_malloc(64, 16);
    o[0] = (float)(size_t)p;
}
