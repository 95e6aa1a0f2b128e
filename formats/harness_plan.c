#include "harness_plan.h"

#include "json_strict.h"
#include "harness_plan_baseline.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const role_names[] = {"in", "out", "inout"};
static const char *const scalar_names[] = {"int32", "int64", "float32", "float64"};

void harness_plan_init(struct harness_plan *plan)
{
    memset(plan, 0, sizeof(*plan));
    plan->backend = HB_CUDA;
    plan->warmups = HARNESS_PLAN_DEFAULT_WARMUPS;
    plan->iterations = HARNESS_PLAN_DEFAULT_ITERATIONS;
    plan->max_iterations = HARNESS_PLAN_DEFAULT_ITERATIONS;
    plan->l2_flush = true;
    plan->reload = true;
    plan->guard_bytes = HARNESS_PLAN_DEFAULT_GUARD;
    plan->case_timeout_ms = HARNESS_PLAN_DEFAULT_CASE_TIMEOUT_MS;
}

void harness_plan_free(struct harness_plan *plan)
{
    if (!plan)
        return;
    free(plan->cases);
    memset(plan, 0, sizeof(*plan));
}

enum kiln_rc harness_plan_add_case(struct harness_plan *plan, struct harness_case **out,
                                   struct kiln_err *err)
{
    if (plan->ncases >= HARNESS_PLAN_MAX_CASES)
        return kiln_fail(err, KILN_E_LIMIT, "plan: more than %d cases", HARNESS_PLAN_MAX_CASES);
    struct harness_case *c = realloc(plan->cases, sizeof(*c) * (size_t)(plan->ncases + 1));
    if (!c)
        return kiln_fail(err, KILN_E_NOMEM, "plan: out of memory adding a case");
    plan->cases = c;
    memset(&c[plan->ncases], 0, sizeof(*c));
    *out = &c[plan->ncases++];
    return KILN_OK;
}

int harness_plan_find_arg(const struct harness_plan *plan, const char *name)
{
    for (int i = 0; i < plan->nargs; i++)
        if (strcmp(plan->args[i].name, name) == 0)
            return i;
    return -1;
}

uint64_t harness_case_tensor_bytes(const struct harness_plan *plan, const struct harness_case *c,
                                   int arg)
{
    uint64_t n = tensor_dtype_size(plan->args[arg].dtype);
    for (int d = 0; d < c->ndim[arg]; d++)
        n *= (uint64_t)c->shape[arg][d];
    return n;
}

/* ---- validation (shared by the parser and the writer) ---- */

static bool is_ident(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max)
        return false;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_'))
            return false;
    }
    return true;
}

bool harness_plan_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= HARNESS_PLAN_CASE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

static enum kiln_rc validate_case(const struct harness_plan *p, const struct harness_case *c,
                                  struct kiln_err *err)
{
    if (!harness_plan_name_ok(c->name))
        return kiln_fail(err, KILN_E_REJECTED, "case name \"%.40s\" is not [a-z0-9_]{1,32}",
                         c->name);
    uint64_t total = 0;
    for (int a = 0; a < p->nargs; a++) {
        if (!p->args[a].is_tensor)
            continue;
        if (c->ndim[a] < 0 || c->ndim[a] > TENSOR_MAX_DIMS)
            return kiln_fail(err, KILN_E_REJECTED, "case %s: tensor %s has %d dims (at most %d)",
                             c->name, p->args[a].name, c->ndim[a], TENSOR_MAX_DIMS);
        uint64_t bytes = tensor_dtype_size(p->args[a].dtype);
        for (int d = 0; d < c->ndim[a]; d++) {
            int64_t v = c->shape[a][d];
            if (v < 0 || v > HARNESS_PLAN_MAX_DIM)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "case %s: tensor %s dim %d is %lld (allowed 0 .. 2^40)", c->name,
                                 p->args[a].name, d, (long long)v);
            /* Each factor <= 2^40 and the running product capped at 4 GiB
             * before multiplying keeps this below 2^72... so check first. */
            if (v != 0 && bytes > HARNESS_PLAN_MAX_CASE_BYTES / (uint64_t)v)
                bytes = HARNESS_PLAN_MAX_CASE_BYTES + 1;
            else
                bytes *= (uint64_t)v;
        }
        total += bytes;
        if (total > HARNESS_PLAN_MAX_CASE_BYTES)
            return kiln_fail(err, KILN_E_LIMIT, "case %s: tensors exceed 4 GiB", c->name);
    }
    for (int a = 0; a < p->nargs; a++) {
        if (p->args[a].is_tensor)
            continue;
        const union harness_value *v = &c->value[a];
        if (p->args[a].type == HS_INT32 && (v->i < INT32_MIN || v->i > INT32_MAX))
            return kiln_fail(err, KILN_E_REJECTED, "case %s: scalar %s out of int32 range", c->name,
                             p->args[a].name);
        if ((p->args[a].type == HS_FLOAT32 || p->args[a].type == HS_FLOAT64) && !isfinite(v->f))
            return kiln_fail(err, KILN_E_REJECTED, "case %s: scalar %s is not finite", c->name,
                             p->args[a].name);
    }
    if (p->backend == HB_CUDA) {
        for (int l = 0; l < p->nlaunches; l++) {
            const struct harness_dims *d = &c->dims[l];
            if (d->grid[0] < 1 || d->grid[0] > INT32_MAX || d->grid[1] < 1 || d->grid[1] > 65535 ||
                d->grid[2] < 1 || d->grid[2] > 65535)
                return kiln_fail(err, KILN_E_REJECTED, "case %s: launch %d grid out of range",
                                 c->name, l);
            if (d->block[0] < 1 || d->block[0] > 1024 || d->block[1] < 1 || d->block[1] > 1024 ||
                d->block[2] < 1 || d->block[2] > 64)
                return kiln_fail(err, KILN_E_REJECTED, "case %s: launch %d block out of range",
                                 c->name, l);
        }
    }
    int min_sets = c->timed ? HARNESS_PLAN_MIN_TIMED_SETS : 1;
    if (c->nsets < min_sets || c->nsets > HARNESS_PLAN_MAX_SETS)
        return kiln_fail(err, KILN_E_REJECTED, "case %s: %d input sets (need %d .. %d)", c->name,
                         c->nsets, min_sets, HARNESS_PLAN_MAX_SETS);
    for (int s = 0; s < c->nsets; s++) {
        if (!harness_plan_name_ok(c->sets[s]))
            return kiln_fail(err, KILN_E_REJECTED,
                             "case %s: set name \"%.40s\" is not [a-z0-9_]{1,32}", c->name,
                             c->sets[s]);
        for (int t = 0; t < s; t++)
            if (strcmp(c->sets[s], c->sets[t]) == 0)
                return kiln_fail(err, KILN_E_REJECTED, "case %s: set %s listed twice", c->name,
                                 c->sets[s]);
    }
    return KILN_OK;
}

