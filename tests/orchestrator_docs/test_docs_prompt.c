/* test_docs_prompt.c - what the llm proposer looks up for a run's state (the
 * workload, the last verdict, the profile) and how the passages ride in the
 * prompt within its size budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docs_corpus.h"
#include "docs_prompt.h"
#include "profile.h"
#include "proposer.h"
#include "workload.h"

#define PROMPT_BUDGET (96u << 10) /* proposer_llm.c's PROMPT_MAX */

static struct workload *load(const char *name)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/workloads/%s", getenv("KILN_SOURCE_DIR"), name);
    struct workload *wl = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (workload_load(dir, &wl, &err) != KILN_OK)
        fail_msg("%s", err.msg);
    return wl;
}

static struct docs_index *open_builtin(void)
{
    struct docs_index *ix = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (docs_index_open(DOCS_DB, &ix, &err) != KILN_OK)
        fail_msg("%s", err.msg);
    return ix;
}

/* The hits for state `st`'s query (k of them). */
static void search_state(struct docs_index *ix, const struct opt_state *st, size_t k,
                         struct docs_hits *h)
{
    char *q = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (docs_prompt_search(ix, st, k, h, &q, &err) != KILN_OK)
        fail_msg("%s", err.msg);
    assert_true(h->n <= k);
    for (size_t i = 0; i < h->n; i++) /* no passage twice */
        for (size_t j = i + 1; j < h->n; j++)
            assert_string_not_equal(h->v[i].id, h->v[j].id);
    free(q);
}

static bool has_hit(const struct docs_hits *h, const char *id)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->v[i].id, id) == 0)
            return true;
    return false;
}

static void ids_of(const struct docs_hits *h, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < h->n && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, " %s", h->v[i].id);
}

/* Each built-in workload's description alone finds what it needs. */
static void workload_descriptions_find_their_techniques(void **state)
{
    (void)state;
    static const struct {
        const char *wl, *want;
    } cases[] = {
        {"softmax_rows", "numerics/stable-softmax-subtract-the-row-maximum"},
        {"layernorm", "numerics/layer-normalization-variance-without-cancellation"},
        {"transpose", "coalescing/transposes-and-other-permutations"},
        {"sgemm", "tensor-cores/why-tf32-and-fp16-fail-an-fp32-tolerance"},
        {"reduce_sum", "warp-reductions/reducing-across-the-grid-deterministically"},
    };
    struct docs_index *ix = open_builtin();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct workload *wl = load(cases[i].wl);
        struct opt_state st = {.wl = wl, .iteration = 1, .max_iterations = 7};
        struct docs_hits h;
        search_state(ix, &st, 4, &h);
        char ids[1024];
        ids_of(&h, ids, sizeof(ids));
        if (!has_hit(&h, cases[i].want))
            fail_msg("%s: %s not in the top 4:%s", cases[i].wl, cases[i].want, ids);
        docs_hits_free(&h);
        workload_free(wl);
    }
    docs_index_close(ix);
}

/* The last verdict steers the query: a NaN wrong answer asks for stability. */
static void last_verdict_steers_the_query(void **state)
{
    (void)state;
    struct docs_index *ix = open_builtin();
    struct workload *wl = load("saxpy");
    struct opt_attempt a[2];
    memset(a, 0, sizeof(a));
    snprintf(a[0].id, sizeof(a[0].id), "001");
    a[0].status = VERDICT_PASS;
    snprintf(a[1].id, sizeof(a[1].id), "002");
    a[1].status = VERDICT_WRONG_ANSWER;
    snprintf(a[1].reason, sizeof(a[1].reason), "case big: out[3] is NaN, expected 0.25");
    struct opt_state st = {.wl = wl, .history = a, .nhistory = 2};
    char *q = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(docs_prompt_query(&st, &q, &err), KILN_OK);
    assert_non_null(strstr(q, "overflow stable softmax"));
    assert_true(strstr(q, "overflow") < strstr(q, "SAXPY")); /* hints come first */
    free(q);
    struct docs_hits h;
    search_state(ix, &st, 3, &h);
    char ids[1024];
    ids_of(&h, ids, sizeof(ids));
    if (!has_hit(&h, "numerics/stable-softmax-subtract-the-row-maximum") &&
        !has_hit(&h, "numerics/accumulation-order-and-tolerances"))
        fail_msg("a NaN wrong answer did not bring numerics:%s", ids);
    docs_hits_free(&h);
    /* a resource failure asks for registers and shared memory */
    a[1].status = VERDICT_RESOURCE_LIMIT;
    assert_int_equal(docs_prompt_query(&st, &q, &err), KILN_OK);
    assert_non_null(strstr(q, "launch bounds"));
    free(q);
    workload_free(wl);
    docs_index_close(ix);
}

