/*
 * fuzz_wlgen_reply.c - feeds each input to wlgen_reply_parse (a model's
 * generated workload) directly and, when it is a chat-completions envelope,
 * its content too. Checks the documented invariants: a success holds the
 * three required files and at least one kernel, each within the loader's
 * cap and NUL-free; a failure leaves nothing behind and says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm_reply.h"
#include "wlgen_reply.h"

static const size_t caps[WL_FILE_COUNT] = {WL_MAX_JSON, WL_MAX_SCRIPT, WL_MAX_SCRIPT, WL_MAX_KERNEL,
                                           WL_MAX_KERNEL};

static void check(const char *s, size_t n)
{
    struct wlgen_reply r;
    struct kiln_err err = {0};
    if (wlgen_reply_parse(s, n, &r, &err) == KILN_OK) {
        for (int f = 0; f < WL_FILE_COUNT; f++) {
            if (!r.files[f])
                continue;
            if (r.lens[f] == 0 || r.lens[f] > caps[f] || strlen(r.files[f]) != r.lens[f])
                abort();
        }
        if (!r.files[WL_FILE_JSON] || !r.files[WL_FILE_INPUTS] || !r.files[WL_FILE_REFERENCE] ||
            (!r.files[WL_FILE_KERNEL_CU] && !r.files[WL_FILE_KERNEL_C]) || !r.rationale ||
            strlen(r.rationale) > WLGEN_RATIONALE_MAX)
            abort();
    } else {
        for (int f = 0; f < WL_FILE_COUNT; f++)
            if (r.files[f])
                abort();
        if (r.rationale || err.msg[0] == '\0')
            abort();
    }
    wlgen_reply_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    char *content = NULL;
    size_t content_len = 0;
    struct llm_usage usage;
    struct kiln_err err = {0};
    if (llm_envelope_parse(s, size, &content, &content_len, &usage, &err) == KILN_OK)
        check(content, content_len);
    free(content);
    check(s, size);
    return 0;
}
