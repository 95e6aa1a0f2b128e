/* Candidate directives: the documented examples parse to exact plans, and
 * each hostile variant fails with its exact `line N:` message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"

static const char *saxpy_cu =
    "// kiln: tunable BLOCK {128, 256, 512, 1024} = 256\n"
    "// kiln: tunable ITEMS {1, 2, 4} = 1\n"
    "  //kiln: launch saxpy grid(cdiv(n, BLOCK * ITEMS)) block(BLOCK) smem(0) args(n, a, x, y, "
    "out)\r\n"
    "\n"
    "extern \"C\" __global__ void saxpy(long long n, float a, const float *x, const float *y, "
    "float *out) {}\n";

static struct candidate *parse_ok(const char *src, enum kiln_backend b)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    struct candidate *c = NULL;
    enum kiln_rc rc = candidate_parse(src, strlen(src), b, &c, &e);
    if (rc != KILN_OK)
        fail_msg("unexpected error: %s", e.msg);
    return c;
}

static void parse_bad(const char *src, enum kiln_backend b, enum kiln_rc want, const char *msg)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    struct candidate *c = (struct candidate *)1;
    assert_int_equal(candidate_parse(src, strlen(src), b, &c, &e), want);
    assert_null(c);
    assert_string_equal(e.msg, msg);
}

static void saxpy_example(void **state)
{
    (void)state;
    struct candidate *c = parse_ok(saxpy_cu, KILN_BACKEND_CUDA);
    assert_int_equal(c->ntunables, 2);
    assert_string_equal(c->tunables[0].name, "BLOCK");
    assert_int_equal(c->tunables[0].nvalues, 4);
    assert_int_equal(c->tunables[0].values[3], 1024);
    assert_int_equal(c->tunables[0].def, 256);
    assert_int_equal(c->tunables[1].line, 2);
    assert_int_equal(c->nlaunches, 1);
    const struct cand_launch *l = &c->launches[0];
    assert_string_equal(l->kernel, "saxpy");
    assert_int_equal(l->line, 3);
    assert_int_equal(l->ngrid, 1);
    assert_int_equal(l->nblock, 1);
    assert_string_equal(expr_text(l->grid[0]), "cdiv(n, BLOCK * ITEMS)");
    assert_string_equal(expr_text(l->block[0]), "BLOCK");
    assert_non_null(l->smem);
    assert_int_equal(l->nargs, 5);
    assert_string_equal(l->args[0], "n");
    assert_string_equal(l->args[4], "out");

    int64_t v[CAND_MAX_TUNABLES];
    candidate_default_config(c, v);
    assert_int_equal(v[0], 256);
    assert_int_equal(v[1], 1);
    char defs[CAND_MAX_TUNABLES][CAND_DEFINE_MAX];
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(candidate_defines(c, v, NULL, defs, &e), KILN_OK);
    assert_string_equal(defs[0], "-DBLOCK=256");
    assert_string_equal(defs[1], "-DITEMS=1");
    v[0] = 64;
    assert_int_equal(candidate_defines(c, v, NULL, defs, &e), KILN_E_REJECTED);
    assert_string_equal(e.msg, "tunable BLOCK: 64 is not one of its values (line 1)");
    assert_int_equal(candidate_tunable_index(c, "ITEMS"), 1);
    assert_int_equal(candidate_tunable_index(c, "items"), -1);
    candidate_free(c);
}

static void multi_dim_and_cpu(void **state)
{
    (void)state;
    struct candidate *c =
        parse_ok("// kiln: tunable T {-3, 0, 9223372036854775807, -9223372036854775808} = -3\n"
                 "// kiln: launch k1 args(a) block(16, 16) grid(cdiv(m, 16), min(n, 4), 2)\n"
                 "// kiln: launch k2 grid(1) block(1) args(a, b)\n",
                 KILN_BACKEND_CUDA);
    assert_int_equal(c->tunables[0].values[2], INT64_MAX);
    assert_int_equal(c->tunables[0].values[3], INT64_MIN);
    assert_int_equal(c->launches[0].ngrid, 3);
    assert_int_equal(c->launches[0].nblock, 2);
    assert_string_equal(expr_text(c->launches[0].grid[1]), " min(n, 4)");
    assert_null(c->launches[1].smem);
    candidate_free(c);

    c = parse_ok("// kiln: tunable UNROLL {1, 2, 4, 8} = 4\n"
                 "// kiln: launch saxpy args(n, a, x, y, out)\n"
                 "void saxpy(long long n, float a, const float *x, const float *y, float *out) "
                 "{}\n",
                 KILN_BACKEND_CPU);
    assert_int_equal(c->launches[0].ngrid, 0);
    assert_int_equal(c->launches[0].nargs, 5);
    candidate_free(c);
    /* Not directives: no "kiln:" right after the comment opener. */
    c = parse_ok("/* // kiln: nonsense */\n// kiln launch x\n// kilnx: y\n"
                 "// kiln: launch k args(a)\n",
                 KILN_BACKEND_CPU);
    assert_int_equal(c->nlaunches, 1);
    candidate_free(c);
}

