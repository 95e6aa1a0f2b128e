/*
 * test_npy.c - the .npy reader/writer and tensor helpers against hostile
 * fixtures built here, round trips of every dtype, and files written and
 * read by real numpy (skipped when /usr/bin/python3 has no numpy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npy.h"
#include "tensor.h"

#define MAX_BYTES ((size_t)1 << 30)

/* Builds a version-1 .npy file from a header dict and `data_len` zero data
 * bytes; pads like numpy. Caller frees. */
static unsigned char *make_npy(int major, const char *dict, size_t data_len, size_t *len)
{
    size_t prefix = major == 1 ? 10 : 12;
    size_t dl = strlen(dict);
    size_t hlen = dl + 1;
    hlen += (64 - (prefix + hlen) % 64) % 64;
    *len = prefix + hlen + data_len;
    unsigned char *b = calloc(1, *len);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    b[8] = (unsigned char)(hlen & 0xff);
    b[9] = (unsigned char)(hlen >> 8);
    if (major != 1) {
        b[10] = (unsigned char)(hlen >> 16);
        b[11] = (unsigned char)(hlen >> 24);
    }
    memcpy(b + prefix, dict, dl);
    memset(b + prefix + dl, ' ', hlen - dl - 1);
    b[prefix + hlen - 1] = '\n';
    return b;
}

/* Expects npy_read to fail with `rc` and a message containing `needle`. */
static void expect_reject(const unsigned char *b, size_t len, enum kiln_rc rc, const char *needle)
{
    struct tensor t;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc got = npy_read(b, len, MAX_BYTES, &t, &err);
    if (got != rc || !strstr(err.msg, needle))
        fail_msg("expected rc %d with \"%s\", got rc %d: %s", rc, needle, got, err.msg);
    assert_null(t.data);
}

static void expect_dict_reject(const char *dict, size_t data_len, enum kiln_rc rc,
                               const char *needle)
{
    size_t len;
    unsigned char *b = make_npy(1, dict, data_len, &len);
    expect_reject(b, len, rc, needle);
    free(b);
}

static void test_valid_fixture(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b =
        make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48, &len);
    float *f = (float *)(b + len - 48);
    for (int i = 0; i < 12; i++)
        f[i] = (float)i * 0.5f;
    struct tensor t;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(npy_read(b, len, MAX_BYTES, &t, &err), KILN_OK);
    assert_int_equal(t.dtype, DT_FLOAT32);
    assert_int_equal(t.ndim, 2);
    assert_int_equal(t.shape[0], 3);
    assert_int_equal(t.shape[1], 4);
    assert_int_equal(t.count, 12);
    assert_int_equal(t.nbytes, 48);
    assert_true(tensor_get_f64(&t, 11) == 5.5);
    tensor_free(&t);
    assert_null(t.data);
    /* Keys in another order and double quotes are still numpy's grammar. */
    free(b);
    b = make_npy(2, "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"|u1\"}", 2, &len);
    assert_int_equal(npy_read(b, len, MAX_BYTES, &t, &err), KILN_OK);
    assert_int_equal(t.dtype, DT_UINT8);
    assert_int_equal(t.ndim, 1);
    tensor_free(&t);
    free(b);
    b = make_npy(3, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8, &len);
    assert_int_equal(npy_read(b, len, MAX_BYTES, &t, &err), KILN_OK);
    assert_int_equal(t.ndim, 0);
    assert_int_equal(t.count, 1);
    tensor_free(&t);
    free(b);
}

