/* kiln-harness-cpu: the harness with the CPU backend (see hx.h). */
#include "hx.h"

int main(int argc, char **argv)
{
    return hx_main(&hx_cpu_ops, argc, argv);
}
