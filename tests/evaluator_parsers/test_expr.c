/* Size expressions: values, precedence, and every error with its exact
 * message (expression, column, cause). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "expr.h"

static const struct expr_var vars[] = {
    {"n", 1000}, {"BLOCK", 256}, {"big", INT64_MAX}, {"neg", -7}, {"lo", INT64_MIN}};
#define NV (sizeof(vars) / sizeof(vars[0]))

static int64_t ok(const char *text)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    int64_t v = -12345;
    enum kiln_rc rc = expr_evaluate(text, vars, NV, &v, &e);
    if (rc != KILN_OK)
        fail_msg("%s: unexpected error %s", text, e.msg);
    return v;
}

static void bad(const char *text, enum kiln_rc want, const char *msg)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    int64_t v = 777;
    assert_int_equal(expr_evaluate(text, vars, NV, &v, &e), want);
    assert_int_equal(v, 777); /* untouched on failure */
    assert_string_equal(e.msg, msg);
}

static void values_and_precedence(void **state)
{
    (void)state;
    assert_int_equal(ok("42"), 42);
    assert_int_equal(ok("1 + 2 * 3"), 7);
    assert_int_equal(ok("(1 + 2) * 3"), 9);
    assert_int_equal(ok("10 - 3 - 2"), 5); /* left associative */
    assert_int_equal(ok("100 / 10 / 5"), 2);
    assert_int_equal(ok("-n + 1"), -999);
    assert_int_equal(ok("--n"), 1000);
    assert_int_equal(ok("7 % 3"), 1);
    assert_int_equal(ok("-7 % 3"), -1); /* C semantics */
    assert_int_equal(ok("-7 / 2"), -3);
    assert_int_equal(ok("cdiv(n, BLOCK)"), 4);
    assert_int_equal(ok("cdiv(1024, 256)"), 4);
    assert_int_equal(ok("cdiv(neg, 2)"), -3); /* ceil(-3.5) */
    assert_int_equal(ok("cdiv(7, -2)"), -3);
    assert_int_equal(ok("cdiv(-7, -2)"), 4);
    assert_int_equal(ok("cdiv(big, 2)"), INT64_MAX / 2 + 1); /* no a+b-1 overflow */
    assert_int_equal(ok("min(n, BLOCK) + max(n, BLOCK)"), 1256);
    assert_int_equal(ok(" \tmax( min(3,4) , -(2) ) "), 3);
    assert_int_equal(ok("big"), INT64_MAX);
    assert_int_equal(ok("9223372036854775807"), INT64_MAX);
    assert_int_equal(ok("lo"), INT64_MIN);
    assert_int_equal(ok("lo / 1"), INT64_MIN);
}

static void arithmetic_faults(void **state)
{
    (void)state;
    bad("big + 1", KILN_E_REJECTED, "\"big + 1\": column 5: addition overflows int64");
    bad("lo - 1", KILN_E_REJECTED, "\"lo - 1\": column 4: subtraction overflows int64");
    bad("n * big", KILN_E_REJECTED, "\"n * big\": column 3: multiplication overflows int64");
    bad("-lo", KILN_E_REJECTED, "\"-lo\": column 1: negation overflows int64");
    bad("n / (BLOCK - 256)", KILN_E_REJECTED, "\"n / (BLOCK - 256)\": column 3: division by zero");
    bad("n % 0", KILN_E_REJECTED, "\"n % 0\": column 3: modulo by zero");
    bad("cdiv(n, 0)", KILN_E_REJECTED, "\"cdiv(n, 0)\": column 1: division by zero");
    bad("lo / -1", KILN_E_REJECTED, "\"lo / -1\": column 4: INT64_MIN / -1 overflows int64");
    bad("lo % -1", KILN_E_REJECTED, "\"lo % -1\": column 4: INT64_MIN / -1 overflows int64");
    bad("cdiv(lo, -1)", KILN_E_REJECTED,
        "\"cdiv(lo, -1)\": column 1: INT64_MIN / -1 overflows int64");
    bad("9223372036854775808", KILN_E_PARSE,
        "\"9223372036854775808\": column 1: integer does not fit in int64");
    bad("n + m", KILN_E_NOTFOUND, "\"n + m\": column 5: unknown name 'm'");
    bad("N", KILN_E_NOTFOUND, "\"N\": column 1: unknown name 'N'"); /* case sensitive */
}

static void syntax_errors(void **state)
{
    (void)state;
    bad("", KILN_E_PARSE, "\"\": column 1: expression ends where a value is expected");
    bad("   ", KILN_E_PARSE, "\"   \": column 4: expression ends where a value is expected");
    bad("n +", KILN_E_PARSE, "\"n +\": column 4: expression ends where a value is expected");
    bad("(n", KILN_E_PARSE, "\"(n\": column 3: expected ')'");
    bad("n)", KILN_E_PARSE, "\"n)\": column 2: unbalanced ')'");
    bad("n n", KILN_E_PARSE, "\"n n\": column 3: unexpected character");
    bad("2n", KILN_E_PARSE, "\"2n\": column 2: expected an operator after a number");
    bad("n ** 2", KILN_E_PARSE, "\"n ** 2\": column 4: expected a number, a name or '('");
    bad("n # 2", KILN_E_PARSE, "\"n # 2\": column 3: unexpected character");
    bad("cdiv", KILN_E_PARSE,
        "\"cdiv\": column 1: a function name needs arguments: cdiv(a, b), min(a, b), max(a, b)");
    bad("min(1)", KILN_E_PARSE, "\"min(1)\": column 6: expected ',' between the two arguments");
    bad("max(1, 2, 3)", KILN_E_PARSE,
        "\"max(1, 2, 3)\": column 9: expected ')' after the second argument");
    bad("n\n+1", KILN_E_PARSE, "\"n?+1\": column 2: unexpected character");
    bad("0x10", KILN_E_PARSE, "\"0x10\": column 2: expected an operator after a number");
    bad("n + \"", KILN_E_PARSE, "\"n + ?\": column 5: expected a number, a name or '('");
}

