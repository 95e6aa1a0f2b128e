#include "llm.h"
#include "clock.h"
#include "json_strict.h"

#include "fsutil.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "kiln_version.h"
#include "llm_reply.h"
#include "beneath.h"

/* The reply body, grown on demand up to the cap. */
struct sink {
    char *buf;
    size_t len;
    size_t alloc;
    size_t max;
    bool overflow;
};

static size_t sink_write(char *p, size_t size, size_t nmemb, void *userdata)
{
    struct sink *s = userdata;
    size_t n = size * nmemb;
    if (n > s->max - s->len) {
        /* Returning short aborts the transfer with CURLE_WRITE_ERROR. */
        s->overflow = true;
        return 0;
    }
    if (s->len + n + 1 > s->alloc) {
        size_t want = s->alloc ? s->alloc : 16384;
        while (want < s->len + n + 1)
            want *= 2;
        if (want > s->max + 1)
            want = s->max + 1;
        char *nb = realloc(s->buf, want);
        if (!nb)
            return 0;
        s->buf = nb;
        s->alloc = want;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return n;
}

/* Uniform in [0, n); getrandom avoids any shared PRNG state. */
static long jitter(long n)
{
    uint64_t r = 0;
    if (n <= 0)
        return 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull;
    }
    return (long)(r % (uint64_t)n);
}

/* Exponential backoff with jitter in [d/2, d], raised to Retry-After. */
static long backoff_delay(long initial, long cap, int retry, long retry_after_s)
{
    long d = initial;
    for (int i = 0; i < retry && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    d = d / 2 + jitter(d / 2 + 1);
    if (retry_after_s > 0) {
        long ra = retry_after_s > cap / 1000 + 1 ? cap : retry_after_s * 1000;
        if (ra > d)
            d = ra;
    }
    return d > cap ? cap : d;
}

static void mask_key(char *buf, size_t len, const char *key)
{
    size_t kl = key ? strlen(key) : 0;
    if (kl < LLM_KEY_SECRET_MIN || !buf)
        return;
    char *p = buf;
    while ((p = memmem(p, len - (size_t)(p - buf), key, kl)) != NULL) {
        memset(p, '*', kl);
        p += kl;
    }
}

/* The strict schema of the candidate object (llm_reply.h). */
static json_t *candidate_schema(void)
{
    return json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:[s,s], s:s}}, s:[s,s,s], s:b}",
                     "type", "object", "properties", "source", "type", "string", "description",
                     "the complete candidate source file with its // kiln: directives", "rationale",
                     "type", "string", "description",
                     "why this candidate should be faster, in a few sentences", "language", "type",
                     "string", "enum", "cuda", "c", "description",
                     "cuda for a .cu candidate, c for a CPU candidate", "required", "source",
                     "rationale", "language", "additionalProperties", 0);
}

static enum kiln_rc build_request(const struct llm_config *cfg, const char *system_prompt,
                                  const char *user_prompt, bool schema, char **out,
                                  struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    json_t *msgs = json_array();
    json_t *req = json_object();
    json_t *fmt = NULL;
    if (!msgs || !req) {
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory building the request");
        goto out;
    }
    if (system_prompt) {
        json_t *s = json_stringn(system_prompt, strlen(system_prompt));
        if (!s) {
            rc = kiln_fail(err, KILN_E_USAGE, "the system prompt is not valid UTF-8");
            goto out;
        }
        json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "system", "content", s));
    }
    json_t *u = json_stringn(user_prompt, strlen(user_prompt));
    if (!u) {
        rc = kiln_fail(err, KILN_E_USAGE, "the user prompt is not valid UTF-8");
        goto out;
    }
    json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "user", "content", u));
    if (schema && cfg->schema) {
        json_error_t jerr;
        json_t *sch = json_loads(cfg->schema, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(sch)) {
            json_decref(sch);
            rc = kiln_fail(err, KILN_E_INTERNAL, "the response schema is not a JSON object: %s",
                           jerr.text);
            goto out;
        }
        fmt = json_pack("{s:s, s:{s:s, s:b, s:o}}", "type", "json_schema", "json_schema", "name",
                        cfg->schema_name ? cfg->schema_name : "kiln_answer", "strict", 1, "schema",
                        sch);
    } else if (schema) {
        fmt = json_pack("{s:s, s:{s:s, s:b, s:o}}", "type", "json_schema", "json_schema", "name",
                        "kiln_candidate", "strict", 1, "schema", candidate_schema());
    } else {
        fmt = json_pack("{s:s}", "type", "json_object");
    }
    json_t *model = json_string(cfg->model);
    if (!model) {
        rc = kiln_fail(err, KILN_E_USAGE, "the model name is not valid UTF-8");
        goto out;
    }
    if (!fmt || json_object_set_new(req, "model", model) != 0 ||
        json_object_set(req, "messages", msgs) != 0 ||
        json_object_set(req, "response_format", fmt) != 0 ||
        (cfg->max_tokens > 0 &&
         json_object_set_new(req, "max_tokens", json_integer(cfg->max_tokens)) != 0)) {
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory building the request");
        goto out;
    }
    *out = json_dumps(req, JSON_COMPACT);
    if (!*out)
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory serializing the request");
out:
    json_decref(fmt);
    json_decref(msgs);
    json_decref(req);
    return rc;
}

