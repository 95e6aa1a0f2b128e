/*
 * tar_ingest.c - strict reading of sandbox tar streams with libarchive.
 * libarchive parses the headers; this file decides what is acceptable and
 * counts every byte itself. See tar_ingest.h and INGEST.md.
 */
#include "tar_ingest.h"

#include "fdio.h"
#include "tar_name.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK 65536
/* Per header on the raw stream: the 512-byte header plus up to 511 bytes
 * of padding after the data. */
#define PER_ENTRY_OVERHEAD 1024
/* End-of-archive blocks, record padding and one read-ahead chunk. */
#define STREAM_SLACK (2 * 10240 + READ_CHUNK)

/* The raw stream as libarchive sees it, with our own byte count. */
struct reader {
    int fd;
    size_t raw, raw_cap;
    int over_cap, io_errno;
    unsigned char buf[READ_CHUNK];
};

/* Where accepted files go: memory (dirfd < 0) or a directory. */
struct ingest {
    const struct tar_rules *rules;
    int dirfd;
    struct tar_entry *entries; /* memory mode */
    size_t n_entries, cap_entries;
    char **names; /* directory mode: files created, for the result and cleanup */
    size_t n_names, cap_names;
    char **dirs; /* directory mode: directories created, for cleanup */
    size_t n_dirs, cap_dirs;
    struct tar_span *spans; /* directory mode: files left in the stream (rules->in_stream) */
    size_t n_spans, cap_spans;
    unsigned char *chunk;
    struct reader *reader;
};

static la_ssize_t read_cb(struct archive *a, void *ud, const void **buf)
{
    struct reader *r = ud;
    size_t want = sizeof(r->buf);
    /* Ask for at most one byte past the cap: that byte proves the excess. */
    if (r->raw_cap - r->raw + 1 < want)
        want = r->raw_cap - r->raw + 1;
    ssize_t n;
    do {
        n = read(r->fd, r->buf, want);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        r->io_errno = errno;
        archive_set_error(a, errno, "read error");
        return -1;
    }
    r->raw += (size_t)n;
    if (r->raw > r->raw_cap) {
        r->over_cap = 1;
        archive_set_error(a, EFBIG, "stream exceeds its byte cap");
        return -1;
    }
    *buf = r->buf;
    return n;
}

static size_t sat_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

static size_t sat_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Hostile names may hold anything: quote them printable and bounded. */
static void quote_name(const char *name, char *out, size_t size)
{
    size_t o = 0;
    if (!name) {
        snprintf(out, size, "(no name)");
        return;
    }
    for (size_t i = 0; name[i] && o + 8 < size; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (i >= 120) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\')
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
        else
            out[o++] = (char)ch;
    }
    out[o] = '\0';
}

