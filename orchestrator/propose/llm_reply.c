#include "llm_reply.h"
#include "json_strict.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNIPPET_MAX 48 /* bytes of untrusted text quoted in one message */

const char *llm_snippet(const char *s, size_t n, char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (cap == 0)
        return buf;
    /* Worst case per byte is 4 chars (\xHH); keep room for "...\"" + NUL. */
    if (cap >= 2)
        buf[o++] = '"';
    for (size_t i = 0; i < n && i < SNIPPET_MAX && o + 9 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    if (n > SNIPPET_MAX && o + 4 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    if (o + 1 < cap)
        buf[o++] = '"';
    buf[o < cap ? o : cap - 1] = '\0';
    return buf;
}

void llm_proposal_free(struct llm_proposal *p)
{
    if (!p)
        return;
    free(p->source);
    free(p->rationale);
    memset(p, 0, sizeof(*p));
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Copies a JSON string value, refusing NULs (jansson already does without
 * JSON_ALLOW_NUL; this keeps the invariant local) and oversize values. */
static enum kiln_rc take_string(const json_t *v, const char *key, size_t max, char **out,
                                size_t *out_len, struct kiln_err *err)
{
    if (!json_is_string(v))
        return kiln_fail(err, KILN_E_REJECTED, "reply key \"%s\" must be a JSON string", key);
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (n > max)
        return kiln_fail(err, KILN_E_LIMIT,
                         "reply key \"%s\" is %zu bytes; the limit is %zu bytes: shorten it", key,
                         n, max);
    if (memchr(s, '\0', n))
        return kiln_fail(err, KILN_E_REJECTED, "reply key \"%s\" contains a NUL character", key);
    char *copy = malloc(n + 1);
    if (!copy)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory copying reply key \"%s\"", key);
    memcpy(copy, s, n);
    copy[n] = '\0';
    *out = copy;
    if (out_len)
        *out_len = n;
    return KILN_OK;
}

/*
 * Finds the JSON text in the content: the trimmed content itself, or the
 * inside of exactly one ```json fence that spans all of it. *line_skip is the
 * number of lines before the JSON text, so parser line numbers can be
 * reported relative to what the model wrote.
 */
static enum kiln_rc unfence(const char *s, size_t n, const char *keys, const char **body,
                            size_t *body_len, int *line_skip, struct kiln_err *err)
{
    char snip[SNIPPET_MAX * 4 + 8];
    int skipped = 0;
    while (n > 0 && is_space(s[0])) {
        skipped += s[0] == '\n';
        s++;
        n--;
    }
    while (n > 0 && is_space(s[n - 1]))
        n--;
    *line_skip = skipped;
    if (n == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "reply was empty: answer with one JSON object with the keys %s", keys);
    if (n < 3 || memcmp(s, "```", 3) != 0) {
        if (s[0] != '{')
            return kiln_fail(err, KILN_E_REJECTED,
                             "reply must be one JSON object (optionally in a single ```json "
                             "fence) and nothing else; it starts with %s",
                             llm_snippet(s, n, snip, sizeof(snip)));
        *body = s;
        *body_len = n;
        return KILN_OK;
    }
    /* Opening fence: ``` then an optional "json" tag, then a newline. */
    size_t i = 3;
    if (n - i >= 4 && (memcmp(s + i, "json", 4) == 0 || memcmp(s + i, "JSON", 4) == 0))
        i += 4;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    if (i >= n || s[i] != '\n')
        return kiln_fail(err, KILN_E_REJECTED,
                         "reply opens a code fence that is not ```json followed by a newline: "
                         "send the JSON object alone or in a single ```json fence");
    i++;
    /* Closing fence: the content must end with a newline then ```, after
     * (not overlapping) the opening line. */
    if (n < i + 4 || memcmp(s + n - 3, "```", 3) != 0 || s[n - 4] != '\n')
        return kiln_fail(err, KILN_E_REJECTED,
                         "reply opens a ```json fence but does not end with its closing ```: "
                         "put nothing after the fence");
    size_t end = n - 4;
    /* JSON strings cannot hold a raw newline, so a line starting with ```
     * inside the body is a second fence, never part of the object. */
    for (size_t k = i; k + 3 <= end; k++) {
        if ((k == i || s[k - 1] == '\n') && memcmp(s + k, "```", 3) == 0)
            return kiln_fail(err, KILN_E_REJECTED,
                             "reply holds more than one code fence: send exactly one JSON "
                             "object");
    }
    *body = s + i;
    *body_len = end - i;
    *line_skip = skipped + 1;
    return KILN_OK;
}

enum kiln_rc llm_reply_object(const char *content, size_t len, const char *keys, json_t **out,
                              struct kiln_err *err)
{
    *out = NULL;
    if (!content)
        return kiln_fail(err, KILN_E_INTERNAL, "llm_reply_object: content is NULL");
    if (len > LLM_CONTENT_MAX)
        return kiln_fail(err, KILN_E_LIMIT,
                         "reply is %zu bytes; the limit is %u bytes: send a smaller answer", len,
                         LLM_CONTENT_MAX);
    /* jansson stops at nothing, but a raw NUL in a model reply is never
     * intended; name it instead of reporting a confusing parse error. */
    const char *nul = memchr(content, '\0', len);
    if (nul)
        return kiln_fail(err, KILN_E_REJECTED, "reply contains a NUL byte at offset %zu",
                         (size_t)(nul - content));

    const char *body = NULL;
    size_t body_len = 0;
    int line_skip = 0;
    enum kiln_rc rc = unfence(content, len, keys, &body, &body_len, &line_skip, err);
    if (rc != KILN_OK)
        return rc;

    /* The model's answer: any top level, so the message below can say what
     * it was; line numbers count from the start of the whole reply. */
    const struct json_strict_rules rules = {
        .max_bytes = LLM_CONTENT_MAX, .any_top = true, .line_offset = line_skip};
    json_t *root;
    if ((rc = json_strict_parse("reply", body, body_len, &rules, &root, err)))
        return rc;
    if (!json_is_object(root)) {
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "reply must be a JSON object with the keys %s, not a JSON %s", keys,
                       json_is_array(root) ? "array" : "scalar");
        json_decref(root);
        return rc;
    }
    *out = root;
    return KILN_OK;
}

enum kiln_rc llm_reply_string(const json_t *obj, const char *key, size_t max, char **out,
                              size_t *out_len, struct kiln_err *err)
{
    return take_string(json_object_get(obj, key), key, max, out, out_len, err);
}

enum kiln_rc llm_reply_parse(const char *content, size_t len, struct llm_proposal *out,
                             struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *root = NULL;
    enum kiln_rc rc = llm_reply_object(content, len, "source, rationale and language", &root, err);
    if (rc != KILN_OK)
        return rc;
    char snip[SNIPPET_MAX * 4 + 8];
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "source") != 0 && strcmp(key, "rationale") != 0 &&
            strcmp(key, "language") != 0) {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "reply has the unknown key %s; the only keys allowed are source, "
                           "rationale and language",
                           llm_snippet(key, strlen(key), snip, sizeof(snip)));
            goto out;
        }
    }
    static const char *const required[] = {"source", "rationale", "language"};
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!json_object_get(root, required[i])) {
            rc = kiln_fail(err, KILN_E_REJECTED, "reply is missing the required key \"%s\"",
                           required[i]);
            goto out;
        }
    }

    v = json_object_get(root, "language");
    if (!json_is_string(v)) {
        rc = kiln_fail(err, KILN_E_REJECTED, "reply key \"language\" must be a JSON string");
        goto out;
    }
    if (strcmp(json_string_value(v), "cuda") == 0 && json_string_length(v) == 4) {
        out->language = LLM_LANG_CUDA;
    } else if (strcmp(json_string_value(v), "c") == 0 && json_string_length(v) == 1) {
        out->language = LLM_LANG_C;
    } else {
        rc =
            kiln_fail(err, KILN_E_REJECTED,
                      "reply key \"language\" must be \"cuda\" or \"c\", "
                      "not %s",
                      llm_snippet(json_string_value(v), json_string_length(v), snip, sizeof(snip)));
        goto out;
    }
    rc = take_string(json_object_get(root, "source"), "source", LLM_SOURCE_MAX, &out->source,
                     &out->source_len, err);
    if (rc != KILN_OK)
        goto out;
    if (out->source_len == 0) {
        rc = kiln_fail(err, KILN_E_REJECTED, "reply key \"source\" is empty: send the kernel");
        goto out;
    }
    rc = take_string(json_object_get(root, "rationale"), "rationale", LLM_RATIONALE_MAX,
                     &out->rationale, NULL, err);
