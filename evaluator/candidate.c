/* candidate.c - extracts `// kiln:` directives from a candidate source. The
 * source is scanned as bytes, line by line; only directive lines are
 * parsed, each into a bounded copy, so nothing else in the file matters. */
#include "candidate.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devlimits.h"

/* A cursor over one NUL-terminated directive line. */
struct cursor {
    const char *s;
    size_t pos;
    int line;
    struct kiln_err *err;
};

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void skip_ws(struct cursor *c)
{
    while (c->s[c->pos] == ' ' || c->s[c->pos] == '\t')
        c->pos++;
}

/* Reads a C identifier of at most CAND_NAME_MAX bytes into `name`. */
static enum kiln_rc read_ident(struct cursor *c, char name[CAND_NAME_MAX + 1], const char *what)
{
    skip_ws(c);
    size_t start = c->pos;
    if (!is_alpha(c->s[c->pos]))
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: column %zu: expected %s", c->line,
                         start + 1, what);
    while (is_alpha(c->s[c->pos]) || is_digit(c->s[c->pos]))
        c->pos++;
    size_t len = c->pos - start;
    if (len > CAND_NAME_MAX)
        return kiln_fail(c->err, KILN_E_LIMIT, "line %d: column %zu: %s longer than %d bytes",
                         c->line, start + 1, what, CAND_NAME_MAX);
    memcpy(name, c->s + start, len);
    name[len] = '\0';
    return KILN_OK;
}

static enum kiln_rc read_int(struct cursor *c, int64_t *out)
{
    skip_ws(c);
    size_t start = c->pos;
    bool neg = c->s[c->pos] == '-';
    if (neg)
        c->pos++;
    if (!is_digit(c->s[c->pos]))
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: column %zu: expected an integer", c->line,
                         start + 1);
    int64_t v = 0;
    while (is_digit(c->s[c->pos])) {
        int64_t d = c->s[c->pos] - '0';
        /* Accumulate negatively so INT64_MIN itself is representable. */
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_sub_overflow(v, d, &v))
            return kiln_fail(c->err, KILN_E_PARSE,
                             "line %d: column %zu: integer does not fit in int64", c->line,
                             start + 1);
        c->pos++;
    }
    if (!neg && v == INT64_MIN)
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: column %zu: integer does not fit in int64",
                         c->line, start + 1);
    *out = neg ? v : -v;
    return KILN_OK;
}

static enum kiln_rc expect_char(struct cursor *c, char ch)
{
    skip_ws(c);
    if (c->s[c->pos] != ch)
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: column %zu: expected '%c'", c->line,
                         c->pos + 1, ch);
    c->pos++;
    return KILN_OK;
}

static enum kiln_rc expect_end(struct cursor *c)
{
    skip_ws(c);
    if (c->s[c->pos] != '\0')
        return kiln_fail(c->err, KILN_E_PARSE,
                         "line %d: column %zu: unexpected text after the directive", c->line,
                         c->pos + 1);
    return KILN_OK;
}

