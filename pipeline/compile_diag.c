/* compile_diag.c - the compiler's diagnostics as the user reads them: in
 * the compiler's own order, capped, with the sandbox's paths replaced by
 * the user's file name (compile.h). */
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "strbuf.h"

/* What a line is to the block it belongs to. */
enum diag_line {
    DL_BODY,    /* source, caret, template arguments, notes, "detected during" */
    DL_CONTEXT, /* gcc's "In function", "In file included from": the next header's */
    DL_ERROR,   /* a header: "file:L:C: error: ...", "file(L): error: ..." */
    DL_WARNING, /* a header: "... warning: ..." */
};

static bool has(const char *line, size_t len, const char *word)
{
    return memmem(line, len, word, strlen(word)) != NULL;
}

static enum diag_line classify(const char *line, size_t len)
{
    /* Indented lines echo the source (gcc's "    5 | x = y;", nvcc's) or
     * continue a message; "from" continues an include chain. */
    if (len == 0 || line[0] == ' ' || line[0] == '\t')
        return len > 0 && has(line, len, "from ") && !has(line, len, "|") ? DL_CONTEXT : DL_BODY;
    if (!strncmp(line, "In file included from", 21) || has(line, len, ": In function") ||
        has(line, len, ": In member function") || has(line, len, ": In instantiation of") ||
        has(line, len, ": At top level") || has(line, len, ": At global scope"))
        return DL_CONTEXT;
    /* The earliest of the words says what the line is: "error: ... note"
     * is an error, "note: ... error" a note of the block before. */
    static const struct {
        const char *word;
        enum diag_line kind;
    } words[] = {
        {"error", DL_ERROR}, {"warning", DL_WARNING}, {"note", DL_BODY}, {"remark", DL_BODY}};
    const char *first = NULL;
    enum diag_line kind = DL_BODY;
    for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++) {
        const char *at = memmem(line, len, words[i].word, strlen(words[i].word));
        if (at && (!first || at < first)) {
            first = at;
            kind = words[i].kind;
        }
    }
    return kind;
}

/* One diagnostic: its header with the context before it and the lines
 * after it, [start, end) of the text; rank 0 error, 1 warning, 2 neither. */
struct diag_block {
    size_t start, end;
    int rank;
};

/* The blocks of `text` (*n of them, a new array; NULL: out of memory). */
static struct diag_block *split_blocks(const char *text, size_t *n)
{
    size_t cap = 16;
    struct diag_block *b = malloc(cap * sizeof(*b));
    *n = 0;
    if (!b)
        return NULL;
    bool headed = false, open = false;
    for (size_t off = 0; text[off];) {
        size_t len = strcspn(text + off, "\n");
        enum diag_line k = classify(text + off, len);
        bool header = k == DL_ERROR || k == DL_WARNING;
        /* A context line or a header after a headed block starts a new one. */
        if (!open || ((k == DL_CONTEXT || header) && headed)) {
            if (*n == cap) {
                struct diag_block *g = realloc(b, (cap *= 2) * sizeof(*b));
                if (!g) {
                    free(b);
                    return NULL;
                }
                b = g;
            }
            b[(*n)++] = (struct diag_block){.start = off, .rank = 2};
            headed = false;
            open = true;
        }
        if (header && !headed) {
            b[*n - 1].rank = k == DL_ERROR ? 0 : 1;
            headed = true;
        }
        off += len + (text[off + len] == '\n');
        b[*n - 1].end = off;
    }
    return b;
}

/* Over the cap: whole blocks, errors first, then warnings, then the rest,
 * while they fit; written in the compiler's order. A first error longer
 * than the cap alone keeps its head. */
