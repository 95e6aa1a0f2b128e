/* proposer_llm.c - the LLM proposer and the prompt it sends. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docs_index.h"
#include "docs_prompt.h"
#include "proposer_impl.h"
#include "strbuf.h"

#define PROMPT_MAX     (96u << 10) /* bytes of user prompt */
#define PROMPT_HISTORY 12          /* most recent attempts described */
#define PROMPT_SRC_MAX (24u << 10) /* bytes of the best source quoted */

static const char system_prompt[] =
    "You are an expert GPU performance engineer. You write one candidate kernel per reply "
    "for a benchmark harness that compiles it, checks every output against a reference on "
    "several input sets (including sizes you have not seen) and times it with the L2 cache "
    "flushed. Wrong, lazy, state-keeping or shape-specialised kernels are caught and "
    "fail. Reply with exactly one JSON object: {\"source\": the complete candidate file, "
    "\"rationale\": one short paragraph on what you changed and why, \"language\": \"cuda\" "
    "or \"c\"}.";

static const char format_rules[] =
    "Candidate format (a single file):\n"
    "- CUDA: only device code: extern \"C\" __global__ functions and __device__ helpers; "
    "no host code, no main, no device-side launches, no libraries.\n"
    "- C (cpu backend): plain C11 functions; no main, no I/O, no threads.\n"
    "- The launch plan is written as directive comments:\n"
    "  // kiln: tunable NAME {v1, v2, ...} = DEFAULT\n"
    "  // kiln: launch KERNEL grid(X[, Y[, Z]]) block(X[, Y[, Z]]) [smem(BYTES)] args(A, ...)\n"
    "  (for C: // kiln: launch FUNCTION args(A, ...)). Expressions use the workload's size "
    "names and tunables, + - * / %, cdiv(a, b), min, max. Launches run in file order.\n"
    "- Scalar types: int32 -> int, int64 -> long long, float32 -> float, float64 -> double; "
    "tensors are pointers (const for inputs).\n";

static void put_signature(struct strbuf *sb, const struct workload *wl, enum kiln_backend b)
{
    strbuf_puts(sb, "Signature (argument order):\n");
    for (size_t i = 0; i < wl->nargs; i++) {
        const struct wl_arg *a = &wl->args[i];
        if (a->kind == WL_ARG_TENSOR) {
            strbuf_printf(sb, "- %s: tensor %s, role %s, shape (", a->name,
                          tensor_dtype_name(a->dtype),
                          a->role == WL_ROLE_IN    ? "in"
                          : a->role == WL_ROLE_OUT ? "out"
                                                   : "inout");
            for (int d = 0; d < a->ndim; d++)
                strbuf_printf(sb, "%s%s", d ? ", " : "", expr_text(a->shape[d]));
            strbuf_puts(sb, ")\n");
        } else {
            static const char *tn[] = {"int32", "int64", "float32", "float64"};
            strbuf_printf(sb, "- %s: scalar %s\n", a->name, tn[a->type]);
        }
    }
    strbuf_puts(sb, "Cases (sizes):\n");
    for (size_t c = 0; c < wl->ncases; c++) {
        if (!(wl->cases[c].backends & b)) /* another backend's case: never run here */
            continue;
        strbuf_printf(sb, "- %s (%s):", wl->cases[c].name,
                      wl->cases[c].kind == WL_CASE_PERFORMANCE ? "performance, scored"
                                                               : "correctness only");
        for (size_t s = 0; s < wl->nsizes; s++)
            strbuf_printf(sb, " %s=%lld", wl->size_names[s], (long long)wl->cases[c].sizes[s]);
        strbuf_puts(sb, "\n");
    }
}

/* What the embedded tuner found: its fastest configurations (attempts that
 * carry tunable values and passed), so a model starts where the search
 * stopped instead of rediscovering tile sizes. With --tuner-run the block
 * is the earlier tuner run's (st->findings, built by tuner_findings.c).
 * Placed before the history so the prompt's byte cap never cuts it. */
#define PROMPT_FINDINGS 5

static void put_tuner_findings(struct strbuf *sb, const struct opt_state *st)
{
    if (st->findings) {
        strbuf_puts(sb, st->findings);
        return;
    }
    const struct opt_attempt *top[PROMPT_FINDINGS];
    size_t ntop = 0, tuned = 0;
    for (size_t i = 0; i < st->nhistory; i++) {
        const struct opt_attempt *a = &st->history[i];
        if (!a->has_config || a->status != VERDICT_PASS || a->geomean_ms <= 0)
            continue;
        tuned++;
        /* Insertion into the fastest PROMPT_FINDINGS, ties by order. */
        size_t at = ntop;
        while (at > 0 && top[at - 1]->geomean_ms > a->geomean_ms)
            at--;
        if (at >= PROMPT_FINDINGS)
            continue;
        if (ntop < PROMPT_FINDINGS)
            ntop++;
        memmove(&top[at + 1], &top[at], (ntop - 1 - at) * sizeof(*top));
        top[at] = a;
    }
    if (ntop == 0)
        return;
    strbuf_printf(sb,
                  "\nTuner findings (%zu configurations of the starting kernel's tunables "
                  "passed; the fastest first):\n",
                  tuned);
    for (size_t i = 0; i < ntop; i++) {
        strbuf_printf(sb, "- %.3f ms: ", top[i]->geomean_ms);
        strbuf_append(sb, top[i]->note, strnlen(top[i]->note, sizeof(top[i]->note)));
        strbuf_puts(sb, "\n");
    }
    strbuf_puts(sb, "Best tunables so far: ");
    strbuf_append(sb, top[0]->note, strnlen(top[0]->note, sizeof(top[0]->note)));
    strbuf_puts(sb, ". Start from that configuration (make it the defaults) and change the "
                    "code where the tuner's space ends.\n");
}