/* This machine by address (127.0.0.0/8, ::1, ::ffff:127.x) or by the name
 * "localhost" exactly; "127.attacker.example" is a name like any other. */
static bool is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0)
        return true;
    char h[INET6_ADDRSTRLEN + 2];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(h)) {
        memcpy(h, host + 1, n - 2); /* curl gives IPv6 hosts in brackets */
        h[n - 2] = '\0';
    } else if (n < sizeof(h)) {
        memcpy(h, host, n + 1);
    } else {
        return false;
    }
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, h, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, h, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return false;
}

/* {base_url}/chat/completions, checked: http(s) only, and a key only over
 * https or to this machine. */
static enum kiln_rc build_url(const char *base, bool with_key, char **out, struct kiln_err *err)
{
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    static const char suffix[] = "/chat/completions";
    char *url = malloc(n + sizeof(suffix));
    if (!url)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory building the URL");
    memcpy(url, base, n);
    memcpy(url + n, suffix, sizeof(suffix));

    enum kiln_rc rc = KILN_OK;
    char *scheme = NULL, *host = NULL;
    CURLU *u = curl_url();
    if (!u) {
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory parsing the URL");
        goto out;
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
        rc = kiln_fail(err, KILN_E_USAGE,
                       "--base-url %s is not a URL: use e.g. https://api.openai.com/v1 or "
                       "http://127.0.0.1:8080/v1",
                       base);
        goto out;
    }
    if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0) {
        rc = kiln_fail(err, KILN_E_USAGE, "--base-url %s: only http and https are supported", base);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0]) {
        rc = kiln_fail(err, KILN_E_USAGE, "--base-url %s has no host name", base);
        goto out;
    }
    if (with_key && strcmp(scheme, "http") == 0 && !is_loopback(host)) {
        rc = kiln_fail(err, KILN_E_USAGE,
                       "refusing to send the API key over plain http to %s: use https, or no "
                       "key for a local server",
                       host);
        goto out;
    }
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    if (rc != KILN_OK)
        free(url);
    else
        *out = url;
    return rc;
}

/* The server's own explanation from an error body: {"error":{"message":..}}
 * (OpenAI, vLLM, llama.cpp) or {"error":".."} (Ollama), else the raw text. */
static const char *server_message(const char *body, size_t len, const char *key, char *buf,
                                  size_t cap)
{
    static const struct json_strict_rules rules = {.max_bytes = LLM_ENVELOPE_MAX};
    struct kiln_err ignored = KILN_ERR_INIT;
    json_t *root = NULL;
    if (body)
        (void)json_strict_parse("error body", body, len, &rules, &root, &ignored);
    json_t *e = json_object_get(root, "error");
    json_t *m = json_is_string(e) ? e : json_object_get(e, "message");
    if (json_is_string(m))
        llm_snippet(json_string_value(m), json_string_length(m), buf, cap);
    else if (body && len > 0)
        llm_snippet(body, len, buf, cap);
    else
        snprintf(buf, cap, "(empty body)");
    json_decref(root);
    /* The body was masked, but a JSON-escaped key decodes back to the key. */
    mask_key(buf, strlen(buf), key);
    return buf;
}

