#include "text.h"

#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (at most n bytes) and its code
 * point, or 0 when the bytes there are not UTF-8 (overlongs, surrogates
 * and values past U+10FFFF are not). */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    size_t need;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        need = 2, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return need;
}

static int dangerous(uint32_t cp)
{
    return (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The escape of one byte b into e[5]; its length. */
static size_t escape_byte(unsigned char b, char e[5])
{
    static const char hex[] = "0123456789abcdef";
    if (b == 0x1b)
        return (void)memcpy(e, "\\e", 2), 2;
    if (b == '\r')
        return (void)memcpy(e, "\\r", 2), 2;
    e[0] = '\\';
    e[1] = 'x';
    e[2] = hex[b >> 4];
    e[3] = hex[b & 15];
    return 4;
}

/* Calls emit(ctx, piece, n) for each piece of the escaped text; stops when
 * emit returns nonzero. */
static void escape_walk(const char *in, size_t len, int (*emit)(void *, const char *, size_t),
                        void *ctx)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t i = 0;
    while (i < len) {
        uint32_t cp = 0;
        size_t k = utf8_seq(s + i, len - i, &cp);
        if (k > 0 && !dangerous(cp)) {
            if (emit(ctx, in + i, k))
                return;
            i += k;
            continue;
        }
        /* Not UTF-8 (one byte at a time) or a control: every byte escaped. */
        size_t n = k > 0 ? k : 1;
        char e[5 * 4];
        size_t o = 0;
        for (size_t j = 0; j < n; j++)
            o += escape_byte(s[i + j], e + o);
        if (emit(ctx, e, o))
            return;
        i += n;
    }
}

struct buf_ctx {
    char *out;
    size_t cap, len;
};

static int emit_buf(void *p, const char *piece, size_t n)
{
    struct buf_ctx *b = p;
    if (b->len + n + 1 > b->cap)
        return 1; /* never half an escape or a character */
    memcpy(b->out + b->len, piece, n);
    b->len += n;
    return 0;
}

char *text_escape_control(char *out, size_t cap, const char *in)
{
    if (cap == 0)
        return out;
    struct buf_ctx b = {out, cap, 0};
    if (in)
        escape_walk(in, strlen(in), emit_buf, &b);
    out[b.len] = '\0';
    return out;
}

static int emit_file(void *p, const char *piece, size_t n)
{
    return fwrite(piece, 1, n, (FILE *)p) != n;
}

void text_fputs_escaped(FILE *f, const char *in, size_t len)
{
    if (in)
        escape_walk(in, len, emit_file, f);
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    /* Step back over continuation bytes to the start of the character the
     * cut falls in; keep it only when it ends at or before max. */
    const unsigned char *u = (const unsigned char *)s;
    size_t start = max;
    while (start > 0 && max - start < 3 && (u[start] & 0xc0) == 0x80)
        start--;
    uint32_t cp;
    size_t k = utf8_seq(u + start, len - start, &cp);
    if (k == 0) /* not UTF-8 there: bytes are characters of their own */
        return max;
    return start + k <= max ? start + k : start;
}

void text_copy_utf8(char *dst, size_t cap, const char *src)
{
    if (cap == 0)
        return;
    size_t len = src ? strlen(src) : 0;
    size_t n = utf8_cut(src ? src : "", len, cap - 1);
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

void utf8_trim_partial(char *s)
{
    size_t n = strlen(s), j = n;
    const unsigned char *u = (const unsigned char *)s;
    while (j > 0 && n - j < 3 && (u[j - 1] & 0xc0) == 0x80)
        j--;
    if (j == 0)
        return;
    unsigned char lead = u[j - 1];
    size_t need = lead >= 0xc2 && lead <= 0xdf   ? 2
                  : lead >= 0xe0 && lead <= 0xef ? 3
                  : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                 : 1;
    if (need > n - (j - 1))
        s[j - 1] = '\0';
}

int text_put_markup(struct strbuf *sb, const char *in, size_t max_chars)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t len = in ? strlen(in) : 0, i = 0, chars = 0;
    while (i < len) {
        if (chars == max_chars) {
            strbuf_puts(sb, "\u2026");
            return 1;
        }
        uint32_t cp = 0;
        size_t k = utf8_seq(s + i, len - i, &cp);
        chars++;
        if (k == 0 || dangerous(cp)) {
            strbuf_puts(sb, "\ufffd");
            i += k > 0 ? k : 1;
            continue;
        }
        const char *e = strbuf_markup_entity(cp);
        if (e)
            strbuf_puts(sb, e);
        else
            strbuf_append(sb, in + i, k);
        i += k;
    }
    return 0;
}