static void select_blocks(const char *text, const struct diag_block *b, size_t n, bool *keep,
                          struct strbuf *sb)
{
    size_t used = 0, dropped = 0;
    memset(keep, 0, n * sizeof(*keep));
    for (int rank = 0; rank < 3; rank++)
        for (size_t i = 0; i < n; i++)
            if (b[i].rank == rank && used + (b[i].end - b[i].start) < COMPILE_DIAG_MAX - 128) {
                keep[i] = true;
                used += b[i].end - b[i].start;
            }
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= keep[i];
    for (size_t i = 0; i < n; i++) {
        size_t len = b[i].end - b[i].start;
        if (keep[i]) {
            strbuf_append(sb, text + b[i].start, len);
        } else if (!any && b[i].rank == 0) {
            /* The first error alone exceeds the cap: its head, cut at a line. */
            size_t head = COMPILE_DIAG_MAX - 128;
            while (head > 0 && text[b[i].start + head - 1] != '\n')
                head--;
            strbuf_append(sb, text + b[i].start, head);
            dropped += len - head;
            any = true;
        } else {
            dropped += len;
        }
    }
    if (sb->len && sb->data[sb->len - 1] != '\n')
        strbuf_puts(sb, "\n");
    strbuf_printf(sb, "[kiln: %zu more bytes of diagnostics dropped]\n", dropped);
}

char *compile_cap_diagnostics(const char *text)
{
    struct strbuf sb;
    strbuf_init(&sb);
    size_t len = strlen(text);
    if (len < COMPILE_DIAG_MAX) {
        strbuf_append(&sb, text, len);
    } else {
        size_t n = 0;
        struct diag_block *b = split_blocks(text, &n);
        bool *keep = b ? malloc(n * sizeof(*keep) + 1) : NULL;
        if (keep)
            select_blocks(text, b, n, keep, &sb);
        else
            sb.oom = 1;
        free(keep);
        free(b);
    }
    char *out = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    return strbuf_finish(&sb, &out, &e) == KILN_OK ? out : NULL;
}

const char *compile_first_error(const char *diag)
{
    for (size_t off = 0; diag && diag[off];) {
        size_t len = strcspn(diag + off, "\n");
        if (classify(diag + off, len) == DL_ERROR)
            return diag + off;
        off += len + (diag[off + len] == '\n');
    }
    return diag;
}

/* The length of the prefix of `line` naming the sandbox's copy of the
 * source ("/in/candidate.cu" or "candidate.cu", then ':' or '('), or 0. */
static size_t scratch_source_prefix(const char *line, const char *base)
{
    size_t skip = strncmp(line, "/in/", 4) == 0 ? 4 : 0;
    size_t n = strlen(base);
    if (strncmp(line + skip, base, n) != 0 || (line[skip + n] != ':' && line[skip + n] != '('))
        return 0;
    return skip + n;
}

char *compile_diagnostics_for_user(const char *diag, enum kiln_backend backend, const char *shown)
{
    const char *base = backend == KILN_BACKEND_CUDA ? "candidate.cu" : "candidate.c";
    if (!shown)
        shown = base;
    struct strbuf out;
    strbuf_init(&out);
    for (const char *line = diag; *line;) {
        size_t len = strcspn(line, "\n");
        size_t cut = scratch_source_prefix(line, base);
        if (cut)
            strbuf_puts(&out, shown);
        else if (!strncmp(line, "/in/", 4) || !strncmp(line, "/out/", 5))
            cut = line[1] == 'i' ? 4 : 5; /* kiln's own files: the trampoline, the artifact */
        else if (!strncmp(line, "In file included from /in/", 26)) {
            strbuf_puts(&out, "In file included from ");
            cut = 22 + scratch_source_prefix(line + 22, base);
            if (cut > 22)
                strbuf_puts(&out, shown);
            else
                cut = 26;
        }
        if (*line == '\n')
            len++;
        strbuf_append(&out, line + cut, len - cut);
        line += len;
    }
    if (out.oom) {
        strbuf_free(&out);
        return NULL;
    }
    return out.data ? out.data : strdup("");
}
