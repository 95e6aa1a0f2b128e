/* libFuzzer target: ncu's CSV output from the profile sandbox. */
#include <stddef.h>
#include <stdint.h>

#include "ncu_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ncu_report r;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (ncu_csv_parse((const char *)data, size, &r, &err) == KILN_OK)
        for (size_t k = 0; k < r.nkernels; k++)
            (void)ncu_report_find(&r, r.kernels[k].name);
    return 0;
}
