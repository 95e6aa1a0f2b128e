/* kiln-harness-cuda: the harness with the CUDA driver API backend (see hx.h). */
#include "hx.h"

int main(int argc, char **argv)
{
    return hx_main(&hx_cuda_ops, argc, argv);
}
