/* libFuzzer target: candidate.cubin read as hostile ELF (evaluator/cubin.h). */
#include <stddef.h>
#include <stdint.h>

#include "cubin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = cubin_check_heap(data, size, &err);
    (void)rc;
    return 0;
}
