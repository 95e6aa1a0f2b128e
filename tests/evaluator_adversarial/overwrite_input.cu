// Computes the right answer, then overwrites its input x (a reference run
// after it would compute garbage too). Expected: overwrites_inputs, tensor x.
// kiln-expect: overwrites_inputs
// kiln-eval-expect: wrong_answer
// kiln: launch saxpy grid(cdiv(n, 256)) block(256) smem(0) args(n, a, x, y, out)
extern "C" __global__ void saxpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
        ((float *)x)[i] = 0.0f;
    }
}
