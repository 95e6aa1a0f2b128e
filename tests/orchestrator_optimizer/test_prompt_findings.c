/* The LLM proposer's prompt carries the tuner's findings (its fastest
 * configurations, the best tunables, ncu metrics when profiled) and keeps
 * them within the prompt's byte budget however long the history is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proposer.h"
#include "workload.h"

#define PROMPT_MAX (96u << 10) /* proposer_llm.c's cap */

static void findings_in_prompt_within_budget(void **state)
{
    (void)state;
    const char *src = getenv("KILN_SOURCE_DIR");
    char wdir[1024];
    snprintf(wdir, sizeof(wdir), "%s/workloads/sgemm", src ? src : ".");
    struct workload *wl = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(workload_load(wdir, &wl, &err), KILN_OK);
    /* 40 tuner attempts with long failure reasons and feedback, times
     * falling then rising: the fastest are 020 (1.5 ms) and its neighbours. */
    static struct opt_attempt hist[40];
    for (int i = 0; i < 40; i++) {
        struct opt_attempt *a = &hist[i];
        memset(a, 0, sizeof(*a));
        snprintf(a->id, sizeof(a->id), "%03d", i + 1);
        a->has_config = true;
        a->status = i % 7 == 3 ? VERDICT_WRONG_ANSWER : VERDICT_PASS;
        a->geomean_ms = a->status == VERDICT_PASS ? 1.0 + 0.5 * abs(i - 19) + 0.5 : 0;
        snprintf(a->note, sizeof(a->note), "BM=%d BN=128 BK=8 TM=8 TN=%d VEC=4 DBUF=1",
                 16 << (i % 5), 1 + i % 8);
        memset(a->reason, 'r', sizeof(a->reason) - 1);
        memset(a->feedback, 'f', sizeof(a->feedback) - 1);
    }
    struct opt_state st = {.wl = wl,
                           .backend = KILN_BACKEND_CUDA,
                           .start_source = wl->files[WL_FILE_KERNEL_CU].data,
                           .start_len = wl->files[WL_FILE_KERNEL_CU].len,
                           .history = hist,
                           .nhistory = 40,
                           .best = &hist[19],
                           .iteration = 41,
                           .max_iterations = 60,
                           .profile = "Nsight Compute on case sq4096 (1 profiled launch):\n"
                                      "- sgemm: 4.10 ms, sm__throughput 61.2%"};
    char *p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_true(strlen(p) <= PROMPT_MAX);
    char want[256];
    snprintf(want, sizeof(want), "- 1.500 ms: %s\n", hist[19].note);
    const char *f = strstr(p, "Tuner findings (34 configurations");
    assert_non_null(f);
    assert_non_null(strstr(f, want)); /* the fastest first */
    snprintf(want, sizeof(want), "Best tunables so far: %s.", hist[19].note);
    assert_non_null(strstr(p, want));
    assert_non_null(strstr(p, "sm__throughput 61.2%"));
    /* The five fastest appear, the slowest does not. */
    assert_non_null(strstr(f, hist[18].note));
    assert_null(strstr(f, "- 11.000 ms"));
    /* Findings come before the (long) history, so the cap never cuts them. */
    assert_true(f < strstr(p, "History ("));
    free(p);

    /* No tuner attempts (a model's own): no findings section. */
    for (int i = 0; i < 40; i++)
        hist[i].has_config = false;
    p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_null(strstr(p, "Tuner findings"));
    free(p);
    workload_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(findings_in_prompt_within_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
