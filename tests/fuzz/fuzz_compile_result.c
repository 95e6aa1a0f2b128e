/* libFuzzer target: compile/result.json, the compile result a compile worker
 * leaves for its parent (kiln optimize --jobs). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "compile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct compile_result r;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (compile_result_from_json((const char *)data, size, &r, &err) == KILN_OK) {
        char *again = NULL;
        if (compile_result_to_json(&r, &again, &err) == KILN_OK)
            free(again);
        free(r.diagnostics); /* compile_result_free lives with the sandboxed compile */
    }
    return 0;
}