static bool curl_retryable(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

enum kiln_rc llm_exchange_load(const char *run_dir, const char *rel, json_t **doc,
                               const char **status, const char **reply, struct kiln_err *err)
{
    *doc = NULL;
    *status = *reply = NULL;
    char *text = NULL, path[PATH_MAX];
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/%s", run_dir, rel);
    /* The replayed run is a record from anywhere: never through a link. */
    enum kiln_rc rc = beneath_read_file(run_dir, rel, 80u << 20, &text, &len, err);
    if (rc != KILN_OK)
        return rc;
    static const struct json_strict_rules rules = {.max_bytes = 80u << 20};
    json_t *d = NULL;
    rc = json_strict_parse(path, text, len, &rules, &d, err);
    free(text);
    if (rc != KILN_OK)
        return rc;
    const char *st = json_string_value(json_object_get(d, "status"));
    if (!d || !st) {
        json_decref(d);
        return kiln_fail(err, KILN_E_PARSE, "%s: not an exchange record", path);
    }
    *doc = d;
    *status = st;
    *reply = json_string_value(json_object_get(d, "reply"));
    return KILN_OK;
}

char *llm_exchange_to_json(const struct llm_exchange *ex, const char *error)
{
    json_t *doc = json_pack(
        "{s:s, s:s?, s:i, s:i, s:f, s:i, s:i, s:f, s:s?, s:s?}", "status", error ? "error" : "ok",
        "error", error, "http_status", (json_int_t)ex->http_status, "attempts",
        (json_int_t)ex->attempts, "latency_s", ex->latency_s, "prompt_tokens",
        (json_int_t)ex->prompt_tokens, "completion_tokens", (json_int_t)ex->completion_tokens,
        "cost_usd", ex->cost_usd, "request", ex->request_body, "reply", ex->reply_body);
    char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return text;
}

void llm_exchange_free(struct llm_exchange *ex)
{
    if (!ex)
        return;
    free(ex->request_body);
    free(ex->reply_body);
    free(ex->content);
    memset(ex, 0, sizeof(*ex));
}

static void free_headers(struct curl_slist *h)
{
    /* The Authorization line holds the key: wipe before freeing. */
    for (struct curl_slist *p = h; p; p = p->next)
        explicit_bzero(p->data, strlen(p->data));
    curl_slist_free_all(h);
}

static enum kiln_rc make_headers(const char *api_key, struct curl_slist **out, struct kiln_err *err)
{
    static const char *const fixed[] = {"Content-Type: application/json",
                                        "Accept: application/json", "Expect:"};
    struct curl_slist *h = NULL;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        struct curl_slist *t = curl_slist_append(h, fixed[i]);
        if (!t)
            goto nomem;
        h = t;
    }
    if (api_key) {
        static const char prefix[] = "Authorization: Bearer ";
        size_t kl = strlen(api_key);
        char *line = malloc(sizeof(prefix) + kl);
        if (!line)
            goto nomem;
        memcpy(line, prefix, sizeof(prefix) - 1);
        memcpy(line + sizeof(prefix) - 1, api_key, kl + 1);
        struct curl_slist *t = curl_slist_append(h, line);
        explicit_bzero(line, sizeof(prefix) + kl);
        free(line);
        if (!t)
            goto nomem;
        h = t;
    }
    *out = h;
    return KILN_OK;
nomem:
    free_headers(h);
    return kiln_fail(err, KILN_E_NOMEM, "out of memory building the request headers");
}

static enum kiln_rc check_inputs(const struct llm_config *cfg, const char *api_key,
                                 const char *user_prompt, struct kiln_err *err)
{
    if (!cfg || !cfg->model || !cfg->model[0])
        return kiln_fail(err, KILN_E_USAGE, "no model given: pass --model (e.g. gpt-4.1)");
    if (!user_prompt)
        return kiln_fail(err, KILN_E_INTERNAL, "llm_chat: no user prompt");
    if (cfg->max_retries < 0 || cfg->max_retries > LLM_MAX_RETRIES_CAP)
        return kiln_fail(err, KILN_E_USAGE, "max_retries %d is outside 0..%d", cfg->max_retries,
                         LLM_MAX_RETRIES_CAP);
    if (cfg->max_reply_bytes > LLM_ENVELOPE_MAX)
        return kiln_fail(err, KILN_E_USAGE, "max_reply_bytes %zu is over the %u byte ceiling",
                         cfg->max_reply_bytes, LLM_ENVELOPE_MAX);
    if (cfg->timeout_ms < 0 || cfg->backoff_initial_ms < 0 || cfg->backoff_max_ms < 0)
        return kiln_fail(err, KILN_E_USAGE, "timeouts and backoff times must not be negative");
    if (api_key) {
        if (!api_key[0])
            return kiln_fail(err, KILN_E_USAGE, "the API key is empty: set OPENAI_API_KEY");
        for (const char *p = api_key; *p; p++) {
            if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
                return kiln_fail(err, KILN_E_USAGE,
                                 "the API key contains a space or control character: check "
                                 "OPENAI_API_KEY");
        }
    }
    return KILN_OK;
}