/* No starting kernel and nothing passed yet: the model writes the first
 * kernel from the description and the reference script that judges it. */
static void put_reference(struct strbuf *sb, const struct workload *wl)
{
    const struct wl_file_data *ref = &wl->files[WL_FILE_REFERENCE];
    strbuf_puts(sb, "\nThere is no starting kernel: write the first one from the description "
                    "above and the reference (reference.py, which computes the expected "
                    "outputs your kernel is checked against):\n```python\n");
    if (ref->present)
        strbuf_append(sb, ref->data, ref->len < PROMPT_SRC_MAX ? ref->len : PROMPT_SRC_MAX);
    strbuf_puts(sb, "\n```\n");
}

char *proposer_build_prompt(const struct opt_state *st)
{
    struct strbuf sb;
    strbuf_init(&sb);
    const struct workload *wl = st->wl;
    strbuf_printf(&sb, "Workload %s (%s backend). %s\n", wl->name, kiln_backend_name(st->backend),
                  wl->description);
    if (st->hardware && st->hardware[0])
        strbuf_printf(&sb, "Hardware: %s.\n", st->hardware);
    strbuf_puts(&sb, "\n");
    put_signature(&sb, wl, st->backend);
    strbuf_printf(&sb, "\n%s\n", format_rules);
    if (st->reference)
        strbuf_printf(&sb, "The starting kernel: %s\n", st->reference->v.summary);
    const struct opt_attempt *b = st->best;
    const char *src = b && b->source ? b->source : st->start_source;
    size_t len = b && b->source ? b->len : st->start_len;
    if (src) {
        strbuf_printf(&sb, "\nCurrent best (%s%s):\n```\n",
                      b ? "candidate " : "the starting kernel", b ? b->id : "");
        strbuf_append(&sb, src, len < PROMPT_SRC_MAX ? len : PROMPT_SRC_MAX);
        strbuf_puts(&sb, "\n```\n");
    } else {
        put_reference(&sb, wl);
    }
    if (b)
        strbuf_printf(&sb, "Its result: %s\n", b->feedback);
    if (st->profile) /* kiln's own text from parsed, range-checked numbers */
        strbuf_printf(&sb, "%s\n", st->profile);
    put_tuner_findings(&sb, st);
    if (st->docs && st->docs[0]) /* checked corpus text, at most DOCS_PROMPT_MAX bytes */
        strbuf_printf(&sb, "\n%.*s", (int)DOCS_PROMPT_MAX, st->docs);
    size_t from = st->nhistory > PROMPT_HISTORY ? st->nhistory - PROMPT_HISTORY : 0;
    if (st->nhistory)
        strbuf_printf(&sb, "\nHistory (%zu attempts, the last %zu shown):\n", st->nhistory,
                      st->nhistory - from);
    for (size_t i = from; i < st->nhistory; i++) {
        const struct opt_attempt *a = &st->history[i];
        strbuf_printf(&sb, "- %s: %s%s%s", a->id, verdict_status_name(a->status),
                      a->improved ? " (new best)" : "", a->reason[0] ? ": " : "");
        strbuf_append(&sb, a->reason, strnlen(a->reason, 400));
        strbuf_puts(&sb, "\n");
        if (a->feedback[0] && i + 3 >= st->nhistory) {
            strbuf_puts(&sb, "  details: ");
            strbuf_append(&sb, a->feedback, strnlen(a->feedback, 800));
            strbuf_puts(&sb, "\n");
        }
    }
    strbuf_printf(&sb, "\nIteration %d of %d. Propose a faster correct kernel.\n", st->iteration,
                  st->max_iterations);
    if (sb.len > PROMPT_MAX && !sb.oom) {
        sb.len = PROMPT_MAX;
        sb.data[sb.len] = '\0';
    }
    char *out = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    return strbuf_finish(&sb, &out, &e) == KILN_OK ? out : NULL;
}

struct llm_proposer {
    struct proposer base;
    struct llm_settings s;
    struct docs_index *docs; /* --docs; NULL without */
    int docs_k;
};

/* The passages for this state: the prompt block (*block) and what the
 * exchange record says about them (*rec). */