static enum kiln_rc reject(struct kiln_err *err, const char *name, const char *why)
{
    char q[400];
    quote_name(name, q, sizeof(q));
    return kiln_fail(err, KILN_E_REJECTED, "tar entry \"%s\": %s", q, why);
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *p = reallocarray(*arr, ncap, elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* ---- directory mode ---------------------------------------------------- */

/* Opens (creating 0700 when missing) the parent directories of `name`
 * beneath dirfd, one component at a time, never following a link. On
 * success *out is an fd the caller closes and *leaf the last component. */
static enum kiln_rc open_parent(struct ingest *g, const char *name, const char **leaf, int *out,
                                struct kiln_err *err)
{
    int cur = g->dirfd;
    const char *p = name;
    const char *slash;
    while ((slash = strchr(p, '/')) != NULL) {
        char comp[TAR_NAME_MAX + 1];
        size_t clen = (size_t)(slash - p);
        memcpy(comp, p, clen);
        comp[clen] = '\0';
        if (mkdirat(cur, comp, 0700) == 0) {
            if (grow((void **)&g->dirs, &g->cap_dirs, g->n_dirs, sizeof(char *)) != 0 ||
                !(g->dirs[g->n_dirs] = strndup(name, (size_t)(slash - name)))) {
                /* Cannot record it for cleanup: remove it now. */
                unlinkat(cur, comp, AT_REMOVEDIR);
                if (cur != g->dirfd)
                    close(cur);
                return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory");
            }
            g->n_dirs++;
        } else if (errno != EEXIST) {
            enum kiln_rc rc = kiln_fail_errno(err, KILN_E_IO, "tar ingest: mkdir for \"%.*s\"",
                                              (int)(slash - name), name);
            if (cur != g->dirfd)
                close(cur);
            return rc;
        }
        int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        if (cur != g->dirfd)
            close(cur);
        if (next < 0) {
            if (saved == ENOTDIR || saved == ELOOP)
                return reject(err, name, "a leading component is already a file");
            errno = saved;
            return kiln_fail_errno(err, KILN_E_IO, "tar ingest: open directory for \"%.*s\"",
                                   (int)(slash - name), name);
        }
        cur = next;
        p = slash + 1;
    }
    *leaf = p;
    if (cur == g->dirfd) {
        cur = fcntl(g->dirfd, F_DUPFD_CLOEXEC, 0);
        if (cur < 0)
            return kiln_fail_errno(err, KILN_E_IO, "tar ingest: dup");
    }
    *out = cur;
    return KILN_OK;
}

/* Explains why libarchive stopped, preferring our own account of it. */
static enum kiln_rc stream_error(struct archive *a, const struct reader *r, const char *after,
                                 struct kiln_err *err)
{
    char q[400];
    quote_name(after, q, sizeof(q));
    if (r->io_errno) {
        errno = r->io_errno;
        return kiln_fail_errno(err, KILN_E_IO, "tar ingest: reading the stream");
    }
    if (r->over_cap)
        return kiln_fail(err, KILN_E_REJECTED,
                         "tar stream: more than %zu bytes (cap for these rules), at entry \"%s\"",
                         r->raw_cap, q);
    const char *msg = archive_error_string(a);
    return kiln_fail(err, KILN_E_REJECTED, "tar stream: %s (after entry \"%s\")",
                     msg ? msg : "malformed", q);
}

/* ---- the one loop ------------------------------------------------------ */

/* A file left in the stream: its data is read through and counted under
 * the same caps, and only where it lies is recorded. */
static enum kiln_rc take_span(struct archive *a, struct ingest *g, const char *name,
                              int64_t data_off, size_t *total, struct kiln_err *err)
{
    const struct tar_rules *rules = g->rules;
    size_t len = 0;
    for (;;) {
        const void *buf;
        size_t n;
        la_int64_t off;
        int ar = archive_read_data_block(a, &buf, &n, &off);
        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK)
            return stream_error(a, g->reader, name, err);
        if (off != (la_int64_t)len)
            return reject(err, name, "data with a hole (sparse)");
        if (n > rules->max_file_bytes - len)
            return reject(err, name, "file exceeds the per-file byte cap");
        if (n > rules->max_total_bytes - *total)
            return reject(err, name, "stream exceeds the total byte cap");
        *total += n;
        len += n;
    }
    char *copy = strdup(name);
    if (!copy || grow((void **)&g->spans, &g->cap_spans, g->n_spans, sizeof(*g->spans)) != 0) {
        free(copy);
        return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory");
    }
    g->spans[g->n_spans++] =
        (struct tar_span){.name = copy, .offset = (uint64_t)data_off, .len = len};
    return KILN_OK;
}

/* Directory mode: creates `name` beneath the directory, never following a
 * link, and records it for cleanup before any data is written: on success
 * g->names takes *copy (*copy becomes NULL); on failure *copy stays the
 * caller's and nothing is left open. */
static enum kiln_rc create_file(struct ingest *g, const char *name, char **copy, int *out,
                                struct kiln_err *err)
{
    const char *leaf = NULL;
    int parent = -1;
    enum kiln_rc rc = open_parent(g, name, &leaf, &parent, err);
    if (rc != KILN_OK)
        return rc;
    int fd = openat(parent, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int saved = errno;
    close(parent);
    if (fd < 0) {
        if (saved == EEXIST)
            return reject(err, name, "duplicate name (or already in the directory)");
        errno = saved;
        return kiln_fail_errno(err, KILN_E_IO, "tar ingest: creating \"%s\"", name);
    }
    if (grow((void **)&g->names, &g->cap_names, g->n_names, sizeof(char *)) != 0) {
        close(fd);
        unlinkat(g->dirfd, name, 0);
        return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory");
    }
    g->names[g->n_names++] = *copy;
    *copy = NULL;
    *out = fd;
    return KILN_OK;
}

/* Counts a chunk of n bytes, after `len` of this file, under the per-file
 * and total byte caps. */
static enum kiln_rc count_chunk(const struct tar_rules *rules, const char *name, size_t n,
                                size_t len, size_t *total, struct kiln_err *err)
{
    if (n > rules->max_file_bytes - len)
        return reject(err, name, "file exceeds the per-file byte cap");
    if (n > rules->max_total_bytes - *total)
        return reject(err, name, "stream exceeds the total byte cap");
    *total += n;
    return KILN_OK;
}

/* Memory mode: appends a chunk after `len` bytes of *data, keeping room for
 * the terminating NUL; *data stays the caller's either way. */
static enum kiln_rc append_chunk(unsigned char **data, size_t *cap, size_t len,
                                 const unsigned char *chunk, size_t n, const char *name,
                                 struct kiln_err *err)
{
    if (len + n + 1 > *cap) {
        size_t ncap = *cap ? *cap : 4096;
        while (ncap < len + n + 1)
            ncap *= 2;
        unsigned char *nd = realloc(*data, ncap);
        if (!nd)
            return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory for \"%s\"", name);
        *data = nd;
        *cap = ncap;
    }
    memcpy(*data + len, chunk, n);
    return KILN_OK;
}

/* Memory mode: NUL-terminates the data and keeps the entry. Takes `copy`
 * and `data` (NULL for an empty file), freeing both on failure. */
static enum kiln_rc keep_entry(struct ingest *g, char *copy, unsigned char *data, size_t len,
                               struct kiln_err *err)
{
    if (!data && !(data = malloc(1))) {
        free(copy);
        return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory");
    }
    data[len] = '\0';
    if (grow((void **)&g->entries, &g->cap_entries, g->n_entries, sizeof(*g->entries)) != 0) {
        free(data);
        free(copy);
        return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory");
    }
    g->entries[g->n_entries++] = (struct tar_entry){.name = copy, .data = data, .len = len};
    return KILN_OK;
}

/* Reads one accepted file's data into memory or the directory. */
static enum kiln_rc take_file(struct archive *a, struct ingest *g, const char *name, size_t *total,
                              struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    unsigned char *data = NULL;
    size_t len = 0, cap = 0;
    int fd = -1;
    char *copy = strdup(name);
    if (!copy)
        return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory");

    if (g->dirfd >= 0 && (rc = create_file(g, name, &copy, &fd, err)) != KILN_OK) {
        free(copy);
        return rc;
    }

    for (;;) {
        la_ssize_t n = archive_read_data(a, g->chunk, READ_CHUNK);
        if (n == 0)
            break;
        if (n < 0) {
            rc = stream_error(a, g->reader, name, err);
            goto out;
        }
        rc = count_chunk(g->rules, name, (size_t)n, len, total, err);
        if (rc != KILN_OK)
            goto out;
        if (fd >= 0) {
            rc = fd_write_all(fd, g->chunk, (size_t)n, err, "tar ingest: writing \"%s\"", name);
            if (rc != KILN_OK)
                goto out;
            len += (size_t)n;
            continue;
        }
        rc = append_chunk(&data, &cap, len, g->chunk, (size_t)n, name, err);
        if (rc != KILN_OK)
            goto out;
        len += (size_t)n;
    }

    if (fd >= 0) {
        if (close(fd) != 0)
            rc = kiln_fail_errno(err, KILN_E_IO, "tar ingest: closing \"%s\"", name);
        fd = -1;
        goto out;
    }
    return keep_entry(g, copy, data, len, err);
out:
    if (fd >= 0)
        close(fd);
    free(data);
    free(copy);
    return rc;
}

static int cmp_entry(const void *x, const void *y)
{
    return strcmp(((const struct tar_entry *)x)->name, ((const struct tar_entry *)y)->name);
}

static int cmp_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static int cmp_span(const void *x, const void *y)
{
    return strcmp(((const struct tar_span *)x)->name, ((const struct tar_span *)y)->name);
}

/* The walk over one stream's headers: the archive, its raw reader, and
 * what has been counted so far. */
struct walk {
    struct archive *a;
    struct reader *r;
    size_t max_headers, headers, files, total;
    /* Where the next header must start if every entry is one 512-byte
     * header plus its padded data. libarchive applies GNU 'L'/'K'/'V' and
     * pax headers silently and only some of them change archive_format,
     * so a header group longer than 512 bytes is how they show. */
    int64_t expect_pos;
    char last[TAR_NAME_MAX + 2]; /* the last entry's name, for messages */
};

static void walk_close(struct walk *w, struct ingest *g)
{
    if (w->a)
        archive_read_free(w->a);
    free(w->r);
    g->reader = NULL;
    free(g->chunk);
    g->chunk = NULL;
}

/* The reader, its cap on raw bytes, the data buffer and the archive, open
 * on `fd`; nothing is held on failure. */
static enum kiln_rc walk_open(int fd, struct ingest *g, struct walk *w, struct kiln_err *err)
{
    const struct tar_rules *rules = g->rules;
    memset(w, 0, sizeof(*w));
    snprintf(w->last, sizeof(w->last), "(start)");
    w->max_headers = sat_add(sat_mul(rules->max_files, 2), 64);
    w->r = calloc(1, sizeof(*w->r));
    g->chunk = malloc(READ_CHUNK);
    w->a = archive_read_new();
    if (!w->r || !g->chunk || !w->a) {
        walk_close(w, g);
        return kiln_fail(err, KILN_E_NOMEM, "tar ingest: out of memory");
    }
    w->r->fd = fd;
    g->reader = w->r;
    w->r->raw_cap = sat_add(
        sat_add(rules->max_total_bytes, sat_mul(w->max_headers, PER_ENTRY_OVERHEAD)), STREAM_SLACK);
    /* Tar only and no decompression filter: compressed input fails format
     * detection, so a compression bomb never expands. */
    if (archive_read_support_format_tar(w->a) != ARCHIVE_OK ||
        archive_read_open(w->a, w->r, NULL, read_cb, NULL) != ARCHIVE_OK) {
        enum kiln_rc rc = stream_error(w->a, w->r, "(start)", err);
        walk_close(w, g);
        return rc;
    }
    return KILN_OK;
}

/* What makes any entry unacceptable whatever its type, or NULL. */
static const char *entry_problem(struct archive *a, struct archive_entry *e)
{
    /* The format is sticky once an extension header was seen, so this
     * catches the entry a pax or GNU header applies to. */
    if (archive_format(a) != ARCHIVE_FORMAT_TAR_USTAR)
        return "pax or GNU extension header, or a pre-POSIX header (kiln accepts plain "
               "ustar only)";
    if (archive_entry_hardlink(e))
        return "hard link";
    if (archive_entry_symlink(e) || archive_entry_filetype(e) == AE_IFLNK)
        return "symbolic link";
    if (archive_entry_sparse_count(e) > 0)
        return "sparse file";
    return NULL;
}

/* What makes a directory entry unacceptable, or NULL. */
static const char *dir_problem(const struct tar_rules *rules, struct archive_entry *e,
                               const char *name, char *why, size_t cap)
{
    const char *p = tar_name_problem(name, 1, why, cap);
    if (p)
        return p;
    /* libarchive zeroes a ustar directory's size (its "data" is read as
     * the next header); a GNU dumpdir ('D') keeps it. */
    if (!archive_entry_size_is_set(e) || archive_entry_size(e) != 0)
        return "directory entry carrying data";
    if (!tar_dir_allowed(rules, name))
        return "unexpected directory";
    return NULL;
}

/* What makes any other entry unacceptable, or NULL; counts the files. */
static const char *file_problem(struct walk *w, const struct tar_rules *rules,
                                struct archive_entry *e, const char *name, char *why, size_t cap)
{
    unsigned type = archive_entry_filetype(e);
    if (type != AE_IFREG)
        return type == AE_IFIFO    ? "FIFO"
               : type == AE_IFCHR  ? "character device"
               : type == AE_IFBLK  ? "block device"
               : type == AE_IFSOCK ? "socket"
                                   : "not a regular file";
    const char *p = tar_name_problem(name, 0, why, cap);
    if (p)
        return p;
    if (!tar_name_allowed(rules, name))
        return "not a name this step produces";
    if (++w->files > rules->max_files) {
        snprintf(why, cap, "more than %zu files", rules->max_files);
        return why;
    }
    /* The header size only rejects early; the bytes read decide. */
    if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0)
        return "no size in the header";
    if ((uint64_t)archive_entry_size(e) > rules->max_file_bytes)
        return "file exceeds the per-file byte cap";
    return NULL;
}

