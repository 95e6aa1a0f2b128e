/*
 * npy.c - the .npy reader and writer. The header is a Python dict literal;
 * rather than evaluate it, this file accepts exactly the grammar numpy
 * writes (three keys, each once, in any order, string / True / False /
 * tuple-of-integer values) and rejects everything else.
 */
#include "npy.h"

#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* The descr strings kiln accepts, as numpy spells them. bfloat16 has two
 * spellings: ml_dtypes writes '<V2', numpy's own view('V2') writes '|V2'. */
static const struct {
    const char *descr;
    enum tensor_dtype dtype;
} npy_descrs[] = {
    {"<f2", DT_FLOAT16}, {"<V2", DT_BFLOAT16}, {"|V2", DT_BFLOAT16}, {"<f4", DT_FLOAT32},
    {"<f8", DT_FLOAT64}, {"|i1", DT_INT8},     {"<i2", DT_INT16},    {"<i4", DT_INT32},
    {"<i8", DT_INT64},   {"|u1", DT_UINT8},    {"<u4", DT_UINT32},   {"<u8", DT_UINT64},
    {"|b1", DT_BOOL},
};

#define NPY_N_DESCRS (sizeof(npy_descrs) / sizeof(npy_descrs[0]))

/* An extent above this is nonsense for a tensor in memory and keeps the
 * digit accumulation far from overflow. */
#define NPY_MAX_EXTENT ((int64_t)1 << 48)

struct hdr_cursor {
    const char *p, *end;
};

static void skip_ws(struct hdr_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int take(struct hdr_cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

static int take_word(struct hdr_cursor *c, const char *word)
{
    size_t n = strlen(word);
    skip_ws(c);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, word, n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

/* A quoted string of at most out_size-1 bytes, without escapes (no key or
 * value numpy writes needs them). */
static int take_string(struct hdr_cursor *c, char *out, size_t out_size)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return 0;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= out_size)
            return 0;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end)
        return 0;
    c->p++;
    out[n] = '\0';
    return 1;
}

/* A tuple of non-negative decimal integers: (), (3,), (3, 4), (3, 4,). */
static enum kiln_rc take_shape(struct hdr_cursor *c, int *ndim, int64_t *shape,
                               struct kiln_err *err)
{
    if (!take(c, '('))
        return kiln_fail(err, KILN_E_PARSE, ".npy header: 'shape' is not a tuple");
    *ndim = 0;
    for (;;) {
        if (take(c, ')'))
            break;
        skip_ws(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9')
            return kiln_fail(err, KILN_E_PARSE,
                             ".npy header: 'shape' holds something other than integers");
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            v = v * 10 + (*c->p++ - '0');
            if (v > NPY_MAX_EXTENT)
                return kiln_fail(err, KILN_E_REJECTED,
                                 ".npy header: a shape extent exceeds 2^48 elements");
        }
        if (*ndim == TENSOR_MAX_DIMS)
            return kiln_fail(err, KILN_E_REJECTED,
                             ".npy header: more than %d dimensions (kiln's limit)",
                             TENSOR_MAX_DIMS);
        shape[(*ndim)++] = v;
        if (take(c, ','))
            continue;
        if (take(c, ')'))
            break;
        return kiln_fail(err, KILN_E_PARSE, ".npy header: malformed 'shape' tuple");
    }
    return KILN_OK;
}

static enum tensor_dtype descr_dtype(const char *descr)
{
    for (size_t i = 0; i < NPY_N_DESCRS; i++) {
        if (strcmp(npy_descrs[i].descr, descr) == 0)
            return npy_descrs[i].dtype;
    }
    return DT_INVALID;
}

static const char *dtype_descr(enum tensor_dtype dt)
{
    for (size_t i = 0; i < NPY_N_DESCRS; i++) {
        if (npy_descrs[i].dtype == dt)
            return npy_descrs[i].descr;
    }
    return NULL;
}

