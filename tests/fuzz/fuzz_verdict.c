/* libFuzzer target: verdict_from_json on arbitrary bytes; what it accepts
 * must serialize again (the reader never lets through what the writer
 * cannot write). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct verdict v;
    struct kiln_err err = {0};
    if (verdict_from_json(data, size, &v, &err) == KILN_OK) {
        char *text = NULL;
        struct kiln_err err2 = {0};
        if (verdict_to_text(&v, &text, &err2) != KILN_OK)
            abort();
        free(text);
    }
    verdict_free(&v);
    return 0;
}
