/*
 * npy_io.c - big .npy files without copies: a streaming reader (the
 * harness reads inputs straight into the memory they end up in) and
 * read-only mappings (the parent compares outputs and references where
 * they lie). Every header goes through npy_header_parse, the same checks
 * as npy_read.
 */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_PREFIX_MAX 12

static enum kiln_rc open_regular(const char *path, int *fd_out, struct stat *st,
                                 struct kiln_err *err)
{
    *fd_out = -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "%s: open",
                               path);
    if (fstat(fd, st) != 0) {
        enum kiln_rc rc = kiln_fail_errno(err, KILN_E_IO, "%s: fstat", path);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return kiln_fail(err, KILN_E_REJECTED, "%s: not a regular file", path);
    }
    *fd_out = fd;
    return KILN_OK;
}

/* Reads exactly n bytes at the current offset; *got says how many came
 * when the file ended first. */
static enum kiln_rc read_full(int fd, void *dst, size_t n, size_t *got, const char *path,
                              struct kiln_err *err)
{
    unsigned char *p = dst;
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(fd, p + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return kiln_fail_errno(err, KILN_E_IO, "%s: read", path);
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return KILN_OK;
}

enum kiln_rc npy_stream_open(const char *path, size_t max_bytes, struct npy_stream *s,
                             struct kiln_err *err)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    snprintf(s->path, sizeof(s->path), "%s", path);
    struct stat st;
    enum kiln_rc rc = open_regular(path, &s->fd, &st, err);
    if (rc != KILN_OK)
        return rc;
    size_t size = (size_t)st.st_size;
    size_t want = size < NPY_MAX_HEADER + NPY_PREFIX_MAX ? size : NPY_MAX_HEADER + NPY_PREFIX_MAX;
    unsigned char *hdr = malloc(want ? want : 1);
    size_t got = 0, off = 0;
    if (!hdr)
        rc = kiln_fail(err, KILN_E_NOMEM, "%s: out of memory for the header", path);
    else
        rc = read_full(s->fd, hdr, want, &got, path, err);
    /* The size fstat gave must be what the header implies, and the reads
     * below count again: a file that changes size is rejected either way. */
    if (rc == KILN_OK)
        rc = npy_header_parse(hdr, got, &s->meta, &off, err);
    if (rc == KILN_OK)
        rc = npy_check_length(&s->meta, size - off, max_bytes, err);
    free(hdr);
    if (rc == KILN_OK && lseek(s->fd, (off_t)off, SEEK_SET) != (off_t)off)
        rc = kiln_fail_errno(err, KILN_E_IO, "%s: seek to the data", path);
    if (rc != KILN_OK) {
        if (rc != KILN_E_IO && rc != KILN_E_NOMEM)
            kiln_err_prefix(err, "%s", path);
        npy_stream_close(s);
        return rc;
    }
    s->left = s->meta.nbytes;
    return KILN_OK;
}

enum kiln_rc npy_stream_read(struct npy_stream *s, void *dst, size_t n, struct kiln_err *err)
{
    if (s->fd < 0 || n > s->left)
        return kiln_fail(err, KILN_E_INTERNAL, "%s: %zu bytes asked, %zu left", s->path, n,
                         s->left);
    size_t got = 0;
    enum kiln_rc rc = read_full(s->fd, dst, n, &got, s->path, err);
    if (rc != KILN_OK)
        return rc;
    if (got != n)
        return kiln_fail(err, KILN_E_REJECTED, "%s: the data ends %zu bytes early", s->path,
                         s->left - got);
    if (s->meta.dtype == DT_BOOL &&
        (rc = npy_check_bool(dst, n, s->meta.nbytes - s->left, err)) != KILN_OK) {
        kiln_err_prefix(err, "%s", s->path);
        return rc;
    }
    s->left -= n;
    if (s->left == 0) {
        unsigned char extra;
        if ((rc = read_full(s->fd, &extra, 1, &got, s->path, err)) != KILN_OK)
            return rc;
        if (got)
            return kiln_fail(err, KILN_E_REJECTED, "%s: more data than the header says", s->path);
    }
    return KILN_OK;
}

void npy_stream_close(struct npy_stream *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

/* Maps [off, off + len) of fd and views it as one .npy file. */
static enum kiln_rc map_view(int fd, uint64_t off, uint64_t len, size_t max_bytes,
                             struct npy_map *m, struct kiln_err *err)
{
    memset(m, 0, sizeof(*m));
    if (len == 0 || len > SIZE_MAX / 2 || off > UINT64_MAX - len)
        return npy_view("", 0, max_bytes, &m->t, err); /* the usual "no magic" */
    long page = sysconf(_SC_PAGESIZE);
    uint64_t start = off - off % (uint64_t)(page > 0 ? page : 4096);
    size_t map_len = (size_t)(off - start + len);
    /* Populated up front: the comparison then reads without page faults. */
    void *base = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)start);
    if (base == MAP_FAILED)
        return kiln_fail_errno(err, errno == ENOMEM ? KILN_E_NOMEM : KILN_E_IO,
                               "mapping %llu bytes of a .npy file", (unsigned long long)len);
    enum kiln_rc rc =
        npy_view((unsigned char *)base + (off - start), (size_t)len, max_bytes, &m->t, err);
    if (rc != KILN_OK) {
        munmap(base, map_len);
        memset(m, 0, sizeof(*m));
        return rc;
    }
    m->base = base;
    m->len = map_len;
    return KILN_OK;
}

enum kiln_rc npy_map_fd(int fd, uint64_t off, uint64_t len, size_t max_bytes, struct npy_map *m,
                        struct kiln_err *err)
{
    struct stat st;
    memset(m, 0, sizeof(*m));
    if (fstat(fd, &st) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "fstat of the stream file");
    /* A mapping past the end of the file would fault on access. */
    if (!S_ISREG(st.st_mode) || off > (uint64_t)st.st_size || len > (uint64_t)st.st_size - off)
        return kiln_fail(err, KILN_E_INTERNAL, "bytes %llu+%llu are not in the stream file",
                         (unsigned long long)off, (unsigned long long)len);
    return map_view(fd, off, len, max_bytes, m, err);
}

enum kiln_rc npy_map_file(const char *path, size_t max_bytes, struct npy_map *m,
                          struct kiln_err *err)
{
    memset(m, 0, sizeof(*m));
    int fd;
    struct stat st;
    enum kiln_rc rc = open_regular(path, &fd, &st, err);
    if (rc != KILN_OK)
        return rc;
    size_t cap = max_bytes;
    if (__builtin_add_overflow(cap, (size_t)NPY_MAX_HEADER + NPY_PREFIX_MAX, &cap))
        cap = SIZE_MAX - 1;
    if ((uint64_t)st.st_size > cap)
        rc = kiln_fail(err, KILN_E_LIMIT, "%s: larger than %zu bytes", path, cap);
    else
        rc = map_view(fd, 0, (uint64_t)st.st_size, max_bytes, m, err);
    close(fd);
    if (rc != KILN_OK && rc != KILN_E_LIMIT)
        kiln_err_prefix(err, "%s", path);
    return rc;
}

void npy_unmap(struct npy_map *m)
{
    if (m->base)
        munmap(m->base, m->len);
    memset(m, 0, sizeof(*m));
}
