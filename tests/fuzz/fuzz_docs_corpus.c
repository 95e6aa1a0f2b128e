/* libFuzzer target: a documentation corpus file (`--docs-dir`, untrusted markdown). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "docs_corpus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct docs_corpus c = {0};
    struct kiln_err err;
    kiln_err_clear(&err);
    unsigned flags = size && (data[0] & 1) ? DOCS_REQUIRE_SOURCE : 0;
    if (docs_corpus_parse(&c, "fuzz.md", (const char *)data, size, flags, &err) == KILN_OK) {
        /* Everything kept is checked text: no control characters, ids unique. */
        for (size_t i = 0; i < c.n; i++) {
            struct docs_passage *p = &c.passages[i];
            if (docs_text_check("body", p->body, strlen(p->body), &err) != KILN_OK || !p->body[0] ||
                !p->title[0] || strncmp(p->id, "fuzz/", 5) != 0)
                __builtin_trap();
            for (size_t j = i + 1; j < c.n; j++)
                if (strcmp(p->id, c.passages[j].id) == 0)
                    __builtin_trap();
        }
    } else if (c.n != 0) {
        __builtin_trap(); /* a refused file leaves nothing behind */
    }
    docs_corpus_free(&c);
    return 0;
}