static void hostile_directives(void **state)
{
    (void)state;
    const enum kiln_backend C = KILN_BACKEND_CUDA;
    parse_bad("int x;\n", C, KILN_E_REJECTED,
              "the candidate has no '// kiln: launch' directive (see evaluator/CANDIDATE.md)");
    parse_bad("\n// kiln: lunch k args(a)\n", C, KILN_E_PARSE,
              "line 2: unknown directive 'kiln: lunch' (expected tunable, require or launch)");
    parse_bad("// kiln: tunable B {1, 2} = 3\n", C, KILN_E_PARSE,
              "line 1: tunable B: default 3 is not one of its values");
    parse_bad("// kiln: tunable B {1, 1} = 1\n", C, KILN_E_PARSE,
              "line 1: tunable B lists the value 1 twice");
    parse_bad("// kiln: tunable B {1} = 1\n// kiln: tunable B {2} = 2\n", C, KILN_E_PARSE,
              "line 2: tunable B is declared twice");
    parse_bad("// kiln: tunable min {1} = 1\n", C, KILN_E_PARSE,
              "line 1: tunable name 'min' is reserved (cdiv, min, max and names starting with "
              "__ or DEVICE_ cannot be tunables)");
    parse_bad("// kiln: tunable __CUDA_ARCH__ {1} = 1\n", C, KILN_E_PARSE,
              "line 1: tunable name '__CUDA_ARCH__' is reserved (cdiv, min, max and names "
              "starting with __ or DEVICE_ cannot be tunables)");
    parse_bad("// kiln: tunable B {} = 1\n", C, KILN_E_PARSE,
              "line 1: column 21: expected an integer");
    parse_bad("// kiln: tunable B {1, 2} = 1 extra\n", C, KILN_E_PARSE,
              "line 1: column 31: unexpected text after the directive");
    parse_bad("// kiln: tunable B {9223372036854775808} = 1\n", C, KILN_E_PARSE,
              "line 1: column 21: integer does not fit in int64");
    parse_bad("// kiln: launch k grid(1) args(a)\n", C, KILN_E_PARSE,
              "line 1: launch k needs grid(...) and block(...)");
    parse_bad("// kiln: launch k grid(1) block(1)\n", C, KILN_E_PARSE,
              "line 1: launch k has no args(...)");
    parse_bad("// kiln: launch k grid(1) block(1) args()\n", C, KILN_E_PARSE,
              "line 1: column 41: expected an argument name");
    parse_bad("// kiln: launch k grid(1) block(1) args(x, x)\n", C, KILN_E_PARSE,
              "line 1: args() lists x twice (pass each argument once)");
    parse_bad("// kiln: launch k grid(1) grid(2) block(1) args(x)\n", C, KILN_E_PARSE,
              "line 1: grid() appears twice");
    parse_bad("// kiln: launch k grid(1, 1, 1, 1) block(1) args(x)\n", C, KILN_E_PARSE,
              "line 1: grid() takes at most 3 values");
    parse_bad("// kiln: launch k grid() block(1) args(x)\n", C, KILN_E_PARSE,
              "line 1: grid() value 1: \"\": column 1: expression ends where a value is "
              "expected");
    parse_bad("// kiln: launch k grid(n / ) block(1) args(x)\n", C, KILN_E_PARSE,
              "line 1: grid() value 1: \"n / \": column 5: expression ends where a value is "
              "expected");
    parse_bad("// kiln: launch k grid((1) block(1) args(x)\n", C, KILN_E_PARSE,
              "line 1: grid( has no matching ')'");
    parse_bad("// kiln: launch k threads(1) args(x)\n", C, KILN_E_PARSE,
              "line 1: unknown clause 'threads' (expected grid, block, smem or args)");
    parse_bad("// kiln: launch k grid(1) block(1) args(x) \\\n", C, KILN_E_PARSE,
              "line 1: a directive may not end in '\\' (it would continue the comment onto the "
              "next line)");
    parse_bad("// kiln: launch k grid(1)\x01 block(1) args(x)\n", C, KILN_E_PARSE,
              "line 1: column 26: control character 0x01");
    parse_bad("// kiln: launch k grid(1) block(1) args(x)\n", KILN_BACKEND_CPU, KILN_E_PARSE,
              "line 1: grid() is not allowed in a cpu candidate (only args())");
}

