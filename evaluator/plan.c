/* plan.c - resolves a candidate's launch plan for one workload case. */
#include "plan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kiln_rc plan_check_names(const struct candidate *cand, const struct workload *w,
                              struct kiln_err *err)
{
    if (!(w->backends & cand->backend))
        return kiln_fail(err, KILN_E_REJECTED, "workload %s has no %s backend", w->name,
                         kiln_backend_name(cand->backend));
    for (size_t i = 0; i < cand->ntunables; i++) {
        const char *t = cand->tunables[i].name;
        if (workload_size_index(w, t) >= 0 || workload_arg_index(w, t) >= 0)
            return kiln_fail(err, KILN_E_REJECTED,
                             "line %d: tunable %s has the name of a workload %s; rename it",
                             cand->tunables[i].line, t,
                             workload_size_index(w, t) >= 0 ? "size" : "argument");
    }
    for (size_t l = 0; l < cand->nlaunches; l++) {
        const struct cand_launch *cl = &cand->launches[l];
        for (size_t a = 0; a < cl->nargs; a++)
            if (workload_arg_index(w, cl->args[a]) < 0)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "line %d: launch %zu (%s): args() names %s, which is not in "
                                 "the signature of workload %s",
                                 cl->line, l + 1, cl->kernel, cl->args[a], w->name);
    }
    return KILN_OK;
}

/* Evaluates one plan expression; failures name the launch, case and field. */
static enum kiln_rc eval_dim(const struct expr *e, const struct expr_var *vars, size_t nvars,
                             size_t l, const struct cand_launch *cl, const struct wl_case *c,
                             const char *field, int64_t *out, struct kiln_err *err)
{
    enum kiln_rc rc = expr_eval(e, vars, nvars, out, err);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "launch %zu (%s), case %s: %s", l + 1, cl->kernel, c->name, field);
        return rc == KILN_E_NOTFOUND ? KILN_E_REJECTED : rc;
    }
    return KILN_OK;
}

/* What resolving one launch for one case reads: shared by its steps. */
struct launch_ctx {
    const struct workload *w;
    const struct wl_case *c;
    const struct expr_var *vars;
    size_t nvars;
    const struct device_limits *lim;
    size_t l; /* the launch's index, for messages */
    const struct cand_launch *cl;
};

static const char *const axis[3] = {"x", "y", "z"};

/* Grid dimensions: each evaluated and held to the device's limits. */
static enum kiln_rc resolve_grid(const struct launch_ctx *x, struct plan_launch *pl,
                                 struct kiln_err *err)
{
    const struct cand_launch *cl = x->cl;
    enum kiln_rc rc;
    for (int d = 0; d < cl->ngrid; d++) {
        char field[16];
        snprintf(field, sizeof(field), "grid %s", axis[d]);
        if ((rc = eval_dim(cl->grid[d], x->vars, x->nvars, x->l, cl, x->c, field, &pl->grid[d],
                           err)) != KILN_OK)
            return rc;
        if (pl->grid[d] < 1 || pl->grid[d] > x->lim->max_grid[d])
            return kiln_fail(
                err, KILN_E_REJECTED,
                "launch %zu (%s), case %s: grid %s = %" PRId64 " is not in 1..%" PRId64, x->l + 1,
                cl->kernel, x->c->name, axis[d], pl->grid[d], x->lim->max_grid[d]);
    }
    return KILN_OK;
}

/* Block dimensions, each and their product held to the device's limits. */
static enum kiln_rc resolve_block(const struct launch_ctx *x, struct plan_launch *pl,
                                  struct kiln_err *err)
{
    const struct cand_launch *cl = x->cl;
    const struct device_limits *lim = x->lim;
    enum kiln_rc rc;
    int64_t threads = 1;
    for (int d = 0; d < cl->nblock; d++) {
        char field[16];
        snprintf(field, sizeof(field), "block %s", axis[d]);
        if ((rc = eval_dim(cl->block[d], x->vars, x->nvars, x->l, cl, x->c, field, &pl->block[d],
                           err)) != KILN_OK)
            return rc;
        if (pl->block[d] < 1 || pl->block[d] > lim->max_block_dim[d])
            return kiln_fail(
                err, KILN_E_REJECTED,
                "launch %zu (%s), case %s: block %s = %" PRId64 " is not in 1..%" PRId64, x->l + 1,
                cl->kernel, x->c->name, axis[d], pl->block[d], lim->max_block_dim[d]);
        threads *= pl->block[d]; /* each factor <= the dim limits: no overflow */
    }
    if (threads > lim->max_threads_per_block)
        return kiln_fail(err, KILN_E_REJECTED,
                         "launch %zu (%s), case %s: block %" PRId64
                         " threads exceeds the device limit %" PRId64,
                         x->l + 1, cl->kernel, x->c->name, threads, lim->max_threads_per_block);
    return KILN_OK;
}

/* Dynamic shared memory, when given, within the device's opt-in limit. */
static enum kiln_rc resolve_smem(const struct launch_ctx *x, struct plan_launch *pl,
                                 struct kiln_err *err)
{
    const struct cand_launch *cl = x->cl;
    const struct device_limits *lim = x->lim;
    if (!cl->smem)
        return KILN_OK;
    enum kiln_rc rc = eval_dim(cl->smem, x->vars, x->nvars, x->l, cl, x->c, "smem", &pl->smem, err);
    if (rc != KILN_OK)
        return rc;
    if (pl->smem < 0 || pl->smem > lim->max_smem_optin) {
        char on[96];
        devlimits_describe(lim, on, sizeof(on));
        return kiln_fail(err, KILN_E_REJECTED,
                         "launch %zu (%s), case %s: smem %" PRId64 " bytes is not in 0..%" PRId64
                         " (the device's opt-in limit; %s)",
                         x->l + 1, cl->kernel, x->c->name, pl->smem, lim->max_smem_optin, on);
    }
    return KILN_OK;
}

