/* docs_corpus.c - checks and splits documentation corpora (docs_corpus.h). */
#include "docs_corpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "digest.h"

#define DOCS_FILE_PASSAGES_MAX 256 /* passages in one file */

/* ---- text check ---- */

/* Length of the UTF-8 sequence at s (n bytes left) and its code point, or 0
 * when it is not valid UTF-8 (RFC 3629: no overlongs, no surrogates). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0Fu;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07u;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        if (c == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u)
            return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    *cp = v;
    return len;
}

static const char *control_fix(unsigned char c)
{
    switch (c) {
    case '\r':
        return "a carriage return (CRLF line endings): convert the file to LF line endings, "
               "e.g. with dos2unix";
    case 0x1b:
        return "an escape character (terminal control sequence): remove it, the corpus must be "
               "plain text";
    case 0:
        return "a NUL byte: this is not a text file; corpus files must be UTF-8 markdown";
    default:
        return "a control character: only printable text, newlines and tabs are allowed; "
               "remove it";
    }
}

enum kiln_rc docs_text_check(const char *name, const char *buf, size_t len, struct kiln_err *err)
{
    const unsigned char *s = (const unsigned char *)buf;
    unsigned line = 1;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if (c == '\n')
                line++;
            else if (c != '\t' && (c < 0x20 || c == 0x7f))
                return kiln_fail(err, KILN_E_REJECTED, "%s:%u: byte 0x%02x is %s", name, line, c,
                                 control_fix(c));
            i++;
            continue;
        }
        uint32_t cp = 0;
        size_t n = utf8_decode(s + i, len - i, &cp);
        if (n == 0)
            return kiln_fail(err, KILN_E_REJECTED,
                             "%s:%u: invalid UTF-8 (byte 0x%02x at offset %zu): save the file as "
                             "UTF-8 text",
                             name, line, c, i);
        if (cp >= 0x80 && cp <= 0x9F)
            return kiln_fail(err, KILN_E_REJECTED,
                             "%s:%u: U+%04X is a C1 control character: only printable text, "
                             "newlines and tabs are allowed; remove it",
                             name, line, (unsigned)cp);
        if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
            return kiln_fail(err, KILN_E_REJECTED,
                             "%s:%u: U+%04X is a bidirectional override (it makes text display "
                             "differently from what it says): remove it",
                             name, line, (unsigned)cp);
        i += n;
    }
    return KILN_OK;
}

/* ---- splitting ---- */

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n < 4 || n > DOCS_FILE_NAME_MAX || strcmp(name + n - 3, ".md") != 0 || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t')
            return false;
    return true;
}

/* Trims spaces and tabs on both sides of s[0..*n); returns the start. */
static const char *trim(const char *s, size_t *n)
{
    while (*n && (s[0] == ' ' || s[0] == '\t')) {
        s++;
        (*n)--;
    }
    while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t'))
        (*n)--;
    return s;
}

/* Heading level of a line: 1 for "# x" or "#", 2 for "## x" or "##", else 0. */
static int heading_level(const char *s, size_t n)
{
    int level = 0;
    while ((size_t)level < n && s[level] == '#')
        level++;
    if (level == 0 || level > 2)
        return 0;
    if ((size_t)level < n && s[level] != ' ' && s[level] != '\t')
        return 0;
    return level;
}

static void slugify(const char *title, char *out, size_t cap)
{
    size_t o = 0;
    bool dash = false;
    for (const char *p = title; *p && o + 1 < cap; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (dash && o > 0 && o + 2 < cap)
                out[o++] = '-';
            dash = false;
            out[o++] = c;
        } else {
            dash = true;
        }
    }
    out[o] = '\0';
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void passage_free(struct docs_passage *p)
{
    free(p->file);
    free(p->topic);
    free(p->title);
    free(p->source);
    free(p->body);
    memset(p, 0, sizeof(*p));
}

/* One passage being read. */
struct pending {
    bool open;
    unsigned line;
    const char *title;
    size_t title_len;
    const char *source;
    size_t source_len;
    const char *body, *body_end; /* first and one past the last body byte */
    bool seen_text;              /* a non-blank line after the heading */
};

struct docs_passage *docs_corpus_slot(struct docs_corpus *c, struct kiln_err *err)
{
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 32;
        struct docs_passage *np = realloc(c->passages, ncap * sizeof(*np));
        if (!np) {
            kiln_fail(err, KILN_E_NOMEM, "docs corpus");
            return NULL;
        }
        c->passages = np;
        c->cap = ncap;
    }
    struct docs_passage *p = &c->passages[c->n];
    memset(p, 0, sizeof(*p));
    return p;
}

