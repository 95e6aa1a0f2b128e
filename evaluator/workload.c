/* workload.c - strict loader for workload directories and workload.json.
 * Every message starts with the file and the JSON path of the field. */
#include "workload.h"
#include "json_strict.h"
#include "suggest.h"

/* workload.json nests five levels at most; hostile text deeper is refused
 * before jansson recurses into it. */
#define WL_MAX_DEPTH 16

#include "gpupeak.h"
#include "heldout.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_MAX_MSG 128

struct ctx {
    char file[256]; /* "DIR/workload.json" for messages */
    struct workload *w;
    struct kiln_err *err; /* the section being parsed writes its first failure here */
    /* Every problem found so far, one per line without the file name: one
     * run of `kiln workload check` names them all (keep_problem). */
    struct wl_problems probs;
    enum kiln_rc first_rc;
};

/* Bounded, printable copy of untrusted text for messages. */
static const char *safe(const char *s, char *buf, size_t size)
{
    size_t n = 0;
    for (; s[n] != '\0' && n + 4 < size; n++) {
        unsigned char ch = (unsigned char)s[n];
        buf[n] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (s[n] != '\0') {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

static enum kiln_rc fail(struct ctx *c, enum kiln_rc rc, const char *path, const char *fmt, ...)
    KILN_PRINTF(4, 5);

static enum kiln_rc fail(struct ctx *c, enum kiln_rc rc, const char *path, const char *fmt, ...)
{
    char msg[KILN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return kiln_fail(c->err, rc, "%s: %s: %s", c->file, path, msg);
}

/* Moves the failure in c->err into c->problems (without the file name,
 * which the summary says once) and clears it, so parsing goes on. */
static void keep_problem(struct ctx *c)
{
    if (c->err->rc == KILN_OK)
        return;
    const char *m = c->err->msg;
    size_t fl = strlen(c->file);
    if (!strncmp(m, c->file, fl) && !strncmp(m + fl, ": ", 2))
        m += fl + 2;
    /* Whole lines only: one that does not fit is counted, not cut. */
    size_t off = strlen(c->probs.text), n = strlen(m);
    if (off + n + 2 <= sizeof(c->probs.text))
        snprintf(c->probs.text + off, sizeof(c->probs.text) - off, "%s\n", m);
    if (!c->probs.n++)
        c->first_rc = c->err->rc;
    kiln_err_clear(c->err);
}

static bool lower_name_ok(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n] != '\0'; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
            return false;
    return n >= 1 && n <= max;
}

static const char *type_name(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

static enum kiln_rc want(struct ctx *c, const json_t *j, json_type t, const char *path,
                         const char *what)
{
    if (json_typeof(j) == t)
        return KILN_OK;
    return fail(c, KILN_E_PARSE, path, "must be %s, not %s", what, type_name(j));
}

/* Rejects keys not in `allowed` and reports the first missing `required`
 * key (both NULL-terminated lists). */
static enum kiln_rc check_keys(struct ctx *c, json_t *obj, const char *path,
                               const char *const *allowed, const char *const *required)
{
    const char *key = json_strict_unknown_key(obj, allowed);
    if (key) {
        char q[72], hint[SUGGEST_MAX_LEN + 24];
        return fail(c, KILN_E_PARSE, path, "unknown key \"%s\"%s", safe(key, q, sizeof(q)),
                    json_strict_did_you_mean(key, allowed, hint, sizeof(hint)));
    }
    for (size_t i = 0; required[i]; i++)
        if (!json_object_get(obj, required[i]))
            return fail(c, KILN_E_PARSE, path, "missing required key \"%s\"", required[i]);
    return KILN_OK;
}

/* The top level's keys: every unknown key and every missing required one
 * is a problem of its own (kept, not returned). */
static void check_top_keys(struct ctx *c, json_t *root, const char *const *allowed,
                           const char *const *required)
{
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        bool known = false;
        for (size_t i = 0; allowed[i] && !known; i++)
            known = !strcmp(key, allowed[i]);
        if (!known) {
            char q[72], hint[SUGGEST_MAX_LEN + 24];
            fail(c, KILN_E_PARSE, "(top level)", "unknown key \"%s\"%s", safe(key, q, sizeof(q)),
                 json_strict_did_you_mean(key, allowed, hint, sizeof(hint)));
            keep_problem(c);
        }
    }
    for (size_t i = 0; required[i]; i++)
        if (!json_object_get(root, required[i])) {
            fail(c, KILN_E_PARSE, "(top level)", "missing required key \"%s\"", required[i]);
            keep_problem(c);
        }
}

static enum kiln_rc get_expr(struct ctx *c, json_t *j, const char *path, struct expr **out)
{
    enum kiln_rc rc = want(c, j, JSON_STRING, path, "a string (a size expression)");
    if (rc != KILN_OK)
        return rc;
    const char *s = json_string_value(j);
    if (strlen(s) != json_string_length(j))
        return fail(c, KILN_E_PARSE, path, "NUL byte in an expression");
    rc = expr_compile(s, out, c->err);
    if (rc == KILN_OK) {
        const char *names[WL_MAX_SIZES];
        for (size_t i = 0; i < c->w->nsizes; i++)
            names[i] = c->w->size_names[i];
        rc = expr_check_names(*out, names, c->w->nsizes, c->err);
        if (rc != KILN_OK) {
            expr_free(*out);
            *out = NULL;
        }
    }
    if (rc != KILN_OK)
        kiln_err_prefix(c->err, "%s: %s", c->file, path);
    return rc;
}

static enum kiln_rc parse_backends(struct ctx *c, json_t *j, const char *path, unsigned *mask)
{
    enum kiln_rc rc = want(c, j, JSON_ARRAY, path, "an array of backend names");
    if (rc != KILN_OK)
        return rc;
    if (json_array_size(j) == 0)
        return fail(c, KILN_E_PARSE, path, "must list at least one backend (cuda, cpu)");
    *mask = 0;
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v)
    {
        char p[PATH_MAX_MSG], q[72];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
            return rc;
        unsigned b = kiln_backend_from_name(json_string_value(v));
        if (b == 0)
            return fail(c, KILN_E_PARSE, p, "unknown backend \"%s\" (cuda or cpu)",
                        safe(json_string_value(v), q, sizeof(q)));
        if (*mask & b)
            return fail(c, KILN_E_PARSE, p, "backend \"%s\" listed twice", json_string_value(v));
        *mask |= b;
    }
    return KILN_OK;
}

static enum kiln_rc parse_sizes(struct ctx *c, json_t *j)
{
    struct workload *w = c->w;
    enum kiln_rc rc = want(c, j, JSON_ARRAY, "sizes", "an array of size names");
    if (rc != KILN_OK)
        return rc;
    if (json_array_size(j) > WL_MAX_SIZES)
        return fail(c, KILN_E_LIMIT, "sizes", "%zu sizes; at most %d", json_array_size(j),
                    WL_MAX_SIZES);
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v)
    {
        char p[PATH_MAX_MSG], q[72];
        snprintf(p, sizeof(p), "sizes[%zu]", i);
        if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
            return rc;
        const char *s = json_string_value(v);
        if (!expr_ident_valid(s))
            return fail(c, KILN_E_PARSE, p,
                        "\"%s\" is not an identifier ([A-Za-z_][A-Za-z0-9_]{0,63}, not cdiv, "
                        "min or max)",
                        safe(s, q, sizeof(q)));
        if (workload_size_index(w, s) >= 0)
            return fail(c, KILN_E_PARSE, p, "size \"%s\" listed twice", s);
        strcpy(w->size_names[w->nsizes++], s);
    }
    return KILN_OK;
}

static enum kiln_rc parse_scalar(struct ctx *c, json_t *j, const char *path, struct wl_arg *a)
{
    static const char *const keys[] = {"name", "kind", "type", "value", "expr", NULL};
    static const char *const req[] = {"name", "kind", "type", NULL};
    static const char *const types[] = {"int32", "int64", "float32", "float64"};
    enum kiln_rc rc = check_keys(c, j, path, keys, req);
    if (rc != KILN_OK)
        return rc;
    char p[PATH_MAX_MSG], q[72];
    json_t *t = json_object_get(j, "type");
    snprintf(p, sizeof(p), "%s.type", path);
    if ((rc = want(c, t, JSON_STRING, p, "a string")) != KILN_OK)
        return rc;
    size_t k = 0;
    while (k < 4 && strcmp(types[k], json_string_value(t)) != 0)
        k++;
    if (k == 4)
        return fail(c, KILN_E_PARSE, p,
                    "unknown scalar type \"%s\" (int32, int64, float32, float64)",
                    safe(json_string_value(t), q, sizeof(q)));
    a->type = (enum wl_scalar_type)k;
    bool is_int = a->type == WL_SCALAR_INT32 || a->type == WL_SCALAR_INT64;
    json_t *value = json_object_get(j, "value"), *ex = json_object_get(j, "expr");
    if ((value != NULL) == (ex != NULL))
        return fail(c, KILN_E_PARSE, path, "a scalar needs exactly one of \"value\" and \"expr\"");
    if (ex) {
        snprintf(p, sizeof(p), "%s.expr", path);
        if (!is_int)
            return fail(c, KILN_E_PARSE, p, "only int32 and int64 scalars may use \"expr\"");
        return get_expr(c, ex, p, &a->expr);
    }
    snprintf(p, sizeof(p), "%s.value", path);
    if (is_int) {
        if ((rc = want(c, value, JSON_INTEGER, p, "an integer")) != KILN_OK)
            return rc;
        a->ivalue = json_integer_value(value);
        if (a->type == WL_SCALAR_INT32 && (a->ivalue < INT32_MIN || a->ivalue > INT32_MAX))
            return fail(c, KILN_E_PARSE, p, "%" PRId64 " does not fit in int32", a->ivalue);
        return KILN_OK;
    }
    if (!json_is_number(value))
        return fail(c, KILN_E_PARSE, p, "must be a number, not %s", type_name(value));
    a->fvalue = json_number_value(value);
    if (!isfinite(a->fvalue) || (a->type == WL_SCALAR_FLOAT32 && fabs(a->fvalue) > FLT_MAX))
        return fail(c, KILN_E_PARSE, p, "%g is out of range for %s", a->fvalue, types[k]);
    return KILN_OK;
}

static enum kiln_rc parse_tensor(struct ctx *c, json_t *j, const char *path, struct wl_arg *a)
{
    static const char *const keys[] = {"name", "kind", "dtype", "shape", "role", NULL};
    enum kiln_rc rc = check_keys(c, j, path, keys, keys);
    if (rc != KILN_OK)
        return rc;
    char p[PATH_MAX_MSG], q[72];
    json_t *v = json_object_get(j, "dtype");
    snprintf(p, sizeof(p), "%s.dtype", path);
    if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
        return rc;
    a->dtype = tensor_dtype_from_name(json_string_value(v));
    if (a->dtype == DT_INVALID)
        return fail(c, KILN_E_PARSE, p, "unknown dtype \"%s\" (see workloads/README.md)",
                    safe(json_string_value(v), q, sizeof(q)));
    v = json_object_get(j, "role");
    snprintf(p, sizeof(p), "%s.role", path);
    if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
        return rc;
    const char *role = json_string_value(v);
    if (strcmp(role, "in") == 0)
        a->role = WL_ROLE_IN;
    else if (strcmp(role, "out") == 0)
        a->role = WL_ROLE_OUT;
    else if (strcmp(role, "inout") == 0)
        a->role = WL_ROLE_INOUT;
    else
        return fail(c, KILN_E_PARSE, p, "unknown role \"%s\" (in, out, inout)",
                    safe(role, q, sizeof(q)));
    v = json_object_get(j, "shape");
    snprintf(p, sizeof(p), "%s.shape", path);
    if ((rc = want(c, v, JSON_ARRAY, p, "an array of size expressions")) != KILN_OK)
        return rc;
    if (json_array_size(v) > TENSOR_MAX_DIMS)
        return fail(c, KILN_E_LIMIT, p, "%zu dimensions; at most %d", json_array_size(v),
                    TENSOR_MAX_DIMS);
    size_t i;
    json_t *d;
    json_array_foreach(v, i, d)
    {
        snprintf(p, sizeof(p), "%s.shape[%zu]", path, i);
        if ((rc = get_expr(c, d, p, &a->shape[i])) != KILN_OK)
            return rc;
        a->ndim++;
    }
    a->tensor_index = (int)c->w->ntensors++;
    return KILN_OK;
}

static enum kiln_rc parse_signature(struct ctx *c, json_t *j)
{
    struct workload *w = c->w;
    enum kiln_rc rc = want(c, j, JSON_ARRAY, "signature", "an array of arguments");
    if (rc != KILN_OK)
        return rc;
    if (json_array_size(j) == 0 || json_array_size(j) > WL_MAX_ARGS)
        return fail(c, KILN_E_LIMIT, "signature", "%zu arguments; must be 1..%d",
                    json_array_size(j), WL_MAX_ARGS);
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v)
    {
        char p[PATH_MAX_MSG], q[72];
        snprintf(p, sizeof(p), "signature[%zu]", i);
        if ((rc = want(c, v, JSON_OBJECT, p, "an object")) != KILN_OK)
            return rc;
        struct wl_arg *a = &w->args[w->nargs++];
        a->tensor_index = -1;
        json_t *name = json_object_get(v, "name"), *kind = json_object_get(v, "kind");
        char pn[PATH_MAX_MSG];
        snprintf(pn, sizeof(pn), "%s.name", p);
        if (!name)
            return fail(c, KILN_E_PARSE, p, "missing required key \"name\"");
        if ((rc = want(c, name, JSON_STRING, pn, "a string")) != KILN_OK)
            return rc;
        const char *s = json_string_value(name);
        if (!expr_ident_valid(s))
            return fail(c, KILN_E_PARSE, pn, "\"%s\" is not an identifier", safe(s, q, sizeof(q)));
        if (workload_arg_index(w, s) >= 0)
            return fail(c, KILN_E_PARSE, pn, "argument \"%s\" listed twice", s);
        snprintf(pn, sizeof(pn), "%s.kind", p);
        if (!kind)
            return fail(c, KILN_E_PARSE, p, "missing required key \"kind\"");
        if ((rc = want(c, kind, JSON_STRING, pn, "a string")) != KILN_OK)
            return rc;
        if (strcmp(json_string_value(kind), "tensor") == 0) {
            a->kind = WL_ARG_TENSOR;
            rc = parse_tensor(c, v, p, a);
        } else if (strcmp(json_string_value(kind), "scalar") == 0) {
            a->kind = WL_ARG_SCALAR;
            rc = parse_scalar(c, v, p, a);
        } else {
            return fail(c, KILN_E_PARSE, pn, "unknown kind \"%s\" (tensor or scalar)",
                        safe(json_string_value(kind), q, sizeof(q)));
        }
        if (rc != KILN_OK)
            return rc;
        /* Set last: a name makes the argument findable, so only complete ones. */
        strcpy(a->name, s);
    }
    if (w->ntensors == 0)
        return fail(c, KILN_E_PARSE, "signature", "has no tensor argument");
    return KILN_OK;
}

