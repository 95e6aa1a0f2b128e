#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

#define MANIFEST_HEADER "kiln-manifest 1\n"
#define MANIFEST_DEPTH  16

bool manifest_path_ok(const char *p)
{
    size_t len = p ? strlen(p) : 0;
    if (len == 0 || len > MANIFEST_PATH_MAX)
        return false;
    bool start = true;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '/') {
            if (start) /* leading or doubled '/' */
                return false;
            start = true;
            continue;
        }
        if (start && c == '.') /* ".", "..", hidden names */
            return false;
        start = false;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return !start; /* no trailing '/' */
}

/* Leftovers of an atomic write interrupted by a crash (kill -9 of a run):
 * fs_write_atomic's NAME.tmp-XXXXXX, and beneath.c's .NAME.tmp- and 12 hex
 * digits (a compile worker's records). */
static bool is_atomic_leftover(const char *name)
{
    const char *t = strstr(name, ".tmp-");
    if (!t || strchr(t, '/'))
        return false;
    size_t n = strlen(t + 5);
    if (n == 6)
        return true;
    if (n != 12 || name[0] != '.')
        return false;
    for (const char *c = t + 5; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct manifest_entry *)a)->path,
                  ((const struct manifest_entry *)b)->path);
}

void manifest_free(struct manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->e[i].path);
    free(m->e);
    free(m->next.path);
    memset(m, 0, sizeof(*m));
}

const struct manifest_entry *manifest_find(const struct manifest *m, const char *path)
{
    struct manifest_entry key = {.path = (char *)path};
    return m->n ? bsearch(&key, m->e, m->n, sizeof(*m->e), cmp_entry) : NULL;
}

/* Appends without sorting (callers sort once). */
static enum kiln_rc append(struct manifest *m, const char *path, const char *sha, uint64_t size,
                           struct kiln_err *err)
{
    if (m->n >= MANIFEST_MAX_FILES)
        return kiln_fail(err, KILN_E_LIMIT, "more than %u files", MANIFEST_MAX_FILES);
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        struct manifest_entry *e = realloc(m->e, cap * sizeof(*e));
        if (!e)
            return kiln_fail(err, KILN_E_NOMEM, "manifest: out of memory");
        m->e = e;
        m->cap = cap;
    }
    char *p = strdup(path);
    if (!p)
        return kiln_fail(err, KILN_E_NOMEM, "manifest: out of memory");
    m->e[m->n].path = p;
    snprintf(m->e[m->n].sha256, sizeof(m->e[m->n].sha256), "%s", sha);
    m->e[m->n].size = size;
    m->n++;
    return KILN_OK;
}

enum kiln_rc manifest_put(struct manifest *m, const char *path, const char *sha256, uint64_t size,
                          struct kiln_err *err)
{
    struct manifest_entry *have = (struct manifest_entry *)manifest_find(m, path);
    if (have) {
        snprintf(have->sha256, sizeof(have->sha256), "%s", sha256);
        have->size = size;
        return KILN_OK;
    }
    enum kiln_rc rc = append(m, path, sha256, size, err);
    if (rc == KILN_OK)
        qsort(m->e, m->n, sizeof(*m->e), cmp_entry);
    return rc;
}

static bool skipped(const struct manifest_skip *skip, const char *rel)
{
    for (size_t i = 0; skip && i < skip->n; i++) {
        size_t l = strlen(skip->paths[i]);
        if (!strncmp(rel, skip->paths[i], l) && (rel[l] == '\0' || rel[l] == '/'))
            return true;
    }
    return false;
}

