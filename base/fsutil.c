#include "fsutil.h"

#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kiln_version.h"

enum kiln_rc fs_read_file(const char *path, size_t max, char **out, size_t *len,
                          struct kiln_err *err)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "opening %s",
                               path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return kiln_fail(err, KILN_E_REJECTED, "%s is not a regular file", path);
    }
    /* Read up to max+1 bytes whatever st_size says: the file may grow. */
    size_t cap = (size_t)st.st_size < max ? (size_t)st.st_size + 1 : max + 1;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return kiln_fail(err, KILN_E_NOMEM, "reading %s", path);
    }
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            if (cap > max)
                break;
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return kiln_fail(err, KILN_E_NOMEM, "reading %s", path);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            close(fd);
            return kiln_fail_errno(err, KILN_E_IO, "reading %s", path);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max) {
        free(buf);
        return kiln_fail(err, KILN_E_LIMIT, "%s is larger than the %zu-byte limit", path, max);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KILN_OK;
}

enum kiln_rc fs_write_atomic(const char *path, const void *data, size_t len, struct kiln_err *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path) >= (int)sizeof(tmp))
        return kiln_fail(err, KILN_E_USAGE, "path too long: %s", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "creating a temporary file for %s", path);
    enum kiln_rc rc = fd_write_all(fd, data, len, err, "writing %s", tmp);
    if (rc == KILN_OK && fchmod(fd, 0644) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "chmod %s", tmp);
    if (rc == KILN_OK && fsync(fd) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "fsync %s", tmp);
    if (close(fd) != 0 && rc == KILN_OK)
        rc = kiln_fail_errno(err, KILN_E_IO, "closing %s", tmp);
    if (rc == KILN_OK && rename(tmp, path) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "renaming %s to %s", tmp, path);
    if (rc != KILN_OK) {
        unlink(tmp);
        return rc;
    }
    /* The rename is durable only once the directory entry is on disk. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return KILN_OK;
}

enum kiln_rc fs_mkdirs(const char *path, struct kiln_err *err)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return kiln_fail(err, KILN_E_USAGE, "path too long: %s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return kiln_fail_errno(err, KILN_E_IO, "creating directory %s", buf);
            *p = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return kiln_fail(err, KILN_E_IO, "%s exists and is not a directory", path);
    return KILN_OK;
}

static int remove_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p) == 0 || errno == ENOENT ? 0 : -1;
}

enum kiln_rc fs_remove_tree(const char *path, struct kiln_err *err)
{
    if (nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
        return kiln_fail_errno(err, KILN_E_IO, "removing %s", path);
    return KILN_OK;
}

enum kiln_rc fs_make_tempdir(const char *tag, char *out, size_t cap, struct kiln_err *err)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    if (snprintf(out, cap, "%s/kiln-%s-XXXXXX", tmp, tag) >= (int)cap)
        return kiln_fail(err, KILN_E_USAGE, "temporary directory path too long");
    if (!mkdtemp(out))
        return kiln_fail_errno(err, KILN_E_IO, "creating a temporary directory in %s", tmp);
    return KILN_OK;
}

enum kiln_rc fs_join(char *out, size_t cap, const char *a, const char *b, struct kiln_err *err)
{
    if (snprintf(out, cap, "%s/%s", a, b) >= (int)cap)
        return kiln_fail(err, KILN_E_USAGE, "path too long: %s/%s", a, b);
    return KILN_OK;
}

const char *fs_data_dir(void)
{
    const char *d = getenv("KILN_DATA_DIR");
    return d && *d ? d : KILN_SOURCE_DIR;
}

int fs_runtime_dir(void)
{
    char path[PATH_MAX];
    const char *run = getenv("XDG_RUNTIME_DIR");
    if (run && *run == '/')
        snprintf(path, sizeof(path), "%s/kiln", run);
    else if (geteuid() == 0)
        snprintf(path, sizeof(path), "/run/kiln");
    else
        return -1;
    (void)mkdir(path, 0755); /* as sandbox/uidslot.c makes /run/kiln; records are 0600 */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

char *fs_runtime_read(const char *name, size_t min, size_t max, long max_age_s, size_t *len)
{
    *len = 0;
    int dfd = fs_runtime_dir();
    if (dfd < 0)
        return NULL;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(dfd);
    if (fd < 0)
        return NULL;
    struct stat st;
    /* The fine clock: since Linux 6.13 a file's mtime may be fine-grained
     * while time(NULL) reads the coarse one, a tick behind, so a record
     * written just now could look written in the future and be refused. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t now = ts.tv_sec;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        !(st.st_mode & 022) && st.st_size >= (off_t)min && st.st_size <= (off_t)max &&
        (max_age_s <= 0 || (now >= st.st_mtim.tv_sec && now - st.st_mtim.tv_sec < max_age_s)))
        buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* an error, or the file shrank under us: no record */
            free(buf);
            buf = NULL;
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    if (buf)
        *len = got;
    return buf;
}

void fs_runtime_write(const char *name, const struct iovec *parts, int nparts)
{
    char tmp[NAME_MAX + 1];
    int n = snprintf(tmp, sizeof(tmp), "%s.%ld", name, (long)getpid());
    int dfd = n > 0 && (size_t)n < sizeof(tmp) ? fs_runtime_dir() : -1;
    if (dfd < 0)
        return;
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        int ok = 1;
        for (int i = 0; ok && i < nparts; i++)
            ok = fd_write_all_errno(fd, parts[i].iov_base, parts[i].iov_len) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || renameat(dfd, tmp, dfd, name) < 0)
            (void)unlinkat(dfd, tmp, 0);
    }
    close(dfd);
}

enum kiln_rc fs_self_path(bool dir, char *out, size_t cap, struct kiln_err *err)
{
    if (cap < 2)
        return kiln_fail(err, KILN_E_INTERNAL, "fs_self_path: no room");
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0)
        return kiln_fail_errno(err, KILN_E_IO, "finding kiln's own path (/proc/self/exe)");
    if ((size_t)n >= cap - 1)
        return kiln_fail(err, KILN_E_LIMIT, "kiln's own path is longer than %zu bytes", cap - 2);
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (dir && !slash)
        return kiln_fail(err, KILN_E_IO, "kiln's own path %s has no directory", out);
    if (dir)
        *slash = '\0';
    return KILN_OK;
}