/* Backend and run counts, adaptive sampling included. */
static enum kiln_rc validate_runs(const struct harness_plan *p, struct kiln_err *err)
{
    if (p->backend != HB_CUDA && p->backend != HB_CPU)
        return kiln_fail(err, KILN_E_REJECTED, "plan: unknown backend");
    if (p->warmups < 0 || p->warmups > HARNESS_PLAN_MAX_RUNS)
        return kiln_fail(err, KILN_E_REJECTED, "plan: warmups must be 0 .. %d",
                         HARNESS_PLAN_MAX_RUNS);
    if (p->iterations < 1 || p->iterations > HARNESS_PLAN_MAX_RUNS)
        return kiln_fail(err, KILN_E_REJECTED, "plan: iterations must be 1 .. %d",
                         HARNESS_PLAN_MAX_RUNS);
    if (p->adaptive) {
        if (!(p->target_rse > 0 && p->target_rse < 1))
            return kiln_fail(err, KILN_E_REJECTED, "plan: adaptive.target_rse must be in (0, 1)");
        if (!(p->budget_ms > 0 && p->budget_ms <= 3.6e6))
            return kiln_fail(err, KILN_E_REJECTED,
                             "plan: adaptive.budget_ms must be in (0, 3600000]");
        if (p->max_iterations < p->iterations || p->max_iterations > HARNESS_PLAN_MAX_RUNS)
            return kiln_fail(err, KILN_E_REJECTED,
                             "plan: adaptive.max_iterations must be iterations .. %d",
                             HARNESS_PLAN_MAX_RUNS);
    }
    return KILN_OK;
}

/* Guard bytes and the signature: unique identifiers, valid kinds, and at
 * least one output. */
static enum kiln_rc validate_signature(const struct harness_plan *p, struct kiln_err *err)
{
    if (p->guard_bytes < 256 || p->guard_bytes > HARNESS_PLAN_MAX_GUARD || p->guard_bytes % 256)
        return kiln_fail(err, KILN_E_REJECTED,
                         "plan: guard_bytes must be a multiple of 256 in 256 .. 16 MiB");
    if (p->nargs < 1 || p->nargs > HARNESS_PLAN_MAX_ARGS)
        return kiln_fail(err, KILN_E_REJECTED, "plan: signature must have 1 .. %d entries",
                         HARNESS_PLAN_MAX_ARGS);
    int nout = 0;
    for (int a = 0; a < p->nargs; a++) {
        const struct harness_arg *g = &p->args[a];
        if (!is_ident(g->name, HARNESS_PLAN_NAME_MAX))
            return kiln_fail(err, KILN_E_REJECTED,
                             "plan: argument name \"%.64s\" is not an identifier", g->name);
        for (int b = 0; b < a; b++)
            if (strcmp(g->name, p->args[b].name) == 0)
                return kiln_fail(err, KILN_E_REJECTED, "plan: argument %s listed twice", g->name);
        if (g->is_tensor) {
            if (tensor_dtype_size(g->dtype) == 0)
                return kiln_fail(err, KILN_E_REJECTED, "plan: tensor %s has no valid dtype",
                                 g->name);
            if (g->role != HR_IN && g->role != HR_OUT && g->role != HR_INOUT)
                return kiln_fail(err, KILN_E_REJECTED, "plan: tensor %s has no valid role",
                                 g->name);
            nout += g->role != HR_IN;
        } else if (g->type != HS_INT32 && g->type != HS_INT64 && g->type != HS_FLOAT32 &&
                   g->type != HS_FLOAT64) {
            return kiln_fail(err, KILN_E_REJECTED, "plan: scalar %s has no valid type", g->name);
        }
    }
    if (nout == 0)
        return kiln_fail(err, KILN_E_REJECTED, "plan: no tensor has role out or inout");
    return KILN_OK;
}