static enum kiln_rc parse_case(struct ctx *c, json_t *j, const char *path, struct wl_case *wc,
                               bool held_out)
{
    static const char *const keys[] = {"name", "kind", "sizes", "backends", NULL};
    static const char *const req[] = {"name", "kind", "sizes", NULL};
    static const char *const hkeys[] = {"name", "sizes", "backends", NULL};
    static const char *const hreq[] = {"name", "sizes", NULL};
    struct workload *w = c->w;
    char p[PATH_MAX_MSG], q[72];
    enum kiln_rc rc = want(c, j, JSON_OBJECT, path, "an object");
    if (rc == KILN_OK)
        rc = held_out ? check_keys(c, j, path, hkeys, hreq) : check_keys(c, j, path, keys, req);
    if (rc != KILN_OK)
        return rc;
    json_t *v = json_object_get(j, "name");
    snprintf(p, sizeof(p), "%s.name", path);
    if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
        return rc;
    const char *name = json_string_value(v);
    if (!lower_name_ok(name, WL_CASE_NAME_MAX) || strlen(name) != json_string_length(v))
        return fail(c, KILN_E_PARSE, p, "\"%s\" is not a case name ([a-z0-9_]{1,32})",
                    safe(name, q, sizeof(q)));
    if (workload_case_by_name(w, name))
        return fail(c, KILN_E_PARSE, p, "case name \"%s\" is used twice", name);
    if (strncmp(name, WL_DRAWN_PREFIX, strlen(WL_DRAWN_PREFIX)) == 0)
        return fail(c, KILN_E_PARSE, p,
                    "\"%s\": names starting with \"" WL_DRAWN_PREFIX "\" are kept for the "
                    "held-out cases kiln draws; rename it",
                    name);
    if (held_out) {
        wc->kind = WL_CASE_HELD_OUT;
    } else {
        v = json_object_get(j, "kind");
        snprintf(p, sizeof(p), "%s.kind", path);
        if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
            return rc;
        if (strcmp(json_string_value(v), "correctness") == 0)
            wc->kind = WL_CASE_CORRECTNESS;
        else if (strcmp(json_string_value(v), "performance") == 0)
            wc->kind = WL_CASE_PERFORMANCE;
        else
            return fail(c, KILN_E_PARSE, p, "unknown kind \"%s\" (correctness or performance)",
                        safe(json_string_value(v), q, sizeof(q)));
    }
    wc->backends = w->backends;
    v = json_object_get(j, "backends");
    if (v) {
        snprintf(p, sizeof(p), "%s.backends", path);
        if ((rc = parse_backends(c, v, p, &wc->backends)) != KILN_OK)
            return rc;
        if (wc->backends & ~w->backends)
            return fail(c, KILN_E_PARSE, p, "lists a backend the workload does not have");
    }
    v = json_object_get(j, "sizes");
    snprintf(p, sizeof(p), "%s.sizes", path);
    if ((rc = want(c, v, JSON_OBJECT, p, "an object")) != KILN_OK)
        return rc;
    const char *key;
    json_t *sv;
    json_object_foreach(v, key, sv)
    {
        char ps[PATH_MAX_MSG];
        snprintf(ps, sizeof(ps), "%s.sizes.%s", path, safe(key, q, sizeof(q)));
        int k = workload_size_index(w, key);
        if (k < 0)
            return fail(c, KILN_E_PARSE, ps, "not a size of this workload");
        if ((rc = want(c, sv, JSON_INTEGER, ps, "an integer")) != KILN_OK)
            return rc;
        json_int_t n = json_integer_value(sv);
        if (n < 1 || n > WL_SIZE_MAX)
            return fail(c, KILN_E_PARSE, ps, "%lld is not in 1..2^40", (long long)n);
        wc->sizes[k] = n;
    }
    for (size_t k = 0; k < w->nsizes; k++)
        if (!json_object_get(v, w->size_names[k]))
            return fail(c, KILN_E_PARSE, p, "missing size \"%s\"", w->size_names[k]);
    strcpy(wc->name, name);
    return KILN_OK;
}

