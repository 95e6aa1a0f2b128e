/* uidslot.c - one host uid per live sandbox, reserved by flock. */
#include "uidslot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static enum kiln_rc parse_range(unsigned long *base, unsigned long *count, struct kiln_err *err)
{
    const char *v = getenv("KILN_SANDBOX_UIDS");
    *base = UIDSLOT_DEFAULT_BASE;
    *count = UIDSLOT_DEFAULT_COUNT;
    if (!v || !*v)
        return KILN_OK;
    char *end = NULL;
    errno = 0;
    unsigned long b = strtoul(v, &end, 10), c = 0;
    if (!errno && end && *end == ':')
        c = strtoul(end + 1, &end, 10);
    /* Above the system's accounts and nobody, below 2^31 (signed uid bugs). */
    if (errno || !end || *end || b < 65536 || c < 1 || c > (1ul << 24) || b + c > (1ul << 31))
        return kiln_fail(err, KILN_E_USAGE,
                         "KILN_SANDBOX_UIDS='%s' must be BASE:COUNT with BASE >= 65536, "
                         "1 <= COUNT <= 16777216 and BASE+COUNT <= 2147483648 (a range no account "
                         "uses; default %u:%u)",
                         v, UIDSLOT_DEFAULT_BASE, UIDSLOT_DEFAULT_COUNT);
    *base = b;
    *count = c;
    return KILN_OK;
}

/* The lock directory, root's and private: nobody else may create, replace
 * or hold the slot files. */
static enum kiln_rc open_lock_dir(int *dfd, struct kiln_err *err)
{
    (void)mkdir("/run/kiln", 0755);
    (void)mkdir(UIDSLOT_LOCK_DIR, 0700);
    *dfd = open(UIDSLOT_LOCK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dfd < 0)
        return kiln_fail_errno(err, KILN_E_SANDBOX,
                               "sandbox: cannot reserve a sandbox uid: opening " UIDSLOT_LOCK_DIR
                               " (kiln needs a writable /run as root)");
    struct stat st;
    if (fstat(*dfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 0077)) {
        close(*dfd);
        *dfd = -1;
        return kiln_fail(err, KILN_E_SANDBOX,
                         "sandbox: " UIDSLOT_LOCK_DIR " must be a directory owned by root with "
                         "mode 0700 (someone else made it): remove it and run again");
    }
    return KILN_OK;
}

enum kiln_rc uidslot_take(struct uid_slot *s, struct kiln_err *err)
{
    s->lock_fd = -1;
    s->uid = (uid_t)-1;
    unsigned long base, count;
    int dfd;
    if (parse_range(&base, &count, err) != KILN_OK || open_lock_dir(&dfd, err) != KILN_OK)
        return err->rc;
    unsigned long start = (unsigned long)getpid() % count;
    for (unsigned long i = 0; i < count; i++) {
        unsigned long slot = (start + i) % count;
        char name[32];
        snprintf(name, sizeof(name), "%lu", base + slot);
        int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            enum kiln_rc rc =
                kiln_fail_errno(err, KILN_E_SANDBOX, "sandbox: cannot reserve a sandbox uid: %s/%s",
                                UIDSLOT_LOCK_DIR, name);
            close(dfd);
            return rc;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            close(dfd);
            s->lock_fd = fd;
            s->uid = (uid_t)(base + slot);
            return KILN_OK;
        }
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK) {
            errno = e;
            enum kiln_rc rc = kiln_fail_errno(err, KILN_E_SANDBOX,
                                              "sandbox: cannot reserve a sandbox uid: flock %s/%s",
                                              UIDSLOT_LOCK_DIR, name);
            close(dfd);
            return rc;
        }
    }
    close(dfd);
    return kiln_fail(err, KILN_E_LIMIT,
                     "sandbox: all %lu sandbox uids from %lu are in use: wait for sandboxes to "
                     "end, or widen KILN_SANDBOX_UIDS",
                     count, base);
}

void uidslot_release(struct uid_slot *s)
{
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    s->lock_fd = -1;
}
