/* libFuzzer target: candidate.cubin read as hostile ELF (formats/cubin.h). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cubin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = cubin_check_heap(data, size, &err);
    (void)rc;
    /* The launch-symbol lookup walks the same tables, also as a host .so. */
    const char *want[] = {"k", "saxpy"};
    bool found[2];
    char defined[256];
    for (int cuda = 0; cuda < 2; cuda++) {
        kiln_err_clear(&err);
        rc = elf_find_functions(data, size, cuda, want, 2, found, defined, sizeof(defined), &err);
        (void)rc;
    }
    return 0;
}
