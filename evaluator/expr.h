/*
 * expr.h - size expressions: the one small integer language used by
 * workload shapes, costs and baselines, and by candidate launch plans.
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | primary
 *   primary := INTEGER | IDENT | FUNC '(' expr ',' expr ')' | '(' expr ')'
 *   FUNC    := 'cdiv' | 'min' | 'max'
 *
 * Values are int64. `/` and `%` truncate toward zero as in C; cdiv(a, b) is
 * the exact ceiling of a/b. Overflow, division or modulo by zero and
 * INT64_MIN / -1 are errors, never wrapped values. Limits: text at most
 * EXPR_MAX_LEN bytes, nesting (parentheses, calls, unary minus) at most
 * EXPR_MAX_DEPTH, identifiers [A-Za-z_][A-Za-z0-9_]{0,63}, and the function
 * names are reserved (not identifiers).
 *
 * Lifecycle: expr_compile() parses text into a `struct expr` the caller owns
 * and frees with expr_free(); the compiled expression is immutable and can
 * be evaluated any number of times against different variables. Errors name
 * the expression and the 1-based column: `"cdiv(n, 0)": column 6: division
 * by zero`.
 */
#ifndef KILN_EXPR_H
#define KILN_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define EXPR_MAX_LEN   256
#define EXPR_MAX_DEPTH 32
#define EXPR_IDENT_MAX 64 /* bytes in an identifier, without the NUL */

/* One variable binding for evaluation; `name` is NUL-terminated. */
struct expr_var {
    const char *name;
    int64_t value;
};

struct expr;

/* Parses `text` (NUL-terminated). Syntax errors and limit breaches return
 * KILN_E_PARSE / KILN_E_LIMIT with the column. On success *out is owned by
 * the caller. */
enum kiln_rc expr_compile(const char *text, struct expr **out, struct kiln_err *err) KILN_NODISCARD;

/* Evaluates `e` with the `nvars` bindings in `vars` (a name bound twice:
 * the first wins). Unknown identifiers are KILN_E_NOTFOUND; arithmetic
 * faults KILN_E_REJECTED. *out is written only on success. */
enum kiln_rc expr_eval(const struct expr *e, const struct expr_var *vars, size_t nvars,
                       int64_t *out, struct kiln_err *err) KILN_NODISCARD;

/* Checks that every identifier in `e` is one of `names` (without values):
 * lets a loader reject `shape: ["m"]` before any case is evaluated. */
enum kiln_rc expr_check_names(const struct expr *e, const char *const *names, size_t nnames,
                              struct kiln_err *err) KILN_NODISCARD;

/* The source text `e` was compiled from. */
const char *expr_text(const struct expr *e);

/* Frees `e`; NULL is fine. */
void expr_free(struct expr *e);

/* Compile, evaluate and free in one call. */
enum kiln_rc expr_evaluate(const char *text, const struct expr_var *vars, size_t nvars,
                           int64_t *out, struct kiln_err *err) KILN_NODISCARD;

/* True when `name` is a valid identifier: matches [A-Za-z_][A-Za-z0-9_]{0,63}
 * and is not a function name. */
bool expr_ident_valid(const char *name);

#endif