static enum kiln_rc retrieve(struct llm_proposer *l, const struct opt_state *st, char **block,
                             json_t **rec, struct kiln_err *err)
{
    *block = NULL;
    *rec = NULL;
    char *query = NULL;
    struct docs_hits hits = {0};
    enum kiln_rc rc = docs_prompt_search(l->docs, st, (size_t)l->docs_k, &hits, &query, err);
    if (rc == KILN_OK)
        rc = docs_prompt_block(&hits, DOCS_PROMPT_MAX, block, err);
    json_t *list = json_array();
    for (size_t i = 0; rc == KILN_OK && list && i < hits.n; i++)
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:f}", "id", hits.v[i].id, "title",
                                              hits.v[i].title, "source", hits.v[i].source, "bm25",
                                              hits.v[i].score));
    if (rc == KILN_OK)
        *rec = json_pack("{s:s, s:s, s:o}", "index", docs_index_digest(l->docs), "query", query,
                         "passages", list);
    else
        json_decref(list);
    if (rc == KILN_OK && !*rec)
        rc = kiln_fail(err, KILN_E_NOMEM, "docs record");
    if (rc != KILN_OK) {
        free(*block);
        *block = NULL;
    }
    docs_hits_free(&hits);
    free(query);
    return rc;
}

/* Adds "docs" to an exchange record's JSON text. */
static char *exchange_with_docs(char *exchange, json_t *rec)
{
    json_error_t je;
    json_t *doc = exchange ? json_loads(exchange, 0, &je) : NULL;
    if (!doc)
        return exchange;
    json_object_set(doc, "docs", rec);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!text)
        return exchange;
    free(exchange);
    return text;
}

static enum kiln_rc llm_propose(struct proposer *p, const struct opt_state *st,
                                struct proposal *out, struct kiln_err *err)
{
    struct llm_proposer *l = (struct llm_proposer *)p;
    char *block = NULL;
    json_t *docs = NULL;
    struct opt_state with_docs = *st;
    if (l->docs) {
        enum kiln_rc drc = retrieve(l, st, &block, &docs, err);
        if (drc != KILN_OK)
            return drc;
        with_docs.docs = block;
    }
    char *prompt = proposer_build_prompt(&with_docs);
    free(block);
    if (!prompt) {
        json_decref(docs);
        return kiln_fail(err, KILN_E_NOMEM, "building the prompt");
    }
    struct llm_exchange ex = {0};
    struct kiln_err cerr;
    kiln_err_clear(&cerr);
    enum kiln_rc rc = llm_chat(&l->s.cfg, l->s.api_key[0] ? l->s.api_key : NULL, system_prompt,
                               prompt, &ex, &cerr);
    free(prompt);
    out->prompt_tokens = ex.prompt_tokens;
    out->completion_tokens = ex.completion_tokens;
    out->cost_usd = ex.cost_usd;
    if (rc == KILN_E_USAGE) {
        /* A configuration error (bad URL, no model) ends the run, not a candidate. */
        llm_exchange_free(&ex);
        json_decref(docs);
        *err = cerr;
        return rc;
    }
    out->exchange = llm_exchange_to_json(&ex, rc == KILN_OK ? NULL : cerr.msg);
    if (docs)
        out->exchange = exchange_with_docs(out->exchange, docs);
    json_decref(docs);
    if (rc != KILN_OK)
        snprintf(out->invalid, sizeof(out->invalid), "the model call failed: %s", cerr.msg);
    else
        proposal_from_content(ex.content, ex.content_len, st->backend, out);
    llm_exchange_free(&ex);
    return KILN_OK;
}

static void llm_destroy(struct proposer *p)
{
    struct llm_proposer *l = (struct llm_proposer *)p;
    memset(l->s.api_key, 0, sizeof(l->s.api_key));
    docs_index_close(l->docs);
    free(l);
}

static const struct proposer_ops llm_ops = {"llm", llm_propose, NULL, llm_destroy, false, NULL};

enum kiln_rc proposer_new_llm(const struct llm_settings *s, struct proposer **out,
                              struct kiln_err *err)
{
    *out = NULL;
    if (!s->cfg.model || !*s->cfg.model)
        return kiln_fail(err, KILN_E_USAGE, "--proposer llm needs --model NAME");
    struct llm_proposer *l = calloc(1, sizeof(*l));
    if (!l)
        return kiln_fail(err, KILN_E_NOMEM, "llm proposer");
    l->base.ops = &llm_ops;
    l->s = *s;
    *out = &l->base;
    return KILN_OK;
}

enum kiln_rc proposer_llm_set_docs(struct proposer *p, struct docs_index *ix, int k,
                                   struct kiln_err *err)
{
    if (!p || p->ops != &llm_ops) {
        docs_index_close(ix);
        return kiln_fail(err, KILN_E_USAGE,
                         "--docs needs --proposer llm (only a model reads "
                         "documentation)");
    }
    if (k < 1 || k > DOCS_K_MAX) {
        docs_index_close(ix);
        return kiln_fail(err, KILN_E_USAGE, "--docs needs 1..%d passages, got %d", DOCS_K_MAX, k);
    }
    struct llm_proposer *l = (struct llm_proposer *)p;
    docs_index_close(l->docs);
    l->docs = ix;
    l->docs_k = k;
    return KILN_OK;
}
