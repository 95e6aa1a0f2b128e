/* outpack.c - /out to tar with libarchive, refusing anything but files. */
#include "outpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* File data is read, and the stream written, in pieces of this size (the
 * sandbox makes the tar pipe as big). */
#define OUTPACK_CHUNK (1 << 20)

struct pack {
    struct archive *a;
    char *buf;      /* OUTPACK_CHUNK bytes */
    long long left; /* file bytes still allowed */
    long entries;
    outpack_skip_fn skip;
    void *ctx;
    struct kiln_err *err;
};

static enum kiln_rc copy_file(struct pack *p, int fd, const char *path, const struct stat *st)
{
    struct archive_entry *e = archive_entry_new();
    if (!e)
        return kiln_fail(p->err, KILN_E_NOMEM, "out of memory");
    archive_entry_set_pathname(e, path);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, st->st_size);
    archive_entry_set_mtime(e, 0, 0); /* deterministic streams */
    int rc = archive_write_header(p->a, e);
    archive_entry_free(e);
    if (rc != ARCHIVE_OK)
        return kiln_fail(p->err, KILN_E_IO, "tar header for %s: %s", path,
                         archive_error_string(p->a));
    char *buf = p->buf;
    const size_t cap = OUTPACK_CHUNK;
    off_t left = st->st_size;
    while (left > 0) {
        ssize_t n = read(fd, buf, (size_t)left < cap ? (size_t)left : cap);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return kiln_fail_errno(p->err, KILN_E_IO, "reading /out/%s", path);
        if (n == 0) { /* cannot shrink (nothing runs), but never emit a short entry */
            memset(buf, 0, cap);
            n = (ssize_t)((size_t)left < cap ? (size_t)left : cap);
        }
        if (archive_write_data(p->a, buf, (size_t)n) != n)
            return kiln_fail(p->err, KILN_E_IO, "tar data for %s: %s", path,
                             archive_error_string(p->a));
        left -= n;
    }
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
    struct pack p = {.left = max_bytes, .skip = skip, .ctx = ctx, .err = err};
    p.buf = malloc(OUTPACK_CHUNK);
    p.a = p.buf ? archive_write_new() : NULL;
    if (!p.a) {
        free(p.buf);
        return kiln_fail(err, KILN_E_NOMEM, "out of memory for the tar writer");
    }
    if (archive_write_set_format_pax_restricted(p.a) != ARCHIVE_OK ||
        archive_write_add_filter_none(p.a) != ARCHIVE_OK ||
        archive_write_set_bytes_per_block(p.a, OUTPACK_CHUNK) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(p.a, 1) != ARCHIVE_OK ||
        archive_write_open_fd(p.a, out_fd) != ARCHIVE_OK) {
        kiln_fail(err, KILN_E_IO, "tar writer: %s", archive_error_string(p.a));
        archive_write_free(p.a);
        free(p.buf);
        return err->rc;
    }
    int dup_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
    enum kiln_rc rc = dup_fd < 0 ? kiln_fail_errno(err, KILN_E_IO, "dup /out") : KILN_OK;
    if (rc == KILN_OK)
        rc = walk(&p, dup_fd, "", 0);
    if (archive_write_close(p.a) != ARCHIVE_OK && rc == KILN_OK)
        rc = kiln_fail(err, KILN_E_IO, "tar writer: %s", archive_error_string(p.a));
    archive_write_free(p.a);
    free(p.buf);
    return rc;
}
