/* libFuzzer target: npy_read on arbitrary bytes; accepted tensors must
 * survive a write/read round trip unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tensor t, u;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (npy_read(data, size, 1 << 20, &t, &err) != KILN_OK)
        return 0;
    for (size_t i = 0; i < t.count; i++)
        (void)tensor_get_f64(&t, i);
    void *buf;
    size_t len;
    if (npy_write(&t, &buf, &len, &err) != KILN_OK)
        abort();
    if (npy_read(buf, len, 1 << 20, &u, &err) != KILN_OK || u.nbytes != t.nbytes ||
        u.dtype != t.dtype || u.ndim != t.ndim || memcmp(u.data, t.data, t.nbytes) != 0)
        abort();
    free(buf);
    tensor_free(&u);
    tensor_free(&t);
    return 0;
}
