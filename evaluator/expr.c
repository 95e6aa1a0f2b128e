/* expr.c - recursive-descent parser and evaluator for size expressions.
 * The AST lives in a fixed node array inside `struct expr`: every node
 * consumes at least one byte of text, so EXPR_MAX_LEN nodes always fit. */
#include "expr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { OP_NUM, OP_VAR, OP_NEG, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_CDIV, OP_MIN, OP_MAX };

struct node {
    enum op op;
    int pos;  /* 0-based offset in the text, for messages */
    int a, b; /* child nodes, -1 when unused */
    int64_t num;
    int len; /* OP_VAR: identifier length at `pos` */
};

struct expr {
    char text[EXPR_MAX_LEN + 1];
    struct node nodes[EXPR_MAX_LEN];
    int nnodes;
    int root;
};

struct parser {
    struct expr *e;
    const char *s;
    int pos;
    int depth;
    struct kiln_err *err;
};

static const char *const funcs[] = {"cdiv", "min", "max"};
static const enum op func_ops[] = {OP_CDIV, OP_MIN, OP_MAX};

/* Copies `text` for a message: at most 64 bytes, non-printables as '?', so
 * hostile text can neither forge lines nor flood the error buffer. */
static void quote(const char *text, char *buf, size_t size)
{
    size_t n = 0;
    for (; text[n] != '\0' && n < 64 && n + 4 < size; n++) {
        unsigned char ch = (unsigned char)text[n];
        buf[n] = (ch >= 0x20 && ch < 0x7f && ch != '"') ? (char)ch : '?';
    }
    if (text[n] != '\0' && n + 4 <= size) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
}

static enum kiln_rc fail_at(struct kiln_err *err, enum kiln_rc rc, const char *text, int pos,
                            const char *what)
{
    char q[72];
    quote(text, q, sizeof(q));
    return kiln_fail(err, rc, "\"%s\": column %d: %s", q, pos + 1, what);
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void skip_space(struct parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
        p->pos++;
}

static int new_node(struct parser *p, enum op op, int pos, int a, int b)
{
    if (p->e->nnodes >= EXPR_MAX_LEN) /* unreachable: a node per byte at least */
        return -1;
    struct node *n = &p->e->nodes[p->e->nnodes];
    n->op = op;
    n->pos = pos;
    n->a = a;
    n->b = b;
    n->num = 0;
    n->len = 0;
    return p->e->nnodes++;
}

static enum kiln_rc parse_sum(struct parser *p, int *out);

static enum kiln_rc expect(struct parser *p, char ch, const char *what)
{
    skip_space(p);
    if (p->s[p->pos] != ch)
        return fail_at(p->err, KILN_E_PARSE, p->s, p->pos, what);
    p->pos++;
    return KILN_OK;
}

static enum kiln_rc enter(struct parser *p)
{
    if (++p->depth > EXPR_MAX_DEPTH) {
        char msg[64];
        snprintf(msg, sizeof(msg), "nested deeper than %d", EXPR_MAX_DEPTH);
        return fail_at(p->err, KILN_E_LIMIT, p->s, p->pos, msg);
    }
    return KILN_OK;
}

static enum kiln_rc parse_number(struct parser *p, int *out)
{
    int start = p->pos;
    int64_t v = 0;
    while (is_digit(p->s[p->pos])) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (int64_t)(p->s[p->pos] - '0'), &v))
            return fail_at(p->err, KILN_E_PARSE, p->s, start, "integer does not fit in int64");
        p->pos++;
    }
    if (is_alpha(p->s[p->pos]))
        return fail_at(p->err, KILN_E_PARSE, p->s, p->pos, "expected an operator after a number");
    *out = new_node(p, OP_NUM, start, -1, -1);
    p->e->nodes[*out].num = v;
    return KILN_OK;
}

static enum kiln_rc parse_name(struct parser *p, int *out)
{
    int start = p->pos;
    while (is_alpha(p->s[p->pos]) || is_digit(p->s[p->pos]))
        p->pos++;
    int len = p->pos - start;
    if (len > EXPR_IDENT_MAX)
        return fail_at(p->err, KILN_E_LIMIT, p->s, start, "identifier longer than 64 bytes");
    for (size_t f = 0; f < sizeof(funcs) / sizeof(funcs[0]); f++) {
        if ((size_t)len != strlen(funcs[f]) || memcmp(p->s + start, funcs[f], (size_t)len) != 0)
            continue;
        enum kiln_rc rc;
        int a, b;
        skip_space(p);
        if (p->s[p->pos] != '(')
            return fail_at(p->err, KILN_E_PARSE, p->s, start,
                           "a function name needs arguments: cdiv(a, b), min(a, b), max(a, b)");
        p->pos++;
        if ((rc = enter(p)) != KILN_OK || (rc = parse_sum(p, &a)) != KILN_OK ||
            (rc = expect(p, ',', "expected ',' between the two arguments")) != KILN_OK ||
            (rc = parse_sum(p, &b)) != KILN_OK ||
            (rc = expect(p, ')', "expected ')' after the second argument")) != KILN_OK)
            return rc;
        p->depth--;
        *out = new_node(p, func_ops[f], start, a, b);
        return KILN_OK;
    }
    *out = new_node(p, OP_VAR, start, -1, -1);
    p->e->nodes[*out].len = len;
    return KILN_OK;
}

