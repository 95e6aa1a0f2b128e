/* kiln-harness-cuda: the harness with the CUDA driver API backend (see hx.h).
 * `kiln-harness-cuda --device-props BUS_ID` prints the device's properties
 * for the parent's physics floor (base/gpupeak.h) and runs nothing else. */
#include <string.h>

#include "hx.h"

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--device-props") == 0)
        return hx_cuda_device_props(argv[2]);
    return hx_main(&hx_cuda_ops, argc, argv);
}