/* One entry whose header was read: checked, then taken (a file) or only
 * allowed (a directory); sets where the next header must start. */
static enum kiln_rc walk_entry(struct walk *w, struct ingest *g, struct archive_entry *e,
                               struct kiln_err *err)
{
    const char *name = archive_entry_pathname(e);
    char why[128];
    if (++w->headers > w->max_headers)
        return reject(err, name, "too many entries");
    if (!name)
        return reject(err, NULL, "entry without a name");
    snprintf(w->last, sizeof(w->last), "%s", name);
    const char *p = entry_problem(w->a, e);
    if (p)
        return reject(err, name, p);
    int64_t data_pos = archive_read_header_position(w->a) + 512;
    if (archive_entry_filetype(e) == AE_IFDIR) {
        if ((p = dir_problem(g->rules, e, name, why, sizeof(why))) != NULL)
            return reject(err, name, p);
        w->expect_pos = data_pos;
        return KILN_OK;
    }
    if ((p = file_problem(w, g->rules, e, name, why, sizeof(why))) != NULL)
        return reject(err, name, p);
    /* One 512-byte header (the position check on the next header proves
     * it), so the data starts right after it. */
    enum kiln_rc rc = g->dirfd >= 0 && tar_name_in_stream(g->rules, name)
                          ? take_span(w->a, g, name, data_pos, &w->total, err)
                          : take_file(w->a, g, name, &w->total, err);
    if (rc != KILN_OK)
        return rc;
    w->expect_pos =
        archive_read_header_position(w->a) + 512 + ((archive_entry_size(e) + 511) & ~511);
    return KILN_OK;
}

