/*
 * fuzz_kbimport.c - feeds each input to kbimport_parse (a KernelBench
 * problem file, untrusted text). Checks the documented invariants: a
 * success has at most KB_MAX_INPUTS named inputs (none where get_inputs is
 * not plain enough to name them: the sandboxed probe learns them), each with
 * 1..KB_MAX_DIMS dimensions that evaluate over the constants to >= 1, and a
 * NUL-terminated copy of the source; a failure leaves nothing behind and
 * says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "kbimport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct kb_problem p;
    struct kiln_err err = {0};
    if (kbimport_parse((const char *)data, size, &p, &err) != KILN_OK) {
        if (!err.msg[0] || p.source || p.ninputs)
            abort();
        return 0;
    }
    if (p.ninputs > KB_MAX_INPUTS || !p.source || p.len != size ||
        memcmp(p.source, data, size) != 0 || p.source[size] != '\0')
        abort();
    struct expr_var vars[KB_MAX_CONSTS];
    for (size_t i = 0; i < p.nconsts; i++)
        vars[i] = (struct expr_var){p.consts[i].name, p.consts[i].value};
    for (size_t i = 0; i < p.ninputs; i++) {
        if (p.inputs[i].ndims < 1 || p.inputs[i].ndims > KB_MAX_DIMS)
            abort();
        for (int d = 0; d < p.inputs[i].ndims; d++) {
            int64_t v;
            if (expr_evaluate(p.inputs[i].dims[d], vars, p.nconsts, &v, &err) != KILN_OK || v < 1)
                abort();
        }
    }
    kbimport_free(&p);
    return 0;
}
