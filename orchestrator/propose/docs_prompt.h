/*
 * docs_prompt.h - documentation for the llm proposer (`kiln optimize
 * --proposer llm --docs K`): what to look up for the state of a run, and
 * the prompt block that quotes what was found (docs_index.h searches).
 *
 * The query is built from what the run knows, most specific first: words
 * for the last attempt's verdict (a wrong answer asks for numerics, a
 * resource failure for registers and shared memory), words for the current
 * best's Nsight Compute metrics (profile_summarize's text: spills, low
 * occupancy, memory- or compute-bound, neither), then the workload's name
 * and description. docs_query_match keeps the first DOCS_QUERY_TERMS words.
 *
 * A long description would outvote a few hint words in one bm25 ranking,
 * so docs_prompt_search fills up to half of the K slots from the hints
 * alone (when there are any) and the rest from the whole query.
 */
#ifndef KILN_DOCS_PROMPT_H
#define KILN_DOCS_PROMPT_H

#include <stddef.h>

#include "docs_index.h"
#include "error.h"
#include "proposer.h"
#include "strbuf.h"

#define DOCS_PROMPT_MAX (8u << 10) /* bytes of the prompt block, all passages */
#define DOCS_K_MAX      8          /* passages a prompt may carry */

/* Appends words for a profile block (profile_summarize's text) to sb:
 * nothing when the text has no metric kiln knows. */
void docs_profile_hints(const char *profile, struct strbuf *sb);

/* The query for state `st`; *out is the caller's (free()). */
enum kiln_rc docs_prompt_query(const struct opt_state *st, char **out,
                               struct kiln_err *err) KILN_NODISCARD;

/* The hint words alone (verdict, profile); "" when there are none. */
enum kiln_rc docs_prompt_hints(const struct opt_state *st, char **out,
                               struct kiln_err *err) KILN_NODISCARD;

/* The `k` (1..DOCS_K_MAX) passages for state `st` (see above), without
 * duplicates, hint-chosen first; *query gets the whole query (free()). */
enum kiln_rc docs_prompt_search(struct docs_index *ix, const struct opt_state *st, size_t k,
                                struct docs_hits *out, char **query,
                                struct kiln_err *err) KILN_NODISCARD;

/* The prompt block quoting `h`'s passages (title, id, source, text), at
 * most `cap` bytes: each passage's text is cut to its share, at a UTF-8
 * boundary, marked "[...]". A passage whose heading alone does not fit its
 * share is dropped from *h, so that *h is what the block quotes (and what
 * the exchange record names). "" when there are no hits. */
enum kiln_rc docs_prompt_block(struct docs_hits *h, size_t cap, char **out,
                               struct kiln_err *err) KILN_NODISCARD;

#endif