static enum kiln_rc explain_descr(const char *descr, struct kiln_err *err)
{
    if (descr[0] == '>')
        return kiln_fail(err, KILN_E_REJECTED,
                         ".npy header: big-endian dtype '%s' (write little-endian: "
                         "a.astype(a.dtype.newbyteorder('<')))",
                         descr);
    if (strchr(descr, 'O'))
        return kiln_fail(err, KILN_E_REJECTED,
                         ".npy header: object dtype '%s' (pickled data is never loaded)", descr);
    return kiln_fail(err, KILN_E_REJECTED,
                     ".npy header: dtype '%s' is not one kiln supports (float16, bfloat16 as "
                     "'<V2', float32, float64, int8/16/32/64, uint8/32/64, bool)",
                     descr);
}

/* Parses the dict literal in [p, end) into dtype and shape. */
static enum kiln_rc parse_header_dict(const char *p, const char *end, enum tensor_dtype *dtype,
                                      int *ndim, int64_t *shape, struct kiln_err *err)
{
    struct hdr_cursor c = {p, end};
    int have_descr = 0, have_order = 0, have_shape = 0;
    if (!take(&c, '{'))
        return kiln_fail(err, KILN_E_PARSE, ".npy header: does not start with '{'");
    for (;;) {
        if (take(&c, '}'))
            break;
        char key[32];
        if (!take_string(&c, key, sizeof(key)) || !take(&c, ':'))
            return kiln_fail(err, KILN_E_PARSE, ".npy header: expected a quoted key and ':'");
        if (strcmp(key, "descr") == 0) {
            char descr[32];
            if (have_descr++)
                return kiln_fail(err, KILN_E_PARSE, ".npy header: 'descr' given twice");
            if (!take_string(&c, descr, sizeof(descr)))
                return kiln_fail(err, KILN_E_REJECTED,
                                 ".npy header: 'descr' is not a simple dtype string "
                                 "(structured dtypes are not supported)");
            *dtype = descr_dtype(descr);
            if (*dtype == DT_INVALID)
                return explain_descr(descr, err);
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_order++)
                return kiln_fail(err, KILN_E_PARSE, ".npy header: 'fortran_order' given twice");
            if (take_word(&c, "True"))
                return kiln_fail(err, KILN_E_REJECTED,
                                 ".npy header: Fortran order (save a C-contiguous array: "
                                 "np.ascontiguousarray(a))");
            if (!take_word(&c, "False"))
                return kiln_fail(err, KILN_E_PARSE,
                                 ".npy header: 'fortran_order' is neither True nor False");
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++)
                return kiln_fail(err, KILN_E_PARSE, ".npy header: 'shape' given twice");
            const char *start = c.p;
            enum kiln_rc rc = take_shape(&c, ndim, shape, err);
            if (rc != KILN_OK)
                return rc;
            /* "(3)" is not a tuple in Python: a 1-tuple needs its comma. */
            if (*ndim == 1 && !memchr(start, ',', (size_t)(c.p - start)))
                return kiln_fail(err, KILN_E_PARSE, ".npy header: 'shape' (N) needs a comma");
        } else {
            return kiln_fail(err, KILN_E_PARSE, ".npy header: unknown key '%s'", key);
        }
        if (take(&c, ','))
            continue;
        if (take(&c, '}'))
            break;
        return kiln_fail(err, KILN_E_PARSE, ".npy header: expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape)
        return kiln_fail(err, KILN_E_PARSE, ".npy header: missing %s",
                         !have_descr   ? "'descr'"
                         : !have_order ? "'fortran_order'"
                                       : "'shape'");
    /* Only padding may follow: spaces, then the newline that ends the header. */
    while (c.p < c.end && *c.p == ' ')
        c.p++;
    if (c.end - c.p != 1 || *c.p != '\n')
        return kiln_fail(err, KILN_E_PARSE,
                         ".npy header: trailing bytes after the dict (expected space padding "
                         "and a final newline)");
    return KILN_OK;
}

