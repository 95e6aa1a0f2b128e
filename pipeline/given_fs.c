/* given_fs.c - directory walking for given.c (given_fs.h). */
#include "given_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DIR_ENTRIES 4096u /* names one directory of given data may hold */

void gfs_names_free(struct gfs_names *nl)
{
    for (size_t i = 0; i < nl->n; i++)
        free(nl->v[i]);
    free(nl->v);
    nl->v = NULL;
    nl->n = 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of directory `fd` but "." and "..", sorted. */
enum kiln_rc gfs_list(int fd, const char *shown, struct gfs_names *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    int dfd = dup(fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return kiln_fail_errno(err, KILN_E_IO, "listing %s", shown);
    }
    rewinddir(d);
    enum kiln_rc rc = KILN_OK;
    size_t cap = 0;
    struct dirent *de;
    while (rc == KILN_OK && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (out->n == MAX_DIR_ENTRIES) {
            rc = kiln_fail(err, KILN_E_LIMIT, "%s holds more than %u entries", shown,
                           MAX_DIR_ENTRIES);
            break;
        }
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nv = realloc(out->v, ncap * sizeof(*nv));
            if (!nv) {
                rc = kiln_fail(err, KILN_E_NOMEM, "listing %s", shown);
                break;
            }
            out->v = nv;
            cap = ncap;
        }
        if (!(out->v[out->n] = strdup(de->d_name)))
            rc = kiln_fail(err, KILN_E_NOMEM, "listing %s", shown);
        else
            out->n++;
    }
    closedir(d);
    if (rc != KILN_OK)
        gfs_names_free(out);
    else if (out->n)
        qsort(out->v, out->n, sizeof(*out->v), by_name);
    return rc;
}

/* 'd' directory, 'f' regular file, 'l' symbolic link, 'o' other, 0 absent. */
char gfs_kind(int fd, const char *name)
{
    struct stat st;
    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    return S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : S_ISLNK(st.st_mode) ? 'l' : 'o';
}

const char *gfs_kind_word(char k)
{
    return k == 'l' ? "a symbolic link" : k == 'd' ? "a directory" : "not a regular file";
}

enum kiln_rc gfs_open_dir(int fd, const char *name, const char *shown, int *out,
                          struct kiln_err *err)
{
    char k = gfs_kind(fd, name);
    if (k != 'd')
        return kiln_fail(err, k ? KILN_E_REJECTED : KILN_E_NOTFOUND, "%s: %s", shown,
                         k ? (k == 'f' ? "a file where a directory belongs" : gfs_kind_word(k))
                           : "missing");
    *out = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*out < 0)
        return kiln_fail_errno(err, KILN_E_REJECTED, "opening %s", shown);
    return KILN_OK;
}

/* Reads regular file `name` in `fd` (never a link, FIFO or device). */
enum kiln_rc gfs_read(int fd, const char *name, const char *shown, size_t max, char **out,
                      size_t *len, struct kiln_err *err)
{
    *out = NULL;
    *len = 0;
    int f = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (f < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_REJECTED,
                               "opening %s", shown);
    if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(f);
        return kiln_fail(err, KILN_E_REJECTED, "%s is not a regular file", shown);
    }
    if ((uint64_t)st.st_size > max) {
        close(f);
        return kiln_fail(err, KILN_E_LIMIT, "%s has %lld bytes, more than the %zu it may have",
                         shown, (long long)st.st_size, max);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(f);
        return kiln_fail(err, KILN_E_NOMEM, "reading %s", shown);
    }
    size_t n = 0, want = (size_t)st.st_size;
    while (n < want) {
        ssize_t r = read(f, buf + n, want - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    char extra;
    bool grew = n == want && read(f, &extra, 1) > 0;
    close(f);
    if (n != want || grew) {
        free(buf);
        return kiln_fail(err, KILN_E_REJECTED, "%s changed while kiln read it", shown);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KILN_OK;
}