/* Hints from profile_summarize's real text: spills, occupancy, boundness. */
static void profile_metrics_steer_the_query(void **state)
{
    (void)state;
    struct ncu_report r;
    memset(&r, 0, sizeof(r));
    r.nkernels = 1;
    struct ncu_kernel *k = &r.kernels[0];
    snprintf(k->name, sizeof(k->name), "sgemm_tiled");
    k->launches = 2;
    double v[NCU_METRIC_COUNT] = {
        [NCU_DURATION] = 41000,      [NCU_DRAM_PCT] = 12,   [NCU_SM_PCT] = 71, [NCU_OCCUPANCY] = 18,
        [NCU_OCCUPANCY_THEORY] = 25, [NCU_REGISTERS] = 168, [NCU_L1_HIT] = 80, [NCU_L2_HIT] = 90,
        [NCU_LOCAL_LD] = 5120,       [NCU_LOCAL_ST] = 2048,
    };
    for (int m = 0; m < NCU_METRIC_COUNT; m++) {
        k->have[m] = true;
        k->value[m] = v[m];
    }
    char text[PROFILE_SUMMARY_MAX];
    profile_summarize(&r, "perf", 2, text, sizeof(text));
    struct strbuf sb;
    strbuf_init(&sb);
    docs_profile_hints(text, &sb);
    char *hints = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(strbuf_finish(&sb, &hints, &err), KILN_OK);
    assert_non_null(strstr(hints, "register spills"));
    assert_non_null(strstr(hints, "theoretical occupancy"));
    assert_non_null(strstr(hints, "compute bound"));
    assert_null(strstr(hints, "memory bound")); /* DRAM at 12% */
    assert_null(strstr(hints, "L2 hit rate"));  /* 90% */
    free(hints);

    /* no spills, memory bound: other words */
    k->value[NCU_LOCAL_LD] = k->value[NCU_LOCAL_ST] = 0;
    k->value[NCU_DRAM_PCT] = 88;
    k->value[NCU_SM_PCT] = 20;
    k->value[NCU_OCCUPANCY] = k->value[NCU_OCCUPANCY_THEORY] = 90;
    profile_summarize(&r, "perf", 2, text, sizeof(text));
    strbuf_init(&sb);
    docs_profile_hints(text, &sb);
    assert_int_equal(strbuf_finish(&sb, &hints, &err), KILN_OK);
    assert_null(strstr(hints, "spills"));
    assert_null(strstr(hints, "occupancy"));
    assert_non_null(strstr(hints, "memory bound"));
    free(hints);

    /* the spilling profile brings the spill passages for sgemm */
    k->value[NCU_LOCAL_LD] = 5120;
    k->value[NCU_DRAM_PCT] = 12;
    k->value[NCU_SM_PCT] = 71;
    profile_summarize(&r, "perf", 2, text, sizeof(text));
    struct workload *wl = load("sgemm");
    struct opt_state st = {.wl = wl, .profile = text};
    struct docs_index *ix = open_builtin();
    struct docs_hits h;
    search_state(ix, &st, 4, &h);
    char ids[1024];
    ids_of(&h, ids, sizeof(ids));
    if (!has_hit(&h, "register-blocking/register-pressure-and-spills") &&
        !has_hit(&h, "ncu-metrics/local-memory-sectors-register-spills"))
        fail_msg("spills in the profile did not bring the spill passages:%s", ids);
    docs_hits_free(&h);
    docs_index_close(ix);
    workload_free(wl);

    /* text without metrics gives no hints */
    strbuf_init(&sb);
    docs_profile_hints("nothing to see", &sb);
    docs_profile_hints(NULL, &sb);
    assert_int_equal(strbuf_finish(&sb, &hints, &err), KILN_OK);
    assert_string_equal(hints, "");
    free(hints);
}

