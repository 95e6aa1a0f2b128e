/*
 * hx_io.h - the harness's big transfers without needless copies: one input
 * .npy file into backend memory, one output tensor from backend memory into
 * an .npy file. Host-memory backends (CPU) read and write the files in
 * place; device backends (CUDA) upload from a read-only mapping of the
 * input file and download through one reused staging buffer of ordinary
 * pageable memory. Nothing pinned or mapped into the device is ever
 * allocated, so no kiln memory becomes reachable from device code.
 *
 * Lifecycle: a zeroed struct hx_io with ops and be set; hx_io_free at the
 * end (frees the staging buffer).
 */
#ifndef KILN_HX_IO_H
#define KILN_HX_IO_H

#include "hx.h"
#include "tensor.h"

struct hx_io {
    const struct hx_ops *ops;
    struct hx_backend *be;
    unsigned char *staging; /* device -> file bounce buffer, grown on demand */
    size_t staging_bytes;
};

/* What the input file must hold: the plan's dtype and shape. */
struct hx_io_want {
    enum tensor_dtype dtype;
    int ndim;
    const int64_t *shape;
    uint64_t bytes;
};

/* Reads the .npy file at `path` (npy.h's rules, checked against `want`)
 * into backend memory at `dst`. The milliseconds spent reading the file
 * and uploading are added to *read_ms and *upload_ms. Errors name the
 * file. */
enum kiln_rc hx_io_read_input(struct hx_io *io, const char *path, const struct hx_io_want *want,
                              hx_addr dst, double *read_ms, double *upload_ms,
                              struct kiln_err *err) KILN_NODISCARD;

/* Writes want->bytes of backend memory at `src` as the .npy file `path`
 * (a temporary file, fsync, rename: never a half-written .npy under its
 * name). */
enum kiln_rc hx_io_write_output(struct hx_io *io, const char *path, const struct hx_io_want *want,
                                hx_addr src, struct kiln_err *err) KILN_NODISCARD;

void hx_io_free(struct hx_io *io);

#endif
