/* fdio.c - see fdio.h. */
#include "fdio.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

int fd_write_all_errno(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The caller's words, then strerror(errno) as it was on entry. */
__attribute__((format(printf, 3, 0))) static enum kiln_rc
fail_errno_v(struct kiln_err *err, enum kiln_rc rc, const char *fmt, va_list ap)
{
    int errnum = errno;
    char what[KILN_ERR_MSG_MAX];
    if (vsnprintf(what, sizeof(what), fmt, ap) < 0)
        what[0] = '\0';
    errno = errnum;
    return kiln_fail_errno(err, rc, "%s", what);
}

enum kiln_rc fd_write_all(int fd, const void *data, size_t len, struct kiln_err *err,
                          const char *fmt, ...)
{
    if (fd_write_all_errno(fd, data, len) == 0)
        return KILN_OK;
    va_list ap;
    va_start(ap, fmt);
    enum kiln_rc rc = fail_errno_v(err, KILN_E_IO, fmt, ap);
    va_end(ap);
    return rc;
}

/* 0 at end of file, else -1 with errno (EFBIG past max). */
static int copy_all_errno(int in, int out, long long max)
{
    char buf[1 << 16];
    long long total = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        if (max >= 0 && total + n > max) {
            errno = EFBIG;
            return -1;
        }
        if (fd_write_all_errno(out, buf, (size_t)n) != 0)
            return -1;
        total += n;
    }
}

enum kiln_rc fd_copy_all(int in, int out, long long max, struct kiln_err *err, const char *fmt, ...)
{
    if (copy_all_errno(in, out, max) == 0)
        return KILN_OK;
    va_list ap;
    va_start(ap, fmt);
    enum kiln_rc rc = fail_errno_v(err, errno == EFBIG ? KILN_E_LIMIT : KILN_E_IO, fmt, ap);
    va_end(ap);
    return rc;
}
