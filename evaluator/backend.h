/*
 * backend.h - the execution backends a workload or candidate targets. The
 * values are bits so a set of backends is a plain unsigned mask.
 */
#ifndef KILN_BACKEND_H
#define KILN_BACKEND_H

#include <string.h>

enum kiln_backend {
    KILN_BACKEND_CUDA = 1u << 0, /* .cu candidates, run by the GPU harness */
    KILN_BACKEND_CPU = 1u << 1,  /* .c candidates, run by the CPU harness */
};

#define KILN_BACKEND_ALL (KILN_BACKEND_CUDA | KILN_BACKEND_CPU)

/* "cuda" / "cpu"; NULL for anything else. */
static inline const char *kiln_backend_name(enum kiln_backend b)
{
    switch (b) {
    case KILN_BACKEND_CUDA:
        return "cuda";
    case KILN_BACKEND_CPU:
        return "cpu";
    }
    return NULL;
}

/* Inverse of kiln_backend_name; 0 when unknown. */
static inline unsigned kiln_backend_from_name(const char *name)
{
    if (strcmp(name, "cuda") == 0)
        return KILN_BACKEND_CUDA;
    if (strcmp(name, "cpu") == 0)
        return KILN_BACKEND_CPU;
    return 0;
}

#endif