static enum kiln_rc parse_cases(struct ctx *c, json_t *j, const char *key, bool held_out)
{
    struct workload *w = c->w;
    size_t max = held_out ? WL_MAX_HELD_OUT : WL_MAX_CASES;
    enum kiln_rc rc = want(c, j, JSON_ARRAY, key, "an array of cases");
    if (rc != KILN_OK)
        return rc;
    if (json_array_size(j) == 0 || json_array_size(j) > max)
        return fail(c, KILN_E_LIMIT, key, "%zu cases; must be 1..%zu", json_array_size(j), max);
    size_t i;
    json_t *v;
    bool bad = false;
    json_array_foreach(j, i, v)
    {
        char p[PATH_MAX_MSG];
        snprintf(p, sizeof(p), "%s[%zu]", key, i);
        struct wl_case *wc = held_out ? &w->held_out[w->nheld_out] : &w->cases[w->ncases];
        /* A bad case is said and left out; the next ones are still read,
         * so one run names every bad case. */
        if (parse_case(c, v, p, wc, held_out) != KILN_OK) {
            keep_problem(c);
            memset(wc, 0, sizeof(*wc));
            bad = true;
        } else if (held_out) {
            w->nheld_out++;
        } else {
            w->ncases++;
        }
    }
    return bad ? c->first_rc : KILN_OK;
}

/* One held_out.where entry: "EXPR OP EXPR". The expression language has no
 * comparison, so the one operator splits the text. */
static enum kiln_rc parse_where(struct ctx *c, json_t *j, const char *path, struct wl_where *wh)
{
    static const struct {
        const char *op;
        enum wl_cmp cmp;
    } ops[] = {{"<=", WL_CMP_LE},
               {">=", WL_CMP_GE},
               {"==", WL_CMP_EQ},
               {"<", WL_CMP_LT},
               {">", WL_CMP_GT}};
    char q[72];
    enum kiln_rc rc = want(c, j, JSON_STRING, path, "a string (\"EXPR <= EXPR\")");
    if (rc != KILN_OK)
        return rc;
    const char *s = json_string_value(j);
    if (strlen(s) != json_string_length(j) || strlen(s) >= sizeof(wh->text))
        return fail(c, KILN_E_PARSE, path, "must be at most %zu bytes, without NUL",
                    sizeof(wh->text) - 1);
    const char *at = NULL;
    size_t oplen = 0;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]) && !at; k++)
        if ((at = strstr(s, ops[k].op))) {
            wh->cmp = ops[k].cmp;
            oplen = strlen(ops[k].op);
        }
    const char *rest = at ? at + oplen : NULL;
    if (!at || strpbrk(rest, "<>=") || memchr(s, '=', (size_t)(at - s)))
        return fail(c, KILN_E_PARSE, path,
                    "\"%s\" must be two size expressions and one of <=, <, >=, >, == "
                    "(e.g. \"p <= h + r - 1\")",
                    safe(s, q, sizeof(q)));
    char lhs[sizeof(wh->text)];
    snprintf(lhs, sizeof(lhs), "%.*s", (int)(at - s), s);
    json_t *jl = json_string(lhs), *jr = json_string(rest);
    if (!jl || !jr)
        rc = kiln_fail(c->err, KILN_E_NOMEM, "out of memory");
    if (rc == KILN_OK)
        rc = get_expr(c, jl, path, &wh->lhs);
    if (rc == KILN_OK)
        rc = get_expr(c, jr, path, &wh->rhs);
    json_decref(jl);
    json_decref(jr);
    if (rc == KILN_OK)
        strcpy(wh->text, s);
    return rc;
}

/* One bound (b 0: lo, 1: hi) of size k's held-out range: an integer, or
 * an expression over the sizes drawn before k. */
static enum kiln_rc parse_draw_bound(struct ctx *c, json_t *x, const char *p, int k, int b)
{
    struct workload *w = c->w;
    struct wl_held_out_draw *d = &w->held_draw;
    int64_t *num = b ? &d->hi[k] : &d->lo[k];
    struct expr **e = b ? &d->hi_expr[k] : &d->lo_expr[k];
    enum kiln_rc rc;
    if (json_is_integer(x)) {
        *num = json_integer_value(x);
        if (*num < 1 || *num > WL_SIZE_MAX)
            return fail(c, KILN_E_PARSE, p, "%lld is not in 1..2^40", (long long)*num);
        return KILN_OK;
    }
    if (!json_is_string(x))
        return fail(c, KILN_E_PARSE, p,
                    "a bound is an integer or a size expression over earlier sizes");
    if ((rc = get_expr(c, x, p, e)) != KILN_OK)
        return rc;
    /* Only sizes drawn before this one: they are drawn in order. */
    const char *names[WL_MAX_SIZES];
    for (int i = 0; i < k; i++)
        names[i] = w->size_names[i];
    if ((rc = expr_check_names(*e, names, (size_t)k, c->err)) != KILN_OK) {
        kiln_err_prefix(c->err, "%s: %s (a bound may use only sizes listed before %s)", c->file, p,
                        w->size_names[k]);
        return rc;
    }
    return KILN_OK;
}

/* held_out.sizes: a [lo, hi] range for every size of the workload. */
static enum kiln_rc parse_draw_sizes(struct ctx *c, json_t *v)
{
    struct workload *w = c->w;
    struct wl_held_out_draw *d = &w->held_draw;
    char p[PATH_MAX_MSG], q[72];
    enum kiln_rc rc;
    if ((rc = want(c, v, JSON_OBJECT, "held_out.sizes", "an object of [lo, hi] ranges")) != KILN_OK)
        return rc;
    const char *key;
    json_t *r;
    json_object_foreach(v, key, r)
    {
        snprintf(p, sizeof(p), "held_out.sizes.%s", safe(key, q, sizeof(q)));
        int k = workload_size_index(w, key);
        if (k < 0)
            return fail(c, KILN_E_PARSE, p, "not a size of this workload");
        if (!json_is_array(r) || json_array_size(r) != 2)
            return fail(c, KILN_E_PARSE, p, "must be [lo, hi]");
        for (int b = 0; b < 2; b++)
            if ((rc = parse_draw_bound(c, json_array_get(r, (size_t)b), p, k, b)) != KILN_OK)
                return rc;
        if (!d->lo_expr[k] && !d->hi_expr[k] && d->lo[k] > d->hi[k])
            return fail(c, KILN_E_PARSE, p, "[%lld, %lld] is empty", (long long)d->lo[k],
                        (long long)d->hi[k]);
    }
    for (size_t k = 0; k < w->nsizes; k++)
        if (!json_object_get(v, w->size_names[k]))
            return fail(c, KILN_E_PARSE, "held_out.sizes", "missing a range for size \"%s\"",
                        w->size_names[k]);
    return KILN_OK;
}

