/*
 * llm_reply.h - strict parsers for what an LLM server sends back: the
 * chat-completions envelope and, inside it, the model's structured answer.
 *
 * Both inputs are untrusted (a remote server, a model that was asked nicely).
 * Each parser checks sizes first, parses with jansson (duplicate keys, NULs
 * and invalid UTF-8 rejected), and fails with one line that can be fed back
 * to the model verbatim ("reply was not valid JSON at line 1 column 5: ...").
 * Quoted pieces of the input in messages are escaped and truncated.
 *
 * Ownership: every pointer a parser stores in an out struct is heap memory
 * owned by that struct; free it with the matching *_free function, which is
 * safe on a zeroed or already freed struct. On failure the out struct is left
 * zeroed (llm_envelope_parse still fills usage when the envelope carried it,
 * since a truncated reply was still paid for).
 */
#ifndef KILN_LLM_REPLY_H
#define KILN_LLM_REPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define LLM_SOURCE_MAX    (1024u * 1024u) /* bytes of source, as CANDIDATE.md */
#define LLM_RATIONALE_MAX (4u * 1024u)
#define LLM_CONTENT_MAX   (4u * 1024u * 1024u) /* the whole message content */
#define LLM_ENVELOPE_MAX  (64u * 1024u * 1024u)

/* An API key shorter than this is not treated as a secret: not masked in
 * replies, and a prompt containing it is not refused. Local servers
 * (vLLM, llama.cpp) are run with keys such as "x" or "EMPTY", which every
 * other prompt contains; no real provider key is this short. */
#define LLM_KEY_SECRET_MIN 16

enum llm_language {
    LLM_LANG_CUDA = 0, /* "cuda": a .cu candidate */
    LLM_LANG_C = 1,    /* "c": a .c CPU candidate */
};

/* The model's answer: one candidate. The launch plan lives in `source` as
 * `// kiln:` directives (evaluator/CANDIDATE.md); this parser does not read
 * them. */
struct llm_proposal {
    char *source; /* NUL-terminated; no embedded NUL; 1..LLM_SOURCE_MAX bytes */
    size_t source_len;
    char *rationale; /* NUL-terminated; at most LLM_RATIONALE_MAX bytes */
    enum llm_language language;
};

/* What the chat-completions envelope says besides the content. */
struct llm_usage {
    long prompt_tokens;     /* -1 when the server did not say */
    long completion_tokens; /* -1 when the server did not say */
};

/*
 * Parses the assistant message content: exactly one JSON object
 * {"source": string, "rationale": string, "language": "cuda"|"c"}, optionally
 * wrapped in a single ```json (or bare ```) fence with only whitespace
 * around it. Unknown keys, missing keys, wrong types, embedded NULs and
 * oversize fields are errors: KILN_E_PARSE (not JSON), KILN_E_LIMIT (too
 * big), KILN_E_REJECTED (valid JSON, wrong shape). `content` need not be
 * NUL-terminated.
 */
enum kiln_rc llm_reply_parse(const char *content, size_t len, struct llm_proposal *out,
                             struct kiln_err *err) KILN_NODISCARD;

void llm_proposal_free(struct llm_proposal *p);

/*
 * The first half of llm_reply_parse, for other structured answers (a
 * generated workload, wlgen_reply.h): checks the size and NULs, unwraps the
 * one allowed ```json fence and parses exactly one JSON object (duplicate
 * keys rejected) into *out, which the caller json_decref()s. `keys` lists
 * the expected keys for messages ("source, rationale and language"). Same
 * errors as llm_reply_parse; *out is NULL on failure.
 */
enum kiln_rc llm_reply_object(const char *content, size_t len, const char *keys, json_t **out,
                              struct kiln_err *err) KILN_NODISCARD;

/* Copies the string member `key` of `obj` into *out (heap, NUL-terminated;
 * *out_len bytes when out_len is not NULL): KILN_E_REJECTED when it is not a
 * string or holds a NUL, KILN_E_LIMIT over `max` bytes. */
enum kiln_rc llm_reply_string(const json_t *obj, const char *key, size_t max, char **out,
                              size_t *out_len, struct kiln_err *err) KILN_NODISCARD;

/*
 * Extracts choices[0].message.content (a string) from a chat-completions
 * response body into *content (heap, NUL-terminated, *content_len bytes) and
 * the token counts from "usage" into *usage. finish_reason "length" (the
 * model ran out of tokens) and "content_filter", a refusal, or a missing
 * content are errors that say so. Other envelope keys are ignored: servers
 * add their own. `usage` is filled even when the content is rejected.
 */
enum kiln_rc llm_envelope_parse(const char *body, size_t len, char **content, size_t *content_len,
                                struct llm_usage *usage, struct kiln_err *err) KILN_NODISCARD;

/* Writes a printable, quoted, truncated rendering of untrusted bytes into
 * buf (always NUL-terminated), for error messages. Returns buf. */
const char *llm_snippet(const char *s, size_t n, char *buf, size_t cap);

/*
 * Masks `key` with '*' in text[len]: where it appears literally and, when
 * the text (or its span from the first '{' to the last '}', for a fenced
 * answer) is JSON, in every string it decodes to, strings holding JSON
 * included (a server that echoes the key escaped, "\u0073k-...", or escaped
 * twice). A decoded match re-serializes the text: *text is replaced (the
 * old buffer freed) and *len updated. Keys shorter than LLM_KEY_SECRET_MIN
 * are left alone. Returns false only when out of memory (then the text is
 * masked literally but may still hold an escaped key: do not record it).
 */
bool llm_mask_key(char **text, size_t *len, const char *key);

#endif
