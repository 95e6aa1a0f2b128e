/* hx_io.c - input and output tensors between files and backend memory with
 * as few copies as the backend allows (hx_io.h). */
#include "hx_io.h"

#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npy.h"

#define HX_STAGING ((size_t)64 << 20) /* device -> file bounce buffer, at most */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The host memory behind backend address `a` (CPU backend), or NULL when
 * the backend's memory is not host memory (CUDA). */
static void *host_view(const struct hx_io *io, hx_addr a)
{
    return io->ops->host_ptr ? io->ops->host_ptr(io->be, a) : NULL;
}

static enum kiln_rc check_input(const struct tensor *t, const struct hx_io_want *w,
                                const char *path, struct kiln_err *err)
{
    bool same = t->dtype == w->dtype && t->ndim == w->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = t->shape[d] == w->shape[d];
    if (!same || t->nbytes != w->bytes)
        return kiln_fail(err, KILN_E_REJECTED, "input %s: dtype or shape differs from the plan's",
                         path);
    return KILN_OK;
}

/* The staging buffer, at least `want` bytes (at most HX_STAGING). */
static enum kiln_rc staging(struct hx_io *io, size_t want, struct kiln_err *err)
{
    if (io->staging_bytes >= want)
        return KILN_OK;
    unsigned char *nb = realloc(io->staging, want);
    if (!nb)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory for a %zu-byte staging buffer", want);
    io->staging = nb;
    io->staging_bytes = want;
    return KILN_OK;
}

/* The fallback when a driver refuses to copy from a file mapping: the file
 * read a piece at a time into the staging buffer and each piece uploaded. */
static enum kiln_rc upload_by_pieces(struct hx_io *io, const char *path,
                                     const struct hx_io_want *want, hx_addr dst,
                                     struct kiln_err *err)
{
    struct npy_stream st;
    size_t piece = want->bytes < HX_STAGING ? (size_t)want->bytes : HX_STAGING;
    enum kiln_rc rc = staging(io, piece, err);
    if (rc == KILN_OK)
        rc = npy_stream_open(path, (size_t)want->bytes, &st, err);
    if (rc != KILN_OK)
        return rc;
    rc = check_input(&st.meta, want, path, err);
    for (uint64_t off = 0; rc == KILN_OK && off < want->bytes; off += piece) {
        size_t n = want->bytes - off < piece ? (size_t)(want->bytes - off) : piece;
        rc = npy_stream_read(&st, io->staging, n, err);
        if (rc == KILN_OK)
            rc = io->ops->upload(io->be, dst + off, io->staging, n, err);
    }
    npy_stream_close(&st);
    return rc;
}

/*
 * Host memory (CPU) is filled straight from the file; device memory is
 * uploaded straight from a read-only mapping of the file. Either way the
 * data is copied once: no intermediate buffer, no fresh allocation to
 * page-fault per tensor.
 */
enum kiln_rc hx_io_read_input(struct hx_io *io, const char *path, const struct hx_io_want *want,
                              hx_addr dst, double *read_ms, double *upload_ms, struct kiln_err *err)
{
    void *host = host_view(io, dst);
    double t0 = now_ms();
    struct npy_stream st;
    struct npy_map m;
    const struct tensor *meta;
    enum kiln_rc rc;
    if (host) {
        rc = npy_stream_open(path, (size_t)want->bytes, &st, err);
        meta = &st.meta;
    } else {
        rc = npy_map_file(path, (size_t)want->bytes, &m, err);
        meta = &m.t;
    }
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "input %s", path);
        *read_ms += now_ms() - t0;
        return rc;
    }
    if ((rc = check_input(meta, want, path, err)) == KILN_OK && want->bytes) {
        if (host) {
            rc = npy_stream_read(&st, host, (size_t)want->bytes, err);
        } else {
            *read_ms += now_ms() - t0;
            t0 = now_ms();
            rc = io->ops->upload(io->be, dst, m.t.data, want->bytes, err);
            /* Not the candidate's doing (nothing of it has run): retry the
             * ordinary way before giving up. A context error fails again. */
            if (rc == KILN_E_CUDA) {
                kiln_err_clear(err);
                rc = upload_by_pieces(io, path, want, dst, err);
            }
        }
        if (rc != KILN_OK)
            kiln_err_prefix(err, "input %s", path);
    }
    if (host) {
        npy_stream_close(&st);
        *read_ms += now_ms() - t0;
    } else {
        npy_unmap(&m);
        *upload_ms += now_ms() - t0;
    }
    return rc;
}

static enum kiln_rc write_out(int fd, const void *data, size_t len, const char *path,
                              struct kiln_err *err)
{
    return fd_write_all(fd, data, len, err, "writing %s", path);
}

/* The tensor's data into fd: straight from host memory, else through the
 * staging buffer a piece at a time. */
static enum kiln_rc write_data(struct hx_io *io, int fd, hx_addr src, uint64_t bytes,
                               const char *path, struct kiln_err *err)
{
    void *host = host_view(io, src);
    if (host)
        return write_out(fd, host, (size_t)bytes, path, err);
    enum kiln_rc rc = staging(io, bytes < HX_STAGING ? (size_t)bytes : HX_STAGING, err);
    for (uint64_t off = 0; rc == KILN_OK && off < bytes; off += io->staging_bytes) {
        size_t n = bytes - off < io->staging_bytes ? (size_t)(bytes - off) : io->staging_bytes;
        rc = io->ops->download(io->be, io->staging, src + off, n, err);
        if (rc == KILN_OK)
            rc = write_out(fd, io->staging, n, path, err);
    }
    return rc;
}

enum kiln_rc hx_io_write_output(struct hx_io *io, const char *path, const struct hx_io_want *want,
                                hx_addr src, struct kiln_err *err)
{
    struct tensor meta = {.dtype = want->dtype, .ndim = want->ndim, .nbytes = want->bytes};
    size_t count = 1;
    for (int d = 0; d < want->ndim; d++) {
        meta.shape[d] = want->shape[d];
        count *= (size_t)want->shape[d];
    }
    meta.count = count;
    unsigned char hdr[NPY_HEADER_WRITE_MAX];
    size_t hlen;
    char tmp[PATH_MAX];
    enum kiln_rc rc = npy_header_write(&meta, hdr, sizeof(hdr), &hlen, err);
    if (rc != KILN_OK)
        return rc;
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return kiln_fail(err, KILN_E_LIMIT, "path too long: %.80s...", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "creating %s", tmp);
    rc = write_out(fd, hdr, hlen, tmp, err);
    if (rc == KILN_OK && want->bytes)
        rc = write_data(io, fd, src, want->bytes, tmp, err);
    if (rc == KILN_OK && fsync(fd) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "fsync %s", tmp);
    if (close(fd) != 0 && rc == KILN_OK)
        rc = kiln_fail_errno(err, KILN_E_IO, "closing %s", tmp);
    if (rc == KILN_OK && rename(tmp, path) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "renaming %s", tmp);
    if (rc != KILN_OK)
        unlink(tmp);
    return rc;
}

void hx_io_free(struct hx_io *io)
{
    free(io->staging);
    io->staging = NULL;
    io->staging_bytes = 0;
}