static enum kiln_rc parse_tunable(struct candidate *cand, struct cursor *c)
{
    if (cand->ntunables >= CAND_MAX_TUNABLES)
        return kiln_fail(c->err, KILN_E_LIMIT, "line %d: more than %d tunables", c->line,
                         CAND_MAX_TUNABLES);
    struct cand_tunable *t = &cand->tunables[cand->ntunables];
    enum kiln_rc rc = read_ident(c, t->name, "a tunable name");
    if (rc != KILN_OK)
        return rc;
    if (!expr_ident_valid(t->name) || strncmp(t->name, "__", 2) == 0 ||
        strncmp(t->name, "DEVICE_", 7) == 0)
        return kiln_fail(c->err, KILN_E_PARSE,
                         "line %d: tunable name '%s' is reserved (cdiv, min, max and names "
                         "starting with __ or DEVICE_ cannot be tunables)",
                         c->line, t->name);
    if (candidate_tunable_index(cand, t->name) >= 0)
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: tunable %s is declared twice", c->line,
                         t->name);
    if ((rc = expect_char(c, '{')) != KILN_OK)
        return rc;
    t->nvalues = 0;
    for (;;) {
        int64_t v;
        if (t->nvalues >= CAND_MAX_VALUES)
            return kiln_fail(c->err, KILN_E_LIMIT, "line %d: tunable %s has more than %d values",
                             c->line, t->name, CAND_MAX_VALUES);
        if ((rc = read_int(c, &v)) != KILN_OK)
            return rc;
        for (size_t i = 0; i < t->nvalues; i++)
            if (t->values[i] == v)
                return kiln_fail(c->err, KILN_E_PARSE,
                                 "line %d: tunable %s lists the value %" PRId64 " twice", c->line,
                                 t->name, v);
        t->values[t->nvalues++] = v;
        skip_ws(c);
        if (c->s[c->pos] == '}')
            break;
        if ((rc = expect_char(c, ',')) != KILN_OK)
            return rc;
    }
    c->pos++;
    if ((rc = expect_char(c, '=')) != KILN_OK || (rc = read_int(c, &t->def)) != KILN_OK ||
        (rc = expect_end(c)) != KILN_OK)
        return rc;
    bool found = false;
    for (size_t i = 0; i < t->nvalues; i++)
        found = found || t->values[i] == t->def;
    if (!found)
        return kiln_fail(c->err, KILN_E_PARSE,
                         "line %d: tunable %s: default %" PRId64 " is not one of its values",
                         c->line, t->name, t->def);
    t->line = c->line;
    cand->ntunables++;
    return KILN_OK;
}

/* Splits the clause text in s[start, end) at top-level commas into at most
 * `max` compiled expressions. */
static enum kiln_rc parse_expr_list(struct cursor *c, size_t start, size_t end, const char *clause,
                                    struct expr **out, int max, int *count)
{
    char piece[CAND_MAX_LINE + 1];
    int n = 0, depth = 0;
    size_t from = start;
    for (size_t i = start; i <= end; i++) {
        char ch = i < end ? c->s[i] : ',';
        if (ch == '(')
            depth++;
        else if (ch == ')')
            depth--;
        if (ch != ',' || depth != 0)
            continue;
        if (n >= max)
            return kiln_fail(c->err, KILN_E_PARSE, "line %d: %s() takes at most %d values", c->line,
                             clause, max);
        size_t len = i - from;
        memcpy(piece, c->s + from, len);
        piece[len] = '\0';
        enum kiln_rc rc = expr_compile(piece, &out[n], c->err);
        if (rc != KILN_OK) {
            kiln_err_prefix(c->err, "line %d: %s() value %d", c->line, clause, n + 1);
            return rc;
        }
        n++;
        from = i + 1;
    }
    *count = n;
    return KILN_OK;
}

static enum kiln_rc parse_args(struct cursor *c, struct cand_launch *l, size_t end)
{
    l->nargs = 0;
    for (;;) {
        if (l->nargs >= CAND_MAX_ARGS)
            return kiln_fail(c->err, KILN_E_LIMIT, "line %d: args() lists more than %d names",
                             c->line, CAND_MAX_ARGS);
        char *name = l->args[l->nargs];
        enum kiln_rc rc = read_ident(c, name, "an argument name");
        if (rc != KILN_OK)
            return rc;
        for (size_t i = 0; i < l->nargs; i++)
            if (strcmp(l->args[i], name) == 0)
                return kiln_fail(c->err, KILN_E_PARSE,
                                 "line %d: args() lists %s twice (pass each argument once)",
                                 c->line, name);
        l->nargs++;
        skip_ws(c);
        if (c->pos == end)
            return KILN_OK;
        if ((rc = expect_char(c, ',')) != KILN_OK)
            return rc;
    }
}

static const struct {
    const char *text;
    enum cand_cmp op;
} cmp_ops[] = {{"<=", CAND_LE}, {">=", CAND_GE}, {"==", CAND_EQ},
               {"!=", CAND_NE}, {"<", CAND_LT},  {">", CAND_GT}};

static const char *cmp_text(enum cand_cmp op)
{
    for (size_t i = 0; i < sizeof(cmp_ops) / sizeof(*cmp_ops); i++)
        if (cmp_ops[i].op == op)
            return cmp_ops[i].text;
    return "?";
}

