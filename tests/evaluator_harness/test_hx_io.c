/*
 * test_hx_io.c - the harness's tensor transfers (hx_io.c) through a fake
 * backend, so the device path (no host view: upload from a file mapping,
 * the piece-by-piece fallback, download through the staging buffer) runs
 * without a GPU, next to the host path the CPU backend takes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hx_io.h"
#include "npy.h"

/* "Device" memory is host memory the core may only reach through the ops. */
struct hx_backend {
    bool host;            /* offer host_ptr (the CPU backend's way) */
    int refuse_mapped;    /* uploads from outside `staging_seen` fail this many times */
    const void *last_src; /* the last upload's source */
    int uploads, downloads;
};

static enum kiln_rc fake_upload(struct hx_backend *b, hx_addr dst, const void *src, uint64_t n,
                                struct kiln_err *err)
{
    b->uploads++;
    b->last_src = src;
    if (b->refuse_mapped > 0) {
        b->refuse_mapped--;
        return kiln_fail(err, KILN_E_CUDA, "cuMemcpyHtoDAsync: CUDA_ERROR_INVALID_VALUE (test)");
    }
    memcpy((void *)(uintptr_t)dst, src, (size_t)n);
    return KILN_OK;
}

static enum kiln_rc fake_download(struct hx_backend *b, void *dst, hx_addr src, uint64_t n,
                                  struct kiln_err *err)
{
    (void)err;
    b->downloads++;
    memcpy(dst, (const void *)(uintptr_t)src, (size_t)n);
    return KILN_OK;
}

static void *fake_host_ptr(struct hx_backend *b, hx_addr a)
{
    return b->host ? (void *)(uintptr_t)a : NULL;
}

static const struct hx_ops fake_ops = {
    .name = "fake",
    .upload = fake_upload,
    .download = fake_download,
    .host_ptr = fake_host_ptr,
};

static char tmpdir[64];

static void write_tensor(const char *path, enum tensor_dtype dt, size_t n, struct tensor *t)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    int64_t shape[1] = {(int64_t)n};
    assert_int_equal(tensor_alloc(t, dt, 1, shape, SIZE_MAX, &err), KILN_OK);
    unsigned char *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++)
        p[i] = dt == DT_BOOL ? (unsigned char)(i % 2) : (unsigned char)(i * 131 + 7);
    assert_int_equal(npy_write_file(t, path, &err), KILN_OK);
}

static void round_trip(bool host, int refuse)
{
    char in[128], out[128];
    snprintf(in, sizeof(in), "%s/in.npy", tmpdir);
    snprintf(out, sizeof(out), "%s/out.npy", tmpdir);
    struct tensor t;
    write_tensor(in, DT_FLOAT32, 100003, &t);
    struct hx_backend be = {.host = host, .refuse_mapped = refuse};
    struct hx_io io = {.ops = &fake_ops, .be = &be};
    struct hx_io_want w = {.dtype = DT_FLOAT32, .ndim = 1, .shape = t.shape, .bytes = t.nbytes};
    unsigned char *dev = malloc(t.nbytes);
    assert_non_null(dev);
    double read_ms = 0, upload_ms = 0;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc =
        hx_io_read_input(&io, in, &w, (hx_addr)(uintptr_t)dev, &read_ms, &upload_ms, &err);
    if (rc != KILN_OK)
        fail_msg("%s", err.msg);
    assert_memory_equal(dev, t.data, t.nbytes);
    assert_true(read_ms >= 0 && upload_ms >= 0);
    if (host) {
        assert_int_equal(be.uploads, 0); /* read straight into place */
    } else if (refuse) {
        assert_int_equal(be.uploads, 2); /* the mapping refused, then one piece */
        assert_ptr_equal(be.last_src, io.staging);
    } else {
        assert_int_equal(be.uploads, 1); /* from the mapping, in one copy */
        assert_ptr_not_equal(be.last_src, io.staging);
    }

    rc = hx_io_write_output(&io, out, &w, (hx_addr)(uintptr_t)dev, &err);
    if (rc != KILN_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(be.downloads, host ? 0 : 1);
    struct tensor back;
    assert_int_equal(npy_read_file(out, SIZE_MAX, &back, &err), KILN_OK);
    assert_int_equal(back.nbytes, t.nbytes);
    assert_memory_equal(back.data, t.data, t.nbytes);
    char tmp[140];
    snprintf(tmp, sizeof(tmp), "%s.tmp", out);
    assert_int_equal(access(tmp, F_OK), -1);
    tensor_free(&back);
    tensor_free(&t);
    free(dev);
    hx_io_free(&io);
    unlink(in);
    unlink(out);
}

static void host_path(void **state)
{
    (void)state;
    round_trip(true, 0);
}

static void device_path(void **state)
{
    (void)state;
    round_trip(false, 0);
}

static void device_path_fallback(void **state)
{
    (void)state;
    round_trip(false, 1);
}

/* The plan's dtype and shape are enforced, and npy's rules on every path. */
static void rejects_what_the_plan_does_not_say(void **state)
{
    (void)state;
    char in[128];
    snprintf(in, sizeof(in), "%s/in.npy", tmpdir);
    struct tensor t;
    write_tensor(in, DT_INT32, 64, &t);
    unsigned char dev[256];
    for (int host = 0; host < 2; host++) {
        struct hx_backend be = {.host = host};
        struct hx_io io = {.ops = &fake_ops, .be = &be};
        double r = 0, u = 0;
        struct kiln_err err;
        kiln_err_clear(&err);
        struct hx_io_want w = {.dtype = DT_FLOAT32, .ndim = 1, .shape = t.shape, .bytes = 256};
        assert_int_equal(hx_io_read_input(&io, in, &w, (hx_addr)(uintptr_t)dev, &r, &u, &err),
                         KILN_E_REJECTED);
        assert_non_null(strstr(err.msg, "dtype or shape differs from the plan's"));
        int64_t other[1] = {63};
        w = (struct hx_io_want){.dtype = DT_INT32, .ndim = 1, .shape = other, .bytes = 252};
        kiln_err_clear(&err);
        assert_int_equal(hx_io_read_input(&io, in, &w, (hx_addr)(uintptr_t)dev, &r, &u, &err),
                         KILN_E_LIMIT);
        assert_non_null(strstr(err.msg, "input "));
        assert_int_equal(be.uploads, 0);
        hx_io_free(&io);
    }
    tensor_free(&t);
    /* A bool input holding 2 fails on the host path and the fallback. */
    write_tensor(in, DT_BOOL, 8, &t);
    int fd = open(in, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(pwrite(fd, "\x02", 1, st.st_size - 2), 1);
    close(fd);
    for (int host = 0; host < 2; host++) {
        struct hx_backend be = {.host = host, .refuse_mapped = 1};
        struct hx_io io = {.ops = &fake_ops, .be = &be};
        double r = 0, u = 0;
        struct kiln_err err;
        kiln_err_clear(&err);
        struct hx_io_want w = {.dtype = DT_BOOL, .ndim = 1, .shape = t.shape, .bytes = 8};
        assert_int_equal(hx_io_read_input(&io, in, &w, (hx_addr)(uintptr_t)dev, &r, &u, &err),
                         KILN_E_REJECTED);
        assert_non_null(strstr(err.msg, "bool element 6 is 0x02"));
        hx_io_free(&io);
    }
    tensor_free(&t);
    unlink(in);
}

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/kiln-hxio-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_path),
        cmocka_unit_test(device_path),
        cmocka_unit_test(device_path_fallback),
        cmocka_unit_test(rejects_what_the_plan_does_not_say),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
