/* libFuzzer target for plan.json: the parse must never crash, leak or read
 * out of bounds, and whatever parses must write and parse back the same. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct harness_plan p, q;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (harness_plan_parse(data, size, &p, &err) != KILN_OK)
        return 0;
    char *text = NULL;
    if (harness_plan_write(&p, &text, &err) != KILN_OK)
        abort(); /* a parsed plan is valid, so it must serialize */
    kiln_err_clear(&err);
    if (harness_plan_parse(text, strlen(text), &q, &err) != KILN_OK)
        abort();
    if (q.ncases != p.ncases || q.nargs != p.nargs || q.nlaunches != p.nlaunches ||
        q.baseline != p.baseline)
        abort();
    for (int i = 0; i < p.ncases; i++)
        if (memcmp(q.cases[i].baseline, p.cases[i].baseline, sizeof(p.cases[i].baseline)))
            abort();
    harness_plan_free(&q);
    harness_plan_free(&p);
    free(text);
    return 0;
}
