/* Fuzzes workload.json parsing and, for what parses, the per-case shapes
 * and costs. */
#include <stdint.h>
#include <stdlib.h>

#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    struct workload *w;
    if (workload_parse_json((const char *)data, size, "fuzz", &w, &err) != KILN_OK)
        return 0;
    for (size_t i = 0; i < w->ncases; i++) {
        struct wl_shape shapes[WL_MAX_ARGS];
        uint64_t tb;
        int64_t cb, cf;
        /* Everything was evaluated at load: these cannot fail now. */
        if (workload_case_shapes(w, &w->cases[i], shapes, &err) != KILN_OK ||
            workload_case_cost(w, &w->cases[i], &tb, &cb, &cf, &err) != KILN_OK)
            abort();
    }
    workload_free(w);
    return 0;
}