/* held_out.where: at most WL_MAX_WHERE constraints a drawn case must meet. */
static enum kiln_rc parse_draw_where(struct ctx *c, json_t *v)
{
    struct wl_held_out_draw *d = &c->w->held_draw;
    char p[PATH_MAX_MSG];
    enum kiln_rc rc;
    if ((rc = want(c, v, JSON_ARRAY, "held_out.where", "an array of constraints")) != KILN_OK)
        return rc;
    if (json_array_size(v) > WL_MAX_WHERE)
        return fail(c, KILN_E_LIMIT, "held_out.where", "%zu constraints; at most %d",
                    json_array_size(v), WL_MAX_WHERE);
    size_t i;
    json_t *r;
    json_array_foreach(v, i, r)
    {
        snprintf(p, sizeof(p), "held_out.where[%zu]", i);
        if ((rc = parse_where(c, r, p, &d->where[d->nwhere])) != KILN_OK)
            return rc;
        d->nwhere++;
    }
    return KILN_OK;
}

/* "held_out": {"draw": N, "sizes": {SIZE: [LO, HI], ...}, "where": [...],
 * "include": [fixed cases], "max_bytes": B}. */
static enum kiln_rc parse_held_out_draw(struct ctx *c, json_t *j)
{
    static const char *const keys[] = {"draw", "sizes", "where", "include", "max_bytes", NULL};
    static const char *const req[] = {"draw", "sizes", NULL};
    struct wl_held_out_draw *d = &c->w->held_draw;
    enum kiln_rc rc = check_keys(c, j, "held_out", keys, req);
    if (rc != KILN_OK)
        return rc;
    json_t *v = json_object_get(j, "draw");
    if ((rc = want(c, v, JSON_INTEGER, "held_out.draw", "an integer")) != KILN_OK)
        return rc;
    if (json_integer_value(v) < 1 || json_integer_value(v) > WL_MAX_DRAW)
        return fail(c, KILN_E_PARSE, "held_out.draw", "%lld is not in 1..%d",
                    (long long)json_integer_value(v), WL_MAX_DRAW);
    d->draw = (int)json_integer_value(v);
    if ((rc = parse_draw_sizes(c, json_object_get(j, "sizes"))) != KILN_OK)
        return rc;
    if ((v = json_object_get(j, "where")) && (rc = parse_draw_where(c, v)) != KILN_OK)
        return rc;
    if ((v = json_object_get(j, "max_bytes"))) {
        if ((rc = want(c, v, JSON_INTEGER, "held_out.max_bytes", "an integer")) != KILN_OK)
            return rc;
        if (json_integer_value(v) < 1 || (uint64_t)json_integer_value(v) > WL_CASE_BYTES)
            return fail(c, KILN_E_PARSE, "held_out.max_bytes", "%lld is not in 1..2^32",
                        (long long)json_integer_value(v));
        d->max_bytes = (uint64_t)json_integer_value(v);
    }
    if ((v = json_object_get(j, "include")))
        return parse_cases(c, v, "held_out.include", true);
    return KILN_OK;
}

bool workload_draw_bounds(const struct workload *w, const struct wl_case *wc, size_t k, int64_t *lo,
                          int64_t *hi)
{
    const struct wl_held_out_draw *d = &w->held_draw;
    struct expr_var vars[WL_MAX_SIZES];
    workload_case_vars(w, wc, vars);
    struct kiln_err e;
    kiln_err_clear(&e);
    *lo = d->lo[k];
    *hi = d->hi[k];
    if ((d->lo_expr[k] && expr_eval(d->lo_expr[k], vars, k, lo, &e) != KILN_OK) ||
        (d->hi_expr[k] && expr_eval(d->hi_expr[k], vars, k, hi, &e) != KILN_OK))
        return false;
    *lo = *lo < 1 ? 1 : *lo;
    *hi = *hi > WL_SIZE_MAX ? WL_SIZE_MAX : *hi;
    return *lo <= *hi;
}

bool workload_where_holds(const struct workload *w, const struct wl_case *wc)
{
    struct expr_var vars[WL_MAX_SIZES];
    workload_case_vars(w, wc, vars);
    for (size_t i = 0; i < w->held_draw.nwhere; i++) {
        const struct wl_where *wh = &w->held_draw.where[i];
        int64_t a, b;
        struct kiln_err e;
        kiln_err_clear(&e);
        if (expr_eval(wh->lhs, vars, w->nsizes, &a, &e) != KILN_OK ||
            expr_eval(wh->rhs, vars, w->nsizes, &b, &e) != KILN_OK)
            return false;
        bool ok = wh->cmp == WL_CMP_LE   ? a <= b
                  : wh->cmp == WL_CMP_LT ? a < b
                  : wh->cmp == WL_CMP_GE ? a >= b
                  : wh->cmp == WL_CMP_GT ? a > b
                                         : a == b;
        if (!ok)
            return false;
    }
    return true;
}

static enum kiln_rc parse_tolerance(struct ctx *c, json_t *j)
{
    struct workload *w = c->w;
    static const char *const keys[] = {"atol", "rtol", NULL};
    static const char *const none[] = {NULL};
    enum kiln_rc rc = want(c, j, JSON_OBJECT, "tolerance", "an object");
    if (rc != KILN_OK)
        return rc;
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
    {
        char p[PATH_MAX_MSG], q[72];
        snprintf(p, sizeof(p), "tolerance.%s", safe(key, q, sizeof(q)));
        int a = workload_arg_index(w, key);
        if (a < 0 || w->args[a].kind != WL_ARG_TENSOR || w->args[a].role == WL_ROLE_IN)
            return fail(c, KILN_E_PARSE, p, "not an out or inout tensor of the signature");
        if ((rc = want(c, v, JSON_OBJECT, p, "an object")) != KILN_OK ||
            (rc = check_keys(c, v, p, keys, none)) != KILN_OK)
            return rc;
        struct wl_tolerance *t = &w->tolerances[w->ntolerances++];
        t->arg = a;
        for (int k = 0; k < 2; k++) {
            json_t *n = json_object_get(v, keys[k]);
            if (!n)
                continue;
            char pk[PATH_MAX_MSG + 8];
            snprintf(pk, sizeof(pk), "%s.%s", p, keys[k]);
            double d = json_is_number(n) ? json_number_value(n) : -1;
            if (!json_is_number(n) || !(d >= 0) || !isfinite(d))
                return fail(c, KILN_E_PARSE, pk, "must be a finite number >= 0");
            if (k == 0) {
                t->has_atol = true;
                t->atol = d;
            } else {
                t->has_rtol = true;
                t->rtol = d;
            }
        }
        if (!t->has_atol && !t->has_rtol)
            return fail(c, KILN_E_PARSE, p, "needs atol, rtol or both");
    }
    return KILN_OK;
}

bool workload_baseline_is_gemm(enum wl_baseline_kind k)
{
    return k == WL_BASELINE_CUBLAS_SGEMM || k == WL_BASELINE_CUBLASLT_BF16;
}

static enum kiln_rc parse_baseline(struct ctx *c, json_t *j)
{
    static const char *const gemm[] = {"kind", "m", "n", "k", NULL};
    static const char *const memcpy_keys[] = {"kind", "bytes", NULL};
    static const char *const torch_keys[] = {"kind", NULL};
    struct workload *w = c->w;
    enum kiln_rc rc = want(c, j, JSON_OBJECT, "baseline", "an object");
    if (rc != KILN_OK)
        return rc;
    json_t *kind = json_object_get(j, "kind");
    if (!kind)
        return fail(c, KILN_E_PARSE, "baseline", "missing required key \"kind\"");
    if ((rc = want(c, kind, JSON_STRING, "baseline.kind", "a string")) != KILN_OK)
        return rc;
    const char *const *keys;
    if (strcmp(json_string_value(kind), "cublas_sgemm") == 0) {
        w->baseline = WL_BASELINE_CUBLAS_SGEMM;
        keys = gemm;
    } else if (strcmp(json_string_value(kind), "cublaslt_bf16") == 0) {
        w->baseline = WL_BASELINE_CUBLASLT_BF16;
        keys = gemm;
    } else if (strcmp(json_string_value(kind), "memcpy") == 0) {
        w->baseline = WL_BASELINE_MEMCPY;
        keys = memcpy_keys;
    } else if (strcmp(json_string_value(kind), "torch") == 0) {
        w->baseline = WL_BASELINE_TORCH; /* the problem's Model: no expressions */
        keys = torch_keys;
    } else {
        char q[72];
        return fail(c, KILN_E_PARSE, "baseline.kind",
                    "unknown baseline \"%s\" (cublas_sgemm, cublaslt_bf16, memcpy, torch)",
                    safe(json_string_value(kind), q, sizeof(q)));
    }
    if ((rc = check_keys(c, j, "baseline", keys, keys)) != KILN_OK)
        return rc;
    for (int k = 0; keys[k + 1]; k++) {
        char p[PATH_MAX_MSG];
        snprintf(p, sizeof(p), "baseline.%s", keys[k + 1]);
        if ((rc = get_expr(c, json_object_get(j, keys[k + 1]), p, &w->baseline_expr[k])) != KILN_OK)
            return rc;
    }
    return KILN_OK;
}

