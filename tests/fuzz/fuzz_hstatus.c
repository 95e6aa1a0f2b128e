/* libFuzzer target: status.json from the sandboxed harness. */
#include <stddef.h>
#include <stdint.h>

#include "hstatus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hstatus s;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (hstatus_parse(data, size, &s, &err) == KILN_OK) {
        for (size_t i = 0; i < s.ncases; i++)
            (void)hstatus_find(&s, s.cases[i].name);
        hstatus_free(&s);
    }
    return 0;
}
