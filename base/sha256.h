/*
 * sha256.h - SHA-256 (FIPS 180-4), small and dependency-free: workload
 * content hashes key the reference cache and run records.
 *
 * Lifecycle: sha256_init, any number of sha256_update calls, sha256_final
 * (which leaves the context spent; init it again to reuse). The context is
 * a plain caller-owned value; nothing is allocated.
 */
#ifndef KILN_SHA256_H
#define KILN_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_HEX_LEN    64 /* without the NUL */

struct sha256_ctx {
    uint32_t state[8];
    uint64_t bytes; /* total message length so far */
    uint8_t block[64];
    size_t used; /* bytes waiting in `block` */
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, uint8_t digest[SHA256_DIGEST_LEN]);

/* Lower-case hex of `digest` into `hex` (SHA256_HEX_LEN + 1 bytes). */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[SHA256_HEX_LEN + 1]);

/* One-shot: hex digest of `data`. */
void sha256_hex_of(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);

#endif
