/*
 * plan.h - resolving a candidate's launch plan for one case of a workload
 * against a device's limits: every expression evaluated with the case's
 * sizes and the chosen tunable values, every dimension and byte count
 * checked, every argument bound to a tensor or a typed scalar value.
 *
 * Errors name the launch, the case and the value: `launch 1 (saxpy), case
 * big: block 2048 threads exceeds the device limit 1024`. They are
 * KILN_E_REJECTED (the candidate is invalid: a compile_error verdict)
 * unless the inputs themselves are malformed.
 *
 * Lifecycle: nothing is allocated; `struct resolved_plan` is a plain value
 * the caller owns (about 20 KiB: keep it off small stacks).
 */
#ifndef KILN_PLAN_H
#define KILN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "candidate.h"
#include "devlimits.h"
#include "error.h"
#include "workload.h"

enum plan_arg_kind { PLAN_ARG_TENSOR, PLAN_ARG_SCALAR };

struct plan_arg {
    enum plan_arg_kind kind;
    int arg;                  /* index into workload.args */
    int tensor_index;         /* tensors: position among the tensors; -1 for scalars */
    enum wl_scalar_type type; /* scalars */
    union {
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
    } value; /* scalars: the member named by `type` */
};

struct plan_launch {
    char kernel[CAND_NAME_MAX + 1];
    int64_t grid[3];  /* all 1 for the CPU backend */
    int64_t block[3]; /* all 1 for the CPU backend */
    int64_t smem;     /* 0 for the CPU backend */
    struct plan_arg args[CAND_MAX_ARGS];
    size_t nargs;
};

struct resolved_plan {
    struct plan_launch launches[CAND_MAX_LAUNCHES];
    size_t nlaunches;
};

/* Checks the plan's names against the workload: each args name is a
 * signature argument, no tunable shares a name with a size or argument,
 * and the workload has the candidate's backend. Case-independent; called
 * by plan_resolve too. */
enum kiln_rc plan_check_names(const struct candidate *cand, const struct workload *w,
                              struct kiln_err *err) KILN_NODISCARD;

/* Resolves the plan for case `c` (a case of `w`) with tunable values
 * `values` (cand->ntunables of them, each in its set). */
enum kiln_rc plan_resolve(const struct candidate *cand, const struct workload *w,
                          const struct wl_case *c, const int64_t *values,
                          const struct device_limits *limits, struct resolved_plan *out,
                          struct kiln_err *err) KILN_NODISCARD;

/* Resolves the plan for every visible and held-out case that runs on the
 * candidate's backend (validation before anything runs). */
enum kiln_rc plan_check_all(const struct candidate *cand, const struct workload *w,
                            const int64_t *values, const struct device_limits *limits,
                            struct kiln_err *err) KILN_NODISCARD;

#endif
