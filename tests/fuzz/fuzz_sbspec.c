/* libFuzzer target: the documents of --executor slurm that cross the shared
 * spool: spec.json (read by the node's kiln) and result.json (read by the
 * submitting kiln). The first byte picks which; what parses must print back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sbspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    struct kiln_err err;
    kiln_err_clear(&err);
    char *again = NULL;
    if (data[0] & 1) {
        struct sbspec_doc doc;
        if (sbspec_from_json(text, len, &doc, &err) == KILN_OK) {
            if (sbspec_to_json(&doc.spec, doc.wants_gpu ? 0 : -1, &again, &err) == KILN_OK)
                free(again);
            sbspec_doc_free(&doc);
        }
    } else {
        struct sandbox_result r;
        char where[200];
        struct sbnode_device dev;
        if (sbresult_from_json(text, len, &r, where, sizeof(where), &dev, &err) == KILN_OK) {
            if (sbresult_to_json(&r, where, &dev, &again, &err) == KILN_OK)
                free(again);
            sandbox_result_free(&r);
        }
    }
    return 0;
}
