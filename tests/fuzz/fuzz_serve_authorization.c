/* libFuzzer target: serve_parse_authorization (the Authorization header of
 * every kiln serve request, from any client) on arbitrary bytes, with and
 * without Basic allowed. What it accepts must be a NUL-free token shorter
 * than SERVE_TOKEN_MAX; a Bearer token is the header's own tail; without
 * Basic allowed, only "Bearer " is ever accepted; what it refuses says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size + 1);
    if (!v)
        return 0;
    memcpy(v, data, size);
    v[size] = '\0'; /* MHD hands header values over NUL-terminated */
    for (int basic_ok = 0; basic_ok < 2; basic_ok++) {
        char tok[SERVE_TOKEN_MAX];
        struct kiln_err e = KILN_ERR_INIT;
        enum kiln_rc rc = serve_parse_authorization(v, basic_ok, tok, &e);
        if (rc != KILN_OK) {
            if (rc != KILN_E_REJECTED || !e.msg[0])
                abort();
            continue;
        }
        size_t n = strnlen(tok, SERVE_TOKEN_MAX);
        if (n == 0 || n >= SERVE_TOKEN_MAX)
            abort();
        bool bearer = !strncasecmp(v, "Bearer ", 7);
        if (!basic_ok && !bearer)
            abort();
        if (bearer && strcmp(tok, v + 7))
            abort();
    }
    free(v);
    return 0;
}