static enum kiln_rc finish_passage(struct docs_corpus *c, size_t first, const char *name,
                                   const char *topic, size_t topic_len, const struct pending *pp,
                                   unsigned flags, struct kiln_err *err)
{
    if (!pp->source && (flags & DOCS_REQUIRE_SOURCE))
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s:%u: passage \"%.*s\" has no source: put a line \"Source: <guide, "
                         "section>\" right under its heading",
                         name, pp->line, (int)pp->title_len, pp->title);
    size_t blen = pp->body ? (size_t)(pp->body_end - pp->body) : 0;
    const char *body = pp->body;
    while (blen && (body[blen - 1] == '\n' || body[blen - 1] == ' ' || body[blen - 1] == '\t'))
        blen--;
    if (blen == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s:%u: passage \"%.*s\" has no text: write its text under the heading "
                         "or remove the heading",
                         name, pp->line, (int)pp->title_len, pp->title);
    if (c->n >= DOCS_PASSAGES_MAX || c->n - first >= DOCS_FILE_PASSAGES_MAX)
        return kiln_fail(err, KILN_E_LIMIT,
                         "%s:%u: more than %d passages in the file or %d in the corpus: split "
                         "the corpus or merge short passages",
                         name, pp->line, DOCS_FILE_PASSAGES_MAX, DOCS_PASSAGES_MAX);
    struct docs_passage *p = docs_corpus_slot(c, err);
    if (!p)
        return err->rc;
    p->line = pp->line;
    p->file = strdup(name);
    p->topic = dup_n(topic ? topic : "", topic ? topic_len : 0);
    p->title = dup_n(pp->title, pp->title_len);
    p->source = pp->source ? dup_n(pp->source, pp->source_len) : strdup(name);
    p->body = dup_n(body, blen);
    if (!p->file || !p->topic || !p->title || !p->source || !p->body) {
        passage_free(p);
        return kiln_fail(err, KILN_E_NOMEM, "docs corpus");
    }
    /* id: stem "/" slug, the slug cut so the whole fits. */
    size_t stem = strlen(name) - 3;
    char slug[DOCS_TITLE_MAX + 1];
    slugify(p->title, slug, sizeof(slug));
    if (!slug[0])
        snprintf(slug, sizeof(slug), "line-%u", p->line);
    snprintf(p->id, sizeof(p->id), "%.*s/%s", (int)stem, name, slug);
    for (size_t i = first; i < c->n; i++)
        if (strcmp(c->passages[i].id, p->id) == 0) {
            enum kiln_rc rc = kiln_fail(
                err, KILN_E_REJECTED,
                "%s:%u: passage \"%s\" has the same id (%s) as the one on line %u: give it a "
                "different title",
                name, p->line, p->title, p->id, c->passages[i].line);
            passage_free(p);
            return rc;
        }
    c->n++;
    return KILN_OK;
}

/* One file being split into passages. */
struct splitter {
    struct docs_corpus *c;
    const char *name;
    unsigned flags;
    size_t first; /* its first passage in c */
    const char *topic;
    size_t topic_len;
    struct pending pp;
    bool fence; /* inside a ``` block */
    unsigned line;
};

/* The file as a whole: its name, its size, its text. */
static enum kiln_rc check_file(const char *name, const char *buf, size_t len, struct kiln_err *err)
{
    if (!name_ok(name))
        return kiln_fail(err, KILN_E_REJECTED,
                         "corpus file name \"%.100s\" is not [A-Za-z0-9._-]+.md (at most %d "
                         "bytes): rename it",
                         name, DOCS_FILE_NAME_MAX);
    if (len > DOCS_FILE_MAX)
        return kiln_fail(err, KILN_E_LIMIT,
                         "%s is %zu bytes, over the %u-byte limit of a corpus file: split it "
                         "into several files",
                         name, len, DOCS_FILE_MAX);
    return docs_text_check(name, buf, len, err);
}

/* "# topic": once, before any passage. */
static enum kiln_rc take_topic(struct splitter *sp, const char *s, size_t n, struct kiln_err *err)
{
    if (sp->pp.open || sp->topic)
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s:%u: a second \"# \" heading: a file has one \"# topic\" at "
                         "the top; start passages with \"## \" and use \"### \" inside one",
                         sp->name, sp->line);
    size_t tl = n - 1;
    sp->topic = trim(s + 1, &tl);
    sp->topic_len = tl;
    if (sp->topic_len > DOCS_TITLE_MAX)
        return kiln_fail(err, KILN_E_LIMIT, "%s:%u: the topic is longer than %d bytes: shorten it",
                         sp->name, sp->line, DOCS_TITLE_MAX);
    return KILN_OK;
}

