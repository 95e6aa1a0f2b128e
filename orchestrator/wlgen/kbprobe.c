/* kbprobe.c - run a KernelBench problem in the script sandbox to learn its
 * tensors (kbprobe.h); the python side is kbprobe.py, embedded at build. */
#include "kbprobe.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "fsutil.h"
#include "json_strict.h"
#include "kbprobe_py.h" /* generated: kbprobe_py[], the bytes of kbprobe.py */
#include "sbexec.h"

/* Here, not in kbwrite.c: the probe parser (and its fuzz target) reads them. */
const char *const kbp_case_names[KBP_MAX_CASES] = {"small", "odd", "held", "cpu", "kb"};

#define KBP_REPORT_MAX (1u << 20)
/* Tensor bytes of the correctness cases (inputs, parameters and output);
 * the performance cases' budgets come with the plan (kbprobe.h). */
#define KBP_BUDGET_SMALL (16u << 10)
#define KBP_BUDGET_ODD   (256u << 10)
#define KBP_BUDGET_HELD  (64u << 10)
#define KBP_REAL_CAP     (4u << 20) /* inputs of a real (not meta) probe run */

static bool dtype_known(const char *d)
{
    static const char *const ok[] = {"float32", "float64", "float16", "int64", "int32",
                                     "int16",   "int8",    "uint8",   "bool"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(d, ok[i]) == 0)
            return true;
    return false;
}

/* A parameter's dotted name ("conv.weight") as an identifier
 * ("conv_weight"): [A-Za-z0-9_] only, at most 40 bytes, never starting
 * with a digit. "" when nothing usable is left. */
static void param_ident(const char *src, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *s = src; *s && n + 1 < cap && n < 40; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        c = ok ? c : '_';
        if (c == '_' && (n == 0 || out[n - 1] == '_'))
            continue;
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == '_')
        n--;
    out[n] = '\0';
    if (n && out[0] >= '0' && out[0] <= '9')
        out[0] = '_'; /* never reached from torch's names; keeps the charset */
}

static bool name_taken(const struct kb_probe *pr, const char *name)
{
    if (strcmp(name, "out") == 0)
        return true;
    for (size_t i = 0; i < pr->ntensors; i++)
        if (strcmp(pr->t[i].name, name) == 0)
            return true;
    return false;
}

static enum kiln_rc bad(struct kiln_err *err, const char *what)
{
    return kiln_fail(err, KILN_E_REJECTED,
                     "the sandboxed probe's report is malformed (%s): the problem's code "
                     "replaced kiln's probe, or this kiln's kbprobe.py is broken",
                     what);
}

static enum kiln_rc parse_tensor_list(json_t *list, enum kbp_role role, const struct kb_problem *p,
                                      struct kb_probe *pr, struct kiln_err *err)
{
    size_t cap = role == KBP_IN ? KB_MAX_INPUTS : KBP_MAX_PARAMS;
    if (!json_is_array(list) || json_array_size(list) > cap)
        return role == KBP_IN && json_array_size(list) > cap
                   ? kiln_fail(err, KILN_E_LIMIT, "get_inputs returns more than %d tensors",
                               KB_MAX_INPUTS)
               : json_array_size(list) > cap
                   ? kiln_fail(err, KILN_E_LIMIT,
                               "the Model has more than %d parameter tensors (kiln's signature "
                               "holds 32 arguments)",
                               KBP_MAX_PARAMS)
                   : bad(err, "a tensor list");
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        struct kbp_tensor *t = &pr->t[pr->ntensors];
        memset(t, 0, sizeof(*t));
        t->role = role;
        const char *dt = json_string_value(json_object_get(v, "dtype"));
        if (!json_is_object(v) || !dt || !dtype_known(dt))
            return bad(err, "a dtype");
        snprintf(t->dtype, sizeof(t->dtype), "%s", dt);
        json_t *scalar = json_object_get(v, "scalar");
        if (scalar && (!json_is_boolean(scalar) || role != KBP_IN))
            return bad(err, "an input's scalar flag");
        t->scalar = json_is_true(scalar);
        if (role == KBP_IN) {
            /* The names the text parse found (safe identifiers), in order. */
            if (p->ninputs == json_array_size(list) && !name_taken(pr, p->inputs[i].name))
                snprintf(t->name, sizeof(t->name), "%s", p->inputs[i].name);
            else
                snprintf(t->name, sizeof(t->name), "in%zu", i);
        } else {
            const char *n = json_string_value(json_object_get(v, "name"));
            if (!n || strlen(n) > 200)
                return bad(err, "a parameter's name");
            char id[48];
            param_ident(n, id, sizeof(id));
            snprintf(t->source, sizeof(t->source), "%s", n);
            for (char *s = t->source; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
                    return bad(err, "a parameter's name outside [A-Za-z0-9_.]");
            snprintf(t->name, sizeof(t->name), "%s", id[0] ? id : "param");
            for (int k = 2; name_taken(pr, t->name); k++)
                snprintf(t->name, sizeof(t->name), "%s_%d", id[0] ? id : "param", k);
        }
        pr->ntensors++;
    }
    return KILN_OK;
}

