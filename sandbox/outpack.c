/* outpack.c - /out to a ustar stream, refusing anything but files.
 *
 * The writer is this file's own (ustar headers, a pax record only for a
 * path ustar cannot hold or a size of 8 GiB or more): linking libarchive
 * for it loaded libarchive's dependencies (libxml2, ICU, libstdc++) into
 * every process that starts a sandbox, most of `kiln sandbox`'s start-up
 * (issue 20). The reader side stays libarchive, in evaluator/tar_ingest. */
#include "outpack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"

/* File data is read, and the stream written, in pieces of this size (the
 * sandbox makes the tar pipe as big). */
#define OUTPACK_CHUNK (1 << 20)
#define TAR_BLOCK     512
/* The largest size ustar's 11 octal digits hold, plus one. */
#define USTAR_SIZE_LIMIT (1LL << 33)

struct pack {
    int out_fd;
    char *buf;      /* OUTPACK_CHUNK bytes of stream not yet written */
    size_t used;    /* bytes in buf */
    long long left; /* file bytes still allowed */
    long entries;
    outpack_skip_fn skip;
    void *ctx;
    struct kiln_err *err;
};

static enum kiln_rc flush_out(struct pack *p)
{
    if (p->used && fd_write_all_errno(p->out_fd, p->buf, p->used) < 0)
        return kiln_fail_errno(p->err, KILN_E_IO, "writing the tar stream");
    p->used = 0;
    return KILN_OK;
}

/* Appends n bytes (zeros when data is NULL) to the stream. */
static enum kiln_rc put(struct pack *p, const void *data, size_t n)
{
    while (n > 0) {
        size_t k = OUTPACK_CHUNK - p->used < n ? OUTPACK_CHUNK - p->used : n;
        if (data) {
            memcpy(p->buf + p->used, data, k);
            data = (const char *)data + k;
        } else {
            memset(p->buf + p->used, 0, k);
        }
        p->used += k;
        n -= k;
        if (p->used == OUTPACK_CHUNK && flush_out(p) != KILN_OK)
            return p->err->rc;
    }
    return KILN_OK;
}

/* Zeros up to the next 512-byte boundary after `n` bytes of data. */
static enum kiln_rc pad_block(struct pack *p, unsigned long long n)
{
    size_t rem = (size_t)(n % TAR_BLOCK);
    return rem ? put(p, NULL, TAR_BLOCK - rem) : KILN_OK;
}

/* One ustar header; name and prefix as split_path() made them. */
static enum kiln_rc put_header(struct pack *p, char type, const char *prefix, size_t prefix_len,
                               const char *name, unsigned long long size)
{
    unsigned char h[TAR_BLOCK];
    memset(h, 0, sizeof(h));
    memcpy(h, name, strnlen(name, 100));
    memcpy(h + 100, "0000644", 7); /* mode; uid, gid and mtime 0: deterministic streams */
    memcpy(h + 108, "0000000", 7);
    memcpy(h + 116, "0000000", 7);
    snprintf((char *)h + 124, 12, "%011llo", size < USTAR_SIZE_LIMIT ? size : 0);
    memcpy(h + 136, "00000000000", 11);
    h[156] = (unsigned char)type;
    memcpy(h + 257, "ustar", 6); /* magic with its NUL, then version "00" */
    memcpy(h + 263, "00", 2);
    memcpy(h + 345, prefix, prefix_len);
    unsigned sum = 8 * ' '; /* the checksum field counts as spaces */
    for (size_t i = 0; i < sizeof(h); i++)
        sum += i >= 148 && i < 156 ? 0 : h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    return put(p, h, sizeof(h));
}