static void test_hostile_headers(void **state)
{
    (void)state;
    /* 2^62 elements: the data is nowhere near that long. */
    expect_dict_reject(
        "{'descr': '|u1', 'fortran_order': False, 'shape': (4611686018427387904,), }", 16,
        KILN_E_REJECTED, "exceeds 2^48");
    expect_dict_reject("{'descr': '|u1', 'fortran_order': False, 'shape': (1073741824, 4194304), }",
                       16, KILN_E_REJECTED,
                       "needs 4503599627370496 data bytes but the file holds 16");
    /* Extents each under 2^48 whose product overflows 64 bits. */
    expect_dict_reject("{'descr': '<f8', 'fortran_order': False, 'shape': (281474976710655, "
                       "281474976710655, 281474976710655), }",
                       0, KILN_E_REJECTED, "overflows");
    expect_dict_reject("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16,
                       KILN_E_REJECTED, "object dtype '|O'");
    expect_dict_reject("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
                       KILN_E_REJECTED, "Fortran order");
    expect_dict_reject("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
                       KILN_E_REJECTED, "big-endian");
    expect_dict_reject("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
                       KILN_E_REJECTED, "not one kiln supports");
    expect_dict_reject("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
                       KILN_E_REJECTED, "structured");
    expect_dict_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8, KILN_E_PARSE,
                       "needs a comma");
    expect_dict_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8,
                       KILN_E_PARSE, "other than integers");
    expect_dict_reject("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                       8, KILN_E_PARSE, "'descr' given twice");
    expect_dict_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
                       KILN_E_PARSE, "unknown key 'x'");
    expect_dict_reject("{'descr': '<f4', 'shape': (2,), }", 8, KILN_E_PARSE,
                       "missing 'fortran_order'");
    expect_dict_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", 8,
                       KILN_E_PARSE, "trailing bytes");
    expect_dict_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
                       4, KILN_E_REJECTED, "more than 8 dimensions");
    /* Data one byte short and one byte long. */
    expect_dict_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 7,
                       KILN_E_REJECTED, "needs 8 data bytes but the file holds 7");
    expect_dict_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 9,
                       KILN_E_REJECTED, "needs 8 data bytes but the file holds 9");
}

static void test_hostile_framing(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b =
        make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, &len);
    expect_reject(b, 5, KILN_E_PARSE, "magic");
    b[1] = 'X';
    expect_reject(b, len, KILN_E_PARSE, "magic");
    b[1] = 'N';
    b[6] = 4;
    expect_reject(b, len, KILN_E_PARSE, "format version 4.0");
    b[6] = 1;
    /* Header length past the end of the file. */
    b[8] = 0xff;
    b[9] = 0x7f;
    expect_reject(b, len, KILN_E_PARSE, "truncated");
    b[8] = 64 - 10;
    b[9] = 0;
    /* A control byte inside the header. */
    b[20] = 0x01;
    expect_reject(b, len, KILN_E_PARSE, "not printable ASCII");
    free(b);
    /* Version 2 with a 4 GiB header length. */
    b = make_npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, &len);
    b[8] = b[9] = b[10] = b[11] = 0xff;
    expect_reject(b, len, KILN_E_REJECTED, "header of 4294967295 bytes");
    free(b);
    /* bool bytes other than 0/1. */
    b = make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 3, &len);
    b[len - 2] = 2;
    expect_reject(b, len, KILN_E_REJECTED, "bool element 1 is 0x02");
    free(b);
    /* The byte cap. */
    b = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 16, &len);
    struct tensor t;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(npy_read(b, len, 15, &t, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "over the 15-byte limit"));
    free(b);
}

static void fill_pattern(struct tensor *t)
{
    unsigned char *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++)
        p[i] = (unsigned char)(i * 37 + 11);
    if (t->dtype == DT_BOOL) {
        for (size_t i = 0; i < t->nbytes; i++)
            p[i] &= 1;
    }
}

static void test_roundtrip_every_dtype(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {{3, 5, 2}, {7, 0, 0}, {0, 0, 0}};
    static const int ndims[] = {3, 1, 0};
    int tested = 0;
    for (int dt = DT_FLOAT16; dt <= DT_BOOL; dt++) {
        for (int s = 0; s < 3; s++) {
            struct tensor t, u;
            struct kiln_err err;
            kiln_err_clear(&err);
            assert_int_equal(
                tensor_alloc(&t, (enum tensor_dtype)dt, ndims[s], shapes[s], MAX_BYTES, &err),
                KILN_OK);
            fill_pattern(&t);
            void *buf;
            size_t len;
            assert_int_equal(npy_write(&t, &buf, &len, &err), KILN_OK);
            assert_int_equal((len - t.nbytes) % 64, 0);
            assert_int_equal(npy_read(buf, len, MAX_BYTES, &u, &err), KILN_OK);
            assert_int_equal(u.dtype, dt);
            assert_int_equal(u.ndim, t.ndim);
            for (int i = 0; i < t.ndim; i++)
                assert_int_equal(u.shape[i], t.shape[i]);
            assert_int_equal(u.nbytes, t.nbytes);
            assert_memory_equal(u.data, t.data, t.nbytes ? t.nbytes : 1);
            free(buf);
            tensor_free(&t);
            tensor_free(&u);
            tested++;
        }
    }
    assert_int_equal(tested, 12 * 3);
}

