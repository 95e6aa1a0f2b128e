/*
 * fuzz_kbprobe.c - feeds each input to kbprobe_parse (the report of the
 * probe that ran an untrusted KernelBench problem in the sandbox). Checks
 * the documented invariants: a success has 1..KB_MAX_INPUTS inputs, at most
 * KBP_MAX_PARAMS parameters and an output, every name an identifier and
 * every parameter's source [A-Za-z0-9_.]; a failure says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "kbprobe.h"

static bool safe_source(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.'))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct kb_problem p; /* no names from the text: in0, in1, ... */
    static struct kb_probe pr;
    struct kiln_err err = {0};
    if (kbprobe_parse((const char *)data, size, &p, &pr, &err) != KILN_OK) {
        if (!err.msg[0])
            abort();
        return 0;
    }
    if (pr.ninputs < 1 || pr.ninputs > KB_MAX_INPUTS || pr.nparams > KBP_MAX_PARAMS ||
        pr.ntensors != pr.ninputs + pr.nparams + 1 || pr.nconsts > KB_MAX_CONSTS)
        abort();
    for (size_t i = 0; i < pr.ntensors; i++) {
        if (!expr_ident_valid(pr.t[i].name) || !safe_source(pr.t[i].source) ||
            pr.t[i].ndims > KB_MAX_DIMS)
            abort();
        for (int c = 0; c < KBP_CASES; c++)
            for (int d = 0; d < pr.t[i].ndims; d++)
                if (pr.t[i].dims[c][d] < 1)
                    abort();
    }
    for (size_t i = 0; i < pr.nconsts; i++)
        if (!expr_ident_valid(pr.const_names[i]))
            abort();
    return 0;
}
