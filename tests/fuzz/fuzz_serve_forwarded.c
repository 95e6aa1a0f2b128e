/* libFuzzer target: sconn_parse_forwarded (the X-Forwarded-For header
 * behind --trusted-proxy) on arbitrary bytes. What it accepts must be an
 * address that prints back and parses to the same bytes; what it refuses
 * must leave no address behind. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *xff = malloc(size + 1);
    if (!xff)
        return 0;
    memcpy(xff, data, size);
    xff[size] = '\0'; /* MHD hands header values over NUL-terminated */
    unsigned char a[16], back[16] = {0};
    int fam = sconn_parse_forwarded(xff, a);
    free(xff);
    static const unsigned char zero[16];
    if (fam == 0) {
        if (memcmp(a, zero, sizeof(a)))
            abort();
        return 0;
    }
    char text[INET6_ADDRSTRLEN];
    if ((fam != AF_INET && fam != AF_INET6) || !inet_ntop(fam, a, text, sizeof(text)) ||
        inet_pton(fam, text, back) != 1 || memcmp(a, back, fam == AF_INET ? 4 : 16))
        abort();
    return 0;
}