static void test_tensor_helpers(void **state)
{
    (void)state;
    for (int dt = DT_FLOAT16; dt <= DT_BOOL; dt++) {
        const char *n = tensor_dtype_name((enum tensor_dtype)dt);
        assert_non_null(n);
        assert_int_equal(tensor_dtype_from_name(n), dt);
        assert_true(tensor_dtype_size((enum tensor_dtype)dt) > 0);
    }
    assert_null(tensor_dtype_name(DT_INVALID));
    assert_int_equal(tensor_dtype_from_name("float128"), DT_INVALID);
    assert_int_equal(tensor_dtype_size(DT_BFLOAT16), 2);

    struct tensor t;
    struct kiln_err err;
    kiln_err_clear(&err);
    int64_t huge[2] = {INT64_MAX, 4};
    assert_int_equal(tensor_alloc(&t, DT_FLOAT64, 2, huge, SIZE_MAX, &err), KILN_E_LIMIT);
    assert_null(t.data);
    kiln_err_clear(&err);
    int64_t neg[1] = {-1};
    assert_int_equal(tensor_alloc(&t, DT_FLOAT64, 1, neg, SIZE_MAX, &err), KILN_E_USAGE);
    kiln_err_clear(&err);
    int64_t big[1] = {1000};
    assert_int_equal(tensor_alloc(&t, DT_FLOAT32, 1, big, 3999, &err), KILN_E_LIMIT);
    kiln_err_clear(&err);
    assert_int_equal(tensor_alloc(&t, DT_FLOAT32, 9, big, 3999, &err), KILN_E_USAGE);

    /* float16 and bfloat16 decoding, exact values. */
    int64_t six[1] = {6};
    kiln_err_clear(&err);
    assert_int_equal(tensor_alloc(&t, DT_FLOAT16, 1, six, MAX_BYTES, &err), KILN_OK);
    uint16_t h[6] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x7e00};
    memcpy(t.data, h, sizeof(h));
    assert_true(tensor_get_f64(&t, 0) == 1.0);
    assert_true(tensor_get_f64(&t, 1) == -2.0);
    assert_true(tensor_get_f64(&t, 2) == 65504.0);
    assert_true(tensor_get_f64(&t, 3) == ldexp(1.0, -24));
    assert_true(isinf(tensor_get_f64(&t, 4)));
    assert_true(isnan(tensor_get_f64(&t, 5)));
    tensor_free(&t);
    assert_int_equal(tensor_alloc(&t, DT_BFLOAT16, 1, six, MAX_BYTES, &err), KILN_OK);
    uint16_t bf[6] = {0x3f80, 0xc060, 0x4049, 0x0000, 0xff80, 0x0001};
    memcpy(t.data, bf, sizeof(bf));
    assert_true(tensor_get_f64(&t, 0) == 1.0);
    assert_true(tensor_get_f64(&t, 1) == -3.5);
    assert_true(tensor_get_f64(&t, 2) == 3.140625);
    assert_true(tensor_get_f64(&t, 3) == 0.0);
    assert_true(isinf(tensor_get_f64(&t, 4)) && tensor_get_f64(&t, 4) < 0);
    assert_true(tensor_get_f64(&t, 5) == ldexp(1.0, -133));
    tensor_free(&t);

    /* Shape checks give the message the verdict shows. */
    int64_t s34[2] = {3, 4}, s35[2] = {3, 5};
    assert_int_equal(tensor_alloc(&t, DT_FLOAT32, 2, s34, MAX_BYTES, &err), KILN_OK);
    assert_int_equal(tensor_check_shape(&t, "x.npy", DT_FLOAT32, 2, s34, &err), KILN_OK);
    assert_int_equal(tensor_check_shape(&t, "x.npy", DT_FLOAT32, 2, s35, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "x.npy: got shape (3, 4), the signature says (3, 5)");
    kiln_err_clear(&err);
    assert_int_equal(tensor_check_shape(&t, "x.npy", DT_FLOAT32, 1, s34, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "x.npy: got shape (3, 4), the signature says (3,)");
    kiln_err_clear(&err);
    assert_int_equal(tensor_check_shape(&t, "x.npy", DT_FLOAT16, 2, s34, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "x.npy: got float32, the signature says float16");
    tensor_free(&t);
    char buf[8];
    tensor_shape_format(2, s34, buf, 5);
    assert_string_equal(buf, "(3, ");
    tensor_shape_format(0, s34, buf, sizeof(buf));
    assert_string_equal(buf, "()");
}

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/kiln-npy-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_files(void **state)
{
    (void)state;
    char path[128], link[128];
    struct tensor t, u;
    struct kiln_err err;
    kiln_err_clear(&err);
    int64_t shape[2] = {2, 3};
    assert_int_equal(tensor_alloc(&t, DT_INT32, 2, shape, MAX_BYTES, &err), KILN_OK);
    fill_pattern(&t);
    snprintf(path, sizeof(path), "%s/a.npy", tmpdir);
    assert_int_equal(npy_write_file(&t, path, &err), KILN_OK);
    assert_int_equal(npy_read_file(path, MAX_BYTES, &u, &err), KILN_OK);
    assert_memory_equal(u.data, t.data, t.nbytes);
    tensor_free(&u);
    /* O_NOFOLLOW: a symlink is refused, not followed. */
    snprintf(link, sizeof(link), "%s/link.npy", tmpdir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(npy_read_file(link, MAX_BYTES, &u, &err), KILN_E_IO);
    assert_non_null(strstr(err.msg, "link.npy: open"));
    kiln_err_clear(&err);
    snprintf(link, sizeof(link), "%s/fifo.npy", tmpdir);
    assert_int_equal(mkfifo(link, 0600), 0);
    assert_int_equal(npy_read_file(link, MAX_BYTES, &u, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "not a regular file"));
    kiln_err_clear(&err);
    snprintf(link, sizeof(link), "%s/missing.npy", tmpdir);
    assert_int_equal(npy_read_file(link, MAX_BYTES, &u, &err), KILN_E_NOTFOUND);
    kiln_err_clear(&err);
    /* The file cap applies to bytes read. */
    assert_int_equal(npy_read_file(path, 24, &u, &err), KILN_OK);
    tensor_free(&u);
    assert_int_equal(npy_read_file(path, 23, &u, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "over the 23-byte limit"));
    kiln_err_clear(&err);
    tensor_free(&t);
}

/* numpy writes, kiln reads; kiln writes, numpy reads. */
static const char numpy_script[] =
    "import numpy as np, sys, os\n"
    "d = sys.argv[1]\n"
    "a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 4\n"
    "for n in ['float16','float32','float64','int8','int16','int32','int64','uint8','uint32',"
    "'uint64','bool']:\n"
    "    np.save(os.path.join(d, 'np_' + n + '.npy'), a.astype(n))\n"
    "b = (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view('V2')\n"
    "np.save(os.path.join(d, 'np_bfloat16.npy'), b)\n"
    "np.lib.format.write_array(open(os.path.join(d, 'np_v2.npy'), 'wb'), a.astype('f4'), "
    "version=(2, 0))\n"
    "np.lib.format.write_array(open(os.path.join(d, 'np_v3.npy'), 'wb'), a.astype('f4'), "
    "version=(3, 0))\n";

static const char numpy_check[] =
    "import numpy as np, sys, os\n"
    "d = sys.argv[1]\n"
    "a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 4\n"
    "for n in ['float16','float32','float64','int8','int16','int32','int64','uint8','uint32',"
    "'uint64','bool']:\n"
    "    x = np.load(os.path.join(d, 'kiln_' + n + '.npy'))\n"
    "    assert x.dtype == np.dtype(n) and x.shape == (2, 3, 4), n\n"
    "    assert np.array_equal(x, a.astype(n)), n\n"
    "x = np.load(os.path.join(d, 'kiln_bfloat16.npy'))\n"
    "assert x.dtype.itemsize == 2 and x.shape == (2, 3, 4)\n"
    "f = (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32)\n"
    "assert np.array_equal(f, a.astype(np.float32)), 'bfloat16'\n"
    "print('numpy-check-ok')\n";

static int run_python(const char *script, const char *arg)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl("/usr/bin/python3", "python3", "-c", script, arg, (char *)NULL);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_numpy_interop(void **state)
{
    (void)state;
    if (access("/usr/bin/python3", X_OK) != 0 ||
        system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
        print_message("numpy not available in /usr/bin/python3: skipping interop\n");
        skip();
    }
    assert_int_equal(run_python(numpy_script, tmpdir), 0);
    static const char *names[] = {"float16", "float32", "float64", "int8",   "int16", "int32",
                                  "int64",   "uint8",   "uint32",  "uint64", "bool",  "bfloat16"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        char path[160];
        snprintf(path, sizeof(path), "%s/np_%s.npy", tmpdir, names[k]);
        struct tensor t;
        struct kiln_err err;
        kiln_err_clear(&err);
        enum kiln_rc rc = npy_read_file(path, MAX_BYTES, &t, &err);
        if (rc != KILN_OK)
            fail_msg("%s: %s", names[k], err.msg);
        enum tensor_dtype dt = tensor_dtype_from_name(names[k]);
        assert_int_equal(t.dtype, dt);
        assert_int_equal(t.ndim, 3);
        assert_int_equal(t.count, 24);
        for (size_t i = 0; i < 24; i++) {
            double want = (double)i / 4;
            double got = tensor_get_f64(&t, i);
            if (dt == DT_BOOL)
                want = want != 0;
            else if (dt >= DT_INT8)
                want = trunc(want); /* numpy's astype truncates toward zero */
            if (got != want)
                fail_msg("%s[%zu]: got %g want %g", names[k], i, got, want);
        }
        /* Write it back for numpy to check. */
        snprintf(path, sizeof(path), "%s/kiln_%s.npy", tmpdir, names[k]);
        assert_int_equal(npy_write_file(&t, path, &err), KILN_OK);
        tensor_free(&t);
    }
    for (int v = 2; v <= 3; v++) {
        char path[160];
        snprintf(path, sizeof(path), "%s/np_v%d.npy", tmpdir, v);
        struct tensor t;
        struct kiln_err err;
        kiln_err_clear(&err);
        assert_int_equal(npy_read_file(path, MAX_BYTES, &t, &err), KILN_OK);
        assert_true(tensor_get_f64(&t, 23) == 23.0 / 4);
        tensor_free(&t);
    }
    assert_int_equal(run_python(numpy_check, tmpdir), 0);
}

/* Writes `len` bytes to `path` (O_TRUNC). */
static void put_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* The streaming reader: pieces land where asked, every npy_read rule
 * holds, and a file that shrinks or grows after the header was read is
 * rejected by the counting reads. */
static void test_stream(void **state)
{
    (void)state;
    char path[128];
    struct kiln_err err;
    kiln_err_clear(&err);
    struct tensor t;
    int64_t shape[1] = {1000};
    assert_int_equal(tensor_alloc(&t, DT_INT32, 1, shape, MAX_BYTES, &err), KILN_OK);
    fill_pattern(&t);
    snprintf(path, sizeof(path), "%s/s.npy", tmpdir);
    assert_int_equal(npy_write_file(&t, path, &err), KILN_OK);

    struct npy_stream s;
    unsigned char got[4000];
    assert_int_equal(npy_stream_open(path, MAX_BYTES, &s, &err), KILN_OK);
    assert_int_equal(s.meta.dtype, DT_INT32);
    assert_int_equal(s.meta.nbytes, 4000);
    assert_null(s.meta.data);
    assert_int_equal(npy_stream_read(&s, got, 1234, &err), KILN_OK);
    assert_int_equal(npy_stream_read(&s, got + 1234, 4000 - 1234, &err), KILN_OK);
    assert_int_equal(s.left, 0);
    assert_memory_equal(got, t.data, 4000);
    assert_int_equal(npy_stream_read(&s, got, 1, &err), KILN_E_INTERNAL);
    kiln_err_clear(&err);
    npy_stream_close(&s);
    npy_stream_close(&s);

    /* Limits and framing at open, as npy_read_file. */
    assert_int_equal(npy_stream_open(path, 3999, &s, &err), KILN_E_LIMIT);
    kiln_err_clear(&err);
    void *buf;
    size_t len;
    assert_int_equal(npy_write(&t, &buf, &len, &err), KILN_OK);
    put_file(path, buf, len - 4);
    assert_int_equal(npy_stream_open(path, MAX_BYTES, &s, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "needs 4000 data bytes but the file holds 3996"));
    kiln_err_clear(&err);

    /* Shrinks after open: the reads find the end early. */
    put_file(path, buf, len);
    assert_int_equal(npy_stream_open(path, MAX_BYTES, &s, &err), KILN_OK);
    assert_int_equal(truncate(path, (off_t)len - 8), 0);
    assert_int_equal(npy_stream_read(&s, got, 4000, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "ends 8 bytes early"));
    kiln_err_clear(&err);
    npy_stream_close(&s);

    /* Grows after open: the last piece proves the end of the file. */
    put_file(path, buf, len);
    assert_int_equal(npy_stream_open(path, MAX_BYTES, &s, &err), KILN_OK);
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
    assert_int_equal(npy_stream_read(&s, got, 4000, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "more data than the header says"));
    kiln_err_clear(&err);
    npy_stream_close(&s);
    free(buf);
    tensor_free(&t);

    /* Bool bytes are checked piece by piece, with the element's index. */
    size_t blen;
    unsigned char *b =
        make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (8,), }", 8, &blen);
    b[blen - 3] = 2;
    put_file(path, b, blen);
    free(b);
    assert_int_equal(npy_stream_open(path, MAX_BYTES, &s, &err), KILN_OK);
    assert_int_equal(npy_stream_read(&s, got, 4, &err), KILN_OK);
    assert_int_equal(npy_stream_read(&s, got, 4, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "bool element 5 is 0x02"));
    npy_stream_close(&s);

    /* Not a regular file, or a symlink: refused at open. */
    char link[128];
    snprintf(link, sizeof(link), "%s/s-link.npy", tmpdir);
    assert_int_equal(symlink(path, link), 0);
    kiln_err_clear(&err);
    assert_int_equal(npy_stream_open(link, MAX_BYTES, &s, &err), KILN_E_IO);
    assert_int_equal(s.fd, -1);
}

/* Mappings: a whole file, and a .npy at an unaligned offset of a bigger
 * file (as in a tar stream); the rules are npy_read's. */
static void test_map(void **state)
{
    (void)state;
    char path[128];
    struct kiln_err err;
    kiln_err_clear(&err);
    struct tensor t;
    int64_t shape[2] = {3, 700};
    assert_int_equal(tensor_alloc(&t, DT_FLOAT64, 2, shape, MAX_BYTES, &err), KILN_OK);
    fill_pattern(&t);
    snprintf(path, sizeof(path), "%s/m.npy", tmpdir);
    assert_int_equal(npy_write_file(&t, path, &err), KILN_OK);
    struct npy_map m;
    assert_int_equal(npy_map_file(path, MAX_BYTES, &m, &err), KILN_OK);
    assert_int_equal(m.t.dtype, DT_FLOAT64);
    assert_int_equal(m.t.ndim, 2);
    assert_int_equal(m.t.shape[1], 700);
    assert_memory_equal(m.t.data, t.data, t.nbytes);
    npy_unmap(&m);
    npy_unmap(&m);
    assert_int_equal(npy_map_file(path, t.nbytes - 1, &m, &err), KILN_E_LIMIT);
    kiln_err_clear(&err);

    void *buf;
    size_t len;
    assert_int_equal(npy_write(&t, &buf, &len, &err), KILN_OK);
    size_t off = 4096 * 3 + 512; /* page-unaligned, as a tar entry's data */
    unsigned char *big = calloc(1, off + len + 100);
    assert_non_null(big);
    memcpy(big + off, buf, len);
    snprintf(path, sizeof(path), "%s/stream.bin", tmpdir);
    put_file(path, big, off + len + 100);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(npy_map_fd(fd, off, len, MAX_BYTES, &m, &err), KILN_OK);
    assert_memory_equal(m.t.data, t.data, t.nbytes);
    npy_unmap(&m);
    /* One byte more or less than the entry: the length rule rejects it. */
    assert_int_equal(npy_map_fd(fd, off, len + 1, MAX_BYTES, &m, &err), KILN_E_REJECTED);
    kiln_err_clear(&err);
    assert_int_equal(npy_map_fd(fd, off, len - 1, MAX_BYTES, &m, &err), KILN_E_REJECTED);
    kiln_err_clear(&err);
    /* Past the end of the file: refused before mapping. */
    assert_int_equal(npy_map_fd(fd, off, len + 101, MAX_BYTES, &m, &err), KILN_E_INTERNAL);
    kiln_err_clear(&err);
    assert_int_equal(npy_map_fd(fd, 0, 0, MAX_BYTES, &m, &err), KILN_E_PARSE);
    assert_null(m.base);
    close(fd);
    free(big);
    free(buf);
    tensor_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_fixture),
        cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_hostile_framing),
        cmocka_unit_test(test_roundtrip_every_dtype),
        cmocka_unit_test(test_tensor_helpers),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_numpy_interop),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_map),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