/* An expression the probe wrote, before it may reach workload.json:
 * bounded, in the charset of size expressions and `where` constraints. */
static bool expr_text_ok(const char *s)
{
    if (!s || !*s || strlen(s) > KB_EXPR_MAX)
        return false;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ +-*/%()=<>",
                    *s))
            return false;
    return true;
}

static size_t size_index(const struct kb_probe *pr, const char *name)
{
    size_t i = 0;
    while (i < pr->nsizes && strcmp(pr->size_names[i], name) != 0)
        i++;
    return i;
}

/* "sizes": the names, and "pins": which constant takes which size. */
static enum kiln_rc parse_sizes(json_t *doc, struct kb_probe *pr, struct kiln_err *err)
{
    json_t *sizes = json_object_get(doc, "sizes"), *pins = json_object_get(doc, "pins");
    if (!json_is_array(sizes) || !json_is_object(pins) || json_object_size(pins) > KB_MAX_CONSTS)
        return bad(err, "sizes");
    if (json_array_size(sizes) > KB_SIZES_MAX)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the problem has %zu distinct sizes; a workload holds %d (kiln's limit)",
                         json_array_size(sizes), KB_SIZES_MAX);
    size_t i;
    json_t *v;
    json_array_foreach(sizes, i, v)
    {
        const char *n = json_string_value(v);
        if (!n || !expr_ident_valid(n) || strlen(n) > KB_NAME_MAX || size_index(pr, n) < pr->nsizes)
            return bad(err, "a size's name");
        snprintf(pr->size_names[pr->nsizes++], KB_NAME_MAX + 1, "%s", n);
    }
    const char *k;
    json_object_foreach(pins, k, v)
    {
        size_t at = size_index(pr, json_is_string(v) ? json_string_value(v) : "");
        if (!expr_ident_valid(k) || strlen(k) > KB_NAME_MAX || at == pr->nsizes)
            return bad(err, "a pin");
        snprintf(pr->pins[pr->npins].name, KB_NAME_MAX + 1, "%s", k);
        pr->pins[pr->npins++].size = at;
    }
    return KILN_OK;
}