static enum kiln_rc validate_launches(const struct harness_plan *p, struct kiln_err *err)
{
    if (p->nlaunches < 1 || p->nlaunches > HARNESS_PLAN_MAX_LAUNCH)
        return kiln_fail(err, KILN_E_REJECTED, "plan: launches must have 1 .. %d entries",
                         HARNESS_PLAN_MAX_LAUNCH);
    for (int l = 0; l < p->nlaunches; l++) {
        const struct harness_launch *L = &p->launches[l];
        /* kiln_ names are the trampoline's and the harness kernels'. */
        if (!is_ident(L->kernel, HARNESS_PLAN_NAME_MAX) || strncmp(L->kernel, "kiln_", 5) == 0)
            return kiln_fail(err, KILN_E_REJECTED,
                             "plan: launch %d kernel \"%.64s\" is not a non-kiln_ identifier", l,
                             L->kernel);
        if (L->nargs < 0 || L->nargs > HARNESS_PLAN_MAX_ARGS)
            return kiln_fail(err, KILN_E_REJECTED, "plan: launch %d has too many args", l);
        for (int i = 0; i < L->nargs; i++)
            if (L->args[i] < 0 || L->args[i] >= p->nargs)
                return kiln_fail(err, KILN_E_REJECTED, "plan: launch %d arg %d unknown", l, i);
    }
    return KILN_OK;
}

/* Every case, and no name twice. */
static enum kiln_rc validate_cases(const struct harness_plan *p, struct kiln_err *err)
{
    if (p->ncases < 1 || p->ncases > HARNESS_PLAN_MAX_CASES)
        return kiln_fail(err, KILN_E_REJECTED, "plan: cases must have 1 .. %d entries",
                         HARNESS_PLAN_MAX_CASES);
    for (int i = 0; i < p->ncases; i++) {
        enum kiln_rc rc = validate_case(p, &p->cases[i], err);
        if (rc != KILN_OK)
            return rc;
        for (int j = 0; j < i; j++)
            if (strcmp(p->cases[i].name, p->cases[j].name) == 0)
                return kiln_fail(err, KILN_E_REJECTED, "plan: case %s listed twice",
                                 p->cases[i].name);
    }
    return KILN_OK;
}

enum kiln_rc harness_plan_validate(const struct harness_plan *p, struct kiln_err *err)
{
    enum kiln_rc rc = validate_runs(p, err);
    if (rc != KILN_OK)
        return rc;
    if (p->baseline != HBL_NONE) /* a vendor operation per case: HARNESS.md section 7 */
        return harness_plan_validate_baseline(p, err);
    if ((rc = validate_signature(p, err)) || (rc = validate_launches(p, err)) ||
        (rc = validate_cases(p, err)))
        return rc;
    return KILN_OK;
}

/* ---- parser ---- */

/* Fails on any key of `obj` not in the NULL-terminated `allowed`. */
static enum kiln_rc check_keys(json_t *obj, const char *what, const char *const *allowed,
                               struct kiln_err *err)
{
    char where[96];
    snprintf(where, sizeof(where), "plan: %s", what);
    return json_strict_keys(obj, where, allowed, NULL, err);
}

static enum kiln_rc get_string(json_t *obj, const char *key, const char *what, char *dst,
                               size_t cap, struct kiln_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return kiln_fail(err, KILN_E_PARSE, "plan: %s: \"%s\" must be a string", what, key);
    if (json_string_length(v) >= cap || strlen(json_string_value(v)) != json_string_length(v))
        return kiln_fail(err, KILN_E_REJECTED, "plan: %s: \"%s\" longer than %zu bytes", what, key,
                         cap - 1);
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return KILN_OK;
}

/* Optional integer in [lo, hi]; keeps *dst when absent. */
static enum kiln_rc get_int(json_t *obj, const char *key, const char *what, bool required,
                            int64_t lo, int64_t hi, int64_t *dst, struct kiln_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return kiln_fail(err, KILN_E_PARSE, "plan: %s: \"%s\" is required", what, key);
        return KILN_OK;
    }
    if (!json_is_integer(v))
        return kiln_fail(err, KILN_E_PARSE, "plan: %s: \"%s\" must be an integer", what, key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return kiln_fail(err, KILN_E_REJECTED, "plan: %s: \"%s\" = %lld out of %lld .. %lld", what,
                         key, (long long)x, (long long)lo, (long long)hi);
    *dst = x;
    return KILN_OK;
}

