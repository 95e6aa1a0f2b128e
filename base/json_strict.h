/*
 * json_strict.h - the one reader of JSON documents kiln did not write in
 * this process: anything from a sandbox, a model, a server, a run record or
 * a user's file. Every parser of such a document starts here, so the same
 * rules hold everywhere:
 *   - a size cap (the caller's: each document kind has its own),
 *   - no NUL byte,
 *   - a nesting cap, checked before jansson's recursive parser runs,
 *   - duplicate keys refused (jansson would keep the last one silently),
 *   - the top level an object unless the caller says otherwise,
 * and each object's keys checked against the caller's list.
 * Messages start with the caller's name for the document ("status.json:
 * line 3 column 7: ..."), and text taken from the input is escaped.
 */
#ifndef KILN_JSON_STRICT_H
#define KILN_JSON_STRICT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define JSON_STRICT_DEPTH 32 /* default nesting cap */

struct json_strict_rules {
    size_t max_bytes;      /* required: larger documents fail with KILN_E_LIMIT */
    int max_depth;         /* 0: JSON_STRICT_DEPTH */
    bool any_top;          /* accept any top-level value, not only an object */
    enum kiln_rc parse_rc; /* code for malformed documents; 0: KILN_E_PARSE */
    int line_offset;       /* added to line numbers: the text was cut from a larger one */
};

/* Parses buf[0..len) under `rules` into *out (a new reference the caller
 * decrefs). On failure *out is NULL and `err` names `what`. */
enum kiln_rc json_strict_parse(const char *what, const void *buf, size_t len,
                               const struct json_strict_rules *rules, json_t **out,
                               struct kiln_err *err);

/* The first key of `obj` not in the NULL-terminated `allowed`, or NULL. */
const char *json_strict_unknown_key(const json_t *obj, const char *const *allowed);

/* Fails (the rules' parse code, KILN_E_PARSE when rules is NULL) on a key of
 * `obj` not in `allowed`, or a key of `required` (NULL: none) that is
 * missing: '<what>: unknown key "k"' / '<what>: missing required key "k"'.
 * An unknown key close to an allowed one adds '; did you mean "key"?'. */
enum kiln_rc json_strict_keys(const json_t *obj, const char *what, const char *const *allowed,
                              const char *const *required, struct kiln_err *err);

/* '; did you mean "NAME"?' into dst[cap] when one of `allowed` is close to
 * `key` (suggest.h), else "" (also when it does not fit). Returns the text. */
const char *json_strict_did_you_mean(const char *key, const char *const *allowed, char *dst,
                                     size_t cap);

/* Copies `s` into dst[cap] with control and non-ASCII bytes as \xNN, cut at
 * cap-1 bytes with "..." when longer: for quoting untrusted keys in
 * messages. Returns dst. */
const char *json_strict_quote(const char *s, char *dst, size_t cap);

#endif
