/* libFuzzer target: fastp_summary_parse (a run's summary.json, read by
 * kiln summarize) on arbitrary bytes; what it accepts is a usable problem. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fastp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fastp_problem p;
    struct kiln_err err = {0};
    if (fastp_summary_parse(data, size, &p, &err) == KILN_OK) {
        if (!p.workload[0] || p.version < 1 || p.version > SUMMARY_VERSION ||
            !isfinite(p.speedup) || p.speedup < 0 || p.correct != (p.best[0] != '\0'))
            abort();
        for (int vs = FASTP_VS_REFERENCE; vs <= FASTP_VS_COMPILE; vs++)
            if (!isfinite(fastp_speedup(&p, (enum fastp_vs)vs)) ||
                fastp_speedup(&p, (enum fastp_vs)vs) < 0 ||
                (!p.correct && fastp_speedup(&p, (enum fastp_vs)vs) != 0))
                abort();
        if (fastp_fraction(&p, 1, 0) != (p.correct ? 1.0 : 0.0))
            abort();
    }
    return 0;
}
