/* interrupt.c - see interrupt.h. */
#include "interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

/* [0] read end (polled), [1] write end (the handler's); -1 before init. */
static int ends[2] = {-1, -1};

enum kiln_rc interrupt_init(struct kiln_err *err)
{
    if (ends[0] >= 0)
        return KILN_OK;
    int p[2];
    /* Non-blocking: a handler never waits on a full pipe (one byte is
     * enough: the read end stays readable). */
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "creating the stop pipe");
    ends[0] = p[0];
    ends[1] = p[1];
    return KILN_OK;
}

void interrupt_raise(void)
{
    int saved = errno; /* a handler must leave errno as it found it */
    if (ends[1] >= 0) {
        ssize_t n = write(ends[1], "!", 1);
        (void)n;
    }
    errno = saved;
}

int interrupt_fd(void)
{
    return ends[0];
}

bool interrupt_raised(void)
{
    if (ends[0] < 0)
        return false;
    struct pollfd p = {ends[0], POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}