/* One llm_chat() call: its inputs, the settings with defaults applied, the
 * curl handle and the reply as it arrives. */
struct chat {
    const struct llm_config *cfg;
    const char *api_key, *system_prompt, *user_prompt;
    struct llm_exchange *out;
    long timeout_ms, backoff0, backoff_max;
    struct sink sink;
    char errbuf[CURL_ERROR_SIZE];
    char *url;
    struct curl_slist *headers;
    CURL *h;
    bool schema, fell_back;
    int retries;
};

/* What one attempt got back from curl. */
struct attempt {
    CURLcode cc;
    long status;
    curl_off_t retry_after;
};

/* After an attempt: stop (with its rc), retry after a backoff, or send the
 * rewritten request at once. */
enum next { NEXT_DONE, NEXT_RETRY, NEXT_RESEND };

static void chat_init(struct chat *c, const struct llm_config *cfg, const char *api_key,
                      const char *system_prompt, const char *user_prompt, struct llm_exchange *out)
{
    memset(c, 0, sizeof(*c));
    c->cfg = cfg;
    c->api_key = api_key;
    c->system_prompt = system_prompt;
    c->user_prompt = user_prompt;
    c->out = out;
    c->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : LLM_DEFAULT_TIMEOUT_MS;
    c->backoff0 = cfg->backoff_initial_ms ? cfg->backoff_initial_ms : LLM_DEFAULT_BACKOFF_MS;
    c->backoff_max = cfg->backoff_max_ms ? cfg->backoff_max_ms : LLM_DEFAULT_BACKOFF_MAX_MS;
    c->sink.max = cfg->max_reply_bytes ? cfg->max_reply_bytes : LLM_DEFAULT_REPLY_MAX;
    c->schema = true;
}

/* The URL, the first request body (json_schema) and the headers; a prompt
 * that would carry the key out is refused. */
static enum kiln_rc chat_prepare(struct chat *c, struct kiln_err *err)
{
    const char *base = c->cfg->base_url ? c->cfg->base_url : LLM_DEFAULT_BASE_URL;
    const char *key = c->api_key;
    enum kiln_rc rc = build_url(base, key != NULL, &c->url, err);
    if (rc != KILN_OK)
        return rc;
    rc = build_request(c->cfg, c->system_prompt, c->user_prompt, c->schema, &c->out->request_body,
                       err);
    if (rc != KILN_OK)
        return rc;
    c->out->response_format = "json_schema";
    /* A key short enough to be a placeholder ("EMPTY", "x") is no secret:
     * refusing prompts that contain it would refuse nearly all. */
    if (key && strlen(key) >= LLM_KEY_SECRET_MIN &&
        (strstr(c->user_prompt, key) || (c->system_prompt && strstr(c->system_prompt, key)) ||
         strstr(c->out->request_body, key)))
        return kiln_fail(err, KILN_E_USAGE,
                         "refusing to send a prompt that contains the API key: remove it");
    return make_headers(key, &c->headers, err);
}

/* Untrusted peer: http(s) only, no redirects, TLS verified, no signals
 * (threads), every wait bounded. */
static enum kiln_rc chat_open_curl(struct chat *c, struct kiln_err *err)
{
    CURL *h = c->h = curl_easy_init();
    if (!h)
        return kiln_fail(err, KILN_E_NOMEM, "curl_easy_init failed (was curl_global_init called?)");
    c->errbuf[0] = '\0';
    long connect_ms = c->timeout_ms < 30000 ? c->timeout_ms : 30000L;
    if (curl_easy_setopt(h, CURLOPT_URL, c->url) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "https") != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->sink.max) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_USERAGENT, "kiln/" KILN_VERSION) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->sink) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf) != CURLE_OK)
        return kiln_fail(err, KILN_E_UNSUPPORTED,
                         "this libcurl lacks an option kiln needs (7.85 or newer is required)");
    return KILN_OK;
}

