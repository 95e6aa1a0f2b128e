/*
 * digest.h - SHA-256 on OpenSSL's EVP interface: workload content hashes
 * key the reference cache, and run-record MANIFESTs and archives name every
 * file by its digest. (Replaces a hand-written SHA-256: a vetted, fast
 * implementation is worth the dependency.)
 *
 * Streaming lifecycle: sha256_init, any number of sha256_update calls, then
 * sha256_final, which releases the context; a context abandoned before
 * sha256_final must be released with sha256_discard. The context owns one
 * OpenSSL allocation; when that allocation (or OpenSSL) fails, the context
 * remembers it and sha256_final returns false with an all-zero digest, so a
 * caller that must not act on a wrong digest checks the result. The
 * file/fd helpers return a kiln_rc instead.
 */
#ifndef KILN_DIGEST_H
#define KILN_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define SHA256_DIGEST_LEN 32
#define SHA256_HEX_LEN    64 /* without the NUL */

struct sha256_ctx {
    void *md;    /* EVP_MD_CTX *, NULL once finalized or discarded */
    bool failed; /* an OpenSSL call failed: the digest would be wrong */
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
/* Writes the digest and releases the context; false (and zeros) on failure. */
bool sha256_final(struct sha256_ctx *c, uint8_t digest[SHA256_DIGEST_LEN]);
/* Releases a context without a digest (error paths); safe after final. */
void sha256_discard(struct sha256_ctx *c);

/* Lower-case hex of `digest` into `hex` (SHA256_HEX_LEN + 1 bytes). */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[SHA256_HEX_LEN + 1]);

/* One-shot: hex digest of `data` (all zeros if OpenSSL fails: see above). */
void sha256_hex_of(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);

/* Hex digest of what remains to read on `fd` (up to EOF), refusing more than
 * `max` bytes (KILN_E_LIMIT); *size (may be NULL) gets the byte count. */
enum kiln_rc sha256_fd_hex(int fd, uint64_t max, char hex[SHA256_HEX_LEN + 1], uint64_t *size,
                           struct kiln_err *err) KILN_NODISCARD;

/* As sha256_fd_hex for the regular file at `path` (symbolic links are not
 * followed: KILN_E_REJECTED). */
enum kiln_rc sha256_file_hex(const char *path, uint64_t max, char hex[SHA256_HEX_LEN + 1],
                             uint64_t *size, struct kiln_err *err) KILN_NODISCARD;

/* True when `s` is exactly SHA256_HEX_LEN lower-case hex digits. */
bool sha256_is_hex(const char *s);

#endif