/* "## title": ends the passage before, starts the next. */
static enum kiln_rc take_heading(struct splitter *sp, const char *s, size_t n, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    if (sp->pp.open)
        rc = finish_passage(sp->c, sp->first, sp->name, sp->topic, sp->topic_len, &sp->pp,
                            sp->flags, err);
    if (rc != KILN_OK)
        return rc;
    memset(&sp->pp, 0, sizeof(sp->pp));
    size_t tl = n - 2;
    sp->pp.title = trim(s + 2, &tl);
    sp->pp.title_len = tl;
    sp->pp.open = true;
    sp->pp.line = sp->line;
    if (tl == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s:%u: an empty \"## \" heading: give the passage a title", sp->name,
                         sp->line);
    if (tl > DOCS_TITLE_MAX)
        return kiln_fail(err, KILN_E_LIMIT,
                         "%s:%u: a heading longer than %d bytes: shorten the title", sp->name,
                         sp->line, DOCS_TITLE_MAX);
    return KILN_OK;
}

/* "Source: ..." right under a heading. */
static enum kiln_rc take_source(struct splitter *sp, const char *s, size_t n, struct kiln_err *err)
{
    size_t sl = n - 7;
    sp->pp.source = trim(s + 7, &sl);
    sp->pp.source_len = sl;
    sp->pp.seen_text = true;
    if (sl == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s:%u: an empty \"Source:\" line: name the guide and section", sp->name,
                         sp->line);
    if (sl > DOCS_SOURCE_MAX)
        return kiln_fail(err, KILN_E_LIMIT, "%s:%u: a source line longer than %d bytes: shorten it",
                         sp->name, sp->line, DOCS_SOURCE_MAX);
    return KILN_OK;
}

/* One line s[0..n) (no newline) of the file. */
static enum kiln_rc take_line(struct splitter *sp, const char *s, size_t n, struct kiln_err *err)
{
    sp->line++;
    int level = sp->fence ? 0 : heading_level(s, n);
    if (n >= 3 && memcmp(s, "```", 3) == 0)
        sp->fence = !sp->fence;
    if (level == 1)
        return take_topic(sp, s, n, err);
    if (level == 2)
        return take_heading(sp, s, n, err);
    struct pending *pp = &sp->pp;
    if (!pp->open)
        return is_blank(s, n) ? KILN_OK
                              : kiln_fail(err, KILN_E_REJECTED,
                                          "%s:%u: text before the first \"## \" heading: start "
                                          "each passage with \"## Title\" (an optional \"# "
                                          "Topic\" may come first)",
                                          sp->name, sp->line);
    if (!pp->seen_text && is_blank(s, n))
        return KILN_OK; /* blank lines between the heading and the text */
    if (!pp->seen_text && n >= 7 && memcmp(s, "Source:", 7) == 0)
        return take_source(sp, s, n, err);
    if (!pp->body && !is_blank(s, n))
        pp->body = s;
    if (pp->body)
        pp->body_end = s + n;
    pp->seen_text = true;
    return KILN_OK;
}

enum kiln_rc docs_corpus_parse(struct docs_corpus *c, const char *name, const char *buf, size_t len,
                               unsigned flags, struct kiln_err *err)
{
    enum kiln_rc rc = check_file(name, buf, len, err);
    if (rc != KILN_OK)
        return rc;
    struct splitter sp = {.c = c, .name = name, .flags = flags, .first = c->n};
    for (const char *s = buf, *end = buf + len; rc == KILN_OK && s < end;) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *eol = nl ? nl : end;
        rc = take_line(&sp, s, (size_t)(eol - s), err);
        s = nl ? nl + 1 : end;
    }
    if (rc == KILN_OK && sp.pp.open)
        rc = finish_passage(c, sp.first, name, sp.topic, sp.topic_len, &sp.pp, flags, err);
    if (rc == KILN_OK && c->n == sp.first)
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "%s: no passages: start each passage with a \"## Title\" line", name);
    if (rc != KILN_OK) /* all or nothing per file */
        while (c->n > sp.first)
            passage_free(&c->passages[--c->n]);
    return rc;
}