/* One scalar argument's value in this case, in its declared type. */
static enum kiln_rc resolve_scalar(const struct launch_ctx *x, int ai, struct plan_arg *pa,
                                   struct kiln_err *err)
{
    const struct wl_arg *wa = &x->w->args[ai];
    int64_t iv;
    enum kiln_rc rc;
    switch (wa->type) {
    case WL_SCALAR_INT32:
    case WL_SCALAR_INT64:
        if ((rc = workload_case_int_scalar(x->w, x->c, ai, &iv, err)) != KILN_OK) {
            kiln_err_prefix(err, "launch %zu (%s)", x->l + 1, x->cl->kernel);
            return rc;
        }
        if (wa->type == WL_SCALAR_INT32)
            pa->value.i32 = (int32_t)iv; /* range checked by workload_case_int_scalar */
        else
            pa->value.i64 = iv;
        break;
    case WL_SCALAR_FLOAT32:
        pa->value.f32 = (float)wa->fvalue;
        break;
    case WL_SCALAR_FLOAT64:
        pa->value.f64 = wa->fvalue;
        break;
    }
    return KILN_OK;
}

/* The launch's arguments, in args() order: tensors by index, scalars by value. */
static enum kiln_rc resolve_args(const struct launch_ctx *x, struct plan_launch *pl,
                                 struct kiln_err *err)
{
    const struct cand_launch *cl = x->cl;
    for (size_t a = 0; a < cl->nargs; a++) {
        int ai = workload_arg_index(x->w, cl->args[a]);
        const struct wl_arg *wa = &x->w->args[ai];
        struct plan_arg *pa = &pl->args[a];
        pa->arg = ai;
        pa->tensor_index = wa->tensor_index;
        if (wa->kind == WL_ARG_TENSOR) {
            pa->kind = PLAN_ARG_TENSOR;
            continue;
        }
        pa->kind = PLAN_ARG_SCALAR;
        pa->type = wa->type;
        enum kiln_rc rc = resolve_scalar(x, ai, pa, err);
        if (rc != KILN_OK)
            return rc;
    }
    pl->nargs = cl->nargs;
    return KILN_OK;
}

static enum kiln_rc resolve_launch(const struct candidate *cand, const struct workload *w,
                                   const struct wl_case *c, const struct expr_var *vars,
                                   size_t nvars, const struct device_limits *lim, size_t l,
                                   struct plan_launch *pl, struct kiln_err *err)
{
    const struct launch_ctx x = {
        .w = w, .c = c, .vars = vars, .nvars = nvars, .lim = lim, .l = l, .cl = &cand->launches[l]};
    enum kiln_rc rc;
    memset(pl, 0, sizeof(*pl));
    snprintf(pl->kernel, sizeof(pl->kernel), "%s", x.cl->kernel);
    for (int d = 0; d < 3; d++) {
        pl->grid[d] = 1;
        pl->block[d] = 1;
    }
    if ((rc = resolve_grid(&x, pl, err)) || (rc = resolve_block(&x, pl, err)) ||
        (rc = resolve_smem(&x, pl, err)) || (rc = resolve_args(&x, pl, err)))
        return rc;
    return KILN_OK;
}

enum kiln_rc plan_resolve(const struct candidate *cand, const struct workload *w,
                          const struct wl_case *c, const int64_t *values,
                          const struct device_limits *limits, struct resolved_plan *out,
                          struct kiln_err *err)
{
    enum kiln_rc rc = plan_check_names(cand, w, err);
    if (rc != KILN_OK)
        return rc;
    if (!(c->backends & cand->backend))
        return kiln_fail(err, KILN_E_USAGE, "case %s does not run on the %s backend", c->name,
                         kiln_backend_name(cand->backend));
    if ((rc = candidate_check_config(cand, values, limits, err)) != KILN_OK)
        return rc;
    /* Sizes then tunables; names are distinct (checked above). */
    struct expr_var vars[WL_MAX_SIZES + CAND_MAX_TUNABLES];
    workload_case_vars(w, c, vars);
    size_t nvars = w->nsizes;
    for (size_t i = 0; i < cand->ntunables; i++) {
        vars[nvars].name = cand->tunables[i].name;
        vars[nvars++].value = values[i];
    }
    out->nlaunches = 0;
    for (size_t l = 0; l < cand->nlaunches; l++) {
        rc = resolve_launch(cand, w, c, vars, nvars, limits, l, &out->launches[l], err);
        if (rc != KILN_OK)
            return rc;
        out->nlaunches++;
    }
    return KILN_OK;
}

enum kiln_rc plan_check_all(const struct candidate *cand, const struct workload *w,
                            const int64_t *values, const struct device_limits *limits,
                            struct kiln_err *err)
{
    struct resolved_plan *plan = malloc(sizeof(*plan));
    if (!plan)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory resolving a launch plan");
    enum kiln_rc rc = KILN_OK;
    for (size_t i = 0; rc == KILN_OK && i < w->ncases + w->nheld_out; i++) {
        const struct wl_case *c = i < w->ncases ? &w->cases[i] : &w->held_out[i - w->ncases];
        if (c->backends & cand->backend)
            rc = plan_resolve(cand, w, c, values, limits, plan, err);
    }
    free(plan);
    return rc;
}