static void limits(void **state)
{
    (void)state;
    char buf[600];
    /* 256 bytes is fine, 257 is not. */
    memset(buf, ' ', 255);
    buf[255] = '1';
    buf[256] = '\0';
    assert_int_equal(ok(buf), 1);
    memset(buf, ' ', 256);
    buf[256] = '1';
    buf[257] = '\0';
    struct kiln_err e;
    kiln_err_clear(&e);
    int64_t v;
    assert_int_equal(expr_evaluate(buf, vars, NV, &v, &e), KILN_E_LIMIT);
    assert_non_null(strstr(e.msg, "column 257: longer than 256 bytes"));

    /* Depth 32 is fine, 33 is not: parentheses, calls and unary minus count. */
    int n = 0;
    for (int i = 0; i < 32; i++)
        buf[n++] = '(';
    buf[n++] = '1';
    for (int i = 0; i < 32; i++)
        buf[n++] = ')';
    buf[n] = '\0';
    assert_int_equal(ok(buf), 1);
    memmove(buf + 1, buf, (size_t)n + 1);
    buf[0] = '-';
    kiln_err_clear(&e);
    assert_int_equal(expr_evaluate(buf, vars, NV, &v, &e), KILN_E_LIMIT);
    assert_non_null(strstr(e.msg, ": nested deeper than 32"));
    n = 0;
    for (int i = 0; i < 33; i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "min(");
    buf[n++] = '1';
    for (int i = 0; i < 33; i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, ",1)");
    buf[n] = '\0';
    kiln_err_clear(&e);
    assert_int_equal(expr_evaluate(buf, vars, NV, &v, &e), KILN_E_LIMIT);

    /* A long flat chain is not nesting. */
    n = 0;
    for (int i = 0; i < 100; i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, "1+");
    buf[n++] = '1';
    buf[n] = '\0';
    assert_int_equal(ok(buf), 101);

    /* Identifiers: 64 bytes fine, 65 not. */
    char id[80];
    memset(id, 'a', 64);
    id[64] = '\0';
    kiln_err_clear(&e);
    assert_int_equal(expr_evaluate(id, vars, NV, &v, &e), KILN_E_NOTFOUND);
    memset(id, 'a', 65);
    id[65] = '\0';
    kiln_err_clear(&e);
    assert_int_equal(expr_evaluate(id, vars, NV, &v, &e), KILN_E_LIMIT);
    assert_non_null(strstr(e.msg, "column 1: identifier longer than 64 bytes"));
}

static void compile_once_eval_many(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    struct expr *x;
    assert_int_equal(expr_compile("cdiv(n, B) * B", &x, &e), KILN_OK);
    assert_string_equal(expr_text(x), "cdiv(n, B) * B");
    for (int64_t b = 1; b <= 1024; b *= 2) {
        struct expr_var v[] = {{"n", 1000}, {"B", b}};
        int64_t out;
        assert_int_equal(expr_eval(x, v, 2, &out, &e), KILN_OK);
        assert_int_equal(out, (1000 + b - 1) / b * b);
    }
    const char *names[] = {"n", "B"};
    assert_int_equal(expr_check_names(x, names, 2, &e), KILN_OK);
    assert_int_equal(expr_check_names(x, names, 1, &e), KILN_E_NOTFOUND);
    assert_string_equal(e.msg, "\"cdiv(n, B) * B\": column 9: unknown name 'B'");
    expr_free(x);
    expr_free(NULL);
}

static void identifiers(void **state)
{
    (void)state;
    assert_true(expr_ident_valid("n"));
    assert_true(expr_ident_valid("_x9"));
    assert_true(expr_ident_valid("BLOCK_M"));
    assert_false(expr_ident_valid(""));
    assert_false(expr_ident_valid("9n"));
    assert_false(expr_ident_valid("a-b"));
    assert_false(expr_ident_valid("cdiv"));
    assert_false(expr_ident_valid("min"));
    assert_false(expr_ident_valid("max"));
    char id[80];
    memset(id, 'q', 64);
    id[64] = '\0';
    assert_true(expr_ident_valid(id));
    id[64] = 'q';
    id[65] = '\0';
    assert_false(expr_ident_valid(id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_and_precedence),  cmocka_unit_test(arithmetic_faults),
        cmocka_unit_test(syntax_errors),          cmocka_unit_test(limits),
        cmocka_unit_test(compile_once_eval_many), cmocka_unit_test(identifiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