out:
    json_decref(root);
    if (rc != KILN_OK)
        llm_proposal_free(out);
    return rc;
}

/* A token count from "usage": a non-negative integer, else unknown (-1).
 * Accounting is not worth failing a candidate over. */
static long usage_count(const json_t *usage, const char *key)
{
    json_t *v = json_object_get(usage, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000000)
        return -1;
    return (long)json_integer_value(v);
}

/* Token counts from "usage", when the server sent them. */
static void read_usage(const json_t *root, struct llm_usage *usage)
{
    json_t *u = json_object_get(root, "usage");
    if (json_is_object(u)) {
        usage->prompt_tokens = usage_count(u, "prompt_tokens");
        usage->completion_tokens = usage_count(u, "completion_tokens");
    }
}

/* choices[0] and its message object; else the server's error, quoted. */
static enum kiln_rc first_choice(const json_t *root, json_t **choice, json_t **message,
                                 struct kiln_err *err)
{
    char snip[SNIPPET_MAX * 4 + 8];
    json_t *choices = json_object_get(root, "choices");
    if (!json_is_array(choices) || json_array_size(choices) == 0) {
        json_t *e = json_object_get(json_object_get(root, "error"), "message");
        if (json_is_string(e))
            return kiln_fail(
                err, KILN_E_PARSE, "the server returned an error: %s",
                llm_snippet(json_string_value(e), json_string_length(e), snip, sizeof(snip)));
        return kiln_fail(err, KILN_E_PARSE,
                         "the server's reply has no \"choices\" array with a completion");
    }
    *choice = json_array_get(choices, 0);
    *message = json_object_get(*choice, "message");
    if (!json_is_object(*choice) || !json_is_object(*message))
        return kiln_fail(err, KILN_E_PARSE, "the server's reply has no choices[0].message object");
    return KILN_OK;
}

