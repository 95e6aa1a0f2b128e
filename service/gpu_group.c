/* gpu_group.c - the GPU model a verdict is ranked under: leaderboards are
 * per GPU model, so a cuda verdict is grouped by the GPU it was timed on. */
#include <stdio.h>
#include <string.h>

#include "evaluate.h"
#include "service_impl.h"

void serve_verdict_gpu(const char *backend, const struct eval_outcome *out, const char *host_model,
                       const char *slurm_fallback, char *gpu, size_t cap)
{
    if (!strcmp(backend, "cpu")) {
        snprintf(gpu, cap, "%s", host_model);
        return;
    }
    /* Through Slurm: the node's GPU as it reported it for the visible run
     * (the score's run; the held-out run may land elsewhere). A run with no
     * report (an older node kiln, or no run at all) keeps the partition. */
    if (slurm_fallback) {
        bool reported = out && out->ran_on.present && out->ran_on.model[0];
        snprintf(gpu, cap, "%s", reported ? out->ran_on.model : slurm_fallback);
        return;
    }
    snprintf(gpu, cap, "%s", host_model);
}