static void hostile_bytes_and_caps(void **state)
{
    (void)state;
    struct kiln_err e;
    struct candidate *c = NULL;
    /* A NUL byte hides what follows from one reader or the other. */
    const char nul[] = "int a;\n\n// kiln: launch k args(x)\0// kiln: launch j args(y)\n";
    kiln_err_clear(&e);
    assert_int_equal(candidate_parse(nul, sizeof(nul) - 1, KILN_BACKEND_CPU, &c, &e),
                     KILN_E_REJECTED);
    assert_string_equal(e.msg, "line 3: NUL byte in the source (compilers and kiln could "
                               "disagree on what follows it)");
    assert_null(c);

    /* Whole-file cap. */
    size_t big = CAND_MAX_SRC + 1;
    char *src = malloc(big);
    assert_non_null(src);
    memset(src, '\n', big);
    kiln_err_clear(&e);
    assert_int_equal(candidate_parse(src, big, KILN_BACKEND_CPU, &c, &e), KILN_E_LIMIT);
    assert_string_equal(e.msg, "candidate source is 1048577 bytes; the limit is 1048576");

    /* Directive line cap: 1024 fine, 1025 not; long non-directive lines are fine. */
    char line[1100];
    int n = snprintf(line, sizeof(line), "// kiln: launch k args(x)");
    memset(line + n, ' ', 1024 - (size_t)n);
    line[1024] = '\0';
    c = parse_ok(line, KILN_BACKEND_CPU);
    candidate_free(c);
    line[1024] = ' ';
    line[1025] = '\0';
    parse_bad(line, KILN_BACKEND_CPU, KILN_E_LIMIT, "line 1: directive longer than 1024 bytes");
    memset(src, 'x', 5000);
    strcpy(src + 5000, "\n// kiln: launch k args(x)\n");
    c = parse_ok(src, KILN_BACKEND_CPU);
    assert_int_equal(c->launches[0].line, 2);
    candidate_free(c);

    /* Count caps: 16 launches, 64 tunables, 64 values, 32 args. */
    size_t at = 0;
    for (int i = 0; i < 17; i++)
        at += (size_t)snprintf(src + at, big - at, "// kiln: launch k%d args(x)\n", i);
    parse_bad(src, KILN_BACKEND_CPU, KILN_E_LIMIT, "line 17: more than 16 launches");
    at = 0;
    for (int i = 0; i < 65; i++)
        at += (size_t)snprintf(src + at, big - at, "// kiln: tunable T%d {1} = 1\n", i);
    parse_bad(src, KILN_BACKEND_CPU, KILN_E_LIMIT, "line 65: more than 64 tunables");
    at = (size_t)snprintf(src, big, "// kiln: tunable T {0");
    for (int i = 1; i < 65; i++)
        at += (size_t)snprintf(src + at, big - at, ", %d", i);
    snprintf(src + at, big - at, "} = 0\n");
    parse_bad(src, KILN_BACKEND_CPU, KILN_E_LIMIT, "line 1: tunable T has more than 64 values");
    at = (size_t)snprintf(src, big, "// kiln: launch k args(a0");
    for (int i = 1; i < 33; i++)
        at += (size_t)snprintf(src + at, big - at, ", a%d", i);
    snprintf(src + at, big - at, ")\n");
    parse_bad(src, KILN_BACKEND_CPU, KILN_E_LIMIT, "line 1: args() lists more than 32 names");
    free(src);
}

