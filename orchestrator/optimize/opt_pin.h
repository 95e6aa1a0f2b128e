/*
 * opt_pin.h - best.cu / best.c: a candidate source pinned to the
 * configuration that won, so that the file alone reproduces the result and
 * compiles on its own (`nvcc -cubin best.cu`, `cc -c best.c`), not only
 * through kiln's -D flags.
 */
#ifndef KILN_OPT_PIN_H
#define KILN_OPT_PIN_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/*
 * `src` (len bytes) with each tunable's directive default set to config[t]
 * (ncfg values in directive order; fewer: the rest keep their defaults)
 * and the same values written as `#define`s (each under `#ifndef`, so
 * kiln's -DNAME=value still decides when kiln compiles it) before the
 * first line that is not a comment: the directives stay what `kiln eval`
 * reads. A source whose directives do not parse, or that declares no
 * tunable, comes back unchanged. A malloc'd string; NULL: out of memory.
 */
char *opt_pin_config(const char *src, size_t len, enum kiln_backend b, const int64_t *config,
                     size_t ncfg);

#endif
