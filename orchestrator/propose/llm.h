/*
 * llm.h - one chat-completions request to an OpenAI-compatible server
 * (OpenAI, llama.cpp, vLLM, Ollama: anything speaking POST
 * {base_url}/chat/completions), with retries, a timeout and a reply cap.
 *
 * Lifecycle: the program calls curl_global_init(CURL_GLOBAL_DEFAULT) once in
 * main() before any thread starts, and curl_global_cleanup() at exit; this
 * module keeps no global state (each llm_chat uses its own curl easy handle),
 * so calls may run concurrently. Fill a struct llm_config, call llm_chat()
 * with a zeroed struct llm_exchange, read the exchange, then
 * llm_exchange_free() it -- also after a failure, which still records what
 * happened (attempts, status, the request, usage of a truncated reply).
 *
 * The API key travels only in the Authorization header: it is never in the
 * recorded request, never in an error message, and if the server echoes it
 * back it is masked in the recorded reply. A key is never sent over plain
 * http except to a loopback host.
 *
 * The model is asked for structured output: response_format json_schema with
 * the candidate schema of llm_reply.h (or cfg->schema); when the server answers 400 to that
 * (many local servers), the request is repeated once with json_object. The
 * caller parses exchange.content with llm_reply_parse().
 */
#ifndef KILN_LLM_H
#define KILN_LLM_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define LLM_DEFAULT_BASE_URL       "https://api.openai.com/v1"
#define LLM_DEFAULT_TIMEOUT_MS     180000L
#define LLM_DEFAULT_REPLY_MAX      (4u * 1024u * 1024u)
#define LLM_DEFAULT_BACKOFF_MS     1000L
#define LLM_DEFAULT_BACKOFF_MAX_MS 60000L
#define LLM_MAX_RETRIES_CAP        10

/* Zero selects the default for the timeout, size and backoff fields. */
struct llm_config {
    const char *base_url;      /* NULL: LLM_DEFAULT_BASE_URL; http(s) only */
    const char *model;         /* required */
    long timeout_ms;           /* per attempt, whole transfer; 0: default */
    size_t max_reply_bytes;    /* reply body cap; 0: default; at most 64 MiB */
    int max_retries;           /* retries after the first attempt (0: none), 0..10 */
    long backoff_initial_ms;   /* first retry delay before jitter; 0: default */
    long backoff_max_ms;       /* cap on any one delay, Retry-After included */
    long max_tokens;           /* sent as max_tokens when > 0 */
    double price_in_per_mtok;  /* USD per million prompt tokens; 0: unknown */
    double price_out_per_mtok; /* USD per million completion tokens; 0: unknown */
    /* The structured answer asked for: a JSON Schema as JSON text and its
     * name. NULL: the candidate schema of llm_reply.h ("kiln_candidate"). */
    const char *schema;
    const char *schema_name;
};

/* What one llm_chat call did. All pointers are owned by the exchange. */
struct llm_exchange {
    char *request_body; /* the JSON sent last (no key), NUL-terminated */
    char *reply_body;   /* raw body of the last attempt (key masked), NUL-terminated */
    size_t reply_len;   /* bytes in reply_body (at most max_reply_bytes) */
    char *content;      /* choices[0].message.content on success, else NULL */
    size_t content_len;
    const char *response_format; /* "json_schema" or "json_object" (static) */
    long http_status;            /* of the last attempt; 0 when none came */
    int attempts;                /* HTTP requests made, retries and fallback included */
    long backoff_ms;             /* total time slept between attempts */
    double latency_s;            /* wall time of the whole call, sleeps included */
    long prompt_tokens;          /* from "usage"; -1 when unknown */
    long completion_tokens;      /* from "usage"; -1 when unknown */
    double cost_usd;             /* from usage and prices; -1 when unknown */
};

/*
 * Sends system_prompt and user_prompt to cfg->model and waits for the
 * answer. api_key may be NULL (local servers): then no Authorization header
 * is sent. Retries 429, 5xx and connection failures or timeouts with
 * exponential backoff and jitter, honoring Retry-After up to backoff_max_ms;
 * other 4xx fail at once with the server's message. Errors: KILN_E_USAGE
 * (bad config, URL or key), KILN_E_REJECTED (the server refused: 4xx, a
 * redirect, a refusal), KILN_E_TIMEOUT (no answer in time after all
 * retries), KILN_E_IO (network or 5xx after all retries), KILN_E_LIMIT
 * (reply over max_reply_bytes, truncated completion), KILN_E_PARSE (the
 * envelope is not chat-completions JSON). The whole call takes at most
 * (max_retries + 2) * timeout_ms plus the backoff sleeps.
 */
enum kiln_rc llm_chat(const struct llm_config *cfg, const char *api_key, const char *system_prompt,
                      const char *user_prompt, struct llm_exchange *out,
                      struct kiln_err *err) KILN_NODISCARD;

/* The exchange as a run records it (results/README.md, exchange.json): status
 * ("ok", or "error" with `error`), HTTP status, attempts, latency, tokens,
 * cost, the request and the raw reply; never the key. Indented JSON text
 * (free()), or NULL when out of memory. */
char *llm_exchange_to_json(const struct llm_exchange *ex, const char *error);

/* Reads a recorded exchange.json, `rel` under `run_dir` (a replayed run's;
 * at most 80 MiB; opened beneath run_dir, never through a link): *doc
 * (json_decref it) with *status its "status" and *reply its "reply" (NULL
 * when absent), both owned by *doc. A missing file is KILN_E_NOTFOUND as
 * fs_read_file says it; a document without a status, KILN_E_PARSE. */
enum kiln_rc llm_exchange_load(const char *run_dir, const char *rel, json_t **doc,
                               const char **status, const char **reply,
                               struct kiln_err *err) KILN_NODISCARD;

/* Frees what the exchange owns and zeroes it; safe on a zeroed exchange. */
void llm_exchange_free(struct llm_exchange *ex);

#endif