/* "shapes": per tensor, per dimension an expression or null. */
static enum kiln_rc parse_shapes(json_t *shapes, struct kb_probe *pr, struct kiln_err *err)
{
    if (!json_is_array(shapes) || json_array_size(shapes) != pr->ntensors)
        return bad(err, "shapes");
    size_t ti;
    json_t *v;
    json_array_foreach(shapes, ti, v)
    {
        struct kbp_tensor *t = &pr->t[ti];
        if (!json_is_array(v))
            return bad(err, "a shape");
        if (json_array_size(v) > KB_MAX_DIMS)
            return kiln_fail(err, KILN_E_LIMIT, "%s has more than %d dimensions", t->name,
                             KB_MAX_DIMS);
        t->ndims = (int)json_array_size(v);
        size_t d;
        json_t *e;
        json_array_foreach(v, d, e)
        {
            if (json_is_null(e))
                continue; /* no expression fits: kbimport makes a derived size */
            if (!expr_text_ok(json_string_value(e)))
                return bad(err, "a dimension's expression");
            snprintf(t->shape[d], sizeof(t->shape[d]), "%s", json_string_value(e));
        }
    }
    return KILN_OK;
}

/* Evaluates the probe's expression at case c; false when it does not. */
static bool eval_at(const struct kb_probe *pr, const struct kbp_case *c, const char *text,
                    int64_t *v)
{
    struct expr_var vars[KB_SIZES_MAX];
    for (size_t i = 0; i < pr->nsizes; i++)
        vars[i] = (struct expr_var){pr->size_names[i], c->values[i]};
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    return expr_evaluate(text, vars, pr->nsizes, v, &ignore) == KILN_OK;
}

/* A case's dimensions, each checked against its expression. */
static enum kiln_rc parse_dims(json_t *dims, struct kb_probe *pr, struct kbp_case *c,
                               struct kiln_err *err)
{
    if (!json_is_array(dims) || json_array_size(dims) != pr->ntensors)
        return bad(err, "a case's dimensions");
    size_t ti;
    json_t *v;
    json_array_foreach(dims, ti, v)
    {
        struct kbp_tensor *t = &pr->t[ti];
        if (!json_is_array(v) || (int)json_array_size(v) != t->ndims)
            return bad(err, "a case's shape");
        size_t d;
        json_t *dim;
        json_array_foreach(v, d, dim)
        {
            int64_t x = json_integer_value(dim), want;
            if (!json_is_integer(dim) || x > (1ll << 40))
                return bad(err, "a dimension");
            if (x < 1)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "case %s: %s has a dimension of %lld (kiln's tensors have "
                                 "dimensions >= 1)",
                                 c->name, t->name, (long long)x);
            if (t->shape[d][0] && (!eval_at(pr, c, t->shape[d], &want) || want != x))
                return bad(err, "a dimension its expression does not give");
            c->dims[ti][d] = x;
        }
    }
    return KILN_OK;
}

static enum kiln_rc parse_case(json_t *j, struct kb_probe *pr, struct kiln_err *err)
{
    static const char *const keys[] = {"name", "kind", "backend", "values", "dims", NULL};
    static const char *const kinds[] = {"correctness", "held", "performance"};
    if (!json_is_object(j) || json_strict_keys(j, "probe case", keys, keys, err) != KILN_OK)
        return bad(err, "a case");
    struct kbp_case *c = &pr->cases[pr->ncases];
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *kind = json_string_value(json_object_get(j, "kind"));
    const char *backend = json_string_value(json_object_get(j, "backend"));
    /* Each name has its kind (and a performance case its backend). */
    size_t at = 0;
    while (at < KBP_MAX_CASES && (!name || strcmp(kbp_case_names[at], name) != 0))
        at++;
    if (at == KBP_MAX_CASES)
        return bad(err, "a case's name");
    c->name = kbp_case_names[at];
    c->kind = at < 2 ? KBP_CORRECTNESS : at == 2 ? KBP_HELD : KBP_PERFORMANCE;
    c->backend = at == 3 ? "cpu" : at == 4 ? "cuda" : NULL;
    if (!kind || strcmp(kind, kinds[c->kind]) != 0 ||
        (c->backend ? !backend || strcmp(backend, c->backend) != 0
                    : !json_is_null(json_object_get(j, "backend"))))
        return bad(err, "a case's kind");
    json_t *values = json_object_get(j, "values");
    if (!json_is_object(values) || json_object_size(values) != pr->nsizes)
        return bad(err, "a case's sizes");
    for (size_t i = 0; i < pr->nsizes; i++) {
        json_t *v = json_object_get(values, pr->size_names[i]);
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1ll << 40))
            return bad(err, "a case's size");
        c->values[i] = json_integer_value(v);
    }
    return parse_dims(json_object_get(j, "dims"), pr, c, err);
}