/* `require LHS OP RHS`: the expression language has no comparison, so the
 * first of < > = ! on the line is the operator and none may follow it. */
static enum kiln_rc parse_require(struct candidate *cand, struct cursor *c)
{
    if (cand->nrequires >= CAND_MAX_REQUIRES)
        return kiln_fail(c->err, KILN_E_LIMIT, "line %d: more than %d require directives", c->line,
                         CAND_MAX_REQUIRES);
    const char *s = c->s + c->pos;
    size_t at = strcspn(s, "<>=!");
    if (s[at] == '\0')
        return kiln_fail(c->err, KILN_E_PARSE,
                         "line %d: require needs a comparison (<=, <, >=, >, == or !=), e.g. "
                         "'require BM * BN <= 1024'",
                         c->line);
    size_t i = 0, oplen = 0;
    for (; i < sizeof(cmp_ops) / sizeof(*cmp_ops); i++) {
        oplen = strlen(cmp_ops[i].text);
        if (strncmp(s + at, cmp_ops[i].text, oplen) == 0)
            break;
    }
    if (i == sizeof(cmp_ops) / sizeof(*cmp_ops))
        return kiln_fail(c->err, KILN_E_PARSE,
                         "line %d: column %zu: '%c' is not a comparison (<=, <, >=, >, == or !=)",
                         c->line, c->pos + at + 1, s[at]);
    if (strpbrk(s + at + oplen, "<>=!"))
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: require takes one comparison", c->line);
    char piece[CAND_MAX_LINE + 1];
    struct cand_require *r = &cand->requires[cand->nrequires];
    memset(r, 0, sizeof(*r));
    r->op = cmp_ops[i].op;
    r->line = c->line;
    /* Trimmed, so messages quote each side as written. */
    size_t from = strspn(s, " \t"), to = at;
    while (to > from && (s[to - 1] == ' ' || s[to - 1] == '\t'))
        to--;
    memcpy(piece, s + from, to - from);
    piece[to - from] = '\0';
    enum kiln_rc rc = expr_compile(piece, &r->lhs, c->err);
    if (rc == KILN_OK) {
        const char *rhs = s + at + oplen;
        rhs += strspn(rhs, " \t");
        size_t rlen = strlen(rhs);
        while (rlen > 0 && (rhs[rlen - 1] == ' ' || rhs[rlen - 1] == '\t'))
            rlen--;
        memcpy(piece, rhs, rlen);
        piece[rlen] = '\0';
        rc = expr_compile(piece, &r->rhs, c->err);
    }
    if (rc != KILN_OK) {
        expr_free(r->lhs);
        r->lhs = NULL;
        kiln_err_prefix(c->err, "line %d: require", c->line);
        return rc;
    }
    cand->nrequires++;
    return KILN_OK;
}

/* Every name in a require must be a tunable (checked once all are declared):
 * a require cannot depend on a case, so it prunes configurations alone. */
static enum kiln_rc check_require_names(const struct candidate *cand, struct kiln_err *err)
{
    const char *names[CAND_MAX_TUNABLES + DEVLIMITS_NVARS];
    size_t n = 0;
    for (size_t i = 0; i < cand->ntunables; i++)
        names[n++] = cand->tunables[i].name;
    struct expr_var dev[DEVLIMITS_NVARS];
    const struct device_limits any = DEVICE_LIMITS_H200;
    devlimits_vars(&any, dev);
    for (size_t i = 0; i < DEVLIMITS_NVARS; i++)
        names[n++] = dev[i].name;
    for (size_t i = 0; i < cand->nrequires; i++) {
        const struct cand_require *r = &cand->requires[i];
        enum kiln_rc rc = expr_check_names(r->lhs, names, n, err);
        if (rc == KILN_OK)
            rc = expr_check_names(r->rhs, names, n, err);
        if (rc != KILN_OK) {
            kiln_err_prefix(err, "line %d: require may name only tunables and DEVICE_* limits",
                            r->line);
            return rc;
        }
    }
    return KILN_OK;
}

