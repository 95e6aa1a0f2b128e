#include "beneath.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"

/* The components of rel are checked before any of them is opened. */
static enum kiln_rc check_rel(const char *dir, const char *rel, struct kiln_err *err)
{
    if (!rel[0] || rel[0] == '/' || strlen(rel) >= PATH_MAX)
        return kiln_fail(err, KILN_E_REJECTED, "%s/%s: not a path inside %s", dir, rel, dir);
    for (const char *p = rel; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return kiln_fail(err, KILN_E_REJECTED,
                             "%s/%s: a path with an empty, '.' or '..' component escapes %s", dir,
                             rel, dir);
        p += n + (e ? 1 : 0);
        if (e && !*p)
            return kiln_fail(err, KILN_E_REJECTED, "%s/%s: trailing '/'", dir, rel);
    }
    return KILN_OK;
}

static enum kiln_rc link_refused(const char *dir, const char *rel, const char *at,
                                 struct kiln_err *err)
{
    return kiln_fail(err, KILN_E_REJECTED,
                     "%s/%s: %s is a symbolic link or not a directory; kiln never follows links "
                     "inside %s (remove the link, or start a new run)",
                     dir, rel, at, dir);
}

/* Walks to the directory holding rel's last component; *leaf points into
 * rel. `create`: missing directories are made (0755). */
static enum kiln_rc open_parent(const char *dir, const char *rel, int create, int *pfd,
                                const char **leaf, struct kiln_err *err)
{
    enum kiln_rc rc = check_rel(dir, rel, err);
    if (rc != KILN_OK)
        return rc;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "opening %s",
                               dir);
    const char *p = rel;
    for (const char *e; (e = strchr(p, '/')) != NULL; p = e + 1) {
        char comp[NAME_MAX + 1];
        size_t n = (size_t)(e - p);
        if (n > NAME_MAX) {
            close(fd);
            return kiln_fail(err, KILN_E_REJECTED, "%s/%s: a component is too long", dir, rel);
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        if (create && mkdirat(fd, comp, 0755) != 0 && errno != EEXIST) {
            rc = kiln_fail_errno(err, KILN_E_IO, "creating %s/%.*s", dir, (int)(e - rel), rel);
            close(fd);
            return rc;
        }
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        close(fd);
        if (next < 0) {
            char at[PATH_MAX];
            snprintf(at, sizeof(at), "%.*s", (int)(e - rel), rel);
            if (saved == ENOENT)
                return kiln_fail(err, KILN_E_NOTFOUND, "%s/%s: %s does not exist", dir, rel, at);
            if (saved == ELOOP || saved == ENOTDIR)
                return link_refused(dir, rel, at, err);
            errno = saved;
            return kiln_fail_errno(err, KILN_E_IO, "opening %s/%s", dir, at);
        }
        fd = next;
    }
    *pfd = fd;
    *leaf = p;
    return KILN_OK;
}