static enum kiln_rc get_bool(json_t *obj, const char *key, const char *what, bool *dst,
                             struct kiln_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return KILN_OK;
    if (!json_is_boolean(v))
        return kiln_fail(err, KILN_E_PARSE, "plan: %s: \"%s\" must be a boolean", what, key);
    *dst = json_is_true(v);
    return KILN_OK;
}

static int name_index(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

static enum kiln_rc parse_signature(json_t *arr, struct harness_plan *p, struct kiln_err *err)
{
    static const char *const keys[] = {"name", "kind", "dtype", "role", "type", NULL};
    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > HARNESS_PLAN_MAX_ARGS)
        return kiln_fail(err, KILN_E_PARSE, "plan: \"signature\" must be an array of 1 .. %d",
                         HARNESS_PLAN_MAX_ARGS);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        struct harness_arg *g = &p->args[i];
        char kind[16], buf[16];
        enum kiln_rc rc;
        if (!json_is_object(e))
            return kiln_fail(err, KILN_E_PARSE, "plan: signature[%zu] must be an object", i);
        if ((rc = check_keys(e, "signature entry", keys, err)) != KILN_OK ||
            (rc = get_string(e, "name", "signature entry", g->name, sizeof(g->name), err)) ||
            (rc = get_string(e, "kind", g->name, kind, sizeof(kind), err)))
            return rc;
        if (!is_ident(g->name, sizeof(g->name)))
            return kiln_fail(err, KILN_E_REJECTED,
                             "plan: argument name \"%.64s\" is not an identifier", g->name);
        if (harness_plan_find_arg(p, g->name) >= 0) /* before launches resolve names */
            return kiln_fail(err, KILN_E_REJECTED, "plan: argument %s listed twice", g->name);
        if (strcmp(kind, "tensor") == 0) {
            g->is_tensor = true;
            if (json_object_get(e, "type"))
                return kiln_fail(err, KILN_E_PARSE, "plan: tensor %s: unexpected \"type\"",
                                 g->name);
            if ((rc = get_string(e, "dtype", g->name, buf, sizeof(buf), err)))
                return rc;
            g->dtype = tensor_dtype_from_name(buf);
            if (g->dtype == DT_INVALID)
                return kiln_fail(err, KILN_E_REJECTED, "plan: tensor %s: unknown dtype \"%s\"",
                                 g->name, buf);
            if ((rc = get_string(e, "role", g->name, buf, sizeof(buf), err)))
                return rc;
            int r = name_index(buf, role_names, 3);
            if (r < 0)
                return kiln_fail(err, KILN_E_REJECTED, "plan: tensor %s: unknown role \"%s\"",
                                 g->name, buf);
            g->role = (enum harness_role)r;
        } else if (strcmp(kind, "scalar") == 0) {
            if (json_object_get(e, "dtype") || json_object_get(e, "role"))
                return kiln_fail(err, KILN_E_PARSE,
                                 "plan: scalar %s: unexpected \"dtype\"/\"role\"", g->name);
            if ((rc = get_string(e, "type", g->name, buf, sizeof(buf), err)))
                return rc;
            int t = name_index(buf, scalar_names, 4);
            if (t < 0)
                return kiln_fail(err, KILN_E_REJECTED, "plan: scalar %s: unknown type \"%s\"",
                                 g->name, buf);
            g->type = (enum harness_scalar)t;
        } else {
            return kiln_fail(err, KILN_E_REJECTED,
                             "plan: %s: kind must be \"tensor\" or \"scalar\"", g->name);
        }
        p->nargs = (int)i + 1;
    }
    return KILN_OK;
}

static enum kiln_rc parse_launches(json_t *arr, struct harness_plan *p, struct kiln_err *err)
{
    static const char *const keys[] = {"kernel", "args", NULL};
    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > HARNESS_PLAN_MAX_LAUNCH)
        return kiln_fail(err, KILN_E_PARSE, "plan: \"launches\" must be an array of 1 .. %d",
                         HARNESS_PLAN_MAX_LAUNCH);
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        struct harness_launch *L = &p->launches[i];
        enum kiln_rc rc;
        if (!json_is_object(e))
            return kiln_fail(err, KILN_E_PARSE, "plan: launches[%zu] must be an object", i);
        if ((rc = check_keys(e, "launch", keys, err)) ||
            (rc = get_string(e, "kernel", "launch", L->kernel, sizeof(L->kernel), err)))
            return rc;
        json_t *args = json_object_get(e, "args");
        if (!json_is_array(args) || json_array_size(args) > HARNESS_PLAN_MAX_ARGS)
            return kiln_fail(err, KILN_E_PARSE,
                             "plan: launch %s: \"args\" must be an array of at most %d", L->kernel,
                             HARNESS_PLAN_MAX_ARGS);
        size_t j;
        json_t *a;
        json_array_foreach(args, j, a)
        {
            int idx = json_is_string(a) ? harness_plan_find_arg(p, json_string_value(a)) : -1;
            if (idx < 0)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "plan: launch %s: args[%zu] is not a signature name", L->kernel,
                                 j);
            L->args[j] = idx;
        }
        L->nargs = (int)json_array_size(args);
        p->nlaunches = (int)i + 1;
    }
    return KILN_OK;
}