static enum kiln_rc scan_dir(int dfd, const char *rel, int depth, const struct manifest_skip *skip,
                             struct manifest *out, struct kiln_err *err)
{
    if (depth > MANIFEST_DEPTH)
        return kiln_fail(err, KILN_E_LIMIT, "%s: nested deeper than %d directories", rel,
                         MANIFEST_DEPTH);
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return kiln_fail_errno(err, KILN_E_IO, "reading directory %s", rel[0] ? rel : ".");
    }
    enum kiln_rc rc = KILN_OK;
    struct dirent *de;
    while (rc == KILN_OK && (errno = 0, de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        char path[MANIFEST_PATH_MAX + 2];
        if (snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "", name) >=
            (int)sizeof(path)) {
            rc = kiln_fail(err, KILN_E_REJECTED, "%s/%s: path longer than %d bytes", rel, name,
                           MANIFEST_PATH_MAX);
            break;
        }
        if ((depth == 0 && (!strcmp(name, MANIFEST_NAME) || !strcmp(name, MANIFEST_NAME ".sig") ||
                            !strncmp(name, MANIFEST_NAME ".tmp-", 13))) ||
            skipped(skip, path) || is_atomic_leftover(name))
            continue;
        if (!manifest_path_ok(path)) {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s: not a name a run record holds (letters, digits, . _ -; "
                           "no hidden files): remove or rename it",
                           path);
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = kiln_fail_errno(err, KILN_E_IO, "stat %s", path);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = sub < 0 ? kiln_fail_errno(err, KILN_E_IO, "opening %s", path)
                         : scan_dir(sub, path, depth + 1, skip, out, err);
        } else if (S_ISREG(st.st_mode)) {
            int fd = openat(dirfd(d), name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            char hex[SHA256_HEX_LEN + 1];
            uint64_t size = 0;
            if (fd < 0) {
                rc = kiln_fail_errno(err, KILN_E_IO, "opening %s", path);
            } else {
                rc = sha256_fd_hex(fd, MANIFEST_FILE_MAX, hex, &size, err);
                close(fd);
                if (rc != KILN_OK)
                    kiln_err_prefix(err, "%s", path);
                else
                    rc = append(out, path, hex, size, err);
            }
        } else {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s is a %s, not a regular file: a run record holds only files and "
                           "directories",
                           path, S_ISLNK(st.st_mode) ? "symbolic link" : "special file");
        }
    }
    if (rc == KILN_OK && errno != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "reading directory %s", rel[0] ? rel : ".");
    closedir(d);
    return rc;
}

enum kiln_rc manifest_scan(const char *dir, const struct manifest_skip *skip, struct manifest *out,
                           struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "opening %s",
                               dir);
    enum kiln_rc rc = scan_dir(fd, "", 0, skip, out, err);
    if (rc != KILN_OK) {
        manifest_free(out);
        kiln_err_prefix(err, "%s", dir);
        return rc;
    }
    if (out->n)
        qsort(out->e, out->n, sizeof(*out->e), cmp_entry);
    return KILN_OK;
}

enum kiln_rc manifest_format(const struct manifest *m, char **text, size_t *len,
                             struct kiln_err *err)
{
    size_t cap = sizeof(MANIFEST_HEADER) + (m->n + 1) * (SHA256_HEX_LEN + 32 + MANIFEST_PATH_MAX);
    char *t = malloc(cap);
    if (!t)
        return kiln_fail(err, KILN_E_NOMEM, "manifest: out of memory");
    size_t off = (size_t)snprintf(t, cap, "%s", MANIFEST_HEADER);
    for (size_t i = 0; i < m->n; i++)
        off += (size_t)snprintf(t + off, cap - off, "%s %llu %s\n", m->e[i].sha256,
                                (unsigned long long)m->e[i].size, m->e[i].path);
    if (m->next.path)
        off += (size_t)snprintf(t + off, cap - off, "next %s %llu %s\n", m->next.sha256,
                                (unsigned long long)m->next.size, m->next.path);
    *text = t;
    *len = off;
    return KILN_OK;
}

/* One "<sha> <size> <path>" line into `e` (path strdup'd). */
static bool parse_fields(const char *s, size_t n, struct manifest_entry *e)
{
    if (n < SHA256_HEX_LEN + 4 || s[SHA256_HEX_LEN] != ' ')
        return false;
    memcpy(e->sha256, s, SHA256_HEX_LEN);
    e->sha256[SHA256_HEX_LEN] = '\0';
    if (!sha256_is_hex(e->sha256))
        return false;
    const char *p = s + SHA256_HEX_LEN + 1, *end = s + n;
    uint64_t size = 0;
    size_t digits = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits >= 20 || size > (MANIFEST_FILE_MAX - (uint64_t)(*p - '0')) / 10)
            return false;
        size = size * 10 + (uint64_t)(*p - '0');
    }
    if (digits == 0 || (digits > 1 && s[SHA256_HEX_LEN + 1] == '0') || p >= end || *p != ' ')
        return false;
    p++;
    size_t plen = (size_t)(end - p);
    if (plen == 0 || plen > MANIFEST_PATH_MAX || memchr(p, '\0', plen))
        return false;
    char *path = strndup(p, plen);
    if (!path)
        return false;
    if (!manifest_path_ok(path)) {
        free(path);
        return false;
    }
    e->path = path;
    e->size = size;
    return true;
}

