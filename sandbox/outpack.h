/*
 * outpack.h - packs the sandbox's /out into a tar stream. Runs inside the
 * sandbox's init after every sandboxed process is dead, so nothing can
 * change /out under it; still it trusts nothing there: regular files only,
 * opened with O_NOFOLLOW and checked with fstat, sizes capped, depth and
 * entry count capped. Everything left out is reported through `skip`.
 */
#ifndef KILN_SANDBOX_OUTPACK_H
#define KILN_SANDBOX_OUTPACK_H

#include "error.h"

#define OUTPACK_MAX_DEPTH   16
#define OUTPACK_MAX_ENTRIES 10000

typedef void (*outpack_skip_fn)(void *ctx, const char *path, const char *why);

/* Writes a pax tar of the tree under `dirfd` to `out_fd` (not closed),
 * holding at most `max_bytes` of file data. */
enum kiln_rc outpack_write(int dirfd, int out_fd, long long max_bytes, outpack_skip_fn skip,
                           void *ctx, struct kiln_err *err) KILN_NODISCARD;

#endif
