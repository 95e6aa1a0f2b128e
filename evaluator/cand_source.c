/* cand_source.c - a candidate's parameter lists and tunable uses, read
 * from its text (cand_source.h). */
#include "cand_source.h"
#include "cpu_trampoline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A token of C or CUDA text: what the checks below need, no more. */
enum tok_kind { T_END, T_IDENT, T_PUNCT, T_OTHER };

struct tok {
    enum tok_kind kind;
    const char *p;
    size_t n;
    int line;
    bool pp; /* on a preprocessor line */
};

struct lex {
    const char *s;
    size_t len, i;
    int line;
    bool bol; /* only blanks so far on this line */
    bool pp;  /* inside a preprocessor line */
};

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

/* A newline: the end of a preprocessor line unless escaped. */
static void newline(struct lex *x)
{
    if (!(x->i > 0 && x->s[x->i - 1] == '\\'))
        x->pp = false;
    x->line++;
    x->bol = true;
    x->i++;
}

/* Skips blanks, newlines and comments; false at the end. */
static bool skip_space(struct lex *x)
{
    while (x->i < x->len) {
        char c = x->s[x->i];
        if (c == '\n') {
            newline(x);
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            x->i++;
        } else if (c == '/' && x->i + 1 < x->len && x->s[x->i + 1] == '/') {
            while (x->i < x->len && x->s[x->i] != '\n')
                x->i++;
        } else if (c == '/' && x->i + 1 < x->len && x->s[x->i + 1] == '*') {
            x->i += 2;
            while (x->i < x->len &&
                   !(x->s[x->i] == '*' && x->i + 1 < x->len && x->s[x->i + 1] == '/')) {
                if (x->s[x->i] == '\n')
                    newline(x);
                else
                    x->i++;
            }
            x->i = x->i + 2 < x->len ? x->i + 2 : x->len;
        } else {
            return true;
        }
    }
    return false;
}

/* A string or character literal from its quote to its end (or the line's). */
static void skip_literal(struct lex *x)
{
    char q = x->s[x->i++];
    while (x->i < x->len && x->s[x->i] != q && x->s[x->i] != '\n')
        x->i += x->s[x->i] == '\\' && x->i + 1 < x->len ? 2 : 1;
    if (x->i < x->len && x->s[x->i] == q)
        x->i++;
}

static struct tok lex_next(struct lex *x)
{
    struct tok t = {.kind = T_END};
    if (!skip_space(x))
        return t;
    char c = x->s[x->i];
    if (x->bol && c == '#')
        x->pp = true;
    x->bol = false;
    t.p = x->s + x->i;
    t.line = x->line;
    t.pp = x->pp;
    size_t start = x->i;
    if (ident_start(c)) {
        while (x->i < x->len && ident_char(x->s[x->i]))
            x->i++;
        t.kind = T_IDENT;
    } else if (c >= '0' && c <= '9') {
        while (x->i < x->len && (ident_char(x->s[x->i]) || x->s[x->i] == '.'))
            x->i++;
        t.kind = T_OTHER;
    } else if (c == '"' || c == '\'') {
        skip_literal(x);
        t.kind = T_OTHER;
    } else {
        x->i++;
        t.kind = T_PUNCT;
    }
    t.n = x->i - start;
    return t;
}

static bool is(const struct tok *t, const char *text)
{
    return t->n == strlen(text) && !memcmp(t->p, text, t->n);
}

/* Marks the tunables `s` (len bytes) names outside comments and strings. */
static void mark_uses(const char *s, size_t len, const struct candidate *c, bool *used)
{
    struct lex x = {.s = s, .len = len, .line = 1, .bol = true};
    for (struct tok t = lex_next(&x); t.kind != T_END; t = lex_next(&x))
        for (size_t k = 0; t.kind == T_IDENT && k < c->ntunables; k++)
            used[k] |= is(&t, c->tunables[k].name);
}

