/* cand_source.h: a candidate's parameter lists against the signature
 * (issue 35 item 5: `int n` for an int64 n was caught nowhere) and the
 * tunables its code uses (item 11: an unused tunable is warned about). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cand_source.h"
#include "fixtures.h"

static struct workload *wl;

static int setup(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    return workload_parse_json(saxpy_json, strlen(saxpy_json), NULL, &wl, &err) == KILN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    workload_free(wl);
    return 0;
}

/* Checks `src` (a candidate for backend b); the message when refused. */
static enum kiln_rc check(const char *src, enum kiln_backend b, char *msg, size_t cap)
{
    struct candidate *c = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(candidate_parse(src, strlen(src), b, &c, &err), KILN_OK);
    enum kiln_rc rc = cand_source_check_params(src, strlen(src), c, wl, &err);
    snprintf(msg, cap, "%s", err.msg);
    candidate_free(c);
    return rc;
}

#define C_LAUNCH  "// kiln: launch saxpy args(n, a, x, y, out)\n"
#define CU_LAUNCH "// kiln: launch saxpy grid(cdiv(n, 256)) block(256) args(n, a, x, y, out)\n"

static void right_types_pass(void **state)
{
    (void)state;
    char msg[KILN_ERR_MSG_MAX];
    assert_int_equal(check(C_LAUNCH "void saxpy(long long n, float a, const float *x, const "
                                    "float *y, float *out) { }\n",
                           KILN_BACKEND_CPU, msg, sizeof(msg)),
                     KILN_OK);
    /* CUDA spellings: attributes before the name, __restrict__, int64_t,
     * a `long` (8 bytes here), a call and a prototype beside the definition. */
    assert_int_equal(
        check(CU_LAUNCH "#include <stdint.h>\n"
                        "extern \"C\" __global__ void saxpy(int64_t n, float a, const float *);\n"
                        "extern \"C\" __global__ void __launch_bounds__(256)\n"
                        "saxpy(long n, const float a, const float *__restrict__ x,\n"
                        "      const float *__restrict__ y, float *__restrict__ out)\n"
                        "{\n  helper(n); /* saxpy(int n) { */ \"saxpy(int n) {\";\n}\n",
              KILN_BACKEND_CUDA, msg, sizeof(msg)),
        KILN_OK);
}

static void int_for_int64_is_refused(void **state)
{
    (void)state;
    char msg[KILN_ERR_MSG_MAX];
    assert_int_equal(check(C_LAUNCH "\nvoid saxpy(int n, float a, const float *x, const float *y, "
                                    "float *out) { }\n",
                           KILN_BACKEND_CPU, msg, sizeof(msg)),
                     KILN_E_REJECTED);
    assert_string_equal(msg, "line 3: saxpy's parameter 1 `int n` is a 4-byte integer, but args() "
                             "passes n, an int64 in the workload's signature: declare it `long "
                             "long n` (evaluator/CANDIDATE.md, scalar argument types)");
}

static void other_mismatches_are_refused(void **state)
{
    (void)state;
    char msg[KILN_ERR_MSG_MAX];
    /* A double for a float32. */
    assert_int_equal(check(C_LAUNCH "void saxpy(long long n, double a, const float *x, const "
                                    "float *y, float *out) { }\n",
                           KILN_BACKEND_CPU, msg, sizeof(msg)),
                     KILN_E_REJECTED);
    assert_non_null(strstr(msg, "parameter 2 `double a` is a double"));
    assert_non_null(strstr(msg, "declare it `float a`"));
    /* A scalar for a tensor. */
    assert_int_equal(check(C_LAUNCH "void saxpy(long long n, float a, float x, const float *y, "
                                    "float *out) { }\n",
                           KILN_BACKEND_CPU, msg, sizeof(msg)),
                     KILN_E_REJECTED);
    assert_non_null(strstr(msg, "parameter 3 `float x` is a float, but args() passes x, a tensor"));
    assert_non_null(strstr(msg, "declare it `const float *x`"));
    /* Too few parameters. */
    assert_int_equal(check(CU_LAUNCH "extern \"C\" __global__ void saxpy(long long n, const float "
                                     "*x, const float *y, float *out) {}\n",
                           KILN_BACKEND_CUDA, msg, sizeof(msg)),
                     KILN_E_REJECTED);
    assert_string_equal(msg, "line 2: saxpy takes 4 parameters, but its launch passes 5: "
                             "args(n, a, x, y, out)");
}