static size_t case_rank(const char *name)
{
    size_t i = 0;
    while (i + 1 < KBP_MAX_CASES && kbp_case_names[i] != name)
        i++;
    return i;
}

/* The cases, in kbp_case_names' order: small, odd and held always, cpu
 * and kb as asked. */
static enum kiln_rc parse_cases(json_t *cases, struct kb_probe *pr, struct kiln_err *err)
{
    if (!json_is_array(cases) || json_array_size(cases) < 4 ||
        json_array_size(cases) > KBP_MAX_CASES)
        return bad(err, "cases");
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        enum kiln_rc rc = parse_case(c, pr, err);
        if (rc != KILN_OK)
            return rc;
        size_t me = case_rank(pr->cases[pr->ncases].name);
        if ((pr->ncases < 3 && me != pr->ncases) ||
            (pr->ncases && me <= case_rank(pr->cases[pr->ncases - 1].name)))
            return bad(err, "the cases' order");
        pr->ncases++;
    }
    return KILN_OK;
}

/* "held_out": null, or ranges for every size and `where` constraints. */
static enum kiln_rc parse_held(json_t *h, struct kb_probe *pr, struct kiln_err *err)
{
    if (json_is_null(h))
        return KILN_OK;
    static const char *const keys[] = {"ranges", "where", NULL};
    json_t *ranges = json_object_get(h, "ranges"), *where = json_object_get(h, "where");
    if (!json_is_object(h) || json_strict_keys(h, "held_out", keys, keys, err) != KILN_OK ||
        !json_is_object(ranges) || json_object_size(ranges) != pr->nsizes ||
        !json_is_array(where) || json_array_size(where) > KBP_MAX_WHERE)
        return bad(err, "held_out");
    for (size_t i = 0; i < pr->nsizes; i++) {
        json_t *r = json_object_get(ranges, pr->size_names[i]);
        json_t *lo = json_array_get(r, 0), *hi = json_array_get(r, 1);
        if (!json_is_array(r) || json_array_size(r) != 2 || !json_is_integer(lo) ||
            !json_is_integer(hi) || json_integer_value(lo) < 1 ||
            json_integer_value(hi) < json_integer_value(lo) || json_integer_value(hi) > (1ll << 40))
            return bad(err, "a held-out range");
        pr->range[i][0] = json_integer_value(lo);
        pr->range[i][1] = json_integer_value(hi);
    }
    size_t i;
    json_t *w;
    json_array_foreach(where, i, w)
    {
        if (!expr_text_ok(json_string_value(w)))
            return bad(err, "a held-out constraint");
        snprintf(pr->where[pr->nwhere++], KB_EXPR_MAX + 1, "%s", json_string_value(w));
    }
    pr->ranges = true;
    return KILN_OK;
}

/* "flops": an expression over the sizes, >= 0 in every case. */
static enum kiln_rc parse_flops(json_t *f, struct kb_probe *pr, struct kiln_err *err)
{
    const char *s = json_string_value(f);
    if (!expr_text_ok(s))
        return bad(err, "flops");
    for (size_t i = 0; i < pr->ncases; i++) {
        int64_t v;
        if (!eval_at(pr, &pr->cases[i], s, &v) || v < 0)
            return bad(err, "flops that do not evaluate");
    }
    snprintf(pr->flops, sizeof(pr->flops), "%s", s);
    return KILN_OK;
}