/* A reply cut short or withheld is no answer. */
static enum kiln_rc check_finish(const json_t *choice, struct kiln_err *err)
{
    json_t *fr = json_object_get(choice, "finish_reason");
    const char *finish = json_is_string(fr) ? json_string_value(fr) : "";
    if (fr && !json_is_string(fr) && !json_is_null(fr))
        return kiln_fail(err, KILN_E_PARSE, "choices[0].finish_reason is not a string");
    if (strcmp(finish, "length") == 0)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the reply was truncated (finish_reason \"length\"): the model ran out "
                         "of tokens before finishing; answer more briefly or raise max_tokens");
    if (strcmp(finish, "content_filter") == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "the reply was withheld by the server's content filter "
                         "(finish_reason \"content_filter\")");
    return KILN_OK;
}

/* message.content as a string; else the model's refusal, quoted. */
static enum kiln_rc answer_text(const json_t *message, json_t **content, struct kiln_err *err)
{
    char snip[SNIPPET_MAX * 4 + 8];
    json_t *c = json_object_get(message, "content");
    *content = c;
    if (json_is_string(c))
        return KILN_OK;
    json_t *refusal = json_object_get(message, "refusal");
    if (json_is_string(refusal))
        return kiln_fail(err, KILN_E_REJECTED, "the model refused: %s",
                         llm_snippet(json_string_value(refusal), json_string_length(refusal), snip,
                                     sizeof(snip)));
    return kiln_fail(err, KILN_E_REJECTED,
                     "choices[0].message.content is %s: the model sent no answer text",
                     !c                ? "missing"
                     : json_is_null(c) ? "null"
                                       : "not a string");
}

/* A NUL-terminated copy of the string `c`, within LLM_CONTENT_MAX. */
static enum kiln_rc copy_content(const json_t *c, char **content, size_t *content_len,
                                 struct kiln_err *err)
{
    size_t n = json_string_length(c);
    if (n > LLM_CONTENT_MAX)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the reply content is %zu bytes; the limit is %u bytes: send a smaller "
                         "kernel",
                         n, LLM_CONTENT_MAX);
    char *copy = malloc(n + 1);
    if (!copy)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory copying the reply content");
    memcpy(copy, json_string_value(c), n);
    copy[n] = '\0';
    *content = copy;
    *content_len = n;
    return KILN_OK;
}

enum kiln_rc llm_envelope_parse(const char *body, size_t len, char **content, size_t *content_len,
                                struct llm_usage *usage, struct kiln_err *err)
{
    *content = NULL;
    *content_len = 0;
    usage->prompt_tokens = -1;
    usage->completion_tokens = -1;
    if (!body)
        return kiln_fail(err, KILN_E_INTERNAL, "llm_envelope_parse: body is NULL");
    if (len > LLM_ENVELOPE_MAX)
        return kiln_fail(err, KILN_E_LIMIT, "the server's reply is %zu bytes; the limit is %u", len,
                         LLM_ENVELOPE_MAX);
    static const struct json_strict_rules rules = {.max_bytes = LLM_ENVELOPE_MAX};
    json_t *root;
    enum kiln_rc rc =
        json_strict_parse("the server's reply (is --base-url an OpenAI-compatible API?)", body, len,
                          &rules, &root, err);
    if (rc)
        return rc;
    read_usage(root, usage);
    json_t *choice = NULL, *message = NULL, *c = NULL;
    rc = first_choice(root, &choice, &message, err);
    if (rc == KILN_OK)
        rc = check_finish(choice, err);
    if (rc == KILN_OK)
        rc = answer_text(message, &c, err);
    if (rc == KILN_OK)
        rc = copy_content(c, content, content_len, err);
    json_decref(root);
    return rc;
}

