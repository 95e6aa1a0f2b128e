/* libFuzzer target: serve_parse_submission (the body of POST
 * /v1/submissions) on arbitrary bytes. What it accepts must hold the
 * promised shape: a safe workload name, a known backend, a NUL-free source
 * within the cap; what it refuses must say why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct serve_submission s;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (serve_parse_submission((const char *)data, size, &s, &err) != KILN_OK) {
        if (!err.msg[0])
            abort();
        return 0;
    }
    size_t n = strlen(s.workload);
    if (n == 0 || n > SERVE_WORKLOAD_NAME_MAX || strchr(s.workload, '/') || s.workload[0] == '.')
        abort();
    if (strcmp(s.backend, "cuda") && strcmp(s.backend, "cpu"))
        abort();
    if (!s.source || s.source_len == 0 || s.source_len > SERVE_SOURCE_MAX ||
        strlen(s.source) != s.source_len)
        abort();
    serve_submission_free(&s);
    return 0;
}
