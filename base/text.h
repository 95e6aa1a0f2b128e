/*
 * text.h - text from a sandbox or a model made safe to show and to store.
 *
 * Untrusted text (script stderr, compiler diagnostics, harness logs, a
 * model's rationale, a server's error message) may carry terminal control
 * sequences that rewrite the operator's screen, set the window title or
 * hide lines; every place kiln prints such text passes it through
 * text_escape_control() or text_fputs_escaped() first.
 *
 * Text kept in a fixed buffer and later put in JSON must stay valid UTF-8:
 * a cut inside a multi-byte character makes jansson refuse the document.
 * utf8_cut() and text_copy_utf8() cut on a character boundary.
 */
#ifndef KILN_TEXT_H
#define KILN_TEXT_H

#include <stdio.h>
#include <stddef.h>

#include "strbuf.h"

/* Copies `in` (NUL-terminated) into out[cap] with every control character
 * but \n and \t written as an escape: ESC as \e, CR as \r, the other C0
 * bytes, DEL, the C1 controls (U+0080..U+009F), bidirectional overrides
 * (U+202A..U+202E, U+2066..U+2069) and bytes that are not UTF-8 as \xNN
 * (one per byte). Valid printable UTF-8 stays as it is. Never splits an
 * escape or a character; always NUL-terminates when cap > 0. Returns out. */
char *text_escape_control(char *out, size_t cap, const char *in);

/* As text_escape_control for `len` bytes of `in` (NULs escaped too),
 * written to `f` without a size limit. */
void text_fputs_escaped(FILE *f, const char *in, size_t len);

/* The largest length <= max of `s` (len bytes) that ends on a UTF-8
 * character boundary: a cut there leaves no partial character. Bytes that
 * are not UTF-8 count as characters of their own. */
size_t utf8_cut(const char *s, size_t len, size_t max);

/* Drops an incomplete UTF-8 sequence at the end of the NUL-terminated `s`
 * (what snprintf leaves when it cuts a character). */
void utf8_trim_partial(char *s);

/* snprintf(dst, cap, "%s", src) that cuts on a character boundary. */
void text_copy_utf8(char *dst, size_t cap, const char *src);

/* Appends `in` (NUL-terminated) to `sb` escaped for HTML and XML text and
 * attribute values (& < > " '), keeping at most `max_chars` characters: a
 * longer text is cut on a character boundary and ends with "\u2026".
 * Characters XML forbids or that reorder text (C0 controls but \t and \n,
 * DEL, C1, bidirectional overrides) and bytes that are not UTF-8 become
 * U+FFFD, so text from a record can neither add markup nor make an SVG
 * file malformed. NULL appends nothing. Returns 1 when it cut, else 0. */
int text_put_markup(struct strbuf *sb, const char *in, size_t max_chars);

#endif
