/*
 * json_strict.c - see json_strict.h.
 */
#include "json_strict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_nesting.h"
#include "suggest.h"

const char *json_strict_quote(const char *s, char *dst, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return dst;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char piece[5];
        int n = (*p < 0x20 || *p > 0x7e) ? snprintf(piece, sizeof(piece), "\\x%02x", *p)
                                         : snprintf(piece, sizeof(piece), "%c", *p);
        if (o + (size_t)n + 4 > cap) {
            if (cap >= 4) {
                while (o + 4 > cap)
                    o--;
                memcpy(dst + o, "...", 3);
                o += 3;
            }
            break;
        }
        memcpy(dst + o, piece, (size_t)n);
        o += (size_t)n;
    }
    dst[o] = '\0';
    return dst;
}

enum kiln_rc json_strict_parse(const char *what, const void *buf, size_t len,
                               const struct json_strict_rules *rules, json_t **out,
                               struct kiln_err *err)
{
    enum kiln_rc bad = rules->parse_rc ? rules->parse_rc : KILN_E_PARSE;
    int depth = rules->max_depth > 0 ? rules->max_depth : JSON_STRICT_DEPTH;
    *out = NULL;
    if (len > rules->max_bytes)
        return kiln_fail(err, KILN_E_LIMIT, "%s: %zu bytes; the limit is %zu", what, len,
                         rules->max_bytes);
    if (len && memchr(buf, '\0', len))
        return kiln_fail(err, bad, "%s: NUL byte in the document", what);
    if (!json_nesting_ok(buf, len, depth, NULL))
        return kiln_fail(err, KILN_E_LIMIT, "%s: nested deeper than %d levels", what, depth);
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char q[128];
        return kiln_fail(err, bad, "%s: not valid JSON at line %d column %d: %s", what,
                         je.line + rules->line_offset, je.column,
                         json_strict_quote(je.text, q, sizeof(q)));
    }
    if (!rules->any_top && !json_is_object(root)) {
        json_decref(root);
        return kiln_fail(err, bad, "%s: the top level must be an object", what);
    }
    *out = root;
    return KILN_OK;
}

const char *json_strict_unknown_key(const json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        const char *const *a = allowed;
        while (*a && strcmp(*a, key) != 0)
            a++;
        if (!*a)
            return key;
    }
    return NULL;
}

const char *json_strict_did_you_mean(const char *key, const char *const *allowed, char *dst,
                                     size_t cap)
{
    /* The suggestion is one of the caller's own names, never input text. */
    const char *near = suggest_among(key, allowed);
    if (!near || snprintf(dst, cap, "; did you mean \"%s\"?", near) >= (int)cap)
        return "";
    return dst;
}

enum kiln_rc json_strict_keys(const json_t *obj, const char *what, const char *const *allowed,
                              const char *const *required, struct kiln_err *err)
{
    const char *key = json_strict_unknown_key(obj, allowed);
    if (key) {
        char q[72], hint[SUGGEST_MAX_LEN + 24];
        return kiln_fail(err, KILN_E_PARSE, "%s: unknown key \"%s\"%s", what,
                         json_strict_quote(key, q, sizeof(q)),
                         json_strict_did_you_mean(key, allowed, hint, sizeof(hint)));
    }
    for (const char *const *r = required; r && *r; r++)
        if (!json_object_get(obj, *r))
            return kiln_fail(err, KILN_E_PARSE, "%s: missing required key \"%s\"", what, *r);
    return KILN_OK;
}
