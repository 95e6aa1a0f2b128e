/* Fuzzes size expressions: compile arbitrary text, then evaluate it with
 * variables that sit on the overflow edges. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[EXPR_MAX_LEN + 64];
    if (size >= sizeof(text))
        size = sizeof(text) - 1;
    memcpy(text, data, size);
    text[size] = '\0';
    static const struct expr_var vars[] = {{"n", 1000003},    {"m", -1}, {"big", INT64_MAX},
                                           {"lo", INT64_MIN}, {"z", 0},  {"B", 256}};
    static const char *const names[] = {"n", "m", "big", "lo", "z", "B"};
    struct kiln_err err;
    kiln_err_clear(&err);
    struct expr *e;
    if (expr_compile(text, &e, &err) != KILN_OK)
        return 0;
    int64_t v;
    kiln_err_clear(&err);
    (void)expr_eval(e, vars, sizeof(vars) / sizeof(vars[0]), &v, &err);
    kiln_err_clear(&err);
    (void)expr_check_names(e, names, 6, &err);
    expr_free(e);
    return 0;
}