enum kiln_rc npy_header_parse(const void *buf, size_t len, struct tensor *meta, size_t *data_off,
                              struct kiln_err *err)
{
    const unsigned char *b = buf;
    memset(meta, 0, sizeof(*meta));
    *data_off = 0;
    if (len < 10 || memcmp(b, npy_magic, sizeof(npy_magic)) != 0)
        return kiln_fail(err, KILN_E_PARSE, ".npy: no \\x93NUMPY magic (not an .npy file)");
    unsigned major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0)
        return kiln_fail(err, KILN_E_PARSE, ".npy: format version %u.%u (kiln reads 1.0 to 3.0)",
                         major, minor);
    size_t prefix, hlen;
    if (major == 1) {
        prefix = 10;
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
    } else {
        if (len < 12)
            return kiln_fail(err, KILN_E_PARSE, ".npy: truncated in the header length");
        prefix = 12;
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    }
    if (hlen > NPY_MAX_HEADER)
        return kiln_fail(err, KILN_E_REJECTED, ".npy: header of %zu bytes (kiln's limit is %d)",
                         hlen, NPY_MAX_HEADER);
    if (hlen > len - prefix)
        return kiln_fail(err, KILN_E_PARSE,
                         ".npy: header claims %zu bytes but only %zu follow (truncated file)", hlen,
                         len - prefix);
    const char *h = (const char *)b + prefix;
    /* Versions 1 and 2 are latin-1, 3 is UTF-8; kiln accepts printable
     * ASCII in all three, as every valid header is. */
    for (size_t i = 0; i + 1 < hlen; i++) {
        if (h[i] < 0x20 || h[i] > 0x7e)
            return kiln_fail(err, KILN_E_PARSE,
                             ".npy header: byte 0x%02x at offset %zu is not printable ASCII",
                             (unsigned char)h[i], i);
    }
    enum tensor_dtype dtype = DT_INVALID;
    int ndim = 0;
    int64_t shape[TENSOR_MAX_DIMS];
    enum kiln_rc rc = parse_header_dict(h, h + hlen, &dtype, &ndim, shape, err);
    if (rc != KILN_OK)
        return rc;
    size_t count = 1, need;
    for (int i = 0; i < ndim; i++) {
        if (__builtin_mul_overflow(count, (size_t)shape[i], &count))
            return kiln_fail(err, KILN_E_REJECTED, ".npy: element count of the shape overflows");
    }
    if (__builtin_mul_overflow(count, tensor_dtype_size(dtype), &need))
        return kiln_fail(err, KILN_E_REJECTED, ".npy: byte size of the shape overflows");
    meta->dtype = dtype;
    meta->ndim = ndim;
    memcpy(meta->shape, shape, sizeof(int64_t) * (size_t)ndim);
    meta->count = count;
    meta->nbytes = need;
    *data_off = prefix + hlen;
    return KILN_OK;
}

enum kiln_rc npy_check_length(const struct tensor *meta, size_t have, size_t max_bytes,
                              struct kiln_err *err)
{
    /* The data length must equal what the header implies, exactly. */
    if (have != meta->nbytes) {
        char s[160];
        tensor_shape_format(meta->ndim, meta->shape, s, sizeof(s));
        return kiln_fail(err, KILN_E_REJECTED,
                         ".npy: shape %s of %s needs %zu data bytes but the file holds %zu", s,
                         tensor_dtype_name(meta->dtype), meta->nbytes, have);
    }
    if (meta->nbytes > max_bytes)
        return kiln_fail(err, KILN_E_LIMIT, ".npy: %zu data bytes, over the %zu-byte limit",
                         meta->nbytes, max_bytes);
    return KILN_OK;
}

enum kiln_rc npy_check_bool(const void *data, size_t n, size_t first_index, struct kiln_err *err)
{
    /* Anything but 0/1 would compare differently byte-wise and as values. */
    const unsigned char *d = data;
    for (size_t i = 0; i < n; i++) {
        if (d[i] > 1)
            return kiln_fail(err, KILN_E_REJECTED, ".npy: bool element %zu is 0x%02x, not 0 or 1",
                             first_index + i, d[i]);
    }
    return KILN_OK;
}