enum kiln_rc beneath_read_file(const char *dir, const char *rel, size_t max, char **out,
                               size_t *len, struct kiln_err *err)
{
    *out = NULL;
    *len = 0;
    int pfd;
    const char *leaf;
    enum kiln_rc rc = open_parent(dir, rel, 0, &pfd, &leaf, err);
    if (rc != KILN_OK)
        return rc;
    int fd = openat(pfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int saved = errno;
    close(pfd);
    if (fd < 0) {
        if (saved == ELOOP)
            return link_refused(dir, rel, rel, err);
        errno = saved;
        return kiln_fail_errno(err, saved == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "opening %s/%s",
                               dir, rel);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return kiln_fail(err, KILN_E_REJECTED, "%s/%s is not a regular file", dir, rel);
    }
    char *buf = malloc(max + 2);
    if (!buf) {
        close(fd);
        return kiln_fail(err, KILN_E_NOMEM, "reading %s/%s", dir, rel);
    }
    size_t n = 0;
    for (;;) { /* up to max + 1 bytes, whatever st_size says: it may grow */
        ssize_t r = read(fd, buf + n, max + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = kiln_fail_errno(err, KILN_E_IO, "reading %s/%s", dir, rel);
            break;
        }
        if (r == 0 || (n += (size_t)r) > max)
            break;
    }
    close(fd);
    if (rc == KILN_OK && n > max)
        rc = kiln_fail(err, KILN_E_LIMIT, "%s/%s is larger than the %zu-byte limit", dir, rel, max);
    if (rc != KILN_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KILN_OK;
}

enum kiln_rc beneath_write_atomic(const char *dir, const char *rel, const void *data, size_t len,
                                  struct kiln_err *err)
{
    int pfd;
    const char *leaf;
    enum kiln_rc rc = open_parent(dir, rel, 1, &pfd, &leaf, err);
    if (rc != KILN_OK)
        return rc;
    char tmp[NAME_MAX + 1];
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        unsigned long long r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
            r = (unsigned long long)getpid() * 1000003ull + (unsigned long long)tries;
        if (snprintf(tmp, sizeof(tmp), ".%.200s.tmp-%012llx", leaf, r & 0xffffffffffffull) >=
            (int)sizeof(tmp)) {
            close(pfd);
            return kiln_fail(err, KILN_E_USAGE, "%s/%s: name too long", dir, rel);
        }
        fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            rc = kiln_fail_errno(err, KILN_E_IO, "creating a temporary file for %s/%s", dir, rel);
            close(pfd);
            return rc;
        }
    }
    if (fd < 0) {
        close(pfd);
        return kiln_fail(err, KILN_E_IO, "no free temporary name for %s/%s", dir, rel);
    }
    rc = fd_write_all(fd, data, len, err, "writing %s/%s", dir, rel);
    if (rc == KILN_OK && fchmod(fd, 0644) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "chmod %s/%s", dir, rel);
    if (rc == KILN_OK && fsync(fd) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "fsync %s/%s", dir, rel);
    if (close(fd) != 0 && rc == KILN_OK)
        rc = kiln_fail_errno(err, KILN_E_IO, "closing %s/%s", dir, rel);
    /* rename(2) replaces a link at rel; it never writes through it. */
    if (rc == KILN_OK && renameat(pfd, tmp, pfd, leaf) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "renaming into %s/%s", dir, rel);
    if (rc != KILN_OK)
        unlinkat(pfd, tmp, 0);
    else
        fsync(pfd); /* the rename is durable once the directory is */
    close(pfd);
    return rc;
}

enum kiln_rc beneath_open_dir(const char *dir, const char *rel, int create, int *fd,
                              struct kiln_err *err)
{
    char path[PATH_MAX];
    /* "rel/." would be refused: walk to rel/x's parent instead. */
    if (snprintf(path, sizeof(path), "%s/x", rel) >= (int)sizeof(path))
        return kiln_fail(err, KILN_E_USAGE, "%s/%s: path too long", dir, rel);
    const char *leaf;
    return open_parent(dir, path, create, fd, &leaf, err);
}

enum kiln_rc beneath_check_dir(const char *dir, const char *rel, struct kiln_err *err)
{
    int fd;
    enum kiln_rc rc = beneath_open_dir(dir, rel, 0, &fd, err);
    if (rc == KILN_OK)
        close(fd);
    return rc;
}

/* Depth-first over an open directory; `depth` bounds a hostile nesting. */
static enum kiln_rc tree_walk(int fd, char *path, size_t cap, int depth, struct kiln_err *err)
{
    if (depth > 64)
        return kiln_fail(err, KILN_E_REJECTED, "%s: nested more than 64 directories deep", path);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return kiln_fail_errno(err, KILN_E_IO, "reading %s", path);
    }
    enum kiln_rc rc = KILN_OK;
    struct dirent *de;
    size_t plen = strlen(path);
    while (rc == KILN_OK && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        if (snprintf(path + plen, cap - plen, "/%s", de->d_name) >= (int)(cap - plen)) {
            path[plen] = '\0';
            rc = kiln_fail(err, KILN_E_REJECTED, "%s: a path inside is too long", path);
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s is a symbolic link; kiln never follows links in its own "
                           "directories (remove it, or start afresh)",
                           path);
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                rc = tree_walk(sub, path, cap, depth + 1, err);
        }
        path[plen] = '\0';
    }
    closedir(d);
    return rc;
}

enum kiln_rc beneath_check_tree(const char *dir, const char *rel, struct kiln_err *err)
{
    int fd;
    enum kiln_rc rc = beneath_open_dir(dir, rel, 0, &fd, err);
    if (rc != KILN_OK)
        return rc;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return tree_walk(fd, path, sizeof(path), 0, err);
}