/* "math": the units the flops may use, 1 to GPU_UNIT_COUNT distinct names
 * of base/gpupeak.h ("fp32_simt", "bf16_tensor", ...). */
static enum kiln_rc parse_math(struct ctx *c, json_t *j)
{
    struct workload *w = c->w;
    enum kiln_rc rc = want(c, j, JSON_ARRAY, "math", "an array of unit names");
    if (rc != KILN_OK)
        return rc;
    if (json_array_size(j) < 1 || json_array_size(j) > GPU_UNIT_COUNT)
        return fail(c, KILN_E_PARSE, "math", "must list 1 to %d units", GPU_UNIT_COUNT);
    w->math = 0;
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v)
    {
        char p[PATH_MAX_MSG], q[72];
        enum gpu_unit u;
        snprintf(p, sizeof(p), "math[%zu]", i);
        if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
            return rc;
        if (!gpu_unit_parse(json_string_value(v), &u) ||
            strlen(json_string_value(v)) != json_string_length(v))
            return fail(c, KILN_E_PARSE, p,
                        "\"%s\" is not a unit (fp32_simt, tf32_tensor, fp16_tensor, "
                        "bf16_tensor, fp8_tensor)",
                        safe(json_string_value(v), q, sizeof(q)));
        if (w->math & GPU_UNIT_MASK(u))
            return fail(c, KILN_E_PARSE, p, "\"%s\" listed twice", json_string_value(v));
        w->math |= GPU_UNIT_MASK(u);
    }
    w->math_declared = true;
    return KILN_OK;
}

static enum kiln_rc parse_accept_weak(struct ctx *c, json_t *j)
{
    struct workload *w = c->w;
    enum kiln_rc rc = want(c, j, JSON_ARRAY, "accept_weak", "an array of case names");
    if (rc != KILN_OK)
        return rc;
    if (json_array_size(j) > WL_MAX_CASES)
        return fail(c, KILN_E_LIMIT, "accept_weak", "more than %d names", WL_MAX_CASES);
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v)
    {
        char p[PATH_MAX_MSG], q[72];
        snprintf(p, sizeof(p), "accept_weak[%zu]", i);
        if ((rc = want(c, v, JSON_STRING, p, "a string")) != KILN_OK)
            return rc;
        const char *s = json_string_value(v);
        const struct wl_case *wc = workload_case_by_name(w, s);
        if (!wc || wc->kind == WL_CASE_HELD_OUT)
            return fail(c, KILN_E_PARSE, p, "\"%s\" is not a visible case", safe(s, q, sizeof(q)));
        for (size_t k = 0; k < w->naccept_weak; k++)
            if (strcmp(w->accept_weak[k], s) == 0)
                return fail(c, KILN_E_PARSE, p, "\"%s\" listed twice", s);
        strcpy(w->accept_weak[w->naccept_weak++], s);
    }
    return KILN_OK;
}

/* Evaluates `e` for a case; a failure is prefixed with the case and field. */
static enum kiln_rc eval_for_case(const struct workload *w, const struct wl_case *wc,
                                  const struct expr *e, const char *field, int64_t *out,
                                  struct kiln_err *err)
{
    struct expr_var vars[WL_MAX_SIZES];
    workload_case_vars(w, wc, vars);
    enum kiln_rc rc = expr_eval(e, vars, w->nsizes, out, err);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "case %s: %s", wc->name, field);
    return rc;
}

enum kiln_rc workload_case_shapes(const struct workload *w, const struct wl_case *wc,
                                  struct wl_shape shapes[WL_MAX_ARGS], struct kiln_err *err)
{
    for (size_t i = 0; i < w->nargs; i++) {
        const struct wl_arg *a = &w->args[i];
        if (a->kind != WL_ARG_TENSOR)
            continue;
        struct wl_shape *s = &shapes[a->tensor_index];
        s->arg = (int)i;
        s->dtype = a->dtype;
        s->ndim = a->ndim;
        s->count = 1;
        for (int d = 0; d < a->ndim; d++) {
            char field[PATH_MAX_MSG];
            snprintf(field, sizeof(field), "%s.shape[%d]", a->name, d);
            enum kiln_rc rc = eval_for_case(w, wc, a->shape[d], field, &s->shape[d], err);
            if (rc != KILN_OK)
                return rc;
            if (s->shape[d] < 1 || s->shape[d] > WL_DIM_MAX)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "case %s: %s = %" PRId64 " is not in 1..2^40 (\"%s\")", wc->name,
                                 field, s->shape[d], expr_text(a->shape[d]));
            if (__builtin_mul_overflow(s->count, (uint64_t)s->shape[d], &s->count))
                return kiln_fail(err, KILN_E_LIMIT, "case %s: %s has too many elements", wc->name,
                                 a->name);
        }
        if (__builtin_mul_overflow(s->count, (uint64_t)tensor_dtype_size(a->dtype), &s->nbytes))
            return kiln_fail(err, KILN_E_LIMIT, "case %s: %s has too many bytes", wc->name,
                             a->name);
    }
    return KILN_OK;
}

enum kiln_rc workload_case_cost(const struct workload *w, const struct wl_case *wc,
                                uint64_t *tensor_bytes, int64_t *cost_bytes, int64_t *cost_flops,
                                struct kiln_err *err)
{
    struct wl_shape shapes[WL_MAX_ARGS];
    enum kiln_rc rc = workload_case_shapes(w, wc, shapes, err);
    if (rc != KILN_OK)
        return rc;
    uint64_t total = 0;
    for (size_t i = 0; i < w->ntensors; i++)
        if (__builtin_add_overflow(total, shapes[i].nbytes, &total))
            return kiln_fail(err, KILN_E_LIMIT, "case %s: tensor bytes overflow", wc->name);
    int64_t b, f;
    if ((rc = eval_for_case(w, wc, w->cost_bytes, "cost.bytes", &b, err)) != KILN_OK ||
        (rc = eval_for_case(w, wc, w->cost_flops, "cost.flops", &f, err)) != KILN_OK)
        return rc;
    if (b < 0 || f < 0)
        return kiln_fail(err, KILN_E_REJECTED, "case %s: cost.%s is negative (%" PRId64 ")",
                         wc->name, b < 0 ? "bytes" : "flops", b < 0 ? b : f);
    *tensor_bytes = total;
    *cost_bytes = b;
    *cost_flops = f;
    return KILN_OK;
}

enum kiln_rc workload_case_int_scalar(const struct workload *w, const struct wl_case *wc, int arg,
                                      int64_t *value, struct kiln_err *err)
{
    if (arg < 0 || (size_t)arg >= w->nargs || w->args[arg].kind != WL_ARG_SCALAR ||
        (w->args[arg].type != WL_SCALAR_INT32 && w->args[arg].type != WL_SCALAR_INT64))
        return kiln_fail(err, KILN_E_USAGE, "argument %d is not an integer scalar", arg);
    const struct wl_arg *a = &w->args[arg];
    int64_t v = a->ivalue;
    if (a->expr) {
        enum kiln_rc rc = eval_for_case(w, wc, a->expr, a->name, &v, err);
        if (rc != KILN_OK)
            return rc;
    }
    if (a->type == WL_SCALAR_INT32 && (v < INT32_MIN || v > INT32_MAX))
        return kiln_fail(err, KILN_E_REJECTED, "case %s: %s = %" PRId64 " does not fit in int32",
                         wc->name, a->name, v);
    *value = v;
    return KILN_OK;
}