enum kiln_rc manifest_parse(const char *text, size_t len, struct manifest *out,
                            struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (len > MANIFEST_MAX_BYTES)
        return kiln_fail(err, KILN_E_LIMIT, "MANIFEST is larger than %u bytes", MANIFEST_MAX_BYTES);
    size_t hl = strlen(MANIFEST_HEADER);
    if (len < hl || memcmp(text, MANIFEST_HEADER, hl) != 0)
        return kiln_fail(err, KILN_E_PARSE, "MANIFEST: the first line is not \"kiln-manifest 1\"");
    enum kiln_rc rc = KILN_OK;
    size_t line = 1;
    for (size_t off = hl; rc == KILN_OK && off < len;) {
        line++;
        const char *s = text + off, *nl = memchr(s, '\n', len - off);
        if (!nl) {
            rc = kiln_fail(err, KILN_E_PARSE,
                           "MANIFEST line %zu: no newline at the end (cut short?)", line);
            break;
        }
        size_t n = (size_t)(nl - s);
        off += n + 1;
        struct manifest_entry e = {0};
        bool is_next = n > 5 && !memcmp(s, "next ", 5);
        if (is_next && out->next.path) {
            rc = kiln_fail(err, KILN_E_PARSE, "MANIFEST line %zu: a second \"next\" line", line);
        } else if (!parse_fields(is_next ? s + 5 : s, is_next ? n - 5 : n, &e)) {
            rc = kiln_fail(err, KILN_E_PARSE,
                           "MANIFEST line %zu: not \"SHA256 SIZE PATH\" with a 64-digit "
                           "lower-case digest, a decimal size and a canonical relative path",
                           line);
        } else if (is_next) {
            out->next = e;
        } else if (out->next.path) {
            free(e.path);
            rc = kiln_fail(err, KILN_E_PARSE, "MANIFEST line %zu: an entry after \"next\"", line);
        } else if (out->n && strcmp(out->e[out->n - 1].path, e.path) >= 0) {
            rc = kiln_fail(err, KILN_E_PARSE,
                           "MANIFEST line %zu: %s is out of order or listed twice", line, e.path);
            free(e.path);
        } else {
            rc = append(out, e.path, e.sha256, e.size, err);
            free(e.path);
            if (rc != KILN_OK)
                kiln_err_prefix(err, "MANIFEST line %zu", line);
        }
    }
    if (rc != KILN_OK)
        manifest_free(out);
    return rc;
}

/* "KIND: PATH[ -> TO][ NOTE]" on its own line; the list says when it was cut. */
static void add_line(struct manifest_diff *d, const char *kind, const char *path, const char *to,
                     const char *note)
{
    size_t off = strlen(d->report);
    if (off + 1 < sizeof(d->report))
        snprintf(d->report + off, sizeof(d->report) - off, "%s: %s%s%s%s\n", kind, path,
                 to ? " -> " : "", to ? to : "", note);
    off = strlen(d->report);
    if (off + 1 >= sizeof(d->report))
        memcpy(d->report + sizeof(d->report) - 6, "...\n", 5);
}

void manifest_compare(const struct manifest *want, const struct manifest *have,
                      bool (*tolerate)(const char *path, void *ctx), void *ctx,
                      struct manifest_diff *out)
{
    memset(out, 0, sizeof(*out));
    /* Missing files first (renames are found among them), then the rest. */
    for (size_t i = 0; i < want->n; i++) {
        const struct manifest_entry *w = &want->e[i], *h = manifest_find(have, w->path);
        bool next = want->next.path && !strcmp(want->next.path, w->path);
        if (h) {
            if (strcmp(h->sha256, w->sha256) && !(next && !strcmp(h->sha256, want->next.sha256))) {
                out->n_problems++;
                add_line(out, "changed", w->path, NULL, " (its SHA-256 is not the recorded one)");
            }
            continue;
        }
        const char *to = NULL;
        for (size_t k = 0; k < have->n && !to; k++)
            if (!manifest_find(want, have->e[k].path) && !strcmp(have->e[k].sha256, w->sha256))
                to = have->e[k].path;
        out->n_problems++;
        if (to)
            add_line(out, "renamed", w->path, to, "");
        else
            add_line(out, "missing", w->path, NULL, "");
    }
    for (size_t k = 0; k < have->n; k++) {
        const struct manifest_entry *h = &have->e[k];
        if (manifest_find(want, h->path))
            continue;
        bool renamed = false;
        for (size_t i = 0; i < want->n && !renamed; i++)
            renamed =
                !manifest_find(have, want->e[i].path) && !strcmp(want->e[i].sha256, h->sha256);
        if (renamed)
            continue; /* reported with its old name above */
        if (want->next.path && !strcmp(want->next.path, h->path) &&
            !strcmp(want->next.sha256, h->sha256))
            continue; /* a new file whose write was announced */
        if (tolerate && tolerate(h->path, ctx)) {
            out->n_tolerated++;
            continue;
        }
        out->n_problems++;
        add_line(out, "extra", h->path, NULL, " (not in the MANIFEST)");
    }
}

