/* libFuzzer target: kiln-harness-cuda --device-props output (two lines:
 * the floor's properties and the launch limits). A Slurm node reports it,
 * and a node can lie (SECURITY.md). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "devlimits.h"
#include "gpupeak.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[1024];
    if (size >= sizeof(text))
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct gpu_props p;
    struct device_limits l;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (devprobe_parse(text, &p, &l, &err) == KILN_OK) {
        struct expr_var v[DEVLIMITS_NVARS];
        char d[96];
        devlimits_vars(&l, v);
        devlimits_describe(&l, d, sizeof(d));
    }
    return 0;
}