/* Evaluates everything that depends on a case, once, at load time. */
static enum kiln_rc check_case(struct ctx *c, struct wl_case *wc, uint64_t *total)
{
    const struct workload *w = c->w;
    enum kiln_rc rc =
        workload_case_cost(w, wc, &wc->bytes, &wc->cost_bytes, &wc->cost_flops, c->err);
    for (size_t i = 0; rc == KILN_OK && i < w->nargs; i++) {
        int64_t v;
        if (w->args[i].kind == WL_ARG_SCALAR && w->args[i].expr)
            rc = workload_case_int_scalar(w, wc, (int)i, &v, c->err);
    }
    for (int k = 0; rc == KILN_OK && k < 3 && w->baseline_expr[k]; k++) {
        int64_t v;
        char field[32];
        snprintf(field, sizeof(field), "baseline value %d", k + 1);
        rc = eval_for_case(w, wc, w->baseline_expr[k], field, &v, c->err);
        if (rc == KILN_OK && (v < 1 || (workload_baseline_is_gemm(w->baseline) && v > INT32_MAX)))
            rc = kiln_fail(c->err, KILN_E_REJECTED,
                           "case %s: %s = %" PRId64 " is out of range (1..%s)", wc->name, field, v,
                           workload_baseline_is_gemm(w->baseline) ? "2^31-1" : "2^63-1");
    }
    if (rc == KILN_OK && wc->bytes > WL_CASE_BYTES)
        rc = kiln_fail(c->err, KILN_E_LIMIT,
                       "case %s: its tensors take %" PRIu64 " bytes; the limit is 4 GiB", wc->name,
                       wc->bytes);
    if (rc == KILN_OK && (*total += wc->bytes) > WL_TOTAL_BYTES)
        rc = kiln_fail(c->err, KILN_E_LIMIT,
                       "cases up to %s take %" PRIu64 " bytes together; the limit is 32 GiB",
                       wc->name, *total);
    if (rc != KILN_OK)
        kiln_err_prefix(c->err, "%s", c->file);
    return rc;
}

static bool same_sizes(const struct workload *w, const struct wl_case *a, const struct wl_case *b)
{
    return memcmp(a->sizes, b->sizes, w->nsizes * sizeof(a->sizes[0])) == 0;
}

/* Per backend: a visible case, a performance case, and a held-out case
 * whose sizes no visible case of that backend has (so a candidate that
 * special-cases the visible sizes is caught). */
static enum kiln_rc check_coverage(struct ctx *c)
{
    const struct workload *w = c->w;
    for (unsigned b = 1; b <= KILN_BACKEND_CPU; b <<= 1) {
        if (!(w->backends & b))
            continue;
        const char *bn = kiln_backend_name((enum kiln_backend)b);
        bool perf = false, fresh = false;
        for (size_t i = 0; i < w->ncases; i++)
            perf = perf || ((w->cases[i].backends & b) && w->cases[i].kind == WL_CASE_PERFORMANCE);
        if (!perf)
            return fail(c, KILN_E_PARSE, "cases", "no performance case runs on the %s backend", bn);
        /* Drawn cases are unseen by construction (heldout.h). */
        fresh = w->held_draw.draw > 0;
        for (size_t h = 0; h < w->nheld_out && !fresh; h++) {
            if (!(w->held_out[h].backends & b))
                continue;
            bool seen = false;
            for (size_t i = 0; i < w->ncases; i++)
                seen = seen ||
                       ((w->cases[i].backends & b) && same_sizes(w, &w->cases[i], &w->held_out[h]));
            fresh = !seen;
        }
        if (!fresh)
            return fail(c, KILN_E_PARSE, "held_out",
                        "no held-out case of the %s backend has sizes that differ from every "
                        "visible case (add one with new sizes)",
                        bn);
    }
    return KILN_OK;
}

/* "provenance": who wrote the workload. Only "model-generated" exists: a
 * workload without the key was written by a person. */
static enum kiln_rc parse_provenance(struct ctx *c, json_t *j)
{
    char q[72];
    enum kiln_rc rc = want(c, j, JSON_STRING, "provenance", "a string");
    if (rc != KILN_OK)
        return rc;
    if (strcmp(json_string_value(j), "model-generated") != 0 ||
        json_string_length(j) != strlen("model-generated"))
        return fail(c, KILN_E_PARSE, "provenance",
                    "\"%s\" is not a provenance (the only one is \"model-generated\"; leave "
                    "the key out for a workload a person wrote)",
                    safe(json_string_value(j), q, sizeof(q)));
    c->w->provenance = WL_PROVENANCE_MODEL;
    return KILN_OK;
}

/* "scripts": {"memory_per_byte": N}, what the scripts need beyond the
 * defaults (workload.h). */
static enum kiln_rc parse_scripts(struct ctx *c, json_t *j)
{
    static const char *const keys[] = {"memory_per_byte", NULL};
    enum kiln_rc rc = want(c, j, JSON_OBJECT, "scripts", "an object");
    if (rc == KILN_OK)
        rc = check_keys(c, j, "scripts", keys, keys);
    json_t *m = json_object_get(j, "memory_per_byte");
    if (rc == KILN_OK)
        rc = want(c, m, JSON_INTEGER, "scripts.memory_per_byte", "an integer");
    if (rc != KILN_OK)
        return rc;
    if (json_integer_value(m) < 1 || json_integer_value(m) > WL_MAX_SCRIPT_MEMORY_PER_BYTE)
        return fail(c, KILN_E_PARSE, "scripts.memory_per_byte", "%lld is not in 1..%d",
                    (long long)json_integer_value(m), WL_MAX_SCRIPT_MEMORY_PER_BYTE);
    c->w->script_memory_per_byte = (int)json_integer_value(m);
    return KILN_OK;
}

/* "name": a lower-case workload name. */
static enum kiln_rc parse_name(struct ctx *c, json_t *v)
{
    char q[72];
    enum kiln_rc rc = want(c, v, JSON_STRING, "name", "a string");
    if (rc != KILN_OK)
        return rc;
    if (!lower_name_ok(json_string_value(v), WL_NAME_MAX) ||
        strlen(json_string_value(v)) != json_string_length(v))
        return fail(c, KILN_E_PARSE, "name", "\"%s\" is not a workload name ([a-z0-9_]{1,64})",
                    safe(json_string_value(v), q, sizeof(q)));
    strcpy(c->w->name, json_string_value(v));
    return KILN_OK;
}

/* "description": bounded text, no control character but newline. */
static enum kiln_rc parse_description(struct ctx *c, json_t *v)
{
    enum kiln_rc rc = want(c, v, JSON_STRING, "description", "a string");
    if (rc != KILN_OK)
        return rc;
    if (json_string_length(v) > WL_MAX_DESC)
        return fail(c, KILN_E_LIMIT, "description", "%zu bytes; at most %d", json_string_length(v),
                    WL_MAX_DESC);
    for (size_t i = 0; i < json_string_length(v); i++) {
        unsigned char ch = (unsigned char)json_string_value(v)[i];
        if (ch < 0x20 && ch != '\n')
            return fail(c, KILN_E_PARSE, "description", "control character 0x%02x at byte %zu", ch,
                        i);
    }
    if (!(c->w->description = strdup(json_string_value(v))))
        return kiln_fail(c->err, KILN_E_NOMEM, "out of memory");
    return KILN_OK;
}

/* "cost": {"bytes": EXPR, "flops": EXPR}. */
static enum kiln_rc parse_cost(struct ctx *c, json_t *v)
{
    static const char *const cost_keys[] = {"bytes", "flops", NULL};
    struct workload *w = c->w;
    enum kiln_rc rc;
    if ((rc = want(c, v, JSON_OBJECT, "cost", "an object")) != KILN_OK ||
        (rc = check_keys(c, v, "cost", cost_keys, cost_keys)) != KILN_OK ||
        (rc = get_expr(c, json_object_get(v, "bytes"), "cost.bytes", &w->cost_bytes)) != KILN_OK ||
        (rc = get_expr(c, json_object_get(v, "flops"), "cost.flops", &w->cost_flops)) != KILN_OK)
        return rc;
    return KILN_OK;
}

/* "held_out": an object describes a draw, an array lists fixed cases. */
static enum kiln_rc parse_held_out(struct ctx *c, json_t *v)
{
    return json_is_object(v) ? parse_held_out_draw(c, v) : parse_cases(c, v, "held_out", true);
}

