/* gpuarch.c - see gpuarch.h. */
#include "gpuarch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_version.h"

void gpuarch_name(int cc, char out[GPUARCH_NAME_MAX])
{
    snprintf(out, GPUARCH_NAME_MAX, "sm_%d", cc);
}

const char *gpuarch_or_default(const char *arch, char buf[GPUARCH_NAME_MAX])
{
    if (arch)
        return arch;
    gpuarch_name(GPUARCH_DEFAULT, buf);
    return buf;
}

bool gpuarch_runs_on(int target, int device)
{
    return target / 10 == device / 10 && target % 10 <= device % 10;
}

enum kiln_rc gpuarch_parse(const char *name, int *cc, struct kiln_err *err)
{
    size_t n = name ? strlen(name) : 0;
    bool digits = n >= 5 && n <= 6 && strncmp(name, "sm_", 3) == 0;
    for (size_t i = 3; digits && i < n; i++)
        digits = name[i] >= '0' && name[i] <= '9';
    int v = digits ? atoi(name + 3) : 0;
    if (!digits || v < 75)
        return kiln_fail(
            err, KILN_E_USAGE,
            "'%.32s' is not a GPU architecture kiln compiles for: expected sm_ and the "
            "compute capability from 7.5 on, e.g. sm_80 (A100) or sm_90 (H100, H200)",
            name ? name : "");
    *cc = v;
    return KILN_OK;
}

size_t gpuarch_supported(int *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = KILN_CUDA_ARCHS; *p && n < cap;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        out[n++] = (int)v;
        p = end;
    }
    return n;
}

void gpuarch_supported_text(char out[GPUARCH_LIST_CHARS])
{
    int a[GPUARCH_LIST_MAX];
    size_t n = gpuarch_supported(a, GPUARCH_LIST_MAX), len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < GPUARCH_LIST_CHARS; i++)
        len += (size_t)snprintf(out + len, GPUARCH_LIST_CHARS - len, "%ssm_%d", i ? " " : "", a[i]);
}

bool gpuarch_is_supported(int cc)
{
    int a[GPUARCH_LIST_MAX];
    size_t n = gpuarch_supported(a, GPUARCH_LIST_MAX);
    for (size_t i = 0; i < n; i++)
        if (a[i] == cc)
            return true;
    return false;
}

enum kiln_rc gpuarch_require(int cc, const char *what, struct kiln_err *err)
{
    if (gpuarch_is_supported(cc))
        return KILN_OK;
    char list[GPUARCH_LIST_CHARS];
    gpuarch_supported_text(list);
    if (!list[0])
        return kiln_fail(err, KILN_E_UNSUPPORTED,
                         "%s is sm_%d, but kiln was built without the CUDA toolkit: rebuild it "
                         "with CUDA (scripts/setup) to compile candidates for a GPU",
                         what, cc);
    return kiln_fail(err, KILN_E_UNSUPPORTED,
                     "%s is sm_%d, which the CUDA toolkit kiln was built with (CUDA %s) cannot "
                     "compile for; it supports %s (nvcc --list-gpu-code): use a GPU of those or "
                     "a toolkit that supports sm_%d",
                     what, cc, KILN_CUDA_VERSION, list, cc);
}

enum kiln_rc gpuarch_check(const char *name, const char *what, int *cc, struct kiln_err *err)
{
    enum kiln_rc rc = gpuarch_parse(name, cc, err);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "%s", what);
        return rc;
    }
    return gpuarch_require(*cc, what, err);
}

const char *gpuarch_compile_target(const char *arch, char out[GPUARCH_NAME_MAX])
{
    snprintf(out, GPUARCH_NAME_MAX, "%s%s", arch, strcmp(arch, "sm_90") == 0 ? "a" : "");
    return out;
}
