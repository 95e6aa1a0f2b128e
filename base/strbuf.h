/*
 * strbuf.h - a growable string for building text documents (reports,
 * prompts). Appends never fail silently: the first allocation failure
 * sticks in `oom` and strbuf_finish reports it.
 */
#ifndef KILN_STRBUF_H
#define KILN_STRBUF_H

#include <stddef.h>

#include "error.h"

struct strbuf {
    char *data;
    size_t len, cap;
    int oom;
};

void strbuf_init(struct strbuf *sb);
void strbuf_append(struct strbuf *sb, const char *s, size_t n);
void strbuf_puts(struct strbuf *sb, const char *s);
void strbuf_printf(struct strbuf *sb, const char *fmt, ...) KILN_PRINTF(2, 3);
/* Appends `s` with &, <, >, " and ' escaped for HTML/XML text and attributes. */
void strbuf_put_escaped(struct strbuf *sb, const char *s);

/* The HTML/XML entity for c (& < > " '), or NULL when c stands as itself:
 * the one table strbuf_put_escaped and text_put_markup share. */
const char *strbuf_markup_entity(unsigned c);

/* Hands over the string (*out, free()) or fails with KILN_E_NOMEM. */
enum kiln_rc strbuf_finish(struct strbuf *sb, char **out, struct kiln_err *err) KILN_NODISCARD;
void strbuf_free(struct strbuf *sb);

#endif