/* Every fixed case, then every held-out one, under one byte total. */
static enum kiln_rc check_cases(struct ctx *c)
{
    struct workload *w = c->w;
    enum kiln_rc rc;
    uint64_t total = 0;
    for (size_t i = 0; i < w->ncases; i++)
        if ((rc = check_case(c, &w->cases[i], &total)) != KILN_OK)
            return rc;
    for (size_t i = 0; i < w->nheld_out; i++)
        if ((rc = check_case(c, &w->held_out[i], &total)) != KILN_OK)
            return rc;
    return KILN_OK;
}

/* A trial draw per backend: ranges, constraints and budget that leave
 * no valid case are the author's error, said now rather than at the
 * end of a run. */
static enum kiln_rc trial_draws(struct ctx *c)
{
    struct workload *w = c->w;
    enum kiln_rc rc = KILN_OK;
    for (unsigned b = 1; w->held_draw.draw > 0 && b <= KILN_BACKEND_CPU; b <<= 1) {
        struct heldout_set *trial = (w->backends & b) ? malloc(sizeof(*trial)) : NULL;
        if ((w->backends & b) && !trial)
            return kiln_fail(c->err, KILN_E_NOMEM, "out of memory");
        if (trial)
            rc = heldout_draw(w, b, 0, trial, c->err);
        free(trial);
        if (rc != KILN_OK) {
            kiln_err_prefix(c->err, "%s: held_out", c->file);
            return rc;
        }
    }
    return KILN_OK;
}

/* One section of workload.json when its key is there: parsed, a failure
 * kept as a problem. True when it parsed (what depends on it may go on). */
static bool section(struct ctx *c, json_t *root, const char *key,
                    enum kiln_rc (*parse)(struct ctx *, json_t *))
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return false;
    if (parse(c, v) == KILN_OK && c->err->rc == KILN_OK)
        return true;
    keep_problem(c);
    return false;
}

static enum kiln_rc parse_backends_top(struct ctx *c, json_t *v)
{
    return parse_backends(c, v, "backends", &c->w->backends);
}

static enum kiln_rc parse_cases_top(struct ctx *c, json_t *v)
{
    return parse_cases(c, v, "cases", false);
}

/* Every section is read, a failure kept as a problem, and the next ones
 * go on where they do not depend on it (the signature needs the sizes,
 * the cases need the sizes and backends, ...), so one run names every
 * problem; the checks across sections run when all of them parsed. */
static void parse_sections(struct ctx *c, json_t *root)
{
    static const char *const keys[] = {"name",     "description", "sizes",       "signature",
                                       "cases",    "held_out",    "tolerance",   "cost",
                                       "backends", "baseline",    "accept_weak", "provenance",
                                       "scripts",  "math",        NULL};
    static const char *const req[] = {"name",     "description", "sizes", "signature", "cases",
                                      "held_out", "tolerance",   "cost",  "backends",  NULL};
    check_top_keys(c, root, keys, req);
    section(c, root, "name", parse_name);
    section(c, root, "description", parse_description);
    section(c, root, "provenance", parse_provenance);
    bool backends = section(c, root, "backends", parse_backends_top);
    bool sizes = section(c, root, "sizes", parse_sizes);
    bool sig = sizes && section(c, root, "signature", parse_signature);
    bool cost = sizes && section(c, root, "cost", parse_cost);
    bool baseline = !json_object_get(root, "baseline") ||
                    (sizes && section(c, root, "baseline", parse_baseline));
    bool cases = sizes && backends && section(c, root, "cases", parse_cases_top);
    bool held = cases && section(c, root, "held_out", parse_held_out);
    bool tol = sig && section(c, root, "tolerance", parse_tolerance);
    bool weak = !json_object_get(root, "accept_weak") ||
                (cases && section(c, root, "accept_weak", parse_accept_weak));
    bool scripts = !json_object_get(root, "scripts") || section(c, root, "scripts", parse_scripts);
    c->w->math = GPU_UNIT_MASK(GPU_UNIT_FP32_SIMT);
    bool math = !json_object_get(root, "math") || section(c, root, "math", parse_math);
    if (c->probs.n || !(sig && cost && baseline && held && tol && weak && scripts && math))
        return;
    if (check_cases(c) != KILN_OK || check_coverage(c) != KILN_OK || trial_draws(c) != KILN_OK)
        keep_problem(c);
}

/* The problems as one error: a single one as it was said ("DIR/
 * workload.json: cases[0].sizes.n: ..."), several as "DIR/workload.json: N
 * problems:" and one line each, as many as the message holds. */
static enum kiln_rc say_problems(struct ctx *c)
{
    char msg[KILN_ERR_MSG_MAX];
    if (c->probs.n == 1) {
        snprintf(msg, sizeof(msg), "%s: %.*s", c->file, (int)strcspn(c->probs.text, "\n"),
                 c->probs.text);
        return kiln_fail(c->err, c->first_rc, "%s", msg);
    }
    int off = snprintf(msg, sizeof(msg), "%s: %zu problems:", c->file, c->probs.n);
    size_t shown = 0;
    for (const char *p = c->probs.text; *p;) {
        size_t n = strcspn(p, "\n");
        /* Room for this line and the "and N more" tail after it. */
        if ((size_t)off + n + 3 + 32 >= sizeof(msg))
            break;
        off += snprintf(msg + off, sizeof(msg) - (size_t)off, "\n  %.*s", (int)n, p);
        shown++;
        p += n + (p[n] == '\n');
    }
    if (shown < c->probs.n)
        snprintf(msg + off, sizeof(msg) - (size_t)off, "\n  ... and %zu more", c->probs.n - shown);
    return kiln_fail(c->err, c->first_rc, "%s", msg);
}

static enum kiln_rc parse_root(struct ctx *c, json_t *root)
{
    if (want(c, root, JSON_OBJECT, "(top level)", "an object") != KILN_OK)
        return c->err->rc;
    parse_sections(c, root);
    return c->probs.n ? say_problems(c) : KILN_OK;
}

static void set_file(struct ctx *c, const char *dirname)
{
    if (dirname) {
        char q[200];
        snprintf(c->file, sizeof(c->file), "%s/workload.json", safe(dirname, q, sizeof(q)));
    } else {
        snprintf(c->file, sizeof(c->file), "workload.json");
    }
}

/* Parses `text` with the context `c` (its file name set). */
static enum kiln_rc parse_json_ctx(struct ctx *c, const char *text, size_t len,
                                   struct workload **out)
{
    static const struct json_strict_rules rules = {
        .max_bytes = WL_MAX_JSON, .max_depth = WL_MAX_DEPTH, .any_top = true};
    json_t *root;
    /* section() reads c->err->rc to tell a problem was kept: a caller's earlier
     * error left in `err` must not read as one of ours. */
    kiln_err_clear(c->err);
    enum kiln_rc jrc = json_strict_parse(c->file, text, len, &rules, &root, c->err);
    if (jrc != KILN_OK)
        return jrc;
    struct workload *w = calloc(1, sizeof(*w));
    if (!w) {
        json_decref(root);
        return kiln_fail(c->err, KILN_E_NOMEM, "out of memory loading %s", c->file);
    }
    c->w = w;
    enum kiln_rc rc = parse_root(c, root);
    json_decref(root);
    if (rc != KILN_OK) {
        workload_free(w);
        return rc;
    }
    *out = w;
    return KILN_OK;
}

/* workload_parse_json, and every problem into *probs (NULL: not wanted).
 * The context is on the heap: it holds the problem list. */
static enum kiln_rc parse_json(const char *text, size_t len, const char *dirname,
                               struct workload **out, struct wl_problems *probs,
                               struct kiln_err *err)
{
    *out = NULL;
    if (probs)
        probs->n = 0, probs->text[0] = '\0';
    struct ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory loading workload.json");
    c->err = err;
    set_file(c, dirname);
    enum kiln_rc rc = parse_json_ctx(c, text, len, out);
    if (probs)
        *probs = c->probs;
    free(c);
    return rc;
}

enum kiln_rc workload_parse_json(const char *text, size_t len, const char *dirname,
                                 struct workload **out, struct kiln_err *err)
{
    return parse_json(text, len, dirname, out, NULL, err);
}

enum kiln_rc workload_parse_json_problems(const char *text, size_t len, const char *dirname,
                                          struct workload **out, struct wl_problems *probs,
                                          struct kiln_err *err)
{
    return parse_json(text, len, dirname, out, probs, err);
}

/* Reads `name` in `dirfd`: a regular file opened without following a
 * symlink (O_NONBLOCK so a FIFO cannot stall the open), at most `cap`
 * bytes. A missing optional file is left absent. */