static enum kiln_rc ingest_run(int fd, struct ingest *g, struct kiln_err *err)
{
    const struct tar_rules *rules = g->rules;
    if (!rules || (rules->n_patterns && !rules->patterns))
        return kiln_fail(err, KILN_E_USAGE, "tar ingest: no rules given");
    struct walk w;
    enum kiln_rc rc = walk_open(fd, g, &w, err);
    if (rc != KILN_OK)
        return rc;
    for (;;) {
        struct archive_entry *e;
        int ar = archive_read_next_header(w.a, &e);
        if ((ar == ARCHIVE_OK || ar == ARCHIVE_EOF) &&
            archive_read_header_position(w.a) != w.expect_pos) {
            rc = reject(err, w.last,
                        "extension header before this entry (pax, GNU long name or volume "
                        "header; kiln accepts plain ustar only)");
            break;
        }
        if (ar == ARCHIVE_EOF)
            break;
        if (ar != ARCHIVE_OK) {
            rc = stream_error(w.a, w.r, w.last, err);
            break;
        }
        if ((rc = walk_entry(&w, g, e, err)) != KILN_OK)
            break;
    }
    walk_close(&w, g);
    return rc;
}

static void ingest_discard(struct ingest *g)
{
    for (size_t i = 0; i < g->n_entries; i++) {
        free(g->entries[i].name);
        free(g->entries[i].data);
    }
    free(g->entries);
    for (size_t i = g->n_names; i-- > 0;) {
        if (g->dirfd >= 0)
            unlinkat(g->dirfd, g->names[i], 0);
        free(g->names[i]);
    }
    free(g->names);
    /* Created parent-first, so reverse order removes children first. */
    for (size_t i = g->n_dirs; i-- > 0;) {
        if (g->dirfd >= 0)
            unlinkat(g->dirfd, g->dirs[i], AT_REMOVEDIR);
        free(g->dirs[i]);
    }
    free(g->dirs);
    for (size_t i = 0; i < g->n_spans; i++)
        free(g->spans[i].name);
    free(g->spans);
    memset(g, 0, sizeof(*g));
}

