/*
 * docs_index.h - documentation retrieval: passages (docs_corpus.h) in an
 * SQLite FTS5 index, ranked by bm25.
 *
 * kiln's own corpus (docs/cuda/NAME.md) is indexed at build time by
 * kiln-docs-index into docs.db next to the kiln binary (build/docs.db; an
 * installed kiln looks in ../share/kiln/docs.db too; $KILN_DOCS_DB names
 * another). A user's corpus (`--docs-dir DIR`) is checked on every use
 * (docs_corpus_load_dir) and indexed together with kiln's passages on
 * first use, into a cache file named by the digest of both corpora:
 * $KILN_DOCS_CACHE, else $XDG_CACHE_HOME/kiln/docs, else ~/.cache/kiln/docs
 * (created mode 0700). A changed file changes the digest, so a stale index
 * is never used. The user's passages get ids "user/<stem>/<slug>".
 *
 * Queries are free text. They never reach SQLite's query syntax: words
 * (letters and digits) are lower-cased, stop words dropped, at most
 * DOCS_QUERY_TERMS kept, each quoted and OR-ed, and the MATCH expression is
 * a bound parameter. Ranking: bm25 with the title weighted 4, the file's
 * topic 2, the body 1.
 *
 * Lifecycle: docs_index_open_builtin / docs_index_open_user ->
 * docs_index_search* (docs_hits_free each result) -> docs_index_close.
 */
#ifndef KILN_DOCS_INDEX_H
#define KILN_DOCS_INDEX_H

#include <stddef.h>

#include "docs_corpus.h"
#include "error.h"

#define DOCS_QUERY_TERMS 48 /* words of a query kept */
#define DOCS_LIMIT_MAX   20 /* hits of one search */

struct docs_index;

struct docs_hit {
    char *id, *title, *source, *topic;
    char *body;    /* the passage's whole text */
    char *excerpt; /* a short extract around the matching words */
    double score;  /* bm25: lower is a better match */
};

struct docs_hits {
    struct docs_hit *v;
    size_t n;
};

/* Writes a new index of corpus `c` at `path` (replaced atomically), with
 * `digest` recorded as the corpus's identity. */
enum kiln_rc docs_index_build(const char *path, const struct docs_corpus *c, const char *digest,
                              struct kiln_err *err) KILN_NODISCARD;

/* Opens an index read-only; fails with KILN_E_PARSE if it is not one
 * (another schema version included). */
enum kiln_rc docs_index_open(const char *path, struct docs_index **out,
                             struct kiln_err *err) KILN_NODISCARD;

/* Where kiln's own docs.db is (see above); KILN_E_NOTFOUND with the places
 * looked in and the fix when there is none. */
enum kiln_rc docs_index_builtin_path(char *out, size_t cap, struct kiln_err *err) KILN_NODISCARD;

enum kiln_rc docs_index_open_builtin(struct docs_index **out, struct kiln_err *err) KILN_NODISCARD;

/* kiln's passages and those of `dir` (checked as untrusted), from the
 * cache or indexed now. */
enum kiln_rc docs_index_open_user(const char *dir, struct docs_index **out,
                                  struct kiln_err *err) KILN_NODISCARD;

/* The digest recorded when the index was built (64 hex digits). */
const char *docs_index_digest(const struct docs_index *ix);

/* Passages in the index. */
size_t docs_index_count(const struct docs_index *ix);

/* The best `limit` (1..DOCS_LIMIT_MAX) passages for free-text `query`,
 * best first; none (n == 0) when no word of the query is indexed. */
enum kiln_rc docs_index_search(struct docs_index *ix, const char *query, size_t limit,
                               struct docs_hits *out, struct kiln_err *err) KILN_NODISCARD;

void docs_hits_free(struct docs_hits *h);

/* Frees one hit's strings and zeroes it. */
void docs_hit_free(struct docs_hit *x);

void docs_index_close(struct docs_index *ix);

/* The FTS5 MATCH expression for `query` ("\"word\" OR \"word\"..."), ""
 * when it has no usable word; *out is the caller's (free()). Exposed for
 * tests. */
enum kiln_rc docs_query_match(const char *query, char **out, struct kiln_err *err) KILN_NODISCARD;

#endif