static enum kiln_rc read_member(int dirfd, const char *dir, const char *name, size_t cap,
                                bool required, struct wl_file_data *f, struct kiln_err *err)
{
    char q[200];
    safe(dir, q, sizeof(q));
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT && !required)
            return KILN_OK;
        if (errno == ELOOP)
            return kiln_fail(err, KILN_E_REJECTED,
                             "%s/%s is a symbolic link; a workload holds regular files only", q,
                             name);
        if (errno == ENOENT)
            return kiln_fail(err, KILN_E_NOTFOUND,
                             "%s/%s is missing (workloads/README.md lists the files each "
                             "backend needs)",
                             q, name);
        return kiln_fail_errno(err, KILN_E_IO, "opening %s/%s", q, name);
    }
    struct stat st;
    enum kiln_rc rc = KILN_OK;
    if (fstat(fd, &st) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "stat %s/%s", q, name);
    else if (!S_ISREG(st.st_mode))
        rc = kiln_fail(err, KILN_E_REJECTED, "%s/%s is not a regular file", q, name);
    else if ((uint64_t)st.st_size > cap)
        rc = kiln_fail(err, KILN_E_LIMIT, "%s/%s is %lld bytes; the limit is %zu", q, name,
                       (long long)st.st_size, cap);
    char *buf = NULL;
    size_t len = 0;
    if (rc == KILN_OK && !(buf = malloc(cap + 2)))
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory reading %s/%s", q, name);
    /* Read up to cap + 1 bytes: a file that grew since fstat is caught. */
    while (rc == KILN_OK && len <= cap) {
        ssize_t n = read(fd, buf + len, cap + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = kiln_fail_errno(err, KILN_E_IO, "reading %s/%s", q, name);
        else if (n == 0)
            break;
        else
            len += (size_t)n;
    }
    if (rc == KILN_OK && len > cap)
        rc = kiln_fail(err, KILN_E_LIMIT, "%s/%s grew past the limit of %zu bytes", q, name, cap);
    close(fd);
    if (rc != KILN_OK) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    f->present = true;
    f->data = buf;
    f->len = len;
    return KILN_OK;
}

enum wl_file workload_kernel_file(enum kiln_backend b)
{
    return b == KILN_BACKEND_CUDA ? WL_FILE_KERNEL_CU : WL_FILE_KERNEL_C;
}

const struct wl_file_data *workload_start_kernel(const struct workload *w, enum kiln_backend b)
{
    const struct wl_file_data *f = &w->files[workload_kernel_file(b)];
    return f->present ? f : NULL;
}

const char *workload_file_name(enum wl_file f)
{
    switch (f) {
    case WL_FILE_JSON:
        return "workload.json";
    case WL_FILE_INPUTS:
        return "inputs.py";
    case WL_FILE_REFERENCE:
        return "reference.py";
    case WL_FILE_KERNEL_CU:
        return "kernel.cu";
    case WL_FILE_KERNEL_C:
        return "kernel.c";
    case WL_FILE_COUNT:
        break;
    }
    return "?";
}

/* Content hash: for each file in enum order, its name and NUL, its length
 * as 8 little-endian bytes (all ones when absent), then its bytes. */
static void hash_files(struct workload *w)
{
    struct sha256_ctx sc;
    uint8_t digest[SHA256_DIGEST_LEN];
    sha256_init(&sc);
    for (int f = 0; f < WL_FILE_COUNT; f++) {
        const char *name = workload_file_name((enum wl_file)f);
        uint64_t len = w->files[f].present ? (uint64_t)w->files[f].len : UINT64_MAX;
        uint8_t le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)(len >> (8 * i));
        sha256_update(&sc, name, strlen(name) + 1);
        sha256_update(&sc, le, sizeof(le));
        if (w->files[f].present)
            sha256_update(&sc, w->files[f].data, w->files[f].len);
    }
    sha256_final(&sc, digest);
    sha256_hex(digest, w->hash);
}

enum kiln_rc workload_load(const char *dir, struct workload **out, struct kiln_err *err)
{
    return workload_load_problems(dir, out, NULL, err);
}

enum kiln_rc workload_load_problems(const char *dir, struct workload **out,
                                    struct wl_problems *probs, struct kiln_err *err)
{
    *out = NULL;
    if (probs)
        probs->n = 0, probs->text[0] = '\0';
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        char q[200];
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO,
                               "opening workload directory %s", safe(dir, q, sizeof(q)));
    }
    struct wl_file_data json = {0};
    struct workload *w = NULL;
    enum kiln_rc rc = read_member(dirfd, dir, "workload.json", WL_MAX_JSON, true, &json, err);
    if (rc == KILN_OK)
        rc = parse_json(json.data, json.len, dir, &w, probs, err);
    if (rc != KILN_OK) {
        free(json.data);
        close(dirfd);
        return rc;
    }
    w->files[WL_FILE_JSON] = json;
    static const struct {
        enum wl_file f;
        size_t cap;
        unsigned backend; /* 0: every workload needs it */
        bool required;    /* a starting kernel is optional (workloads/README.md) */
    } members[] = {
        {WL_FILE_INPUTS, WL_MAX_SCRIPT, 0, true},
        {WL_FILE_REFERENCE, WL_MAX_SCRIPT, 0, true},
        {WL_FILE_KERNEL_CU, WL_MAX_KERNEL, KILN_BACKEND_CUDA, false},
        {WL_FILE_KERNEL_C, WL_MAX_KERNEL, KILN_BACKEND_CPU, false},
    };
    for (size_t i = 0; rc == KILN_OK && i < sizeof(members) / sizeof(members[0]); i++) {
        /* A kernel for a backend the workload lacks is neither read nor hashed. */
        if (members[i].backend && !(w->backends & members[i].backend))
            continue;
        rc = read_member(dirfd, dir, workload_file_name(members[i].f), members[i].cap,
                         members[i].required, &w->files[members[i].f], err);
    }
    close(dirfd);
    if (rc != KILN_OK) {
        workload_free(w);
        return rc;
    }
    hash_files(w);
    *out = w;
    return KILN_OK;
}

void workload_free(struct workload *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < WL_MAX_ARGS; i++) {
        for (int d = 0; d < TENSOR_MAX_DIMS; d++)
            expr_free(w->args[i].shape[d]);
        expr_free(w->args[i].expr);
    }
    for (size_t i = 0; i < WL_MAX_SIZES; i++) {
        expr_free(w->held_draw.lo_expr[i]);
        expr_free(w->held_draw.hi_expr[i]);
    }
    for (size_t i = 0; i < WL_MAX_WHERE; i++) {
        expr_free(w->held_draw.where[i].lhs);
        expr_free(w->held_draw.where[i].rhs);
    }
    expr_free(w->cost_bytes);
    expr_free(w->cost_flops);
    for (int k = 0; k < 3; k++)
        expr_free(w->baseline_expr[k]);
    for (int f = 0; f < WL_FILE_COUNT; f++)
        free(w->files[f].data);
    free(w->description);
    free(w);
}

const struct wl_case *workload_case_by_name(const struct workload *w, const char *name)
{
    for (size_t i = 0; i < w->ncases; i++)
        if (strcmp(w->cases[i].name, name) == 0)
            return &w->cases[i];
    for (size_t i = 0; i < w->nheld_out; i++)
        if (strcmp(w->held_out[i].name, name) == 0)
            return &w->held_out[i];
    return NULL;
}

int workload_arg_index(const struct workload *w, const char *name)
{
    for (size_t i = 0; i < w->nargs; i++)
        if (strcmp(w->args[i].name, name) == 0)
            return (int)i;
    return -1;
}

int workload_size_index(const struct workload *w, const char *name)
{
    for (size_t i = 0; i < w->nsizes; i++)
        if (strcmp(w->size_names[i], name) == 0)
            return (int)i;
    return -1;
}

void workload_case_vars(const struct workload *w, const struct wl_case *wc,
                        struct expr_var vars[WL_MAX_SIZES])
{
    for (size_t i = 0; i < w->nsizes; i++) {
        vars[i].name = w->size_names[i];
        vars[i].value = wc->sizes[i];
    }
}

struct compare_tol workload_tolerance(const struct workload *wl, int arg)
{
    struct compare_tol tol = compare_default_tol(wl->args[arg].dtype);
    for (size_t k = 0; k < wl->ntolerances; k++) {
        if (wl->tolerances[k].arg != arg)
            continue;
        if (wl->tolerances[k].has_atol)
            tol.atol = wl->tolerances[k].atol;
        if (wl->tolerances[k].has_rtol)
            tol.rtol = wl->tolerances[k].rtol;
    }
    return tol;
}