/* A pax record "LEN key=value\n", LEN counting the whole record. */
static int pax_record(char *dst, size_t cap, const char *key, const char *value)
{
    size_t body = 1 + strlen(key) + 1 + strlen(value) + 1, len = body;
    while ((size_t)snprintf(NULL, 0, "%zu", len) + body != len)
        len = (size_t)snprintf(NULL, 0, "%zu", len) + body;
    int n = snprintf(dst, cap, "%zu %s=%s\n", len, key, value);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

static enum kiln_rc put_entry(struct pack *p, const char *path, unsigned long long size)
{
    size_t len = strlen(path), cut = 0;
    /* ustar holds a path of up to 100 bytes, or a prefix of up to 155
     * bytes and a name of up to 100 split at a '/'. */
    if (len > 100) {
        for (size_t i = len - 1; i > 0 && len - i - 1 <= 100; i--)
            if (path[i] == '/' && i <= 155 && len - i - 1 > 0)
                cut = i;
    }
    bool fits = (len <= 100 || cut) && size < USTAR_SIZE_LIMIT;
    if (fits)
        return cut ? put_header(p, '0', path, cut, path + cut + 1, size)
                   : put_header(p, '0', "", 0, path, size);
    char rec[4096 + 64];
    int n = 0, k;
    if (len > 100 && !cut) {
        if ((k = pax_record(rec, sizeof(rec), "path", path)) < 0)
            return kiln_fail(p->err, KILN_E_IO, "tar: path too long: %s", path);
        n += k;
    }
    if (size >= USTAR_SIZE_LIMIT) {
        char v[32];
        snprintf(v, sizeof(v), "%llu", size);
        if ((k = pax_record(rec + n, sizeof(rec) - (size_t)n, "size", v)) < 0)
            return kiln_fail(p->err, KILN_E_IO, "tar: pax header too long for %s", path);
        n += k;
    }
    if (put_header(p, 'x', "", 0, "PaxHeader", (unsigned long long)n) != KILN_OK ||
        put(p, rec, (size_t)n) != KILN_OK || pad_block(p, (unsigned long long)n) != KILN_OK)
        return p->err->rc;
    /* The ustar fields keep what fits: the name's last 100 bytes. */
    return put_header(p, '0', "", 0, len > 100 && !cut ? path + len - 100 : path, size);
}

static enum kiln_rc copy_file(struct pack *p, int fd, const char *path, const struct stat *st)
{
    if (put_entry(p, path, (unsigned long long)st->st_size) != KILN_OK)
        return p->err->rc;
    off_t left = st->st_size;
    while (left > 0) {
        if (p->used == OUTPACK_CHUNK && flush_out(p) != KILN_OK)
            return p->err->rc;
        size_t room = OUTPACK_CHUNK - p->used;
        size_t want = (size_t)left < room ? (size_t)left : room;
        ssize_t n = read(fd, p->buf + p->used, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return kiln_fail_errno(p->err, KILN_E_IO, "reading /out/%s", path);
        if (n == 0) { /* cannot shrink (nothing runs), but never emit a short entry */
            memset(p->buf + p->used, 0, want);
            n = (ssize_t)want;
        }
        p->used += (size_t)n;
        left -= n;
    }
    if (pad_block(p, (unsigned long long)st->st_size) != KILN_OK)
        return p->err->rc;
    p->left -= st->st_size;
    return KILN_OK;
}

static enum kiln_rc walk(struct pack *p, int dir_fd, const char *prefix, int depth)
{
    DIR *d = fdopendir(dir_fd);
    if (!d) {
        close(dir_fd);
        return kiln_fail_errno(p->err, KILN_E_IO, "opendir /out/%s", prefix);
    }
    enum kiln_rc rc = KILN_OK;
    struct dirent *de;
    while (rc == KILN_OK && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
        if (++p->entries > OUTPACK_MAX_ENTRIES) {
            p->skip(p->ctx, path, "too many entries: the rest is left out");
            break;
        }
        if (n < 0 || (size_t)n >= sizeof(path) - 1) {
            p->skip(p->ctx, de->d_name, "path too long");
            continue;
        }
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            p->skip(p->ctx, path, "cannot stat");
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            if (depth >= OUTPACK_MAX_DEPTH) {
                p->skip(p->ctx, path, "directory nested too deep");
                continue;
            }
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                p->skip(p->ctx, path, "cannot open directory");
                continue;
            }
            rc = walk(p, sub, path, depth + 1);
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            p->skip(p->ctx, path,
                    S_ISLNK(st.st_mode)    ? "symlink"
                    : S_ISFIFO(st.st_mode) ? "fifo"
                    : S_ISSOCK(st.st_mode) ? "socket"
                                           : "device or other special file");
            continue;
        }
        int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            p->skip(p->ctx, path, "cannot open");
            continue;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            p->skip(p->ctx, path, "not a regular file when opened");
        } else if (st.st_nlink != 1) {
            p->skip(p->ctx, path, "hard link");
        } else if (st.st_size > p->left) {
            p->skip(p->ctx, path, "too large for the tar size cap");
        } else {
            rc = copy_file(p, fd, path, &st);
        }
        close(fd);
    }
    closedir(d);
    return rc;
}

enum kiln_rc outpack_write(int dir_fd, int out_fd, long long max_bytes, outpack_skip_fn skip,
                           void *ctx, struct kiln_err *err)
{
    struct pack p = {.out_fd = out_fd, .left = max_bytes, .skip = skip, .ctx = ctx, .err = err};
    p.buf = malloc(OUTPACK_CHUNK);
    if (!p.buf)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory for the tar writer");
    int dup_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
    enum kiln_rc rc = dup_fd < 0 ? kiln_fail_errno(err, KILN_E_IO, "dup /out") : KILN_OK;
    if (rc == KILN_OK)
        rc = walk(&p, dup_fd, "", 0);
    /* The end of the archive: two zero blocks, no padding to a record. */
    if (rc == KILN_OK && put(&p, NULL, 2 * TAR_BLOCK) == KILN_OK)
        rc = flush_out(&p);
    else if (rc == KILN_OK)
        rc = err->rc;
    free(p.buf);
    return rc;
}
