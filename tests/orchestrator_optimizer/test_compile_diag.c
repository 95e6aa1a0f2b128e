/* Compiler diagnostics in the compiler's own order (compile.h, issue 35
 * item 6): gcc's context, source and caret lines stay with their error,
 * nvcc's multi-line template errors stay whole, and over the cap whole
 * diagnostics are dropped (warnings before errors) without reordering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

static const char gcc_text[] =
    "/in/candidate.c: In function 'saxpy':\n"
    "/in/candidate.c:4:9: warning: unused variable 'spare' [-Wunused-variable]\n"
    "    4 |     int spare;\n"
    "      |         ^~~~~\n"
    "/in/candidate.c:6:36: error: 'UNROLL' undeclared (first use in this function)\n"
    "    6 |         out[i] = a * x[i] + UNROLL;\n"
    "      |                             ^~~~~~\n"
    "/in/candidate.c:6:36: note: each undeclared identifier is reported only once for each "
    "function it appears in\n";

static const char nvcc_text[] =
    "/in/candidate.cu(12): error: no instance of function template \"load\" matches the "
    "argument list\n"
    "            argument types are: (const float *, int)\n"
    "      v = load<VEC>(x, i);\n"
    "          ^\n"
    "/in/candidate.cu(5): note #3327-D: candidate function template \"load<N>(const T *, "
    "long long)\" failed deduction\n"
    "  template <int N, typename T> __device__ T load(const T *p, long long i)\n"
    "                                            ^\n"
    "          detected during instantiation of \"void saxpy_body<VEC>(long long)\" at line 30\n"
    "\n"
    "1 error detected in the compilation of \"/in/candidate.cu\".\n";

static void keeps_the_compilers_order(void **state)
{
    (void)state;
    const char *texts[] = {gcc_text, nvcc_text, ""};
    for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
        char *out = compile_cap_diagnostics(texts[i]);
        assert_non_null(out);
        assert_string_equal(out, texts[i]);
        free(out);
    }
}

static void first_error_is_found_in_place(void **state)
{
    (void)state;
    /* gcc: the "In function" line and a warning come first; the first
     * error is the 'UNROLL' line, followed by its source and caret. */
    const char *e = compile_first_error(gcc_text);
    assert_ptr_equal(e, strstr(gcc_text, "/in/candidate.c:6:36: error:"));
    assert_ptr_equal(compile_first_error(nvcc_text), nvcc_text);
    const char *clean = "ptxas info    : Used 8 registers\n";
    assert_ptr_equal(compile_first_error(clean), clean);
    const char *note = "a.c:1:1: note: an error follows\na.c:2:1: error: boom\n";
    assert_ptr_equal(compile_first_error(note), strstr(note, "a.c:2:1"));
}

/* Many warnings, then the error, then more warnings: over the cap the
 * error's block survives whole, every kept block in its order. */
static void caps_whole_diagnostics_errors_first(void **state)
{
    (void)state;
    size_t cap = 4 * COMPILE_DIAG_MAX;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t off = 0;
    for (int i = 0; off < COMPILE_DIAG_MAX; i++)
        off += (size_t)snprintf(text + off, cap - off,
                                "a.c:%d:5: warning: unused variable 'v%d'\n"
                                "  %3d |     int v%d;\n"
                                "      |         ^~\n",
                                i + 1, i, i + 1, i);
    const char *err = "a.c:900:7: error: 'UNROLL' undeclared\n"
                      "  900 |     x = UNROLL;\n"
                      "      |         ^~~~~~\n";
    off += (size_t)snprintf(text + off, cap - off, "%s", err);
    off += (size_t)snprintf(text + off, cap - off,
                            "a.c:901:5: warning: last one\n"
                            "  901 |     int last;\n");
    char *out = compile_cap_diagnostics(text);
    assert_non_null(out);
    assert_true(strlen(out) <= COMPILE_DIAG_MAX);
    const char *at = strstr(out, err);
    assert_non_null(at); /* whole, source and caret under it */
    assert_non_null(strstr(out, "more bytes of diagnostics dropped]\n"));
    /* The kept warnings are the first ones, before the error, as compiled. */
    const char *w1 = strstr(out, "a.c:1:5: warning: unused variable 'v0'\n    1 |     int v0;\n");
    assert_non_null(w1);
    assert_true(w1 < at);
    /* Every warning block kept is whole: a header is followed by its source line. */
    for (const char *p = out; (p = strstr(p, ": warning: ")) != NULL; p++) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        assert_true(nl[1] == ' ');
    }
    free(out);
    free(text);
}

/* One error longer than the cap alone: its head, cut at a line. */
static void caps_one_huge_error(void **state)
{
    (void)state;
    size_t cap = 3 * COMPILE_DIAG_MAX;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t off = (size_t)snprintf(text, cap, "a.cu(3): error: too many template arguments\n");
    while (off < 2 * COMPILE_DIAG_MAX)
        off += (size_t)snprintf(text + off, cap - off, "            argument %zu\n", off);
    char *out = compile_cap_diagnostics(text);
    assert_non_null(out);
    assert_true(strlen(out) <= COMPILE_DIAG_MAX);
    assert_int_equal(strncmp(out, "a.cu(3): error: too many", 24), 0);
    assert_non_null(strstr(out, "more bytes of diagnostics dropped]\n"));
    free(out);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keeps_the_compilers_order),
        cmocka_unit_test(first_error_is_found_in_place),
        cmocka_unit_test(caps_whole_diagnostics_errors_first),
        cmocka_unit_test(caps_one_huge_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