/* The block quotes every hit within its cap, cut at UTF-8 boundaries. */
static void block_fits_its_cap(void **state)
{
    (void)state;
    struct docs_index *ix = open_builtin();
    struct docs_hits h;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(
        docs_index_search(ix, "shared memory bank tile warp occupancy register", 8, &h, &err),
        KILN_OK);
    assert_int_equal(h.n, 8);
    char *b = NULL;
    assert_int_equal(docs_prompt_block(&h, DOCS_PROMPT_MAX, &b, &err), KILN_OK);
    assert_true(strlen(b) <= DOCS_PROMPT_MAX);
    for (size_t i = 0; i < h.n; i++) {
        assert_non_null(strstr(b, h.v[i].title));
        assert_non_null(strstr(b, h.v[i].id));
        assert_non_null(strstr(b, h.v[i].source));
    }
    free(b);
    /* a small cap: passages are cut, marked, and still fit; those whose
     * heading does not fit are dropped from the hits (what is recorded) */
    assert_int_equal(docs_prompt_block(&h, 3000, &b, &err), KILN_OK);
    assert_true(strlen(b) <= 3000);
    assert_non_null(strstr(b, "[...]"));
    assert_true(h.n >= 1 && h.n <= 8);
    for (size_t i = 0; i < h.n; i++)
        assert_non_null(strstr(b, h.v[i].id));
    free(b);
    assert_int_equal(docs_prompt_block(&h, 1400, &b, &err), KILN_OK);
    size_t quoted = 0;
    for (const char *p = b; (p = strstr(p, "\n### ")) != NULL; p++)
        quoted++;
    assert_int_equal(quoted, h.n);
    assert_true(h.n < 8);
    free(b);
    docs_hits_free(&h);
    assert_int_equal(
        docs_index_search(ix, "shared memory bank tile warp occupancy register", 8, &h, &err),
        KILN_OK);
    /* multi-byte text cut mid-character stays valid UTF-8 */
    free(h.v[0].body);
    h.v[0].body = malloc(4001);
    assert_non_null(h.v[0].body);
    for (size_t i = 0; i < 4000; i += 2)
        memcpy(h.v[0].body + i, "\xc3\xa9", 2);
    h.v[0].body[4000] = '\0';
    for (size_t cap = 1100; cap < 1110; cap++) {
        assert_int_equal(docs_prompt_block(&h, cap, &b, &err), KILN_OK);
        assert_true(strlen(b) <= cap);
        assert_int_equal(docs_text_check("block", b, strlen(b), &err), KILN_OK);
        free(b);
    }
    docs_hits_free(&h);
    struct docs_hits none = {0};
    assert_int_equal(docs_prompt_block(&none, DOCS_PROMPT_MAX, &b, &err), KILN_OK);
    assert_string_equal(b, "");
    free(b);
    /* too small for anything: nothing quoted, nothing left to record */
    assert_int_equal(docs_index_search(ix, "bank conflicts", 2, &h, &err), KILN_OK);
    assert_int_equal(docs_prompt_block(&h, 100, &b, &err), KILN_OK);
    assert_string_equal(b, "");
    assert_int_equal(h.n, 0);
    free(b);
    docs_index_close(ix);
}

/* The prompt carries the passages, and stays within its budget even with
 * the largest best source and a long history. */
static void prompt_carries_passages_within_budget(void **state)
{
    (void)state;
    struct docs_index *ix = open_builtin();
    struct workload *wl = load("softmax_rows");
    size_t srclen = 40u << 10; /* more than the prompt quotes */
    char *src = malloc(srclen + 1);
    assert_non_null(src);
    memset(src, 'k', srclen);
    src[srclen] = '\0';
    struct opt_attempt a[40];
    memset(a, 0, sizeof(a));
    for (size_t i = 0; i < 40; i++) {
        snprintf(a[i].id, sizeof(a[i].id), "%03zu", i + 1);
        a[i].status = VERDICT_WRONG_ANSWER;
        memset(a[i].reason, 'r', sizeof(a[i].reason) - 1);
        memset(a[i].feedback, 'f', sizeof(a[i].feedback) - 1);
        a[i].source = src;
        a[i].len = srclen;
    }
    a[39].status = VERDICT_PASS;
    char profile[PROFILE_SUMMARY_MAX];
    memset(profile, 'p', sizeof(profile) - 1);
    profile[sizeof(profile) - 1] = '\0';
    struct opt_state st = {.wl = wl,
                           .start_source = src,
                           .start_len = srclen,
                           .best = &a[39],
                           .history = a,
                           .nhistory = 40,
                           .iteration = 41,
                           .max_iterations = 50,
                           .profile = profile};
    struct docs_hits h;
    search_state(ix, &st, DOCS_K_MAX, &h);
    assert_int_equal(h.n, DOCS_K_MAX);
    char *block = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(docs_prompt_block(&h, DOCS_PROMPT_MAX, &block, &err), KILN_OK);
    st.docs = block;
    char *prompt = proposer_build_prompt(&st);
    assert_non_null(prompt);
    assert_true(strlen(prompt) <= PROMPT_BUDGET);
    assert_non_null(strstr(prompt, "Reference notes"));
    for (size_t i = 0; i < h.n; i++)
        if (!strstr(prompt, h.v[i].title))
            fail_msg("passage %s is not in the prompt", h.v[i].id);
    assert_non_null(strstr(prompt, "Propose a faster correct kernel.")); /* the tail survives */
    free(prompt);
    /* without docs: no block */
    st.docs = NULL;
    prompt = proposer_build_prompt(&st);
    assert_null(strstr(prompt, "Reference notes"));
    free(prompt);
    free(block);
    docs_hits_free(&h);
    free(src);
    workload_free(wl);
    docs_index_close(ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workload_descriptions_find_their_techniques),
        cmocka_unit_test(last_verdict_steers_the_query),
        cmocka_unit_test(profile_metrics_steer_the_query),
        cmocka_unit_test(block_fits_its_cap),
        cmocka_unit_test(prompt_carries_passages_within_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
