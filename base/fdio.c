/* fdio.c - see fdio.h. */
#include "fdio.h"

#include <errno.h>
#include <unistd.h>

int fd_write_all(int fd, const void *data, size_t len)
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

int fd_copy_all(int in, int out, long long max)
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
        if (fd_write_all(out, buf, (size_t)n) != 0)
            return -1;
        total += n;
    }
}
