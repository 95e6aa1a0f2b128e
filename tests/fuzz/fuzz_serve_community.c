/* libFuzzer target: serve_parse_community (a community workload tarball,
 * the body of POST /v1/submissions as application/x-tar) on arbitrary
 * bytes. What it accepts must hold the promised shape: the three required
 * workload files, one candidate of a known backend within the cap and
 * without NUL, a workload name; what it refuses must say why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct serve_community c;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (serve_parse_community(data, size, &c, &err) != KILN_OK) {
        if (!err.msg[0])
            abort();
        return 0;
    }
    for (size_t i = 0; i < 3; i++)
        if (!c.files[i].data)
            abort();
    if (strcmp(c.backend, "cuda") && strcmp(c.backend, "cpu"))
        abort();
    if (!c.source || c.source_len == 0 || c.source_len > SERVE_SOURCE_MAX ||
        memchr(c.source, '\0', c.source_len))
        abort();
    size_t n = strlen(c.name);
    if (n == 0 || n > SERVE_WORKLOAD_NAME_MAX || strchr(c.name, '/') || strchr(c.name, '@'))
        abort();
    serve_community_free(&c);
    return 0;
}