/* `require`: conditions over the tunables, checked with every configuration
 * (and on the defaults when parsing), with messages naming both sides. */
static void require_directives(void **state)
{
    (void)state;
    const char *src = "// kiln: tunable BM {16, 32, 64} = 32\n"
                      "// kiln: tunable TM {1, 2, 4} = 1\n"
                      "// kiln: require (BM / TM) * 8 >= 64\n"
                      "// kiln: require BM % TM == 0\n"
                      "// kiln: require 4 * BM<=1024\n"
                      "// kiln: launch k grid(1) block(BM / TM) args(n)\n";
    struct candidate *c = parse_ok(src, KILN_BACKEND_CUDA);
    assert_int_equal(c->nrequires, 3);
    assert_int_equal(c->requires[0].op, CAND_GE);
    assert_int_equal(c->requires[1].op, CAND_EQ);
    assert_int_equal(c->requires[2].op, CAND_LE);
    assert_string_equal(expr_text(c->requires[2].rhs), "1024");
    struct kiln_err e;
    kiln_err_clear(&e);
    int64_t ok[] = {64, 4}, bad[] = {16, 4};
    assert_int_equal(candidate_check_config(c, ok, NULL, &e), KILN_OK);
    assert_int_equal(candidate_check_config(c, bad, NULL, &e), KILN_E_REJECTED);
    assert_string_equal(e.msg, "require on line 3 fails: (BM / TM) * 8 >= 64 is 32 >= 64");
    char defs[2][CAND_DEFINE_MAX];
    assert_int_equal(candidate_defines(c, bad, NULL, defs, &e), KILN_E_REJECTED);
    candidate_free(c);

    parse_bad("// kiln: tunable A {1, 2} = 1\n// kiln: require A\n"
              "// kiln: launch k grid(1) block(1) args(n)\n",
              KILN_BACKEND_CUDA, KILN_E_PARSE,
              "line 2: require needs a comparison (<=, <, >=, >, == or !=), e.g. 'require BM * BN "
              "<= 1024'");
    parse_bad("// kiln: tunable A {1, 2} = 1\n// kiln: require A < 2 < 3\n"
              "// kiln: launch k grid(1) block(1) args(n)\n",
              KILN_BACKEND_CUDA, KILN_E_PARSE, "line 2: require takes one comparison");
    parse_bad("// kiln: tunable A {1, 2} = 1\n// kiln: require A <= n\n"
              "// kiln: launch k grid(1) block(1) args(n)\n",
              KILN_BACKEND_CUDA, KILN_E_NOTFOUND,
              "line 2: require may name only tunables and DEVICE_* limits: \"n\": column 1: "
              "unknown name 'n'");
    parse_bad("// kiln: tunable A {1, 2} = 1\n// kiln: require A >= 2\n"
              "// kiln: launch k grid(1) block(1) args(n)\n",
              KILN_BACKEND_CUDA, KILN_E_REJECTED,
              "the tunables' defaults: require on line 2 fails: A >= 2 is 1 >= 2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(saxpy_example),          cmocka_unit_test(require_directives),
        cmocka_unit_test(multi_dim_and_cpu),      cmocka_unit_test(hostile_directives),
        cmocka_unit_test(hostile_bytes_and_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