static enum kiln_rc parse_launch(struct candidate *cand, struct cursor *c)
{
    if (cand->nlaunches >= CAND_MAX_LAUNCHES)
        return kiln_fail(c->err, KILN_E_LIMIT, "line %d: more than %d launches", c->line,
                         CAND_MAX_LAUNCHES);
    struct cand_launch *l = &cand->launches[cand->nlaunches];
    memset(l, 0, sizeof(*l));
    l->line = c->line;
    /* Counted now so candidate_free releases what this launch compiled
     * even when a later clause fails. */
    cand->nlaunches++;
    enum kiln_rc rc = read_ident(c, l->kernel, "a kernel name");
    if (rc != KILN_OK)
        return rc;
    bool seen_args = false, seen_smem = false;
    for (;;) {
        skip_ws(c);
        if (c->s[c->pos] == '\0')
            break;
        char clause[CAND_NAME_MAX + 1];
        if ((rc = read_ident(c, clause, "a clause (grid, block, smem, args)")) != KILN_OK ||
            (rc = expect_char(c, '(')) != KILN_OK)
            return rc;
        size_t start = c->pos, end = start;
        int depth = 1;
        for (; c->s[end] != '\0'; end++) {
            if (c->s[end] == '(')
                depth++;
            else if (c->s[end] == ')' && --depth == 0)
                break;
        }
        if (c->s[end] != ')')
            return kiln_fail(c->err, KILN_E_PARSE, "line %d: %s( has no matching ')'", c->line,
                             clause);
        bool is_grid = strcmp(clause, "grid") == 0, is_block = strcmp(clause, "block") == 0;
        bool is_smem = strcmp(clause, "smem") == 0, is_args = strcmp(clause, "args") == 0;
        if (!is_grid && !is_block && !is_smem && !is_args)
            return kiln_fail(c->err, KILN_E_PARSE,
                             "line %d: unknown clause '%s' (expected grid, block, smem or args)",
                             c->line, clause);
        if ((is_grid && l->ngrid) || (is_block && l->nblock) || (is_smem && seen_smem) ||
            (is_args && seen_args))
            return kiln_fail(c->err, KILN_E_PARSE, "line %d: %s() appears twice", c->line, clause);
        if (!is_args && cand->backend == KILN_BACKEND_CPU)
            return kiln_fail(c->err, KILN_E_PARSE,
                             "line %d: %s() is not allowed in a cpu candidate (only args())",
                             c->line, clause);
        if (is_args) {
            seen_args = true;
            if ((rc = parse_args(c, l, end)) != KILN_OK)
                return rc;
        } else if (is_smem) {
            int n;
            seen_smem = true;
            if ((rc = parse_expr_list(c, start, end, clause, &l->smem, 1, &n)) != KILN_OK)
                return rc;
        } else if ((rc = parse_expr_list(c, start, end, clause, is_grid ? l->grid : l->block, 3,
                                         is_grid ? &l->ngrid : &l->nblock)) != KILN_OK) {
            return rc;
        }
        c->pos = end + 1;
    }
    if (!seen_args)
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: launch %s has no args(...)", c->line,
                         l->kernel);
    if (cand->backend == KILN_BACKEND_CUDA && (l->ngrid == 0 || l->nblock == 0))
        return kiln_fail(c->err, KILN_E_PARSE, "line %d: launch %s needs grid(...) and block(...)",
                         c->line, l->kernel);
    return KILN_OK;
}

/* If `line` (len bytes) is a directive, returns the offset just past
 * "kiln:", else 0. Spaces between "//" and "kiln:" are allowed so that a
 * near-miss like "//kiln:" is a checked directive, not silently ignored. */
static size_t directive_start(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i + 2 > len || line[i] != '/' || line[i + 1] != '/')
        return 0;
    i += 2;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i + 5 > len || memcmp(line + i, "kiln:", 5) != 0)
        return 0;
    return i + 5;
}