/* Sends the request once and records the reply, the key masked in it. */
static enum kiln_rc chat_attempt(struct chat *c, struct attempt *a, struct kiln_err *err)
{
    struct llm_exchange *out = c->out;
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, out->request_body);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(out->request_body));
    c->sink.len = 0;
    c->sink.overflow = false;
    c->errbuf[0] = '\0';
    out->attempts++;
    a->cc = curl_easy_perform(c->h);
    a->status = 0;
    a->retry_after = 0;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &a->status);
    curl_easy_getinfo(c->h, CURLINFO_RETRY_AFTER, &a->retry_after);
    out->http_status = a->status;
    mask_key(c->sink.buf, c->sink.len, c->api_key);
    free(out->reply_body);
    out->reply_body = malloc(c->sink.len + 1);
    if (!out->reply_body)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory recording the reply");
    if (c->sink.len)
        memcpy(out->reply_body, c->sink.buf, c->sink.len);
    out->reply_body[c->sink.len] = '\0';
    out->reply_len = c->sink.len;
    /* Also where it decodes to the key (an escaped echo): the record is
     * read back as JSON. */
    if (!llm_mask_key(&out->reply_body, &out->reply_len, c->api_key))
        return kiln_fail(err, KILN_E_NOMEM, "out of memory masking the API key in the reply");
    return KILN_OK;
}

/* A transfer that failed: retried while retries are left, if it may be. */
static enum kiln_rc judge_transfer(struct chat *c, CURLcode cc, enum next *nx, struct kiln_err *err)
{
    const char *why = c->errbuf[0] ? c->errbuf : curl_easy_strerror(cc);
    if (!curl_retryable(cc))
        return kiln_fail(err, KILN_E_IO, "request to %s failed: %s", c->url, why);
    if (c->retries >= c->cfg->max_retries) {
        if (cc == CURLE_OPERATION_TIMEDOUT)
            return kiln_fail(err, KILN_E_TIMEOUT,
                             "no reply from %s within %ld ms (%d attempts): raise the "
                             "timeout or check the server",
                             c->url, c->timeout_ms, c->out->attempts);
        return kiln_fail(err, KILN_E_IO, "request to %s failed after %d attempts: %s", c->url,
                         c->out->attempts, why);
    }
    *nx = NEXT_RETRY;
    return KILN_OK;
}

/* A 2xx: the envelope's content, its token counts and their cost. */
static enum kiln_rc take_reply(struct chat *c, struct kiln_err *err)
{
    const struct llm_config *cfg = c->cfg;
    struct llm_exchange *out = c->out;
    struct llm_usage usage;
    enum kiln_rc rc = llm_envelope_parse(c->sink.buf ? c->sink.buf : "", c->sink.len, &out->content,
                                         &out->content_len, &usage, err);
    out->prompt_tokens = usage.prompt_tokens;
    out->completion_tokens = usage.completion_tokens;
    /* The content was decoded once; its strings decode again in
     * llm_reply_parse: mask what every level decodes to. */
    if (out->content && !llm_mask_key(&out->content, &out->content_len, c->api_key))
        return kiln_fail(err, KILN_E_NOMEM, "out of memory masking the API key");
    if (usage.prompt_tokens >= 0 && usage.completion_tokens >= 0 &&
        (cfg->price_in_per_mtok > 0 || cfg->price_out_per_mtok > 0))
        out->cost_usd = ((double)usage.prompt_tokens * cfg->price_in_per_mtok +
                         (double)usage.completion_tokens * cfg->price_out_per_mtok) /
                        1e6;
    return rc;
}

/* Many local servers reject json_schema: ask for a JSON object instead. */
static enum kiln_rc fall_back_to_json_object(struct chat *c, struct kiln_err *err)
{
    c->schema = false;
    c->fell_back = true;
    char *body = NULL;
    enum kiln_rc rc = build_request(c->cfg, c->system_prompt, c->user_prompt, false, &body, err);
    if (rc != KILN_OK)
        return rc;
    free(c->out->request_body);
    c->out->request_body = body;
    c->out->response_format = "json_object";
    return KILN_OK;
}

