/*
 * fuzz_kbprobe.c - feeds each input to kbprobe_parse (the report of the
 * probe that ran an untrusted KernelBench problem in the sandbox). Checks
 * the documented invariants: a success has 1..KB_MAX_INPUTS inputs, at most
 * KBP_MAX_PARAMS parameters and an output, every name an identifier, every
 * parameter's source [A-Za-z0-9_.], every expression and constraint in the
 * charset of size expressions, 4 or 5 cases with dimensions >= 1 that each
 * dimension's expression gives; a failure says why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "kbprobe.h"

static bool only(const char *s, const char *charset)
{
    for (; *s; s++)
        if (!strchr(charset, *s))
            return false;
    return true;
}

#define IDENT   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
#define EXPRSET IDENT " +-*/%()=<>"

static void check_tensor(const struct kb_probe *pr, const struct kbp_tensor *t, size_t ti)
{
    if (!expr_ident_valid(t->name) || !only(t->source, IDENT ".") || t->ndims > KB_MAX_DIMS)
        abort();
    for (int d = 0; d < t->ndims; d++) {
        if (!only(t->shape[d], EXPRSET))
            abort();
        for (size_t c = 0; c < pr->ncases; c++)
            if (pr->cases[c].dims[ti][d] < 1)
                abort();
    }
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
        pr.ntensors != pr.ninputs + pr.nparams + 1 || pr.nsizes > KB_SIZES_MAX || pr.ncases < 4 ||
        pr.ncases > KBP_MAX_CASES || pr.nwhere > KBP_MAX_WHERE || pr.memory_per_byte < 1 ||
        !only(pr.flops, EXPRSET))
        abort();
    for (size_t i = 0; i < pr.ntensors; i++)
        check_tensor(&pr, &pr.t[i], i);
    for (size_t i = 0; i < pr.nsizes; i++)
        if (!expr_ident_valid(pr.size_names[i]) || (pr.ranges && pr.range[i][0] < 1))
            abort();
    for (size_t i = 0; i < pr.npins; i++)
        if (!expr_ident_valid(pr.pins[i].name) || pr.pins[i].size >= pr.nsizes)
            abort();
    for (size_t i = 0; i < pr.nwhere; i++)
        if (!only(pr.where[i], EXPRSET))
            abort();
    return 0;
}