void cand_source_tunables_used(const char *src, size_t len, const struct candidate *c, bool *used)
{
    memset(used, 0, c->ntunables * sizeof(*used));
    mark_uses(src, len, c, used);
    /* A `// kiln: launch` line is a comment to the lexer, yet its grid
     * (min(..., GRID_CAP)) uses tunables: lex its text on its own. */
    static const char directive[] = "kiln: launch";
    for (size_t at = 0; at < len;) {
        size_t end = at;
        while (end < len && src[end] != '\n')
            end++;
        const char *hit = memmem(src + at, end - at, directive, sizeof(directive) - 1);
        if (hit) {
            const char *rest = hit + sizeof(directive) - 1;
            mark_uses(rest, (size_t)(src + end - rest), c, used);
        }
        at = end + 1;
    }
}

/* ---- parameter lists ---- */

/* What a parameter is, as far as the ABI goes. */
enum pkind { P_UNKNOWN, P_I1, P_I2, P_I4, P_I8, P_F4, P_F8, P_PTR };

static const char *pkind_text(enum pkind k)
{
    static const char *const names[] = {"of a type kiln does not know",
                                        "a 1-byte integer",
                                        "a 2-byte integer",
                                        "a 4-byte integer",
                                        "an 8-byte integer",
                                        "a float",
                                        "a double",
                                        "a pointer"};
    return names[k];
}

#define PARAM_TOKS 32 /* tokens of one parameter judged; longer: not judged */
#define FN_PARAMS  40 /* parameters of one function judged; more: not judged */

struct param {
    struct tok t[PARAM_TOKS];
    size_t n;
    bool too_long;
};

/* One definition: its parameters (`variadic`: it ends in ...). */
struct fn_def {
    struct param p[FN_PARAMS];
    size_t n;
    int line;
    bool variadic, too_many;
};

/* The words a scalar type is made of; anything else is not judged. */
static enum pkind scalar_kind(const struct tok *w, size_t n)
{
    int longs = 0, ints = 0, shorts = 0, chars = 0, floats = 0, doubles = 0, fixed8 = 0, fixed4 = 0;
    static const char *const eight[] = {"int64_t",   "uint64_t", "size_t",    "ssize_t",
                                        "ptrdiff_t", "intptr_t", "uintptr_t", NULL};
    static const char *const four[] = {"int32_t", "uint32_t", NULL};
    for (size_t i = 0; i < n; i++) {
        bool known = true;
        if (is(&w[i], "long"))
            longs++;
        else if (is(&w[i], "int"))
            ints++;
        else if (is(&w[i], "short"))
            shorts++;
        else if (is(&w[i], "char"))
            chars++;
        else if (is(&w[i], "float"))
            floats++;
        else if (is(&w[i], "double"))
            doubles++;
        else if (!is(&w[i], "unsigned") && !is(&w[i], "signed"))
            known = false;
        for (size_t k = 0; !known && eight[k]; k++)
            known = is(&w[i], eight[k]) && ++fixed8;
        for (size_t k = 0; !known && four[k]; k++)
            known = is(&w[i], four[k]) && ++fixed4;
        if (!known)
            return P_UNKNOWN;
    }
    if (floats)
        return n == 1 ? P_F4 : P_UNKNOWN;
    if (doubles)
        return n == 1 ? P_F8 : P_UNKNOWN; /* long double: not judged */
    if (fixed8 || fixed4)
        return n == 1 ? (fixed8 ? P_I8 : P_I4) : P_UNKNOWN;
    if (chars)
        return P_I1;
    if (shorts)
        return P_I2;
    return longs ? P_I8 : P_I4; /* LP64: long and long long are 8 bytes */
}

static bool qualifier(const struct tok *t)
{
    static const char *const q[] = {"const",      "volatile",     "register", "restrict",
                                    "__restrict", "__restrict__", NULL};
    for (size_t i = 0; q[i]; i++)
        if (is(t, q[i]))
            return true;
    return false;
}

static bool type_word(const struct tok *t)
{
    static const char *const w[] = {"long",    "int",      "short",     "char",     "float",
                                    "double",  "unsigned", "signed",    "int64_t",  "uint64_t",
                                    "size_t",  "ssize_t",  "ptrdiff_t", "intptr_t", "uintptr_t",
                                    "int32_t", "uint32_t", NULL};
    for (size_t i = 0; w[i]; i++)
        if (is(t, w[i]))
            return true;
    return false;
}

