/*
 * apikey.h - find the LLM API key without leaking it.
 *
 * Order: the environment variable KILN_API_KEY, then OPENAI_API_KEY, then the
 * same two names (same order) in a .env file. The .env file is read only if
 * it is a regular file (not a symlink: O_NOFOLLOW), owned by the effective
 * user, with no group or other permission bits (mode & 077 == 0), and at
 * most APIKEY_DOTENV_MAX bytes; anything else is refused with the fix named.
 *
 * The key is copied into a caller-owned buffer. It never appears in an error
 * message, and the file contents are wiped from memory after parsing; the
 * caller should explicit_bzero() its buffer when done. A key must be
 * printable ASCII without spaces (it goes into an HTTP header verbatim).
 */
#ifndef KILN_APIKEY_H
#define KILN_APIKEY_H

#include <stddef.h>

#include "error.h"

#define APIKEY_DOTENV_MAX (64u * 1024u)

/*
 * Loads the key into out[cap] (NUL-terminated). dotenv_path NULL means
 * "./.env". Fails with KILN_E_NOTFOUND when no source holds a key (a missing
 * .env is not otherwise an error), KILN_E_REJECTED for a .env with unsafe
 * permissions, owner or type, or a malformed key, KILN_E_LIMIT when the key
 * does not fit in cap or the file is too big, KILN_E_IO when reading fails.
 */
enum kiln_rc apikey_load(const char *dotenv_path, char *out, size_t cap,
                         struct kiln_err *err) KILN_NODISCARD;

#endif
