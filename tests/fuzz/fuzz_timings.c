/* libFuzzer target: timings_parse on arbitrary bytes. Any result is fine;
 * a crash, leak or sanitizer report is not. A parsed document must also
 * satisfy the schema's promises. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "timings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct timings t;
    struct kiln_err err = {0};
    if (timings_parse(data, size, &t, &err) == KILN_OK) {
        if (t.ncases > TIMINGS_MAX_CASES)
            abort();
        for (size_t i = 0; i < t.ncases; i++) {
            const struct timings_case *c = &t.cases[i];
            if (c->nsamples == 0 || c->nsamples > TIMINGS_MAX_SAMPLES)
                abort();
            for (size_t j = 0; j < c->nsamples; j++) {
                if (!isfinite(c->samples_ms[j]) || !(c->samples_ms[j] > 0.0))
                    abort();
            }
        }
    }
    timings_free(&t);
    return 0;
}