/* The checks npy_read and npy_view share; *data points at the data. */
static enum kiln_rc parse_whole(const void *buf, size_t len, size_t max_bytes, struct tensor *meta,
                                const unsigned char **data, struct kiln_err *err)
{
    size_t off;
    enum kiln_rc rc = npy_header_parse(buf, len, meta, &off, err);
    if (rc == KILN_OK)
        rc = npy_check_length(meta, len - off, max_bytes, err);
    if (rc == KILN_OK && meta->dtype == DT_BOOL)
        rc = npy_check_bool((const unsigned char *)buf + off, meta->nbytes, 0, err);
    *data = (const unsigned char *)buf + off;
    return rc;
}

enum kiln_rc npy_read(const void *buf, size_t len, size_t max_bytes, struct tensor *out,
                      struct kiln_err *err)
{
    struct tensor meta;
    const unsigned char *data;
    memset(out, 0, sizeof(*out));
    enum kiln_rc rc = parse_whole(buf, len, max_bytes, &meta, &data, err);
    if (rc == KILN_OK)
        rc = tensor_alloc(out, meta.dtype, meta.ndim, meta.shape, max_bytes, err);
    if (rc == KILN_OK && meta.nbytes)
        memcpy(out->data, data, meta.nbytes);
    return rc;
}

enum kiln_rc npy_view(const void *buf, size_t len, size_t max_bytes, struct tensor *out,
                      struct kiln_err *err)
{
    const unsigned char *data;
    enum kiln_rc rc = parse_whole(buf, len, max_bytes, out, &data, err);
    if (rc != KILN_OK) {
        memset(out, 0, sizeof(*out));
        return rc;
    }
    out->data = (void *)data;
    return KILN_OK;
}

/* Reads all of fd, at most `cap` bytes; more is an error. Never trusts
 * st_size: the count of bytes actually read decides. */
static enum kiln_rc read_capped(int fd, const char *path, size_t cap, unsigned char **out,
                                size_t *out_len, struct kiln_err *err)
{
    size_t size = 0, alloc = 0;
    unsigned char *buf = NULL;
    for (;;) {
        if (size == alloc) {
            if (alloc > cap) {
                free(buf);
                return kiln_fail(err, KILN_E_LIMIT, "%s: larger than %zu bytes", path, cap);
            }
            size_t next = alloc ? alloc * 2 : 65536;
            if (next > cap + 1)
                next = cap + 1;
            unsigned char *nb = realloc(buf, next);
            if (!nb) {
                free(buf);
                return kiln_fail(err, KILN_E_NOMEM, "%s: cannot allocate %zu bytes", path, next);
            }
            buf = nb;
            alloc = next;
        }
        ssize_t n = read(fd, buf + size, alloc - size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return kiln_fail_errno(err, KILN_E_IO, "%s: read", path);
        }
        if (n == 0)
            break;
        size += (size_t)n;
        if (size > cap) {
            free(buf);
            return kiln_fail(err, KILN_E_LIMIT, "%s: larger than %zu bytes", path, cap);
        }
    }
    *out = buf;
    *out_len = size;
    return KILN_OK;
}

enum kiln_rc npy_read_file(const char *path, size_t max_bytes, struct tensor *out,
                           struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "%s: open",
                               path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        enum kiln_rc rc = kiln_fail_errno(err, KILN_E_IO, "%s: fstat", path);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return kiln_fail(err, KILN_E_REJECTED, "%s: not a regular file", path);
    }
    size_t cap = max_bytes;
    if (__builtin_add_overflow(cap, (size_t)NPY_MAX_HEADER + 12, &cap))
        cap = SIZE_MAX - 1;
    unsigned char *buf = NULL;
    size_t len = 0;
    enum kiln_rc rc = read_capped(fd, path, cap, &buf, &len, err);
    close(fd);
    if (rc != KILN_OK)
        return rc;
    rc = npy_read(buf, len, max_bytes, out, err);
    free(buf);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "%s", path);
    return rc;
}