/* What it cannot be sure of, it does not judge. */
static void unsure_is_not_judged(void **state)
{
    (void)state;
    char msg[KILN_ERR_MSG_MAX];
    const char *const sources[] = {
        /* the candidate's own typedef */
        C_LAUNCH "typedef int idx_t;\nvoid saxpy(idx_t n, float a, const float *x, const float "
                 "*y, float *out) { }\n",
        /* two definitions: the preprocessor picks one */
        C_LAUNCH "#if 1\nvoid saxpy(int n, float a, const float *x, const float *y, float *out) "
                 "{ }\n#else\nvoid saxpy(long long n, float a, const float *x, const float *y, "
                 "float *out) { }\n#endif\n",
        /* a macro for the parameter list */
        C_LAUNCH "#define PARAMS int n, float a, const float *x, const float *y, float *out\n"
                 "void saxpy(PARAMS) { }\n",
        /* no definition at all */
        C_LAUNCH "void other(int n) { }\n",
    };
    for (size_t i = 0; i < sizeof(sources) / sizeof(*sources); i++)
        if (check(sources[i], KILN_BACKEND_CPU, msg, sizeof(msg)) != KILN_OK)
            fail_msg("source %zu: %s", i, msg);
}

static void tunables_used(void **state)
{
    (void)state;
    const char *src = "// kiln: tunable UNROLL {1, 2} = 1\n"
                      "// kiln: tunable VEC {1, 4} = 1\n"
                      "// kiln: tunable SPARE {1, 2} = 1\n"
                      "// kiln: tunable QUOTED {1, 2} = 1\n" C_LAUNCH "#if VEC == 4\n#endif\n"
                      "/* SPARE is explained here */ static const char *s = \"QUOTED\";\n"
                      "void saxpy(long long n, float a, const float *x, const float *y, float *out)"
                      " { for (int j = 0; j < UNROLL; j++) ; }\n";
    struct candidate *c = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(candidate_parse(src, strlen(src), KILN_BACKEND_CPU, &c, &err), KILN_OK);
    bool used[CAND_MAX_TUNABLES];
    cand_source_tunables_used(src, strlen(src), c, used);
    assert_true(used[0]);  /* UNROLL, in the code */
    assert_true(used[1]);  /* VEC, in #if */
    assert_false(used[2]); /* SPARE, in a comment only */
    assert_false(used[3]); /* QUOTED, in a string only */
    candidate_free(c);
}

/* A tunable used only in the launch line's grid (saxpy's GRID_CAP) is used. */
static void tunable_in_the_launch_line_is_used(void **state)
{
    (void)state;
    const char *src =
        "// kiln: tunable BLOCK {128, 256} = 256\n"
        "// kiln: tunable GRID_CAP {1056, 4224} = 4224\n"
        "// kiln: tunable GRID {1, 2} = 1\n"
        "// kiln: launch k grid(min(cdiv(n, BLOCK), GRID_CAP)) block(BLOCK) args(n, x)\n"
        "extern \"C\" __global__ void k(long long n, float *x) { /* GRID */ }\n";
    struct candidate *c = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(candidate_parse(src, strlen(src), KILN_BACKEND_CUDA, &c, &err), KILN_OK);
    bool used[CAND_MAX_TUNABLES];
    cand_source_tunables_used(src, strlen(src), c, used);
    assert_true(used[0]);  /* BLOCK */
    assert_true(used[1]);  /* GRID_CAP, in the grid only */
    assert_false(used[2]); /* GRID: a prefix of GRID_CAP and a comment are not uses */
    candidate_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(right_types_pass),
        cmocka_unit_test(int_for_int64_is_refused),
        cmocka_unit_test(other_mismatches_are_refused),
        cmocka_unit_test(unsure_is_not_judged),
        cmocka_unit_test(tunables_used),
        cmocka_unit_test(tunable_in_the_launch_line_is_used),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