/* The parameter's kind, and its name (*name NULL when it has none). */
static enum pkind param_kind(const struct param *p, const struct tok **name)
{
    *name = NULL;
    if (p->too_long)
        return P_UNKNOWN;
    struct tok words[PARAM_TOKS];
    size_t nw = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct tok *t = &p->t[i];
        if (is(t, "="))
            break; /* a C++ default argument */
        if (is(t, "*") || is(t, "["))
            return P_PTR;
        if (t->kind == T_PUNCT || t->kind == T_OTHER)
            return P_UNKNOWN; /* a reference, a function pointer, an attribute */
        if (!qualifier(t))
            words[nw++] = *t;
    }
    /* The last word is the parameter's name unless it is part of the type. */
    if (nw >= 2 && !type_word(&words[nw - 1])) {
        for (size_t i = 0; i < p->n; i++)
            if (p->t[i].p == words[nw - 1].p)
                *name = &p->t[i];
        nw--;
    }
    return nw ? scalar_kind(words, nw) : P_UNKNOWN;
}

/* Reads the parameter list after `(` up to its `)`; true when the list
 * ended and a `{` follows (a definition, not a call or a prototype). */
static bool read_params(struct lex *x, struct fn_def *d)
{
    memset(d, 0, sizeof(*d));
    int depth = 1;
    struct param *cur = &d->p[0];
    bool any = false;
    for (struct tok t = lex_next(x); t.kind != T_END; t = lex_next(x)) {
        if (is(&t, "(") || is(&t, "[") || is(&t, "<"))
            depth++;
        if ((is(&t, ")") || is(&t, "]") || is(&t, ">")) && --depth == 0) {
            d->n = any ? (size_t)(cur - d->p) + 1 : 0;
            struct tok after = lex_next(x);
            return is(&after, "{");
        }
        if (is(&t, ",") && depth == 1) {
            if ((size_t)(cur - d->p) + 1 >= FN_PARAMS) {
                d->too_many = true;
                continue;
            }
            cur++;
            continue;
        }
        if (is(&t, ".") && !d->too_many)
            d->variadic = true;
        any = true;
        if (cur->n < PARAM_TOKS)
            cur->t[cur->n++] = t;
        else
            cur->too_long = true;
    }
    return false;
}

/* The definition of `name`, when the text defines it exactly once. */
static bool find_definition(const char *src, size_t len, const char *name, struct fn_def *d)
{
    struct fn_def *tmp = malloc(sizeof(*tmp));
    if (!tmp)
        return false; /* not judged */
    struct lex x = {.s = src, .len = len, .line = 1, .bol = true};
    int found = 0;
    for (struct tok t = lex_next(&x); t.kind != T_END; t = lex_next(&x)) {
        if (t.kind != T_IDENT || t.pp || !is(&t, name))
            continue;
        struct tok open = lex_next(&x);
        if (is(&open, "(") && !open.pp && read_params(&x, tmp) && ++found == 1) {
            *d = *tmp;
            d->line = t.line;
        }
    }
    free(tmp);
    /* void f(void): no parameters. */
    if (found == 1 && d->n == 1 && d->p[0].n == 1 && is(&d->p[0].t[0], "void"))
        d->n = 0;
    return found == 1 && !d->too_many;
}

/* What the signature passes for argument `a`. */
static enum pkind expected_kind(const struct wl_arg *a)
{
    if (a->kind == WL_ARG_TENSOR)
        return P_PTR;
    switch (a->type) {
    case WL_SCALAR_INT32:
        return P_I4;
    case WL_SCALAR_INT64:
        return P_I8;
    case WL_SCALAR_FLOAT32:
        return P_F4;
    case WL_SCALAR_FLOAT64:
        return P_F8;
    }
    return P_UNKNOWN;
}

static const char *scalar_ctype(enum wl_scalar_type t)
{
    switch (t) {
    case WL_SCALAR_INT32:
        return "int";
    case WL_SCALAR_INT64:
        return "long long";
    case WL_SCALAR_FLOAT32:
        return "float";
    case WL_SCALAR_FLOAT64:
        return "double";
    }
    return "?";
}