static enum kiln_rc parse_unary(struct parser *p, int *out)
{
    enum kiln_rc rc;
    skip_space(p);
    char c = p->s[p->pos];
    int start = p->pos;
    if (c == '-') {
        int a;
        p->pos++;
        if ((rc = enter(p)) != KILN_OK || (rc = parse_unary(p, &a)) != KILN_OK)
            return rc;
        p->depth--;
        *out = new_node(p, OP_NEG, start, a, -1);
        return KILN_OK;
    }
    if (c == '(') {
        p->pos++;
        if ((rc = enter(p)) != KILN_OK || (rc = parse_sum(p, out)) != KILN_OK ||
            (rc = expect(p, ')', "expected ')'")) != KILN_OK)
            return rc;
        p->depth--;
        return KILN_OK;
    }
    if (is_digit(c))
        return parse_number(p, out);
    if (is_alpha(c))
        return parse_name(p, out);
    if (c == '\0')
        return fail_at(p->err, KILN_E_PARSE, p->s, p->pos,
                       "expression ends where a value is expected");
    return fail_at(p->err, KILN_E_PARSE, p->s, p->pos, "expected a number, a name or '('");
}

static enum kiln_rc parse_product(struct parser *p, int *out)
{
    enum kiln_rc rc = parse_unary(p, out);
    while (rc == KILN_OK) {
        skip_space(p);
        char c = p->s[p->pos];
        if (c != '*' && c != '/' && c != '%')
            break;
        int pos = p->pos++, rhs;
        if ((rc = parse_unary(p, &rhs)) != KILN_OK)
            break;
        *out = new_node(p, c == '*' ? OP_MUL : c == '/' ? OP_DIV : OP_MOD, pos, *out, rhs);
    }
    return rc;
}

static enum kiln_rc parse_sum(struct parser *p, int *out)
{
    enum kiln_rc rc = parse_product(p, out);
    while (rc == KILN_OK) {
        skip_space(p);
        char c = p->s[p->pos];
        if (c != '+' && c != '-')
            break;
        int pos = p->pos++, rhs;
        if ((rc = parse_product(p, &rhs)) != KILN_OK)
            break;
        *out = new_node(p, c == '+' ? OP_ADD : OP_SUB, pos, *out, rhs);
    }
    return rc;
}

enum kiln_rc expr_compile(const char *text, struct expr **out, struct kiln_err *err)
{
    *out = NULL;
    size_t len = strnlen(text, EXPR_MAX_LEN + 1);
    if (len > EXPR_MAX_LEN) {
        char msg[64];
        snprintf(msg, sizeof(msg), "longer than %d bytes", EXPR_MAX_LEN);
        return fail_at(err, KILN_E_LIMIT, text, EXPR_MAX_LEN, msg);
    }
    struct expr *e = calloc(1, sizeof(*e));
    if (!e)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory compiling an expression");
    memcpy(e->text, text, len);
    struct parser p = {.e = e, .s = e->text, .pos = 0, .depth = 0, .err = err};
    enum kiln_rc rc = parse_sum(&p, &e->root);
    if (rc == KILN_OK) {
        skip_space(&p);
        if (p.s[p.pos] != '\0')
            rc = fail_at(err, KILN_E_PARSE, p.s, p.pos,
                         p.s[p.pos] == ')' ? "unbalanced ')'" : "unexpected character");
    }
    if (rc != KILN_OK) {
        free(e);
        return rc;
    }
    *out = e;
    return KILN_OK;
}

static const struct expr_var *lookup(const struct expr *e, const struct node *n,
                                     const struct expr_var *vars, size_t nvars)
{
    for (size_t i = 0; i < nvars; i++)
        if (strncmp(vars[i].name, e->text + n->pos, (size_t)n->len) == 0 &&
            vars[i].name[n->len] == '\0')
            return &vars[i];
    return NULL;
}

static enum kiln_rc arith_fail(const struct expr *e, const struct node *n, const char *what,
                               struct kiln_err *err)
{
    return fail_at(err, KILN_E_REJECTED, e->text, n->pos, what);
}