static enum kiln_rc parse_line(struct candidate *cand, const char *line, size_t len, int lineno,
                               struct kiln_err *err)
{
    size_t at = directive_start(line, len);
    if (at == 0)
        return KILN_OK;
    if (len > CAND_MAX_LINE)
        return kiln_fail(err, KILN_E_LIMIT, "line %d: directive longer than %d bytes", lineno,
                         CAND_MAX_LINE);
    char buf[CAND_MAX_LINE + 1];
    memcpy(buf, line, len);
    buf[len] = '\0';
    if (len > 0 && buf[len - 1] == '\\')
        return kiln_fail(err, KILN_E_PARSE,
                         "line %d: a directive may not end in '\\' (it would continue the "
                         "comment onto the next line)",
                         lineno);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 && buf[i] != '\t')
            return kiln_fail(err, KILN_E_PARSE, "line %d: column %zu: control character 0x%02x",
                             lineno, i + 1, (unsigned)(unsigned char)buf[i]);
    struct cursor c = {.s = buf, .pos = at, .line = lineno, .err = err};
    char keyword[CAND_NAME_MAX + 1];
    enum kiln_rc rc = read_ident(&c, keyword, "a directive keyword (tunable, require or launch)");
    if (rc != KILN_OK)
        return rc;
    if (strcmp(keyword, "tunable") == 0)
        return parse_tunable(cand, &c);
    if (strcmp(keyword, "require") == 0)
        return parse_require(cand, &c);
    if (strcmp(keyword, "launch") == 0)
        return parse_launch(cand, &c);
    return kiln_fail(err, KILN_E_PARSE,
                     "line %d: unknown directive 'kiln: %s' (expected tunable, require or launch)",
                     lineno, keyword);
}

enum kiln_rc candidate_parse(const char *src, size_t len, enum kiln_backend backend,
                             struct candidate **out, struct kiln_err *err)
{
    *out = NULL;
    if (backend != KILN_BACKEND_CUDA && backend != KILN_BACKEND_CPU)
        return kiln_fail(err, KILN_E_USAGE, "candidate_parse: unknown backend %d", (int)backend);
    if (len > CAND_MAX_SRC)
        return kiln_fail(err, KILN_E_LIMIT, "candidate source is %zu bytes; the limit is %u", len,
                         CAND_MAX_SRC);
    const char *nul = memchr(src, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *p = src; p < nul; p++)
            line += *p == '\n';
        return kiln_fail(err, KILN_E_REJECTED,
                         "line %d: NUL byte in the source (compilers and kiln could disagree "
                         "on what follows it)",
                         line);
    }
    struct candidate *cand = calloc(1, sizeof(*cand));
    if (!cand)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory parsing a candidate");
    cand->backend = backend;
    enum kiln_rc rc = KILN_OK;
    int lineno = 0;
    for (size_t at = 0; at < len && rc == KILN_OK;) {
        const char *nl = memchr(src + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - src) : len;
        size_t linelen = end - at;
        if (linelen > 0 && src[at + linelen - 1] == '\r')
            linelen--;
        rc = parse_line(cand, src + at, linelen, ++lineno, err);
        at = end + 1;
    }
    if (rc == KILN_OK && cand->nlaunches == 0)
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "the candidate has no '// kiln: launch' directive (see "
                       "evaluator/CANDIDATE.md)");
    if (rc == KILN_OK)
        rc = check_require_names(cand, err);
    if (rc == KILN_OK && cand->nrequires > 0) {
        /* The defaults are the configuration run when nothing is chosen. */
        int64_t defaults[CAND_MAX_TUNABLES];
        candidate_default_config(cand, defaults);
        rc = candidate_check_config(cand, defaults, NULL, err);
        if (rc != KILN_OK)
            kiln_err_prefix(err, "the tunables' defaults");
    }
    if (rc != KILN_OK) {
        candidate_free(cand);
        return rc;
    }
    *out = cand;
    return KILN_OK;
}

void candidate_free(struct candidate *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nlaunches; i++) {
        struct cand_launch *l = &c->launches[i];
        for (int d = 0; d < 3; d++) {
            expr_free(l->grid[d]);
            expr_free(l->block[d]);
        }
        expr_free(l->smem);
    }
    for (size_t i = 0; i < c->nrequires; i++) {
        expr_free(c->requires[i].lhs);
        expr_free(c->requires[i].rhs);
    }
    free(c);
}