/* What an attempt's outcome means: the result, a retry, or a resend. */
static enum kiln_rc judge_attempt(struct chat *c, const struct attempt *a, enum next *nx,
                                  struct kiln_err *err)
{
    char msg[256];
    const char *url = c->url;
    long status = a->status;
    *nx = NEXT_DONE;
    if (c->sink.overflow || a->cc == CURLE_FILESIZE_EXCEEDED)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the server's reply exceeded %zu bytes (max_reply_bytes): transfer "
                         "aborted; raise the cap if the model really needs that much",
                         c->sink.max);
    if (a->cc != CURLE_OK)
        return judge_transfer(c, a->cc, nx, err);
    if (status >= 200 && status < 300)
        return take_reply(c, err);
    if (status >= 300 && status < 400)
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s answered with a redirect (%ld), which kiln does not follow: set "
                         "--base-url to the final URL",
                         url, status);
    if (status == 400 && c->schema && !c->fell_back) {
        enum kiln_rc rc = fall_back_to_json_object(c, err);
        if (rc == KILN_OK)
            *nx = NEXT_RESEND;
        return rc;
    }
    bool overloaded = status == 429 || status >= 500;
    if (overloaded && c->retries < c->cfg->max_retries) {
        *nx = NEXT_RETRY;
        return KILN_OK;
    }
    const char *said = server_message(c->sink.buf, c->sink.len, c->api_key, msg, sizeof(msg));
    if (overloaded)
        return kiln_fail(err, KILN_E_IO, "%s answered %ld after %d attempts: %s%s", url, status,
                         c->out->attempts, said,
                         status == 429 ? " (rate limited: wait or raise your quota)" : "");
    if (status == 401 || status == 403)
        return kiln_fail(err, KILN_E_REJECTED,
                         "the API rejected the key (%ld): %s; set OPENAI_API_KEY (or "
                         "KILN_API_KEY) to a valid key",
                         status, said);
    return kiln_fail(err, KILN_E_REJECTED, "%s answered %ld: %s%s", url, status, said,
                     status == 404 ? " (check --base-url and --model)" : "");
}

/* Attempts until one settles it. Bounded: at most max_retries + 1
 * attempts plus one format fallback. */
static enum kiln_rc chat_exchange(struct chat *c, struct kiln_err *err)
{
    for (int guard = 0; guard < LLM_MAX_RETRIES_CAP + 2; guard++) {
        struct attempt a;
        enum next nx;
        enum kiln_rc rc = chat_attempt(c, &a, err);
        if (rc != KILN_OK)
            return rc;
        rc = judge_attempt(c, &a, &nx, err);
        if (nx == NEXT_DONE)
            return rc;
        if (nx == NEXT_RETRY) {
            long d = backoff_delay(c->backoff0, c->backoff_max, c->retries, (long)a.retry_after);
            c->retries++;
            c->out->backoff_ms += d;
            clock_sleep_ms(d);
        }
    }
    return kiln_fail(err, KILN_E_INTERNAL, "llm_chat: retry loop did not terminate");
}

static void chat_free(struct chat *c)
{
    curl_easy_cleanup(c->h);
    free_headers(c->headers);
    free(c->url);
    free(c->sink.buf);
}

enum kiln_rc llm_chat(const struct llm_config *cfg, const char *api_key, const char *system_prompt,
                      const char *user_prompt, struct llm_exchange *out, struct kiln_err *err)
{
    double t0 = clock_mono_s();
    memset(out, 0, sizeof(*out));
    out->prompt_tokens = -1;
    out->completion_tokens = -1;
    out->cost_usd = -1;
    enum kiln_rc rc = check_inputs(cfg, api_key, user_prompt, err);
    if (rc != KILN_OK)
        return rc;
    struct chat c;
    chat_init(&c, cfg, api_key, system_prompt, user_prompt, out);
    rc = chat_prepare(&c, err);
    if (rc == KILN_OK)
        rc = chat_open_curl(&c, err);
    if (rc == KILN_OK)
        rc = chat_exchange(&c, err);
    out->latency_s = clock_mono_s() - t0;
    chat_free(&c);
    return rc;
}
