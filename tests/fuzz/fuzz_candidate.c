/* Fuzzes candidate directives for both backends; a parsed candidate is
 * also resolved against the saxpy workload so plan.c is fuzzed too, and its
 * text read for parameter lists and tunable uses (cand_source.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cand_source.h"
#include "candidate.h"
#include "plan.h"
#include "../evaluator_parsers/fixtures.h"

static struct workload *saxpy(void)
{
    /* Fuzz harness only: parsed once per process. */
    static struct workload *w;
    if (!w) {
        struct kiln_err err;
        kiln_err_clear(&err);
        if (workload_parse_json(saxpy_json, strlen(saxpy_json), NULL, &w, &err) != KILN_OK)
            abort();
    }
    return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum kiln_backend backends[] = {KILN_BACKEND_CUDA, KILN_BACKEND_CPU};
    static struct resolved_plan plan;
    static const struct device_limits lim = DEVICE_LIMITS_H200;
    for (int b = 0; b < 2; b++) {
        struct kiln_err err;
        kiln_err_clear(&err);
        struct candidate *c;
        if (candidate_parse((const char *)data, size, backends[b], &c, &err) != KILN_OK)
            continue;
        int64_t v[CAND_MAX_TUNABLES];
        char defs[CAND_MAX_TUNABLES][CAND_DEFINE_MAX];
        candidate_default_config(c, v);
        if (candidate_defines(c, v, &lim, defs, &err) != KILN_OK)
            abort(); /* defaults are always in their sets */
        kiln_err_clear(&err);
        (void)plan_resolve(c, saxpy(), &saxpy()->cases[0], v, &lim, &plan, &err);
        kiln_err_clear(&err);
        (void)plan_check_all(c, saxpy(), v, &lim, &err);
        /* The code beyond the directives: parameter lists, tunable uses. */
        kiln_err_clear(&err);
        (void)cand_source_check_params((const char *)data, size, c, saxpy(), &err);
        bool used[CAND_MAX_TUNABLES];
        cand_source_tunables_used((const char *)data, size, c, used);
        candidate_free(c);
    }
    return 0;
}
