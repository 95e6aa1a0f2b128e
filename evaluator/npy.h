/*
 * npy.h - the one parser and writer of NumPy .npy files (format 1.0, 2.0,
 * 3.0). Input is untrusted: every header field is checked, shapes may not
 * overflow, the data length must equal what the header implies, and only
 * little-endian numeric dtypes in C order are accepted (no object or pickle
 * dtypes, no Fortran order, no structured dtypes).
 *
 * bfloat16 convention: numpy has no bfloat16, so kiln stores it as descr
 * '<V2' (two raw bytes per element, the upper half of a float32) — the
 * ml_dtypes convention on disk. Scripts write it with
 * `a.astype(np.float32).view(np.uint32) >> 16` cast to uint16 and
 * `.view('V2')`.
 */
#ifndef KILN_NPY_H
#define KILN_NPY_H

#include <stddef.h>

#include "error.h"
#include "tensor.h"

#define NPY_MAX_HEADER 65536 /* header bytes kiln accepts (numpy writes < 4 KiB) */

/*
 * Parses a whole .npy file held in memory. On success `out` owns a copy of
 * the data. `max_bytes` caps the data size. Errors say which field is wrong.
 */
enum kiln_rc npy_read(const void *buf, size_t len, size_t max_bytes, struct tensor *out,
                      struct kiln_err *err) KILN_NODISCARD;

/* Reads the file at `path` (O_NOFOLLOW) with npy_read's rules. */
enum kiln_rc npy_read_file(const char *path, size_t max_bytes, struct tensor *out,
                           struct kiln_err *err) KILN_NODISCARD;

/* Serializes `t` as format 1.0 (2.0 if the header needs it) into a new
 * malloc'd buffer *out of *out_len bytes. */
enum kiln_rc npy_write(const struct tensor *t, void **out, size_t *out_len,
                       struct kiln_err *err) KILN_NODISCARD;

/* Writes `t` to `path` atomically (temporary file, fsync, rename). */
enum kiln_rc npy_write_file(const struct tensor *t, const char *path,
                            struct kiln_err *err) KILN_NODISCARD;

#endif
