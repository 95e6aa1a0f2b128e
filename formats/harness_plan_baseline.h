/*
 * harness_plan_baseline.h - the baseline-mode part of plan.json (HARNESS.md
 * section 7), private to harness_plan.c: it calls these when the document
 * (or the in-memory plan) is a baseline plan. Everyone else uses
 * harness_plan.h.
 */
#ifndef KILN_HARNESS_PLAN_BASELINE_H
#define KILN_HARNESS_PLAN_BASELINE_H

#include <jansson.h>

#include "harness_plan.h"

/* The rest of a baseline document once the shared top-level keys (version,
 * backend, warmups, iterations, adaptive, l2_flush) are in `p`: refuses the
 * candidate-only keys, reads "baseline" and the cases, validates. */
enum kiln_rc harness_plan_parse_baseline(json_t *root, struct harness_plan *p,
                                         struct kiln_err *err) KILN_NODISCARD;

/* The baseline-specific rules, after the shared ones. */
enum kiln_rc harness_plan_validate_baseline(const struct harness_plan *p,
                                            struct kiln_err *err) KILN_NODISCARD;

/* Serializes a validated baseline plan (*out malloc'd, NUL-terminated). */
enum kiln_rc harness_plan_write_baseline(const struct harness_plan *p, char **out,
                                         struct kiln_err *err) KILN_NODISCARD;

#endif