static enum kiln_rc parse_u32_triple(json_t *v, const char *what, uint32_t out[3],
                                     struct kiln_err *err)
{
    if (!json_is_array(v) || json_array_size(v) != 3)
        return kiln_fail(err, KILN_E_PARSE, "plan: %s must be an array of 3 integers", what);
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 ||
            json_integer_value(x) > (json_int_t)UINT32_MAX)
            return kiln_fail(err, KILN_E_REJECTED, "plan: %s[%zu] must be an integer 0 .. 2^32-1",
                             what, i);
        out[i] = (uint32_t)json_integer_value(x);
    }
    return KILN_OK;
}

/* One tensor's shape in a case: an array of at most TENSOR_MAX_DIMS
 * integers (their ranges are validate_case's). */
static enum kiln_rc parse_case_shape(json_t *shapes, const struct harness_arg *g, int a,
                                     struct harness_case *c, struct kiln_err *err)
{
    json_t *s = json_object_get(shapes, g->name);
    if (!json_is_array(s) || json_array_size(s) > TENSOR_MAX_DIMS)
        return kiln_fail(err, KILN_E_PARSE,
                         "plan: case %s: shape of %s must be an array of at most %d", c->name,
                         g->name, TENSOR_MAX_DIMS);
    c->ndim[a] = (int)json_array_size(s);
    for (int d = 0; d < c->ndim[a]; d++) {
        json_t *x = json_array_get(s, (size_t)d);
        if (!json_is_integer(x))
            return kiln_fail(err, KILN_E_PARSE, "plan: case %s: shape of %s must hold integers",
                             c->name, g->name);
        c->shape[a][d] = json_integer_value(x);
    }
    return KILN_OK;
}

/* One scalar's value in a case; a float32 is rounded to float here. */
static enum kiln_rc parse_case_scalar(json_t *scalars, const struct harness_arg *g, int a,
                                      struct harness_case *c, struct kiln_err *err)
{
    json_t *v = json_object_get(scalars, g->name);
    if (g->type == HS_INT32 || g->type == HS_INT64) {
        if (!json_is_integer(v))
            return kiln_fail(err, KILN_E_PARSE, "plan: case %s: scalar %s must be an integer",
                             c->name, g->name);
        c->value[a].i = json_integer_value(v);
        return KILN_OK;
    }
    if (!json_is_number(v))
        return kiln_fail(err, KILN_E_PARSE, "plan: case %s: scalar %s must be a number", c->name,
                         g->name);
    double x = json_number_value(v);
    if (g->type == HS_FLOAT32) {
        if (!(fabs(x) <= 3.4028234663852886e38))
            return kiln_fail(err, KILN_E_REJECTED, "plan: case %s: scalar %s out of float32 range",
                             c->name, g->name);
        x = (double)(float)x;
    }
    c->value[a].f = x;
    return KILN_OK;
}

/* "shapes" and "scalars": one entry per signature argument of that kind,
 * and no other key. */
static enum kiln_rc parse_case_args(json_t *e, const struct harness_plan *p, struct harness_case *c,
                                    struct kiln_err *err)
{
    json_t *shapes = json_object_get(e, "shapes");
    json_t *scalars = json_object_get(e, "scalars");
    if (!json_is_object(shapes) || !json_is_object(scalars))
        return kiln_fail(err, KILN_E_PARSE,
                         "plan: case %s: \"shapes\" and \"scalars\" must be objects", c->name);
    size_t ntensors = 0;
    for (int a = 0; a < p->nargs; a++) {
        const struct harness_arg *g = &p->args[a];
        enum kiln_rc rc;
        ntensors += g->is_tensor;
        if ((rc = g->is_tensor ? parse_case_shape(shapes, g, a, c, err)
                               : parse_case_scalar(scalars, g, a, c, err)))
            return rc;
    }
    /* Every key must name an argument of the right kind: the counts match
     * only when no extra or misplaced key is present. */
    if (json_object_size(shapes) != ntensors ||
        json_object_size(scalars) != (size_t)p->nargs - ntensors)
        return kiln_fail(err, KILN_E_REJECTED,
                         "plan: case %s: \"shapes\"/\"scalars\" name unknown arguments", c->name);
    return KILN_OK;
}