/* "scaled": how the cpu and kb cases were scaled (null: not). */
static enum kiln_rc parse_scaled(json_t *j, struct kbp_scaled *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!j || json_is_null(j))
        return KILN_OK;
    static const char *const keys[] = {"factor", "bytes", "bound", "sizes", NULL};
    const char *bound = json_string_value(json_object_get(j, "bound"));
    json_t *sizes = json_object_get(j, "sizes");
    if (!json_is_object(j) || json_strict_keys(j, "scaled", keys, keys, err) != KILN_OK ||
        !json_is_number(json_object_get(j, "factor")) ||
        !json_is_integer(json_object_get(j, "bytes")) || !bound ||
        (strcmp(bound, "budget") != 0 && strcmp(bound, "host") != 0) || !json_is_array(sizes) ||
        json_array_size(sizes) > KB_SIZES_MAX)
        return bad(err, "scaled");
    out->factor = json_number_value(json_object_get(j, "factor"));
    out->bytes = json_integer_value(json_object_get(j, "bytes"));
    out->host_bound = strcmp(bound, "host") == 0;
    size_t i, at = 0;
    json_t *s;
    json_array_foreach(sizes, i, s)
    {
        const char *n = json_string_value(json_array_get(s, 0));
        json_t *from = json_array_get(s, 1), *to = json_array_get(s, 2);
        if (!n || !expr_ident_valid(n) || !json_is_integer(from) || !json_is_integer(to))
            return bad(err, "scaled");
        int w =
            snprintf(out->sizes + at, sizeof(out->sizes) - at, "%s%s %lld -> %lld", at ? ", " : "",
                     n, (long long)json_integer_value(from), (long long)json_integer_value(to));
        at = w > 0 && (size_t)w < sizeof(out->sizes) - at ? at + (size_t)w : at;
    }
    return KILN_OK;
}

/* memory_per_byte, atol and rtol: numbers in their ranges. */
static enum kiln_rc parse_numbers(json_t *doc, struct kb_probe *pr, struct kiln_err *err)
{
    json_t *m = json_object_get(doc, "memory_factor");
    json_t *a = json_object_get(doc, "atol"), *r = json_object_get(doc, "rtol");
    if (!json_is_integer(m) || json_integer_value(m) < 1 || !json_is_number(a) ||
        !json_is_number(r) || !(json_number_value(a) >= 0.0 && json_number_value(a) <= 1.0) ||
        !(json_number_value(r) >= 0.0 && json_number_value(r) <= 1.0))
        return bad(err, "memory_factor, atol or rtol");
    /* A reference that needs more than the workload format allows is
     * still imported: the format's ceiling, and the check says the rest. */
    pr->memory_per_byte = json_integer_value(m) > 1024 ? 1024 : (int)json_integer_value(m);
    pr->atol = json_number_value(a);
    pr->rtol = json_number_value(r);
    return KILN_OK;
}

