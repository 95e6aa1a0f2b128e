/*
 * fdio.h - the one write loop: write(2) until every byte is written,
 * retrying EINTR and short writes. Shared by the parent, the sandbox and the
 * harness (which compiles it in), so each caller only says what failed.
 */
#ifndef KILN_FDIO_H
#define KILN_FDIO_H

#include <stddef.h>

/* 0 when all `len` bytes of `data` are written to `fd`; else -1 with errno
 * set (EIO if write(2) wrote nothing without saying why). */
int fd_write_all(int fd, const void *data, size_t len);

/* Copies `in` to `out` from their current offsets until end of file; at
 * most `max` bytes when max >= 0 (more is an error: the copy is cut, -1 with
 * errno EFBIG). 0 on success, else -1 with errno set. */
int fd_copy_all(int in, int out, long long max);

#endif