/* "dims": absent for cpu, one {grid, block, smem} per launch for cuda. */
static enum kiln_rc parse_case_dims(json_t *e, const struct harness_plan *p, struct harness_case *c,
                                    struct kiln_err *err)
{
    static const char *const dkeys[] = {"grid", "block", "smem", NULL};
    json_t *dims = json_object_get(e, "dims");
    if (p->backend == HB_CPU) {
        if (dims)
            return kiln_fail(err, KILN_E_PARSE, "plan: case %s: \"dims\" is cuda-only", c->name);
        return KILN_OK;
    }
    if (!json_is_array(dims) || json_array_size(dims) != (size_t)p->nlaunches)
        return kiln_fail(err, KILN_E_PARSE,
                         "plan: case %s: \"dims\" must have one entry per launch", c->name);
    for (int l = 0; l < p->nlaunches; l++) {
        json_t *d = json_array_get(dims, (size_t)l);
        int64_t smem = 0;
        enum kiln_rc rc;
        if (!json_is_object(d))
            return kiln_fail(err, KILN_E_PARSE, "plan: case %s: dims[%d] must be an object",
                             c->name, l);
        if ((rc = check_keys(d, "dims", dkeys, err)) ||
            (rc = parse_u32_triple(json_object_get(d, "grid"), "grid", c->dims[l].grid, err)) ||
            (rc = parse_u32_triple(json_object_get(d, "block"), "block", c->dims[l].block, err)) ||
            (rc = get_int(d, "smem", "dims", true, 0, UINT32_MAX, &smem, err)))
            return rc;
        c->dims[l].smem = (uint32_t)smem;
    }
    return KILN_OK;
}

/* "sets": names of input sets, each copied whole (validate_case checks them). */
static enum kiln_rc parse_case_sets(json_t *e, struct harness_case *c, struct kiln_err *err)
{
    json_t *sets = json_object_get(e, "sets");
    if (!json_is_array(sets) || json_array_size(sets) > HARNESS_PLAN_MAX_SETS)
        return kiln_fail(err, KILN_E_PARSE,
                         "plan: case %s: \"sets\" must be an array of at most %d", c->name,
                         HARNESS_PLAN_MAX_SETS);
    for (size_t s = 0; s < json_array_size(sets); s++) {
        json_t *x = json_array_get(sets, s);
        if (!json_is_string(x) || json_string_length(x) >= HARNESS_PLAN_CASE_MAX)
            return kiln_fail(err, KILN_E_PARSE, "plan: case %s: set names must be short strings",
                             c->name);
        memcpy(c->sets[s], json_string_value(x), json_string_length(x) + 1);
    }
    c->nsets = (int)json_array_size(sets);
    return KILN_OK;
}

static enum kiln_rc parse_case(json_t *e, struct harness_plan *p, struct harness_case *c,
                               struct kiln_err *err)
{
    static const char *const keys[] = {"name", "timed", "shapes", "scalars", "dims", "sets", NULL};
    enum kiln_rc rc;
    if (!json_is_object(e))
        return kiln_fail(err, KILN_E_PARSE, "plan: each case must be an object");
    if ((rc = check_keys(e, "case", keys, err)) ||
        (rc = get_string(e, "name", "case", c->name, sizeof(c->name), err)) ||
        (rc = get_bool(e, "timed", c->name, &c->timed, err)) ||
        (rc = parse_case_args(e, p, c, err)) || (rc = parse_case_dims(e, p, c, err)) ||
        (rc = parse_case_sets(e, c, err)))
        return rc;
    return KILN_OK;
}

static enum kiln_rc parse_root(json_t *root, struct harness_plan *p, struct kiln_err *err)
{
    static const char *const keys[] = {"kiln_plan",       "backend",     "warmups", "iterations",
                                       "adaptive",        "l2_flush",    "reload",  "guard_bytes",
                                       "signature",       "launches",    "cases",   "baseline",
                                       "case_timeout_ms", "deadline_ms", NULL};
    enum kiln_rc rc;
    int64_t version = 0, warmups = p->warmups, iterations = p->iterations;
    int64_t guard = (int64_t)p->guard_bytes;
    char backend[8];
    if (!json_is_object(root))
        return kiln_fail(err, KILN_E_PARSE, "plan: the document must be an object");
    if ((rc = check_keys(root, "plan", keys, err)) ||
        (rc = get_int(root, "kiln_plan", "plan", true, HARNESS_PLAN_VERSION, HARNESS_PLAN_VERSION,
                      &version, err)) ||
        (rc = get_string(root, "backend", "plan", backend, sizeof(backend), err)) ||
        (rc = get_int(root, "warmups", "plan", false, 0, HARNESS_PLAN_MAX_RUNS, &warmups, err)) ||
        (rc = get_int(root, "iterations", "plan", false, 1, HARNESS_PLAN_MAX_RUNS, &iterations,
                      err)) ||
        (rc = get_int(root, "guard_bytes", "plan", false, 256, (int64_t)HARNESS_PLAN_MAX_GUARD,
                      &guard, err)) ||
        (rc = get_bool(root, "l2_flush", "plan", &p->l2_flush, err)) ||
        (rc = get_bool(root, "reload", "plan", &p->reload, err)) ||
        (rc = get_int(root, "case_timeout_ms", "plan", false, 100, HARNESS_PLAN_MAX_TIMEOUT_MS,
                      &p->case_timeout_ms, err)) ||
        (rc = get_int(root, "deadline_ms", "plan", false, 0, HARNESS_PLAN_MAX_TIMEOUT_MS,
                      &p->deadline_ms, err)))
        return rc;
    if (p->deadline_ms > 0 && p->deadline_ms < 100)
        return kiln_fail(err, KILN_E_REJECTED, "plan: deadline_ms must be 0 (none) or >= 100");
    if (strcmp(backend, "cuda") == 0)
        p->backend = HB_CUDA;
    else if (strcmp(backend, "cpu") == 0)
        p->backend = HB_CPU;
    else
        return kiln_fail(err, KILN_E_REJECTED, "plan: backend must be \"cuda\" or \"cpu\"");
    p->warmups = (int)warmups;
    p->iterations = (int)iterations;
    p->max_iterations = p->iterations;
    p->guard_bytes = (uint64_t)guard;

