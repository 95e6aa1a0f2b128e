/* authorization.c - the one parser of the Authorization header (service.h):
 * "Bearer TOKEN", or "Basic BASE64(USER:TOKEN)" where a route allows it.
 * Strict: one space after the scheme, canonical base64 (padding as RFC
 * 4648 writes it, no whitespace), a bounded length; the token's own format
 * is sauth_check's. Fuzzed by fuzz_serve_authorization. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "service.h"

#define AUTHZ_VALUE_MAX 512

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Canonical base64 of n characters (a multiple of 4) into out (cap bytes,
 * NUL-terminated); -1 on anything else: a bad character, padding in the
 * middle, non-zero bits under the padding, or no room. */
static long b64_decode(const char *in, size_t n, char *out, size_t cap)
{
    if (n == 0 || n % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            bool last = i + 4 == n;
            if (in[i + k] == '=' && last && k >= 2 && (k == 3 || in[i + 3] == '=')) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad || (v[k] = b64_value(in[i + k])) < 0)
                return -1;
        }
        unsigned bits =
            (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        if ((pad == 1 && (bits & 0xff)) || (pad == 2 && (bits & 0xffff)))
            return -1; /* not the canonical encoding */
        if (o + 3 - (size_t)pad >= cap)
            return -1;
        out[o++] = (char)(bits >> 16);
        if (pad < 2)
            out[o++] = (char)(bits >> 8 & 0xff);
        if (pad < 1)
            out[o++] = (char)(bits & 0xff);
    }
    out[o] = '\0';
    return (long)o;
}

static enum kiln_rc take_token(const char *p, size_t n, char token[SERVE_TOKEN_MAX],
                               struct kiln_err *err)
{
    if (n == 0 || n >= SERVE_TOKEN_MAX || memchr(p, '\0', n))
        return kiln_fail(err, KILN_E_REJECTED,
                         "the token is malformed (expected kiln_<16 hex>_<64 hex>, as printed by "
                         "kiln token add)");
    memcpy(token, p, n);
    token[n] = '\0';
    return KILN_OK;
}

enum kiln_rc serve_parse_authorization(const char *value, bool basic_ok,
                                       char token[SERVE_TOKEN_MAX], struct kiln_err *err)
{
    token[0] = '\0';
    if (!value)
        return kiln_fail(err, KILN_E_REJECTED,
                         "no Authorization header: send 'Authorization: Bearer TOKEN' (kiln "
                         "token add NAME creates one)");
    size_t n = strnlen(value, AUTHZ_VALUE_MAX + 1);
    if (n > AUTHZ_VALUE_MAX)
        return kiln_fail(err, KILN_E_REJECTED, "the Authorization header is longer than %d bytes",
                         AUTHZ_VALUE_MAX);
    if (!strncasecmp(value, "Bearer ", 7))
        return take_token(value + 7, n - 7, token, err);
    if (!basic_ok || strncasecmp(value, "Basic ", 6))
        return kiln_fail(err, KILN_E_REJECTED,
                         basic_ok ? "the Authorization header must be 'Bearer TOKEN', or Basic "
                                    "with the token as the password"
                                  : "the Authorization header must be 'Bearer TOKEN'");
    char plain[AUTHZ_VALUE_MAX];
    long m = b64_decode(value + 6, n - 6, plain, sizeof(plain));
    const char *colon = m > 0 ? memchr(plain, ':', (size_t)m) : NULL;
    if (!colon)
        return kiln_fail(err, KILN_E_REJECTED,
                         "the Basic credentials are not base64 of USER:PASSWORD: give any user "
                         "name and the token as the password");
    return take_token(colon + 1, (size_t)m - (size_t)(colon + 1 - plain), token, err);
}
