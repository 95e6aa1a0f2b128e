// Never returns. Expected: the harness's per-case watchdog ends the
// process (the kernel cannot be stopped any other way) after writing the
// documents: case small failed with `timeout`, naming its phase, set and
// run; exit status 0. The sandbox's time limit is only the backstop.
// kiln-expect: timeout
// kiln-eval-expect: timeout
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    /* A volatile global read each time round: a loop with no side effect
     * (a volatile local kept in a register) is deleted by ptxas, as C++'s
     * forward-progress rule allows. The inputs never change, so this spins. */
    const volatile float *vx = x;
    float first = vx[0];
    while (vx[0] == first || vx[0] != first)
        ;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}