void candidate_default_config(const struct candidate *c, int64_t *values)
{
    for (size_t i = 0; i < c->ntunables; i++)
        values[i] = c->tunables[i].def;
}

int candidate_tunable_index(const struct candidate *c, const char *name)
{
    for (size_t i = 0; i < c->ntunables; i++)
        if (strcmp(c->tunables[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Whether require `r` reads a DEVICE_* limit (its failure then names the
 * device the limits came from). */
static bool uses_device(const struct cand_require *r)
{
    const char *t[2] = {expr_text(r->lhs), expr_text(r->rhs)};
    return strstr(t[0], "DEVICE_") || strstr(t[1], "DEVICE_");
}

enum kiln_rc candidate_check_config(const struct candidate *c, const int64_t *values,
                                    const struct device_limits *dev, struct kiln_err *err)
{
    static const struct device_limits h200 = DEVICE_LIMITS_H200;
    if (!dev)
        dev = &h200;
    for (size_t i = 0; i < c->ntunables; i++) {
        const struct cand_tunable *t = &c->tunables[i];
        bool found = false;
        for (size_t k = 0; k < t->nvalues; k++)
            found = found || t->values[k] == values[i];
        if (!found)
            return kiln_fail(err, KILN_E_REJECTED,
                             "tunable %s: %" PRId64 " is not one of its values (line %d)", t->name,
                             values[i], t->line);
    }
    struct expr_var vars[CAND_MAX_TUNABLES + DEVLIMITS_NVARS];
    for (size_t i = 0; i < c->ntunables; i++)
        vars[i] = (struct expr_var){c->tunables[i].name, values[i]};
    devlimits_vars(dev, vars + c->ntunables);
    size_t nvars = c->ntunables + DEVLIMITS_NVARS;
    for (size_t i = 0; i < c->nrequires; i++) {
        const struct cand_require *r = &c->requires[i];
        int64_t a, b;
        enum kiln_rc rc = expr_eval(r->lhs, vars, nvars, &a, err);
        if (rc == KILN_OK)
            rc = expr_eval(r->rhs, vars, nvars, &b, err);
        if (rc != KILN_OK) {
            kiln_err_prefix(err, "require on line %d", r->line);
            return KILN_E_REJECTED;
        }
        bool ok = r->op == CAND_LE   ? a <= b
                  : r->op == CAND_LT ? a < b
                  : r->op == CAND_GE ? a >= b
                  : r->op == CAND_GT ? a > b
                  : r->op == CAND_EQ ? a == b
                                     : a != b;
        if (!ok) {
            char on[96], needs[64] = "";
            devlimits_describe(dev, on, sizeof(on));
            /* `DEVICE_CC >= 80` is an architecture floor: say it as one. */
            if (r->op == CAND_GE && strcmp(expr_text(r->lhs), "DEVICE_CC") == 0)
                snprintf(needs, sizeof(needs), "; the kernel needs sm_%" PRId64 " or newer", b);
            return kiln_fail(err, KILN_E_REJECTED,
                             "require on line %d fails: %s %s %s is %" PRId64 " %s %" PRId64
                             "%s%s%s%s",
                             r->line, expr_text(r->lhs), cmp_text(r->op), expr_text(r->rhs), a,
                             cmp_text(r->op), b, uses_device(r) ? " (device: " : "",
                             uses_device(r) ? on : "", uses_device(r) ? ")" : "", needs);
        }
    }
    return KILN_OK;
}

enum kiln_rc candidate_defines(const struct candidate *c, const int64_t *values,
                               const struct device_limits *dev, char defines[][CAND_DEFINE_MAX],
                               struct kiln_err *err)
{
    enum kiln_rc rc = candidate_check_config(c, values, dev, err);
    if (rc != KILN_OK)
        return rc;
    for (size_t i = 0; i < c->ntunables; i++)
        snprintf(defines[i], CAND_DEFINE_MAX, "-D%s=%" PRId64, c->tunables[i].name, values[i]);
    return KILN_OK;
}