enum kiln_rc kbprobe_parse(const char *json, size_t len, const struct kb_problem *p,
                           struct kb_probe *pr, struct kiln_err *err)
{
    memset(pr, 0, sizeof(*pr));
    struct json_strict_rules rules = {.max_bytes = KBP_REPORT_MAX};
    json_t *doc = NULL;
    enum kiln_rc rc = json_strict_parse("the probe's report", json, len, &rules, &doc, err);
    if (rc != KILN_OK)
        return rc;
    json_t *error = json_object_get(doc, "error");
    if (error) {
        char q[400];
        rc = kiln_fail(err, KILN_E_REJECTED, "%s",
                       json_strict_quote(json_is_string(error) ? json_string_value(error)
                                                               : "(no reason given)",
                                         q, sizeof(q)));
        json_decref(doc);
        return rc;
    }
    static const char *const keys[] = {
        "mode",     "inputs", "params",     "out",           "sizes", "pins", "shapes", "cases",
        "held_out", "flops",  "flops_note", "memory_factor", "atol",  "rtol", "scaled", NULL};
    json_t *out = json_object_get(doc, "out"), *scaled = json_object_get(doc, "scaled");
    const char *mode = json_string_value(json_object_get(doc, "mode"));
    const char *odt = json_string_value(json_object_get(out, "dtype"));
    if (json_strict_keys(doc, "the probe's report", keys, keys, err) != KILN_OK || !mode || !odt ||
        !dtype_known(odt) || !json_is_object(scaled))
        rc = bad(err, "its top level");
    pr->meta = mode && strcmp(mode, "meta") == 0;
    if (rc == KILN_OK)
        rc = parse_tensor_list(json_object_get(doc, "inputs"), KBP_IN, p, pr, err);
    pr->ninputs = pr->ntensors;
    if (rc == KILN_OK && pr->ninputs == 0)
        rc = kiln_fail(err, KILN_E_REJECTED, "get_inputs returns no tensor");
    if (rc == KILN_OK)
        rc = parse_tensor_list(json_object_get(doc, "params"), KBP_PARAM, p, pr, err);
    pr->nparams = pr->ntensors - pr->ninputs;
    if (rc == KILN_OK) {
        struct kbp_tensor *t = &pr->t[pr->ntensors++];
        memset(t, 0, sizeof(*t));
        t->role = KBP_OUT;
        snprintf(t->name, sizeof(t->name), "out");
        snprintf(t->dtype, sizeof(t->dtype), "%s", odt);
    }
    if (rc == KILN_OK)
        rc = parse_sizes(doc, pr, err);
    if (rc == KILN_OK)
        rc = parse_shapes(json_object_get(doc, "shapes"), pr, err);
    if (rc == KILN_OK)
        rc = parse_cases(json_object_get(doc, "cases"), pr, err);
    if (rc == KILN_OK)
        rc = parse_held(json_object_get(doc, "held_out"), pr, err);
    if (rc == KILN_OK)
        rc = parse_flops(json_object_get(doc, "flops"), pr, err);
    if (rc == KILN_OK)
        rc = parse_numbers(doc, pr, err);
    if (rc == KILN_OK)
        rc = parse_scaled(json_object_get(scaled, "cpu"), &pr->scaled_cpu, err);
    if (rc == KILN_OK)
        rc = parse_scaled(json_object_get(scaled, "kb"), &pr->scaled_kb, err);
    /* A tensor named like a size is renamed: the signature's names are one
     * namespace. */
    for (size_t t = 0; rc == KILN_OK && t < pr->ntensors; t++)
        if (size_index(pr, pr->t[t].name) < pr->nsizes) {
            char was[KB_NAME_MAX + 1];
            memcpy(was, pr->t[t].name, sizeof(was));
            snprintf(pr->t[t].name, sizeof(pr->t[t].name), "%.*s_t", KB_NAME_MAX - 2, was);
        }
    json_decref(doc);
    return rc;
}

static enum kiln_rc write_plan(const struct kb_problem *p, const struct kbp_plan *plan,
                               const char *path, struct kiln_err *err)
{
    json_t *consts = json_object();
    for (size_t i = 0; i < p->nconsts; i++)
        json_object_set_new(consts, p->consts[i].name, json_integer(p->consts[i].value));
    json_t *cpu = plan->cpu_bytes ? json_pack("{s:I}", "bytes", (json_int_t)plan->cpu_bytes)
                                  : json_integer(0);
    json_t *cuda = plan->cuda_bytes ? json_pack("{s:I, s:I}", "bytes", (json_int_t)plan->cuda_bytes,
                                                "host_memory", (json_int_t)plan->host_memory)
                                    : json_integer(0);
    json_t *doc =
        json_pack("{s:o, s:{s:I, s:I, s:I}, s:o, s:o, s:I, s:f}", "consts", consts, "budgets",
                  "small", (json_int_t)KBP_BUDGET_SMALL, "odd", (json_int_t)KBP_BUDGET_ODD, "held",
                  (json_int_t)KBP_BUDGET_HELD, "cpu", cpu, "cuda", cuda, "real_cap",
                  (json_int_t)KBP_REAL_CAP, "tolerance", plan->tolerance);
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "writing the probe's plan");
    enum kiln_rc rc = fs_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