enum kiln_rc tar_ingest_fd(int fd, const struct tar_rules *rules, struct tar_contents *out,
                           struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    struct ingest g = {.rules = rules, .dirfd = -1};
    enum kiln_rc rc = ingest_run(fd, &g, err);
    if (rc == KILN_OK && g.n_entries > 1) {
        qsort(g.entries, g.n_entries, sizeof(*g.entries), cmp_entry);
        for (size_t i = 1; i < g.n_entries; i++) {
            if (strcmp(g.entries[i - 1].name, g.entries[i].name) == 0) {
                rc = reject(err, g.entries[i].name, "duplicate name");
                break;
            }
        }
    }
    if (rc != KILN_OK) {
        ingest_discard(&g);
        return rc;
    }
    out->entries = g.entries;
    out->n = g.n_entries;
    return KILN_OK;
}

enum kiln_rc tar_ingest_to_dir(int fd, const struct tar_rules *rules, int dirfd,
                               struct tar_names *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (dirfd < 0)
        return kiln_fail(err, KILN_E_USAGE, "tar_ingest_to_dir: no directory");
    struct ingest g = {.rules = rules, .dirfd = dirfd};
    enum kiln_rc rc = ingest_run(fd, &g, err);
    if (rc == KILN_OK && g.n_spans > 1) {
        qsort(g.spans, g.n_spans, sizeof(*g.spans), cmp_span);
        for (size_t i = 1; i < g.n_spans; i++) {
            if (strcmp(g.spans[i - 1].name, g.spans[i].name) == 0) {
                rc = reject(err, g.spans[i].name, "duplicate name");
                break;
            }
        }
    }
    if (rc != KILN_OK) {
        ingest_discard(&g);
        return rc;
    }
    for (size_t i = 0; i < g.n_dirs; i++)
        free(g.dirs[i]);
    free(g.dirs);
    if (g.n_names > 1)
        qsort(g.names, g.n_names, sizeof(*g.names), cmp_name);
    out->names = g.names;
    out->n = g.n_names;
    out->spans = g.spans;
    out->nspans = g.n_spans;
    return KILN_OK;
}

const struct tar_span *tar_names_span(const struct tar_names *n, const char *name)
{
    if (!n || n->nspans == 0)
        return NULL;
    struct tar_span key = {.name = (char *)name};
    return bsearch(&key, n->spans, n->nspans, sizeof(*n->spans), cmp_span);
}

const struct tar_entry *tar_contents_find(const struct tar_contents *c, const char *name)
{
    if (!c || c->n == 0)
        return NULL;
    struct tar_entry key = {.name = (char *)name};
    return bsearch(&key, c->entries, c->n, sizeof(*c->entries), cmp_entry);
}

void tar_contents_free(struct tar_contents *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->entries[i].name);
        free(c->entries[i].data);
    }
    free(c->entries);
    c->entries = NULL;
    c->n = 0;
}

void tar_names_free(struct tar_names *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        free(n->names[i]);
    free(n->names);
    n->names = NULL;
    n->n = 0;
    for (size_t i = 0; i < n->nspans; i++)
        free(n->spans[i].name);
    free(n->spans);
    n->spans = NULL;
    n->nspans = 0;
}