    json_t *ad = json_object_get(root, "adaptive");
    if (ad && !json_is_null(ad)) {
        static const char *const akeys[] = {"target_rse", "budget_ms", "max_iterations", NULL};
        int64_t maxit = 0;
        json_t *rse = json_object_get(ad, "target_rse");
        json_t *bud = json_object_get(ad, "budget_ms");
        if (!json_is_object(ad) || (rc = check_keys(ad, "adaptive", akeys, err)))
            return rc ? rc : kiln_fail(err, KILN_E_PARSE, "plan: \"adaptive\" must be an object");
        if (!json_is_number(rse) || !json_is_number(bud))
            return kiln_fail(err, KILN_E_PARSE,
                             "plan: adaptive: target_rse and budget_ms must be numbers");
        if ((rc = get_int(ad, "max_iterations", "adaptive", true, 1, HARNESS_PLAN_MAX_RUNS, &maxit,
                          err)))
            return rc;
        p->adaptive = true;
        p->target_rse = json_number_value(rse);
        p->budget_ms = json_number_value(bud);
        p->max_iterations = (int)maxit;
    }

    if (json_object_get(root, "baseline")) /* HARNESS.md section 7 */
        return harness_plan_parse_baseline(root, p, err);
    if ((rc = parse_signature(json_object_get(root, "signature"), p, err)) ||
        (rc = parse_launches(json_object_get(root, "launches"), p, err)))
        return rc;
    json_t *cases = json_object_get(root, "cases");
    if (!json_is_array(cases) || json_array_size(cases) < 1 ||
        json_array_size(cases) > HARNESS_PLAN_MAX_CASES)
        return kiln_fail(err, KILN_E_PARSE, "plan: \"cases\" must be an array of 1 .. %d",
                         HARNESS_PLAN_MAX_CASES);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        struct harness_case *c;
        if ((rc = harness_plan_add_case(p, &c, err)) ||
            (rc = parse_case(json_array_get(cases, i), p, c, err)))
            return rc;
    }
    return harness_plan_validate(p, err);
}

enum kiln_rc harness_plan_parse(const void *buf, size_t len, struct harness_plan *plan,
                                struct kiln_err *err)
{
    harness_plan_init(plan);
    static const struct json_strict_rules rules = {.max_bytes = HARNESS_PLAN_MAX_BYTES,
                                                   .max_depth = HARNESS_PLAN_MAX_DEPTH};
    json_t *root;
    enum kiln_rc rc = json_strict_parse("plan", buf, len, &rules, &root, err);
    if (rc)
        return rc;
    rc = parse_root(root, plan, err);
    json_decref(root);
    if (rc != KILN_OK)
        harness_plan_free(plan);
    return rc;
}

enum kiln_rc harness_plan_read_file(const char *path, struct harness_plan *plan,
                                    struct kiln_err *err)
{
    harness_plan_init(plan);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "plan: opening %s", path);
    char *buf = malloc(HARNESS_PLAN_MAX_BYTES + 1);
    if (!buf) {
        close(fd);
        return kiln_fail(err, KILN_E_NOMEM, "plan: out of memory reading %s", path);
    }
    size_t len = 0;
    enum kiln_rc rc = KILN_OK;
    for (;;) {
        ssize_t n = read(fd, buf + len, HARNESS_PLAN_MAX_BYTES + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = kiln_fail_errno(err, KILN_E_IO, "plan: reading %s", path);
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > HARNESS_PLAN_MAX_BYTES) {
            rc = kiln_fail(err, KILN_E_LIMIT, "plan: %s is larger than %u bytes", path,
                           HARNESS_PLAN_MAX_BYTES);
            break;
        }
    }
    close(fd);
    if (rc == KILN_OK)
        rc = harness_plan_parse(buf, len, plan, err);
    free(buf);
    return rc;
}

/* ---- writer ---- */

/* json_object_set_new and friends take ownership even on failure, so the
 * writer only has to remember that something failed. */
static void put(json_t *obj, const char *key, json_t *v, bool *ok)
{
    if (!v || json_object_set_new(obj, key, v) != 0)
        *ok = false;
}

static void push(json_t *arr, json_t *v, bool *ok)
{
    if (!v || json_array_append_new(arr, v) != 0)
        *ok = false;
}

