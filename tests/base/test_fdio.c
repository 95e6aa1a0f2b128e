/* base/fdio.h: the kiln_rc forms name what failed and why; the bare form
 * keeps errno; a copy past its cap is a limit, not an I/O error. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdio.h"

static int memfd_with(const char *text)
{
    int fd = memfd_create("test_fdio", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(fd_write_all_errno(fd, text, strlen(text)), 0);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static void write_all_writes_every_byte(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    int fd = memfd_create("test_fdio", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(fd_write_all(fd, "hello", 5, &err, "writing %s", "x"), KILN_OK);
    assert_string_equal(err.msg, "");
    char buf[8] = "";
    assert_int_equal(pread(fd, buf, sizeof(buf), 0), 5);
    assert_string_equal(buf, "hello");
    close(fd);
}

static void write_all_failure_names_the_target_and_errno(void **state)
{
    (void)state;
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        skip();
    struct kiln_err err = KILN_ERR_INIT;
    assert_int_equal(fd_write_all(fd, "x", 1, &err, "writing %s/%s", "dir", "file"), KILN_E_IO);
    assert_int_equal(err.rc, KILN_E_IO);
    assert_string_equal(err.msg, "writing dir/file: No space left on device");
    /* The bare loop: -1 and errno, nothing formatted. */
    errno = 0;
    assert_int_equal(fd_write_all_errno(fd, "x", 1), -1);
    assert_int_equal(errno, ENOSPC);
    /* The first failure wins, as with kiln_fail(). */
    assert_int_equal(fd_write_all(fd, "x", 1, &err, "later"), KILN_E_IO);
    assert_string_equal(err.msg, "writing dir/file: No space left on device");
    close(fd);
}

static void copy_all_copies_to_end_of_file(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    int in = memfd_with("0123456789"), out = memfd_create("test_fdio", MFD_CLOEXEC);
    assert_true(out >= 0);
    assert_int_equal(fd_copy_all(in, out, 10, &err, "copying"), KILN_OK);
    char buf[16] = "";
    assert_int_equal(pread(out, buf, sizeof(buf), 0), 10);
    assert_string_equal(buf, "0123456789");
    close(in);
    close(out);
}

static void copy_all_past_its_cap_is_a_limit(void **state)
{
    (void)state;
    struct kiln_err err = KILN_ERR_INIT;
    int in = memfd_with("0123456789"), out = memfd_create("test_fdio", MFD_CLOEXEC);
    assert_true(out >= 0);
    assert_int_equal(fd_copy_all(in, out, 9, &err, "the stream (at most %d bytes)", 9),
                     KILN_E_LIMIT);
    assert_string_equal(err.msg, "the stream (at most 9 bytes): File too large");
    close(in);
    close(out);
}

static void copy_all_write_failure_is_io(void **state)
{
    (void)state;
    int out = open("/dev/full", O_WRONLY | O_CLOEXEC);
    if (out < 0)
        skip();
    struct kiln_err err = KILN_ERR_INIT;
    int in = memfd_with("abc");
    assert_int_equal(fd_copy_all(in, out, -1, &err, "copying %s", "a"), KILN_E_IO);
    assert_string_equal(err.msg, "copying a: No space left on device");
    close(in);
    close(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_all_writes_every_byte),
        cmocka_unit_test(write_all_failure_names_the_target_and_errno),
        cmocka_unit_test(copy_all_copies_to_end_of_file),
        cmocka_unit_test(copy_all_past_its_cap_is_a_limit),
        cmocka_unit_test(copy_all_write_failure_is_io),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