enum kiln_rc manifest_write_dir(const char *dir, const struct manifest_skip *skip,
                                const char *next_rel, const void *next_data, size_t next_len,
                                struct kiln_err *err)
{
    struct manifest m;
    enum kiln_rc rc = manifest_scan(dir, skip, &m, err);
    if (rc != KILN_OK)
        return rc;
    if (next_rel) {
        m.next.path = strdup(next_rel);
        if (!m.next.path) {
            manifest_free(&m);
            return kiln_fail(err, KILN_E_NOMEM, "manifest: out of memory");
        }
        sha256_hex_of(next_data, next_len, m.next.sha256);
        m.next.size = next_len;
    }
    char *text = NULL, path[4096];
    size_t len = 0;
    rc = manifest_format(&m, &text, &len, err);
    manifest_free(&m);
    if (rc == KILN_OK)
        rc = fs_join(path, sizeof(path), dir, MANIFEST_NAME, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(path, text, len, err);
    free(text);
    return rc;
}

enum kiln_rc manifest_announce(const char *dir, const char *rel, const void *data, size_t len,
                               struct kiln_err *err)
{
    char path[4096], *text = NULL;
    size_t tlen = 0;
    enum kiln_rc rc = fs_join(path, sizeof(path), dir, MANIFEST_NAME, err);
    if (rc != KILN_OK)
        return rc;
    struct kiln_err e;
    kiln_err_clear(&e);
    rc = fs_read_file(path, MANIFEST_MAX_BYTES, &text, &tlen, &e);
    if (rc == KILN_E_NOTFOUND)
        return KILN_OK;
    if (rc != KILN_OK) {
        *err = e;
        return rc;
    }
    if (!manifest_path_ok(rel)) {
        free(text);
        return kiln_fail(err, KILN_E_INTERNAL, "%s: not a name a MANIFEST can list", rel);
    }
    struct manifest m;
    rc = manifest_parse(text, tlen, &m, err);
    free(text);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "%s (changed while the run went on?)", path);
        return rc;
    }
    if (m.next.path) {
        char fpath[4096], hex[SHA256_HEX_LEN + 1];
        uint64_t size = 0;
        if (fs_join(fpath, sizeof(fpath), dir, m.next.path, &e) == KILN_OK &&
            sha256_file_hex(fpath, MANIFEST_FILE_MAX, hex, &size, &e) == KILN_OK &&
            !strcmp(hex, m.next.sha256))
            rc = manifest_put(&m, m.next.path, hex, size, err);
        free(m.next.path);
        m.next.path = NULL;
    }
    if (rc == KILN_OK && !(m.next.path = strdup(rel)))
        rc = kiln_fail(err, KILN_E_NOMEM, "manifest: out of memory");
    if (rc == KILN_OK) {
        sha256_hex_of(data, len, m.next.sha256);
        m.next.size = len;
        rc = manifest_format(&m, &text, &tlen, err);
    }
    if (rc == KILN_OK) {
        rc = fs_write_atomic(path, text, tlen, err);
        free(text);
    }
    manifest_free(&m);
    return rc;
}

enum kiln_rc manifest_check_dir(const char *dir, const struct manifest_skip *skip,
                                bool (*tolerate)(const char *path, void *ctx), void *ctx,
                                struct manifest_diff *diff, struct kiln_err *err)
{
    memset(diff, 0, sizeof(*diff));
    char path[4096], *text = NULL;
    size_t len = 0;
    enum kiln_rc rc = fs_join(path, sizeof(path), dir, MANIFEST_NAME, err);
    if (rc == KILN_OK && (rc = fs_read_file(path, MANIFEST_MAX_BYTES, &text, &len, err)) != KILN_OK)
        return rc;
    struct manifest want, have;
    rc = manifest_parse(text, len, &want, err);
    free(text);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "%s", dir);
        return rc;
    }
    /* What the scan leaves out is not compared (an archive's MANIFEST also
     * lists work/inputs, which a run's own check skips). */
    size_t kept = 0;
    for (size_t i = 0; i < want.n; i++) {
        if (skipped(skip, want.e[i].path))
            free(want.e[i].path);
        else
            want.e[kept++] = want.e[i];
    }
    want.n = kept;
    rc = manifest_scan(dir, skip, &have, err);
    if (rc == KILN_OK) {
        manifest_compare(&want, &have, tolerate, ctx, diff);
        if (diff->n_problems)
            rc = kiln_fail(err, KILN_E_REJECTED, "%s: %zu %s from its MANIFEST:\n%s", dir,
                           diff->n_problems,
                           diff->n_problems == 1 ? "file differs" : "files differ", diff->report);
    }
    manifest_free(&want);
    manifest_free(&have);
    return rc;
}