static json_t *u32_triple(const uint32_t v[3])
{
    return json_pack("[III]", (json_int_t)v[0], (json_int_t)v[1], (json_int_t)v[2]);
}

static json_t *case_to_json(const struct harness_plan *p, const struct harness_case *c, bool *ok)
{
    json_t *o = json_object(), *shapes = json_object(), *scalars = json_object();
    json_t *sets = json_array();
    if (!o || !shapes || !scalars || !sets) {
        json_decref(o);
        json_decref(shapes);
        json_decref(scalars);
        json_decref(sets);
        *ok = false;
        return NULL;
    }
    put(o, "name", json_string(c->name), ok);
    put(o, "timed", json_boolean(c->timed), ok);
    for (int a = 0; a < p->nargs; a++) {
        const struct harness_arg *g = &p->args[a];
        if (g->is_tensor) {
            json_t *s = json_array();
            for (int d = 0; s && d < c->ndim[a]; d++)
                push(s, json_integer(c->shape[a][d]), ok);
            put(shapes, g->name, s, ok);
        } else if (g->type == HS_INT32 || g->type == HS_INT64) {
            put(scalars, g->name, json_integer(c->value[a].i), ok);
        } else {
            put(scalars, g->name, json_real(c->value[a].f), ok);
        }
    }
    put(o, "shapes", shapes, ok);
    put(o, "scalars", scalars, ok);
    if (p->backend == HB_CUDA) {
        json_t *dims = json_array();
        for (int l = 0; dims && l < p->nlaunches; l++)
            push(dims,
                 json_pack("{s:o,s:o,s:I}", "grid", u32_triple(c->dims[l].grid), "block",
                           u32_triple(c->dims[l].block), "smem", (json_int_t)c->dims[l].smem),
                 ok);
        put(o, "dims", dims, ok);
    }
    for (int s = 0; s < c->nsets; s++)
        push(sets, json_string(c->sets[s]), ok);
    put(o, "sets", sets, ok);
    return o;
}

enum kiln_rc harness_plan_write(const struct harness_plan *p, char **out, struct kiln_err *err)
{
    *out = NULL;
    enum kiln_rc rc = harness_plan_validate(p, err);
    if (rc != KILN_OK)
        return rc;
    if (p->baseline != HBL_NONE)
        return harness_plan_write_baseline(p, out, err);
    bool ok = true;
    json_t *root = json_object();
    json_t *sig = json_array(), *launches = json_array(), *cases = json_array();
    if (!root || !sig || !launches || !cases) {
        json_decref(root);
        json_decref(sig);
        json_decref(launches);
        json_decref(cases);
        return kiln_fail(err, KILN_E_NOMEM, "plan: out of memory writing the plan");
    }
    put(root, "kiln_plan", json_integer(HARNESS_PLAN_VERSION), &ok);
    put(root, "backend", json_string(p->backend == HB_CUDA ? "cuda" : "cpu"), &ok);
    put(root, "warmups", json_integer(p->warmups), &ok);
    put(root, "iterations", json_integer(p->iterations), &ok);
    if (p->adaptive)
        put(root, "adaptive",
            json_pack("{s:f,s:f,s:i}", "target_rse", p->target_rse, "budget_ms", p->budget_ms,
                      "max_iterations", p->max_iterations),
            &ok);
    put(root, "l2_flush", json_boolean(p->l2_flush), &ok);
    put(root, "reload", json_boolean(p->reload), &ok);
    put(root, "guard_bytes", json_integer((json_int_t)p->guard_bytes), &ok);
    put(root, "case_timeout_ms", json_integer((json_int_t)p->case_timeout_ms), &ok);
    if (p->deadline_ms > 0)
        put(root, "deadline_ms", json_integer((json_int_t)p->deadline_ms), &ok);
    for (int a = 0; a < p->nargs; a++) {
        const struct harness_arg *g = &p->args[a];
        if (g->is_tensor)
            push(sig,
                 json_pack("{s:s,s:s,s:s,s:s}", "name", g->name, "kind", "tensor", "dtype",
                           tensor_dtype_name(g->dtype), "role", role_names[g->role]),
                 &ok);
        else
            push(sig,
                 json_pack("{s:s,s:s,s:s}", "name", g->name, "kind", "scalar", "type",
                           scalar_names[g->type]),
                 &ok);
    }
    put(root, "signature", sig, &ok);
    for (int l = 0; l < p->nlaunches; l++) {
        json_t *args = json_array();
        for (int i = 0; args && i < p->launches[l].nargs; i++)
            push(args, json_string(p->args[p->launches[l].args[i]].name), &ok);
        push(launches, json_pack("{s:s,s:o}", "kernel", p->launches[l].kernel, "args", args), &ok);
    }
    put(root, "launches", launches, &ok);
    for (int i = 0; i < p->ncases; i++)
        push(cases, case_to_json(p, &p->cases[i], &ok), &ok);
    put(root, "cases", cases, &ok);
    if (ok)
        *out = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!*out)
        return kiln_fail(err, KILN_E_NOMEM, "plan: out of memory writing the plan");
    return KILN_OK;
}
