/* failure_kind.c - see failure_kind.h. */
#include "failure_kind.h"

#include <string.h>

const char *failure_kind_name(enum failure_kind k)
{
    switch (k) {
    case FK_NONE:
        return "";
    case FK_MODULE:
        return "module";
    case FK_LAUNCH_FAILED:
        return "launch_failed";
    case FK_CUDA_ERROR:
        return "cuda_error";
    case FK_TAMPERING:
        return "tampering";
    case FK_OUT_OF_BOUNDS:
        return "out_of_bounds";
    case FK_OVERWRITES_INPUTS:
        return "overwrites_inputs";
    case FK_NONDETERMINISTIC:
        return "nondeterministic";
    case FK_UNAVAILABLE:
        return "unavailable";
    case FK_TIMEOUT:
        return "timeout";
    case FK_ALLOCATION_SLACK:
        return "allocation_slack";
    }
    return "";
}

bool failure_kind_parse(const char *s, enum failure_kind *out)
{
    for (int k = FK_MODULE; k <= FK_ALLOCATION_SLACK; k++)
        if (strcmp(s, failure_kind_name((enum failure_kind)k)) == 0) {
            *out = (enum failure_kind)k;
            return true;
        }
    return false;
}

bool failure_kind_device_lost(enum failure_kind k)
{
    return k == FK_CUDA_ERROR || k == FK_LAUNCH_FAILED || k == FK_MODULE;
}
