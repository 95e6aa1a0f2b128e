/*
 * docs_corpus.h - the one parser of documentation corpora: markdown files
 * of short passages that kiln's retrieval (docs_index.h) indexes and the
 * llm proposer quotes. kiln's own corpus is docs/cuda/NAME.md; a user may add
 * a directory of their own (`--docs-dir DIR`), which is untrusted text.
 *
 * A file:
 *
 *   # Topic of the file                      (optional, at most one)
 *
 *   ## Title of a passage                    (starts a passage)
 *   Source: CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"
 *
 *   Body: any text up to the next "## " heading or the end of the file.
 *
 * The first non-blank line after a passage's heading may be "Source: ..."
 * (what the passage summarizes); kiln's own corpus must have one in every
 * passage (DOCS_REQUIRE_SOURCE), a user's passage without one names its
 * file instead. Text before the first "## " other than the "# " topic and
 * blank lines is refused (it would belong to no passage). "###" and deeper
 * headings are body text. A passage's id is "<stem>/<slug of its title>"
 * (stem: the file name without ".md"; slug: lower-case letters and digits,
 * other runs become "-"); ids are unique within a corpus.
 *
 * Checks (each failure names the file, the line where it can, and the fix):
 * the whole file is valid UTF-8 (no overlong forms, surrogates or values
 * past U+10FFFF), no control characters but newline and tab (no CR, no
 * ESC, no C1 controls, no bidirectional overrides), at most DOCS_FILE_MAX
 * bytes per file, DOCS_TOTAL_MAX for a corpus, DOCS_FILES_MAX files of
 * [A-Za-z0-9._-]+.md in one directory (others are ignored; symlinks and
 * non-regular .md entries are refused), DOCS_PASSAGES_MAX passages, titles
 * and source lines of bounded length, non-empty bodies.
 *
 * Lifecycle: docs_corpus_parse / docs_corpus_load_dir fill a zeroed
 * struct docs_corpus; docs_corpus_free releases it (also after a failure).
 */
#ifndef KILN_DOCS_CORPUS_H
#define KILN_DOCS_CORPUS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define DOCS_FILE_MAX      (64u << 10) /* bytes of one markdown file */
#define DOCS_TOTAL_MAX     (4u << 20)  /* bytes of all files of a corpus */
#define DOCS_FILES_MAX     256         /* markdown files in one directory */
#define DOCS_PASSAGES_MAX  4096        /* passages in a corpus */
#define DOCS_TITLE_MAX     160         /* bytes of a heading's text */
#define DOCS_SOURCE_MAX    300         /* bytes of a "Source:" line's text */
#define DOCS_ID_MAX        200         /* bytes of a passage id, with the NUL */
#define DOCS_FILE_NAME_MAX 100         /* bytes of a file's name */

struct docs_passage {
    char id[DOCS_ID_MAX]; /* "coalescing/what-coalescing-means" */
    char *file;           /* the file's name, "coalescing.md" */
    char *topic;          /* the file's "# " heading, or "" */
    char *title;          /* the passage's "## " heading */
    char *source;         /* what it summarizes (or the file's name) */
    char *body;           /* trimmed text, never empty */
    unsigned line;        /* the heading's line in its file */
};

struct docs_corpus {
    struct docs_passage *passages;
    size_t n, cap;
    size_t bytes; /* file bytes read, against DOCS_TOTAL_MAX */
};

enum docs_parse_flags {
    DOCS_REQUIRE_SOURCE = 1, /* every passage must carry a "Source:" line */
};

/* Checks `len` bytes as corpus text: UTF-8 and control characters. On a
 * violation fails with KILN_E_REJECTED naming `name`, the line and the fix. */
enum kiln_rc docs_text_check(const char *name, const char *buf, size_t len,
                             struct kiln_err *err) KILN_NODISCARD;

/* Checks and splits one file's text (`name` is its file name, used for
 * ids, messages and the default source) and appends its passages to *c. */
enum kiln_rc docs_corpus_parse(struct docs_corpus *c, const char *name, const char *buf, size_t len,
                               unsigned flags, struct kiln_err *err) KILN_NODISCARD;

/* Every *.md file of directory `dir`, in name order, through
 * docs_corpus_parse. When `digest` is not NULL it gets the SHA-256 (hex)
 * of the corpus: the names and bytes of the files read, in order. On a
 * failure *c is as it was (no passage of the directory is kept). */
enum kiln_rc docs_corpus_load_dir(struct docs_corpus *c, const char *dir, unsigned flags,
                                  char digest[65], struct kiln_err *err) KILN_NODISCARD;

/* A zeroed passage at c->passages[c->n], the array grown to hold it; the
 * caller fills it and counts it (c->n++). NULL (err set) when memory runs
 * out. The one place a corpus grows: docs_corpus_parse's passages and the
 * index's read-back (docs_index.c) both go through it. */
struct docs_passage *docs_corpus_slot(struct docs_corpus *c, struct kiln_err *err) KILN_NODISCARD;

void docs_corpus_free(struct docs_corpus *c);

#endif
