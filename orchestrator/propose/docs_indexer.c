/*
 * docs_indexer.c - kiln-docs-index, a build-time tool: checks kiln's own
 * documentation corpus (docs/cuda/NAME.md, every passage with its source) and
 * writes the FTS5 index kiln ships next to its binary (build/docs.db).
 *
 *   kiln-docs-index DOCS_DIR OUT.db
 */
#include <stdio.h>

#include "docs_corpus.h"
#include "docs_index.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: kiln-docs-index DOCS_DIR OUT.db\n");
        return 2;
    }
    struct docs_corpus c = {0};
    char digest[65];
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = docs_corpus_load_dir(&c, argv[1], DOCS_REQUIRE_SOURCE, digest, &err);
    if (rc == KILN_OK)
        rc = docs_index_build(argv[2], &c, digest, &err);
    if (rc == KILN_OK)
        printf("kiln-docs-index: %zu passages from %s in %s\n", c.n, argv[1], argv[2]);
    else
        fprintf(stderr, "kiln-docs-index: %s\n", err.msg);
    docs_corpus_free(&c);
    return rc == KILN_OK ? 0 : 1;
}
