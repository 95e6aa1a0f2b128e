/*
 * fuzz_llm_reply.c - feeds each input to both strict parsers of
 * llm_reply.h: as a chat-completions envelope (and its content, when one
 * comes out, to the answer parser) and directly as the model's answer.
 * Checks the documented invariants of every successful parse, and that
 * llm_mask_key leaves no literal key in any text.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm_reply.h"

static void check_answer(const char *s, size_t n)
{
    struct llm_proposal p;
    struct kiln_err err = {0};
    if (llm_reply_parse(s, n, &p, &err) == KILN_OK) {
        if (!p.source || !p.rationale || p.source_len == 0 || p.source_len > LLM_SOURCE_MAX ||
            strlen(p.source) != p.source_len || strlen(p.rationale) > LLM_RATIONALE_MAX ||
            (p.language != LLM_LANG_CUDA && p.language != LLM_LANG_C))
            abort();
    } else if (p.source || p.rationale || err.msg[0] == '\0') {
        abort(); /* a failure leaves nothing behind and always says why */
    }
    llm_proposal_free(&p);
}

/* llm_mask_key: whatever the text, no literal key is left in it. */
static void check_mask(const char *s, size_t n)
{
    static const char key[] = "sk-aaaaaaaaaaaaaaaa";
    char *t = malloc(n + 1);
    if (!t)
        return;
    memcpy(t, s, n);
    t[n] = '\0';
    size_t len = n;
    if (llm_mask_key(&t, &len, key) && memmem(t, len, key, sizeof(key) - 1))
        abort();
    free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    char *content = NULL;
    size_t content_len = 0;
    struct llm_usage usage;
    struct kiln_err err = {0};
    if (llm_envelope_parse(s, size, &content, &content_len, &usage, &err) == KILN_OK) {
        if (!content || strlen(content) != content_len || content_len > LLM_CONTENT_MAX)
            abort();
        check_answer(content, content_len);
    } else if (content || err.msg[0] == '\0') {
        abort();
    }
    if (usage.prompt_tokens < -1 || usage.completion_tokens < -1)
        abort();
    free(content);
    check_answer(s, size);
    check_mask(s, size);
    return 0;
}