/* The parameter as written, blanks collapsed, at most 60 bytes. */
static void param_text(const struct param *p, char *out, size_t cap)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < p->n && off + 1 < cap; i++) {
        bool glue = i == 0 || is(&p->t[i], "*") || is(&p->t[i - 1], "*");
        off += (size_t)snprintf(out + off, cap - off, "%s%.*s", glue ? "" : " ", (int)p->t[i].n,
                                p->t[i].p);
    }
    if (off >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

/* The declaration to write for argument `a` named `pname`. */
static void declaration(const struct wl_arg *a, const char *pname, char *out, size_t cap)
{
    if (a->kind == WL_ARG_TENSOR) {
        const char *t = cpu_trampoline_elem_type(a->dtype);
        snprintf(out, cap, "%s%s *%s", a->role == WL_ROLE_IN ? "const " : "", t ? t : "T", pname);
    } else {
        snprintf(out, cap, "%s %s", scalar_ctype(a->type), pname);
    }
}

static enum kiln_rc check_launch(const char *src, size_t len, const struct cand_launch *l,
                                 const struct workload *w, struct kiln_err *err)
{
    struct fn_def *d = malloc(sizeof(*d));
    if (!d)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory reading the parameters");
    enum kiln_rc rc = KILN_OK;
    if (!find_definition(src, len, l->kernel, d) || d->variadic) {
        free(d);
        return KILN_OK;
    }
    /* A lone unknown word may be a macro standing for several parameters:
     * then the list is not judged (its positions may not be the launch's). */
    bool macro = false;
    for (size_t i = 0; i < d->n; i++)
        macro |= d->p[i].n == 1 && d->p[i].t[0].kind == T_IDENT && !type_word(&d->p[i].t[0]);
    if (macro) {
        free(d);
        return KILN_OK;
    }
    if (d->n != l->nargs) {
        char list[512] = "";
        for (size_t i = 0, off = 0; i < l->nargs && off < sizeof(list); i++)
            off +=
                (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "", l->args[i]);
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "line %d: %s takes %zu parameter%s, but its launch passes %zu: args(%s)",
                       d->line, l->kernel, d->n, d->n == 1 ? "" : "s", l->nargs, list);
    }
    for (size_t i = 0; rc == KILN_OK && i < d->n; i++) {
        int ai = workload_arg_index(w, l->args[i]);
        if (ai < 0)
            continue; /* plan_check_names says so */
        const struct wl_arg *a = &w->args[ai];
        const struct tok *name;
        enum pkind got = param_kind(&d->p[i], &name), want = expected_kind(a);
        if (got == P_UNKNOWN || got == want)
            continue;
        char as[80], pn[72], decl[160];
        param_text(&d->p[i], as, sizeof(as));
        snprintf(pn, sizeof(pn), "%.*s", name ? (int)name->n : (int)strlen(a->name),
                 name ? name->p : a->name);
        declaration(a, pn, decl, sizeof(decl));
        int pline = d->p[i].n ? d->p[i].t[0].line : d->line;
        if (a->kind == WL_ARG_TENSOR)
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "line %d: %s's parameter %zu `%s` is %s, but args() passes %s, a "
                           "tensor (a pointer to its %s elements): declare it `%s`",
                           pline, l->kernel, i + 1, as, pkind_text(got), a->name,
                           tensor_dtype_name(a->dtype), decl);
        else
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "line %d: %s's parameter %zu `%s` is %s, but args() passes %s, %s %s "
                           "in the workload's signature: declare it `%s` (evaluator/"
                           "CANDIDATE.md, scalar argument types)",
                           pline, l->kernel, i + 1, as, pkind_text(got), a->name,
                           a->type == WL_SCALAR_INT32 || a->type == WL_SCALAR_INT64 ? "an" : "a",
                           a->type == WL_SCALAR_INT32     ? "int32"
                           : a->type == WL_SCALAR_INT64   ? "int64"
                           : a->type == WL_SCALAR_FLOAT32 ? "float32"
                                                          : "float64",
                           decl);
    }
    free(d);
    return rc;
}

enum kiln_rc cand_source_check_params(const char *src, size_t len, const struct candidate *c,
                                      const struct workload *w, struct kiln_err *err)
{
    for (size_t l = 0; l < c->nlaunches; l++) {
        enum kiln_rc rc = check_launch(src, len, &c->launches[l], w, err);
        if (rc != KILN_OK)
            return rc;
    }
    return KILN_OK;
}