enum kiln_rc kbprobe_run(const struct kb_problem *p, const struct kbp_plan *plan,
                         long long timeout_ms, struct kb_probe *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    char tmp[PATH_MAX], plan_path[PATH_MAX], prob[PATH_MAX], script[PATH_MAX], got[PATH_MAX],
        report[PATH_MAX];
    enum kiln_rc rc = fs_make_tempdir("kbprobe", tmp, sizeof(tmp), err);
    if (rc != KILN_OK)
        return rc;
    if ((rc = fs_join(plan_path, sizeof(plan_path), tmp, "plan.json", err)) ||
        (rc = fs_join(prob, sizeof(prob), tmp, "problem.py", err)) ||
        (rc = fs_join(script, sizeof(script), tmp, "kbprobe.py", err)) ||
        (rc = fs_join(got, sizeof(got), tmp, "out", err)) ||
        (rc = fs_join(report, sizeof(report), got, "probe.json", err)) ||
        (rc = write_plan(p, plan, plan_path, err)) ||
        (rc = fs_write_atomic(prob, p->source, p->len, err)) ||
        (rc = fs_write_atomic(script, (const char *)kbprobe_py, sizeof(kbprobe_py), err))) {
        kiln_err_prefix(err, "preparing the probe");
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        if (fs_remove_tree(tmp, &ignore) != KILN_OK)
            kiln_err_clear(&ignore); /* a leftover temp dir; the error above matters */
        return rc;
    }
    static const char *const patterns[] = {"probe.json"};
    struct tar_rules rules = {.patterns = patterns,
                              .n_patterns = 1,
                              .max_file_bytes = KBP_REPORT_MAX,
                              .max_total_bytes = KBP_REPORT_MAX,
                              .max_files = 1};
    struct sandbox_input in[] = {
        {script, "kbprobe.py"}, {plan_path, "plan.json"}, {prob, "problem.py"}};
    char *argv[] = {"python3",        "/in/kbprobe.py",  "/in/plan.json",
                    "/in/problem.py", "/out/probe.json", NULL};
    struct sbexec_step step = {.what = "the KernelBench probe", .rules = &rules, .out_dir = got};
    step.spec.policy = "script";
    step.spec.image = "script";
    step.spec.inputs = in;
    step.spec.n_inputs = 3;
    step.spec.argv = argv;
    step.spec.stdin_fd = -1;
    step.spec.limits.timeout_ms = timeout_ms;
    step.gpu = -1;
    struct sbexec_result res;
    rc = sbexec_run(&step, &res, err);
    if (rc == KILN_OK && !res.exited_ok) {
        char d[600];
        sbexec_describe(&res, d, sizeof(d));
        rc = kiln_fail(err, res.sb.verdict == SANDBOX_TIMEOUT ? KILN_E_TIMEOUT : KILN_E_CHILD,
                       "the problem's probe in the script sandbox failed: %s", d);
    }
    sbexec_result_free(&res);
    char *text = NULL;
    size_t len = 0;
    if (rc == KILN_OK && (rc = fs_read_file(report, KBP_REPORT_MAX, &text, &len, err)) != KILN_OK)
        kiln_err_prefix(err, "the probe wrote no report");
    if (rc == KILN_OK)
        rc = kbprobe_parse(text, len, p, out, err);
    free(text);
    struct kiln_err rm;
    kiln_err_clear(&rm);
    if (fs_remove_tree(tmp, &rm) != KILN_OK)
        fprintf(stderr, "kiln import: warning: %s\n", rm.msg); /* the import still stands */
    return rc;
}
