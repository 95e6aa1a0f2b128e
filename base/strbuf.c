#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *sb)
{
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->oom = 0;
}

static int grow(struct strbuf *sb, size_t extra)
{
    if (sb->oom)
        return -1;
    if (sb->len + extra + 1 <= sb->cap)
        return 0;
    size_t ncap = sb->cap ? sb->cap : 256;
    while (ncap < sb->len + extra + 1)
        ncap *= 2;
    char *nd = realloc(sb->data, ncap);
    if (!nd) {
        sb->oom = 1;
        return -1;
    }
    sb->data = nd;
    sb->cap = ncap;
    return 0;
}

void strbuf_append(struct strbuf *sb, const char *s, size_t n)
{
    if (grow(sb, n) != 0)
        return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void strbuf_puts(struct strbuf *sb, const char *s)
{
    strbuf_append(sb, s, strlen(s));
}

void strbuf_printf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(sb, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

const char *strbuf_markup_entity(unsigned c)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    default:
        return NULL;
    }
}

void strbuf_put_escaped(struct strbuf *sb, const char *s)
{
    for (; s && *s; s++) {
        const char *e = strbuf_markup_entity((unsigned char)*s);
        if (e)
            strbuf_puts(sb, e);
        else
            strbuf_append(sb, s, 1);
    }
}

enum kiln_rc strbuf_finish(struct strbuf *sb, char **out, struct kiln_err *err)
{
    if (sb->oom) {
        strbuf_free(sb);
        *out = NULL;
        return kiln_fail(err, KILN_E_NOMEM, "building a document");
    }
    if (!sb->data)
        strbuf_append(sb, "", 0);
    if (sb->oom)
        return strbuf_finish(sb, out, err);
    *out = sb->data;
    strbuf_init(sb);
    return KILN_OK;
}

void strbuf_free(struct strbuf *sb)
{
    free(sb->data);
    strbuf_init(sb);
}
