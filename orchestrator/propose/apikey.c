#include "apikey.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The names kiln reads, most specific first. */
static const char *const key_names[] = {"KILN_API_KEY", "OPENAI_API_KEY"};
#define N_KEY_NAMES (sizeof(key_names) / sizeof(key_names[0]))

/* Printable ASCII, no spaces: anything else would corrupt (or inject into)
 * the Authorization header. The message never shows the key. */
static enum kiln_rc store_key(const char *val, size_t n, const char *where, char *out, size_t cap,
                              struct kiln_err *err)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)val[i];
        if (c <= 0x20 || c >= 0x7f)
            return kiln_fail(err, KILN_E_REJECTED,
                             "the API key in %s contains a space or control character at "
                             "position %zu: remove it",
                             where, i);
    }
    if (n + 1 > cap)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the API key in %s is %zu bytes; kiln accepts at most %zu", where, n,
                         cap ? cap - 1 : 0);
    memcpy(out, val, n);
    out[n] = '\0';
    return KILN_OK;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/*
 * Finds `name` in .env text: lines `[export ]NAME=value`, value optionally
 * in single or double quotes (no escapes), `#` comment lines, and a ` #...`
 * comment after an unquoted value. The last assignment wins, as in a shell.
 * Points val and val_len at the value inside buf; returns false when absent.
 */
static bool dotenv_find(const char *buf, size_t len, const char *name, const char **val,
                        size_t *val_len)
{
    size_t name_len = strlen(name);
    bool found = false;
    size_t pos = 0;
    while (pos < len) {
        const char *line = buf + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + 1;
        size_t i = 0;
        while (i < n && is_blank(line[i]))
            i++;
        if (n - i >= 7 && memcmp(line + i, "export", 6) == 0 && is_blank(line[i + 6])) {
            i += 7;
            while (i < n && is_blank(line[i]))
                i++;
        }
        if (n - i < name_len + 1 || memcmp(line + i, name, name_len) != 0)
            continue;
        i += name_len;
        while (i < n && is_blank(line[i]))
            i++;
        if (i >= n || line[i] != '=')
            continue;
        i++;
        while (i < n && is_blank(line[i]))
            i++;
        size_t end = n;
        if (i < n && (line[i] == '"' || line[i] == '\'')) {
            const char *close = memchr(line + i + 1, line[i], n - i - 1);
            if (!close)
                continue; /* unterminated quote: not a usable assignment */
            end = (size_t)(close - line);
            i++;
        } else {
            for (size_t k = i; k < n; k++) {
                if (line[k] == '#' && k > i && is_blank(line[k - 1])) {
                    end = k;
                    break;
                }
            }
            while (end > i && is_blank(line[end - 1]))
                end--;
        }
        *val = line + i;
        *val_len = end - i;
        found = true;
    }
    return found;
}

static enum kiln_rc open_dotenv(const char *path, int *fd, struct kiln_err *err)
{
    /* O_NOFOLLOW: a symlink could point at someone else's file; O_NONBLOCK:
     * a FIFO planted at the path must not hang kiln (fstat refuses it). */
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    if (*fd >= 0)
        return KILN_OK;
    if (errno == ENOENT)
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "no API key: set OPENAI_API_KEY (or KILN_API_KEY), or put it in "
                         "%s with mode 600",
                         path);
    if (errno == ELOOP)
        return kiln_fail(err, KILN_E_REJECTED,
                         "refusing to read %s: it is a symbolic link; make it a regular "
                         "file with mode 600",
                         path);
    return kiln_fail_errno(err, KILN_E_IO, "cannot open %s", path);
}

/* A regular file of ours that nobody else may read or write, and small. */
static enum kiln_rc check_dotenv(int fd, const char *path, struct kiln_err *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "cannot stat %s", path);
    if (!S_ISREG(st.st_mode))
        return kiln_fail(err, KILN_E_REJECTED, "refusing to read %s: it is not a regular file",
                         path);
    if (st.st_uid != geteuid())
        return kiln_fail(err, KILN_E_REJECTED,
                         "refusing to read %s: it belongs to uid %u, not to you (uid %u); "
                         "create your own with mode 600",
                         path, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & 077)
        return kiln_fail(err, KILN_E_REJECTED,
                         "refusing to read %s: mode %04o lets other users %s it; chmod 600 %s",
                         path, (unsigned)(st.st_mode & 07777),
                         (st.st_mode & 044) ? "read" : "write", path);
    if (st.st_size > (off_t)APIKEY_DOTENV_MAX)
        return kiln_fail(err, KILN_E_LIMIT, "refusing to read %s: %lld bytes is over the %u limit",
                         path, (long long)st.st_size, APIKEY_DOTENV_MAX);
    return KILN_OK;
}

/* The whole file into buf (APIKEY_DOTENV_MAX + 1 bytes), bounded by the
 * cap even if the file grows after fstat. */
static enum kiln_rc read_dotenv_text(int fd, const char *path, char *buf, size_t *got,
                                     struct kiln_err *err)
{
    *got = 0;
    while (*got <= APIKEY_DOTENV_MAX) {
        ssize_t r = read(fd, buf + *got, APIKEY_DOTENV_MAX + 1 - *got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return kiln_fail_errno(err, KILN_E_IO, "cannot read %s", path);
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    if (*got > APIKEY_DOTENV_MAX)
        return kiln_fail(err, KILN_E_LIMIT, "refusing to read %s: it is over the %u byte limit",
                         path, APIKEY_DOTENV_MAX);
    return KILN_OK;
}

/* The first of key_names that the text sets to something. */
static enum kiln_rc take_dotenv_key(const char *buf, size_t len, const char *path, char *out,
                                    size_t cap, struct kiln_err *err)
{
    for (size_t k = 0; k < N_KEY_NAMES; k++) {
        const char *val = NULL;
        size_t val_len = 0;
        if (dotenv_find(buf, len, key_names[k], &val, &val_len) && val_len > 0)
            return store_key(val, val_len, path, out, cap, err);
    }
    return kiln_fail(err, KILN_E_NOTFOUND,
                     "no API key: %s sets neither KILN_API_KEY nor OPENAI_API_KEY", path);
}

static enum kiln_rc read_dotenv(const char *path, char *out, size_t cap, struct kiln_err *err)
{
    int fd = -1;
    enum kiln_rc rc = open_dotenv(path, &fd, err);
    if (rc != KILN_OK)
        return rc;
    char *buf = NULL;
    size_t got = 0;
    rc = check_dotenv(fd, path, err);
    if (rc == KILN_OK && !(buf = malloc(APIKEY_DOTENV_MAX + 1)))
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory reading %s", path);
    if (rc == KILN_OK)
        rc = read_dotenv_text(fd, path, buf, &got, err);
    if (rc == KILN_OK)
        rc = take_dotenv_key(buf, got, path, out, cap, err);
    if (buf) {
        explicit_bzero(buf, APIKEY_DOTENV_MAX + 1);
        free(buf);
    }
    close(fd);
    return rc;
}

enum kiln_rc apikey_load(const char *dotenv_path, char *out, size_t cap, struct kiln_err *err)
{
    if (!out || cap == 0)
        return kiln_fail(err, KILN_E_INTERNAL, "apikey_load: no output buffer");
    out[0] = '\0';
    for (size_t k = 0; k < N_KEY_NAMES; k++) {
        const char *v = getenv(key_names[k]);
        if (v && v[0] != '\0')
            return store_key(v, strlen(v), key_names[k], out, cap, err);
    }
    return read_dotenv(dotenv_path ? dotenv_path : ".env", out, cap, err);
}