/* ---- masking the key in what it decodes to ---- */

static bool mask_literal(char *buf, size_t len, const char *key, size_t kl)
{
    bool hit = false;
    char *p = buf;
    while ((p = memmem(p, len - (size_t)(p - buf), key, kl)) != NULL) {
        memset(p, '*', kl);
        p += kl;
        hit = true;
    }
    return hit;
}

static int mask_value(json_t *v, const char *key, size_t kl, int depth);

/* A string: its JSON content first (depth permitting), then the literal key. */
static int mask_string(json_t *v, const char *key, size_t kl, int depth)
{
    size_t n = json_string_length(v);
    char *s = malloc(n + 1);
    if (!s)
        return -1;
    memcpy(s, json_string_value(v), n + 1);
    int changed = 0;
    if (depth > 0 && memchr(s, '"', n)) {
        json_error_t je;
        json_t *inner = json_loadb(s, n, JSON_DECODE_ANY, &je);
        int r = inner ? mask_value(inner, key, kl, depth - 1) : 0;
        if (r > 0) {
            char *d = json_dumps(inner, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
            if (!d)
                r = -1;
            else {
                free(s);
                s = d;
                n = strlen(d);
                changed = 1;
            }
        }
        json_decref(inner);
        if (r < 0) {
            free(s);
            return -1;
        }
    }
    if (mask_literal(s, n, key, kl))
        changed = 1;
    int rc = changed && json_string_setn(v, s, n) != 0 ? -1 : changed;
    free(s);
    return rc;
}

/* 1 when something was masked, 0 when not, -1 out of memory. Object keys
 * holding the key are masked too (the object rebuilt in order). */
static int mask_value(json_t *v, const char *key, size_t kl, int depth)
{
    int changed = 0;
    if (json_is_string(v))
        return mask_string(v, key, kl, depth);
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            int r = mask_value(json_array_get(v, i), key, kl, depth);
            if (r < 0)
                return -1;
            changed |= r;
        }
        return changed;
    }
    if (!json_is_object(v))
        return 0;
    json_t *rebuilt = json_object();
    if (!rebuilt)
        return -1;
    const char *k;
    json_t *m;
    json_object_foreach(v, k, m)
    {
        int r = mask_value(m, key, kl, depth);
        char *kk = strdup(k);
        if (r < 0 || !kk) {
            free(kk);
            json_decref(rebuilt);
            return -1;
        }
        if (mask_literal(kk, strlen(kk), key, kl))
            r = 1;
        changed |= r;
        /* Masked keys may collide ("****" twice): the later one wins. */
        json_object_set(rebuilt, kk, m);
        free(kk);
    }
    if (changed && json_object_clear(v) == 0)
        json_object_update(v, rebuilt);
    json_decref(rebuilt);
    return changed;
}

bool llm_mask_key(char **text, size_t *len, const char *key)
{
    size_t kl = key ? strlen(key) : 0;
    if (kl < LLM_KEY_SECRET_MIN || !*text)
        return true;
    mask_literal(*text, *len, key, kl);
    /* Whole text, or the braces' span of a fenced answer. */
    size_t from = 0, to = *len;
    json_error_t je;
    json_t *doc = json_loadb(*text, *len, JSON_DECODE_ANY, &je);
    if (!doc) {
        const char *a = memchr(*text, '{', *len);
        const char *b = a ? memrchr(*text, '}', *len) : NULL;
        if (!a || !b || b < a)
            return true;
        from = (size_t)(a - *text);
        to = (size_t)(b - *text) + 1;
        doc = json_loadb(*text + from, to - from, 0, &je);
        if (!doc)
            return true;
    }
    int r = mask_value(doc, key, kl, 4);
    char *d = r > 0 ? json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (r < 0 || (r > 0 && !d))
        return false;
    if (r == 0)
        return true;
    size_t dl = strlen(d), nl = from + dl + (*len - to);
    char *out = malloc(nl + 1);
    if (!out) {
        free(d);
        return false;
    }
    memcpy(out, *text, from);
    memcpy(out + from, d, dl);
    memcpy(out + from + dl, *text + to, *len - to);
    out[nl] = '\0';
    free(d);
    free(*text);
    *text = out;
    *len = nl;
    return true;
}
