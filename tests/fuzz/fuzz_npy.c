/* libFuzzer target: npy_read on arbitrary bytes; accepted tensors must
 * survive a write/read round trip unchanged, and npy_view (no copy) must
 * accept exactly what npy_read accepts, with the same tensor. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tensor t, u, v;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc viewed = npy_view(data, size, 1 << 20, &v, &err);
    if (npy_read(data, size, 1 << 20, &t, &err) != KILN_OK) {
        if (viewed == KILN_OK)
            abort();
        return 0;
    }
    if (viewed != KILN_OK || v.dtype != t.dtype || v.ndim != t.ndim || v.count != t.count ||
        v.nbytes != t.nbytes || memcmp(v.shape, t.shape, sizeof(t.shape)) != 0 ||
        (t.nbytes && memcmp(v.data, t.data, t.nbytes) != 0))
        abort();
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