enum kiln_rc npy_header_write(const struct tensor *t, unsigned char *buf, size_t cap, size_t *len,
                              struct kiln_err *err)
{
    *len = 0;
    const char *descr = dtype_descr(t->dtype);
    if (!descr || t->ndim < 0 || t->ndim > TENSOR_MAX_DIMS)
        return kiln_fail(err, KILN_E_USAGE, "npy_write: invalid tensor (dtype %d, %d dims)",
                         (int)t->dtype, t->ndim);
    if (t->nbytes != t->count * tensor_dtype_size(t->dtype))
        return kiln_fail(err, KILN_E_INTERNAL, "npy_write: tensor nbytes disagrees with count");
    char shape[200];
    tensor_shape_format(t->ndim, t->shape, shape, sizeof(shape));
    char dict[256];
    int n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
    if (n < 0 || (size_t)n >= sizeof(dict))
        return kiln_fail(err, KILN_E_INTERNAL, "npy_write: header does not fit");
    /* Version 1.0 always fits this small header; pad so the data starts on
     * a 64-byte boundary, as numpy does. */
    size_t prefix = 10;
    size_t hlen = (size_t)n + 1;
    hlen += (64 - (prefix + hlen) % 64) % 64;
    if (prefix + hlen > cap)
        return kiln_fail(err, KILN_E_INTERNAL, "npy_write: header buffer too small");
    memcpy(buf, npy_magic, sizeof(npy_magic));
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    memcpy(buf + prefix, dict, (size_t)n);
    memset(buf + prefix + n, ' ', hlen - (size_t)n - 1);
    buf[prefix + hlen - 1] = '\n';
    *len = prefix + hlen;
    return KILN_OK;
}

enum kiln_rc npy_write(const struct tensor *t, void **out, size_t *out_len, struct kiln_err *err)
{
    *out = NULL;
    *out_len = 0;
    unsigned char hdr[NPY_HEADER_WRITE_MAX];
    size_t hlen, total;
    enum kiln_rc rc = npy_header_write(t, hdr, sizeof(hdr), &hlen, err);
    if (rc != KILN_OK)
        return rc;
    if (__builtin_add_overflow(hlen, t->nbytes, &total))
        return kiln_fail(err, KILN_E_LIMIT, "npy_write: tensor too large");
    unsigned char *buf = malloc(total);
    if (!buf)
        return kiln_fail(err, KILN_E_NOMEM, "npy_write: cannot allocate %zu bytes", total);
    memcpy(buf, hdr, hlen);
    if (t->nbytes)
        memcpy(buf + hlen, t->data, t->nbytes);
    *out = buf;
    *out_len = total;
    return KILN_OK;
}

enum kiln_rc npy_write_file(const struct tensor *t, const char *path, struct kiln_err *err)
{
    /* Header and data are written separately, straight from the tensor:
     * a big tensor is never copied into a file-sized buffer. */
    unsigned char hdr[NPY_HEADER_WRITE_MAX];
    size_t hlen = 0;
    enum kiln_rc rc = npy_header_write(t, hdr, sizeof(hdr), &hlen, err);
    if (rc != KILN_OK)
        return rc;
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof(".tmp.XXXXXX"));
    if (!tmp)
        return kiln_fail(err, KILN_E_NOMEM, "%s: cannot allocate a temporary name", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", sizeof(".tmp.XXXXXX"));
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        rc = kiln_fail_errno(err, KILN_E_IO, "%s: create temporary file", path);
        goto out;
    }
    rc = fd_write_all(fd, hdr, hlen, err, "%s: write", path);
    if (rc == KILN_OK && t->nbytes)
        rc = fd_write_all(fd, t->data, t->nbytes, err, "%s: write", path);
    if (rc == KILN_OK && fsync(fd) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "%s: fsync", path);
    if (close(fd) != 0 && rc == KILN_OK)
        rc = kiln_fail_errno(err, KILN_E_IO, "%s: close", path);
    if (rc == KILN_OK && rename(tmp, path) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "%s: rename into place", path);
    if (rc != KILN_OK)
        unlink(tmp);
out:
    free(tmp);
    return rc;
}
