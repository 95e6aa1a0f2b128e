/*
 * json_nesting.h - a bound on a JSON text's nesting, checked before a
 * recursive parser (jansson) sees the text, so hostile input cannot drive
 * its recursion deep. Brackets inside strings do not count.
 */
#ifndef KILN_JSON_NESTING_H
#define KILN_JSON_NESTING_H

#include <stdbool.h>
#include <stddef.h>

/* True when no object or array in s[0..len) nests deeper than `max`
 * levels; otherwise false with *at (if not NULL) the offending byte. */
bool json_nesting_ok(const char *s, size_t len, int max, size_t *at);

#endif
