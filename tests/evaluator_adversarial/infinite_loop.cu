// Never returns. Expected: the harness cannot end it; the sandbox's time
// limit kills the process (the test uses a 20 s alarm), and log.txt shows
// the case and phase it was in.
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