static enum kiln_rc eval_node(const struct expr *e, int i, const struct expr_var *vars,
                              size_t nvars, int64_t *out, struct kiln_err *err)
{
    const struct node *n = &e->nodes[i];
    int64_t a = 0, b = 0;
    enum kiln_rc rc;
    if (n->op == OP_NUM) {
        *out = n->num;
        return KILN_OK;
    }
    if (n->op == OP_VAR) {
        const struct expr_var *v = lookup(e, n, vars, nvars);
        if (!v) {
            char msg[96];
            snprintf(msg, sizeof(msg), "unknown name '%.*s'", n->len, e->text + n->pos);
            return fail_at(err, KILN_E_NOTFOUND, e->text, n->pos, msg);
        }
        *out = v->value;
        return KILN_OK;
    }
    if ((rc = eval_node(e, n->a, vars, nvars, &a, err)) != KILN_OK)
        return rc;
    if (n->b >= 0 && (rc = eval_node(e, n->b, vars, nvars, &b, err)) != KILN_OK)
        return rc;
    switch (n->op) {
    case OP_NUM:
    case OP_VAR:
        break; /* handled above */
    case OP_NEG:
        if (__builtin_sub_overflow((int64_t)0, a, out))
            return arith_fail(e, n, "negation overflows int64", err);
        return KILN_OK;
    case OP_ADD:
        if (__builtin_add_overflow(a, b, out))
            return arith_fail(e, n, "addition overflows int64", err);
        return KILN_OK;
    case OP_SUB:
        if (__builtin_sub_overflow(a, b, out))
            return arith_fail(e, n, "subtraction overflows int64", err);
        return KILN_OK;
    case OP_MUL:
        if (__builtin_mul_overflow(a, b, out))
            return arith_fail(e, n, "multiplication overflows int64", err);
        return KILN_OK;
    case OP_DIV:
    case OP_MOD:
    case OP_CDIV:
        if (b == 0)
            return arith_fail(e, n, n->op == OP_MOD ? "modulo by zero" : "division by zero", err);
        if (a == INT64_MIN && b == -1)
            return arith_fail(e, n, "INT64_MIN / -1 overflows int64", err);
        if (n->op == OP_MOD) {
            *out = a % b;
        } else {
            *out = a / b;
            /* Ceiling: round up when there is a remainder and the exact
             * quotient is positive; no a + b - 1 that could overflow. */
            if (n->op == OP_CDIV && a % b != 0 && ((a < 0) == (b < 0)))
                *out += 1;
        }
        return KILN_OK;
    case OP_MIN:
        *out = a < b ? a : b;
        return KILN_OK;
    case OP_MAX:
        *out = a > b ? a : b;
        return KILN_OK;
    }
    return kiln_fail(err, KILN_E_INTERNAL, "expression node with unknown operator");
}

enum kiln_rc expr_eval(const struct expr *e, const struct expr_var *vars, size_t nvars,
                       int64_t *out, struct kiln_err *err)
{
    int64_t v;
    enum kiln_rc rc = eval_node(e, e->root, vars, nvars, &v, err);
    if (rc == KILN_OK)
        *out = v;
    return rc;
}

enum kiln_rc expr_check_names(const struct expr *e, const char *const *names, size_t nnames,
                              struct kiln_err *err)
{
    for (int i = 0; i < e->nnodes; i++) {
        const struct node *n = &e->nodes[i];
        if (n->op != OP_VAR)
            continue;
        size_t k;
        for (k = 0; k < nnames; k++)
            if (strncmp(names[k], e->text + n->pos, (size_t)n->len) == 0 &&
                names[k][n->len] == '\0')
                break;
        if (k == nnames) {
            char msg[96];
            snprintf(msg, sizeof(msg), "unknown name '%.*s'", n->len, e->text + n->pos);
            return fail_at(err, KILN_E_NOTFOUND, e->text, n->pos, msg);
        }
    }
    return KILN_OK;
}

const char *expr_text(const struct expr *e)
{
    return e->text;
}

void expr_free(struct expr *e)
{
    free(e);
}

enum kiln_rc expr_evaluate(const char *text, const struct expr_var *vars, size_t nvars,
                           int64_t *out, struct kiln_err *err)
{
    struct expr *e;
    enum kiln_rc rc = expr_compile(text, &e, err);
    if (rc != KILN_OK)
        return rc;
    rc = expr_eval(e, vars, nvars, out, err);
    expr_free(e);
    return rc;
}

bool expr_ident_valid(const char *name)
{
    if (!is_alpha(name[0]))
        return false;
    size_t n = 1;
    while (is_alpha(name[n]) || is_digit(name[n]))
        n++;
    if (name[n] != '\0' || n > EXPR_IDENT_MAX)
        return false;
    for (size_t f = 0; f < sizeof(funcs) / sizeof(funcs[0]); f++)
        if (strcmp(name, funcs[f]) == 0)
            return false;
    return true;
}
