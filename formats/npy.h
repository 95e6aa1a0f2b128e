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
#include <stdint.h>

#include "error.h"
#include "tensor.h"

#define NPY_MAX_HEADER 65536 /* header bytes kiln accepts (numpy writes < 4 KiB) */

#define NPY_HEADER_WRITE_MAX 384 /* bytes npy_header_write may need */

/*
 * Parses and checks the magic, version and header dict at the start of
 * buf[0..len) (len may cover only the header): dtype, shape, and the data
 * size they imply, with overflow checks. On success `meta` describes the
 * tensor (data NULL) and *data_off is where its data starts. The data
 * length and `max_bytes` are the caller's to check (npy_check_length).
 */
enum kiln_rc npy_header_parse(const void *buf, size_t len, struct tensor *meta, size_t *data_off,
                              struct kiln_err *err) KILN_NODISCARD;

/* `have` data bytes must be exactly meta->nbytes, and at most max_bytes. */
enum kiln_rc npy_check_length(const struct tensor *meta, size_t have, size_t max_bytes,
                              struct kiln_err *err) KILN_NODISCARD;

/* Every byte of a bool tensor's data must be 0 or 1; `first_index` numbers
 * the first byte in the message. */
enum kiln_rc npy_check_bool(const void *data, size_t n, size_t first_index,
                            struct kiln_err *err) KILN_NODISCARD;

/*
 * Parses a whole .npy file held in memory. On success `out` owns a copy of
 * the data. `max_bytes` caps the data size. Errors say which field is wrong.
 */
enum kiln_rc npy_read(const void *buf, size_t len, size_t max_bytes, struct tensor *out,
                      struct kiln_err *err) KILN_NODISCARD;

/* npy_read's rules, without the copy: out->data points into `buf`, which
 * must outlive it. Never tensor_free a view. */
enum kiln_rc npy_view(const void *buf, size_t len, size_t max_bytes, struct tensor *out,
                      struct kiln_err *err) KILN_NODISCARD;

/* Reads the file at `path` (O_NOFOLLOW) with npy_read's rules. */
enum kiln_rc npy_read_file(const char *path, size_t max_bytes, struct tensor *out,
                           struct kiln_err *err) KILN_NODISCARD;

/* The header npy_write puts before the data (format 1.0, data 64-byte
 * aligned), into buf (at least NPY_HEADER_WRITE_MAX bytes). */
enum kiln_rc npy_header_write(const struct tensor *t, unsigned char *buf, size_t cap, size_t *len,
                              struct kiln_err *err) KILN_NODISCARD;

/* Serializes `t` as format 1.0 (2.0 if the header needs it) into a new
 * malloc'd buffer *out of *out_len bytes. */
enum kiln_rc npy_write(const struct tensor *t, void **out, size_t *out_len,
                       struct kiln_err *err) KILN_NODISCARD;

/* Writes `t` to `path` atomically (temporary file, fsync, rename), header
 * and data straight from t->data (no file-sized copy). */
enum kiln_rc npy_write_file(const struct tensor *t, const char *path,
                            struct kiln_err *err) KILN_NODISCARD;

/* ---- big tensors without copies (npy_io.c) ---- */

/*
 * A .npy file read in pieces straight into the caller's memory: the header
 * is read and checked at open (npy_read's rules; the file's size must be
 * exactly header + data), then npy_stream_read hands out the data in
 * order. The last piece also proves the end of the file (a file that grew
 * is rejected), and bool data is checked piece by piece.
 */
struct npy_stream {
    int fd;
    struct tensor meta; /* dtype, shape, count, nbytes; data NULL */
    size_t left;        /* data bytes not read yet */
    char path[200];     /* for messages, truncated */
};

enum kiln_rc npy_stream_open(const char *path, size_t max_bytes, struct npy_stream *s,
                             struct kiln_err *err) KILN_NODISCARD;

/* The next n (<= s->left) data bytes into dst. */
enum kiln_rc npy_stream_read(struct npy_stream *s, void *dst, size_t n,
                             struct kiln_err *err) KILN_NODISCARD;

/* Closes the file; safe after a failed open and twice. */
void npy_stream_close(struct npy_stream *s);

/*
 * A .npy file mapped read-only: `t` is a view (npy_view's rules) whose data
 * lies in the mapping. Only for files nobody else writes while mapped (the
 * parent's own files and the stream file sbexec keeps). Free with
 * npy_unmap, never tensor_free.
 */
struct npy_map {
    struct tensor t;
    void *base;
    size_t len;
};

/* Maps the whole file at `path` (O_NOFOLLOW, regular files only). */
enum kiln_rc npy_map_file(const char *path, size_t max_bytes, struct npy_map *m,
                          struct kiln_err *err) KILN_NODISCARD;

/* Maps bytes [off, off + len) of `fd` as one .npy file. */
enum kiln_rc npy_map_fd(int fd, uint64_t off, uint64_t len, size_t max_bytes, struct npy_map *m,
                        struct kiln_err *err) KILN_NODISCARD;

/* Unmaps; safe on a zeroed or already unmapped one. */
void npy_unmap(struct npy_map *m);

#endif
