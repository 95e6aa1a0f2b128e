#include "digest.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void sha256_init(struct sha256_ctx *c)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    c->failed = !md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1;
    c->md = md;
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
    if (!c->failed && len > 0 && EVP_DigestUpdate(c->md, data, len) != 1)
        c->failed = true;
}

bool sha256_final(struct sha256_ctx *c, uint8_t digest[SHA256_DIGEST_LEN])
{
    unsigned int n = 0;
    bool ok = !c->failed && EVP_DigestFinal_ex(c->md, digest, &n) == 1 && n == SHA256_DIGEST_LEN;
    if (!ok)
        memset(digest, 0, SHA256_DIGEST_LEN);
    sha256_discard(c);
    return ok;
}

void sha256_discard(struct sha256_ctx *c)
{
    EVP_MD_CTX_free(c->md);
    c->md = NULL;
    c->failed = true; /* a spent context never yields a digest */
}

void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[SHA256_HEX_LEN + 1])
{
    static const char xd[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_LEN; i++) {
        hex[2 * i] = xd[digest[i] >> 4];
        hex[2 * i + 1] = xd[digest[i] & 15];
    }
    hex[SHA256_HEX_LEN] = '\0';
}

void sha256_hex_of(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
    uint8_t d[SHA256_DIGEST_LEN];
    unsigned int n = 0;
    if (EVP_Digest(data, len, d, &n, EVP_sha256(), NULL) != 1 || n != SHA256_DIGEST_LEN)
        memset(d, 0, sizeof(d));
    sha256_hex(d, hex);
}

enum kiln_rc sha256_fd_hex(int fd, uint64_t max, char hex[SHA256_HEX_LEN + 1], uint64_t *size,
                           struct kiln_err *err)
{
    struct sha256_ctx c;
    sha256_init(&c);
    uint64_t total = 0;
    char buf[65536];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            sha256_discard(&c);
            return kiln_fail_errno(err, KILN_E_IO, "reading for a digest");
        }
        if (r == 0)
            break;
        total += (uint64_t)r;
        if (total > max) {
            sha256_discard(&c);
            return kiln_fail(err, KILN_E_LIMIT, "larger than the %llu-byte limit for a digest",
                             (unsigned long long)max);
        }
        sha256_update(&c, buf, (size_t)r);
    }
    uint8_t d[SHA256_DIGEST_LEN];
    if (!sha256_final(&c, d))
        return kiln_fail(err, KILN_E_NOMEM,
                         "OpenSSL could not compute a SHA-256 digest "
                         "(out of memory?)");
    sha256_hex(d, hex);
    if (size)
        *size = total;
    return KILN_OK;
}

enum kiln_rc sha256_file_hex(const char *path, uint64_t max, char hex[SHA256_HEX_LEN + 1],
                             uint64_t *size, struct kiln_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return kiln_fail_errno(err,
                               errno == ELOOP    ? KILN_E_REJECTED
                               : errno == ENOENT ? KILN_E_NOTFOUND
                                                 : KILN_E_IO,
                               "opening %s", path);
    struct stat st;
    enum kiln_rc rc = KILN_OK;
    if (fstat(fd, &st) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "stat %s", path);
    else if (!S_ISREG(st.st_mode))
        rc = kiln_fail(err, KILN_E_REJECTED, "%s is not a regular file", path);
    else if ((rc = sha256_fd_hex(fd, max, hex, size, err)) != KILN_OK)
        kiln_err_prefix(err, "%s", path);
    close(fd);
    return rc;
}

bool sha256_is_hex(const char *s)
{
    size_t i = 0;
    for (; s && s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return s && i == SHA256_HEX_LEN;
}
