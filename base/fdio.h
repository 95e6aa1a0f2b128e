/*
 * fdio.h - the one write loop: write(2) until every byte is written,
 * retrying EINTR and short writes. Shared by the parent, the sandbox and the
 * harness (which compiles it in), so each caller only says what failed.
 *
 * Two conventions, by where the caller runs (base/error.h says why):
 * fd_write_all() and fd_copy_all() return kiln_rc and put in `err` what the
 * caller's format names, then strerror; fd_write_all_errno() is the bare
 * loop, 0 or -1 with errno, for code that may not format a message (a
 * forked child before exec: async-signal-safe calls only) or that keeps
 * errno to report later or not at all.
 */
#ifndef KILN_FDIO_H
#define KILN_FDIO_H

#include <stddef.h>

#include "error.h"

/* 0 when all `len` bytes of `data` are written to `fd`; else -1 with errno
 * set (EIO if write(2) wrote nothing without saying why). Only write(2):
 * async-signal-safe. */
int fd_write_all_errno(int fd, const void *data, size_t len);

/* Writes all `len` bytes of `data` to `fd`. On failure, KILN_E_IO and
 * "<fmt ...>: <strerror>" in err, e.g. fmt "writing %s" with the path. */
enum kiln_rc fd_write_all(int fd, const void *data, size_t len, struct kiln_err *err,
                          const char *fmt, ...) KILN_PRINTF(5, 6) KILN_READS_ERR(4);

/* Copies `in` to `out` from their current offsets until end of file; at
 * most `max` bytes when max >= 0 (more is an error: the copy is cut,
 * KILN_E_LIMIT with strerror(EFBIG)). Else KILN_E_IO; the message is
 * "<fmt ...>: <strerror>" as for fd_write_all(). */
enum kiln_rc fd_copy_all(int in, int out, long long max, struct kiln_err *err, const char *fmt, ...)
    KILN_PRINTF(5, 6) KILN_READS_ERR(4);

#endif