/* ---- directories ---- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The directory's *.md names, sorted; refuses bad ones and too many. */
static enum kiln_rc list_md(const char *dir, char ***out, size_t *count, struct kiln_err *err)
{
    *out = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO,
                               "docs directory %s", dir);
    char **names = calloc(DOCS_FILES_MAX, sizeof(*names));
    size_t n = 0;
    enum kiln_rc rc = names ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "docs directory");
    struct dirent *e;
    while (rc == KILN_OK && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 3 || strcmp(e->d_name + l - 3, ".md") != 0)
            continue; /* not a corpus file */
        if (!name_ok(e->d_name)) {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s/%.100s: a corpus file name must be [A-Za-z0-9._-]+.md of at most "
                           "%d bytes: rename it",
                           dir, e->d_name, DOCS_FILE_NAME_MAX);
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = kiln_fail_errno(err, KILN_E_IO, "%s/%s", dir, e->d_name);
            break;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s/%s is not a regular file (a symlink, directory or device): "
                           "copy the file itself into the directory",
                           dir, e->d_name);
            break;
        }
        if (n == DOCS_FILES_MAX) {
            rc = kiln_fail(err, KILN_E_LIMIT,
                           "%s has more than %d .md files: merge passages into fewer files", dir,
                           DOCS_FILES_MAX);
            break;
        }
        if (!(names[n] = strdup(e->d_name)))
            rc = kiln_fail(err, KILN_E_NOMEM, "docs directory");
        else
            n++;
    }
    closedir(d);
    if (rc == KILN_OK && n == 0)
        rc = kiln_fail(err, KILN_E_NOTFOUND,
                       "%s has no .md files: a corpus is a directory of markdown files", dir);
    if (rc != KILN_OK) {
        free_names(names, n);
        return rc;
    }
    qsort(names, n, sizeof(*names), cmp_names);
    *out = names;
    *count = n;
    return KILN_OK;
}

enum kiln_rc docs_corpus_load_dir(struct docs_corpus *c, const char *dir, unsigned flags,
                                  char digest[65], struct kiln_err *err)
{
    char **names = NULL;
    size_t n = 0;
    enum kiln_rc rc = list_md(dir, &names, &n, err);
    if (rc != KILN_OK)
        return rc;
    size_t first = c->n, bytes = c->bytes;
    struct sha256_ctx h;
    sha256_init(&h);
    sha256_update(&h, "kiln-docs-corpus-v1\n", 20);
    for (size_t i = 0; rc == KILN_OK && i < n; i++) {
        char path[PATH_MAX];
        if ((rc = fs_join(path, sizeof(path), dir, names[i], err)) != KILN_OK)
            break;
        char *text = NULL;
        size_t len = 0;
        struct kiln_err rerr;
        kiln_err_clear(&rerr);
        rc = fs_read_file(path, DOCS_FILE_MAX, &text, &len, &rerr);
        if (rc == KILN_E_LIMIT) {
            rc = kiln_fail(err, rc,
                           "%s is over the %u-byte limit of a corpus file: split it into "
                           "several files",
                           path, DOCS_FILE_MAX);
            break;
        }
        if (rc != KILN_OK) {
            *err = rerr;
            break;
        }
        if (c->bytes + len > DOCS_TOTAL_MAX) {
            free(text);
            rc = kiln_fail(err, KILN_E_LIMIT,
                           "%s: the corpus in %s is over its %u-byte limit: keep fewer or "
                           "shorter files",
                           names[i], dir, DOCS_TOTAL_MAX);
            break;
        }
        c->bytes += len;
        char lenbuf[32];
        int ll = snprintf(lenbuf, sizeof(lenbuf), "%zu", len);
        sha256_update(&h, names[i], strlen(names[i]) + 1);
        sha256_update(&h, lenbuf, (size_t)ll + 1);
        sha256_update(&h, text, len);
        rc = docs_corpus_parse(c, names[i], text, len, flags, err);
        free(text);
        if (rc != KILN_OK)
            kiln_err_prefix(err, "in %s", dir);
    }
    free_names(names, n);
    if (rc != KILN_OK) { /* all or nothing */
        while (c->n > first)
            passage_free(&c->passages[--c->n]);
        c->bytes = bytes;
    }
    if (rc == KILN_OK && digest) {
        uint8_t d[SHA256_DIGEST_LEN];
        sha256_final(&h, d);
        sha256_hex(d, digest);
    } else {
        sha256_discard(&h); /* the OpenSSL context is released either way */
    }
    return rc;
}

void docs_corpus_free(struct docs_corpus *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        passage_free(&c->passages[i]);
    free(c->passages);
    memset(c, 0, sizeof(*c));
}
