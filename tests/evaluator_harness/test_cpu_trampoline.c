#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_trampoline.h"
#include "harness_fixture.h"

static void saxpy_trampoline_text(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    char *src = NULL;
    kiln_err_clear(&err);
    fx_saxpy_plan(&p, HB_CPU);
    assert_int_equal(cpu_trampoline_source(&p, &src, &err), KILN_OK);
    assert_non_null(strstr(src, "void saxpy(long long, float, const float *, const float *, "
                                "float *);\n"));
    assert_non_null(strstr(src, "void kiln_launch_0(void *const *args)\n{\n"
                                "    saxpy(\n"
                                "        *(const long long *)args[0],\n"
                                "        *(const float *)args[1],\n"
                                "        (const float *)(uintptr_t) * (const uint64_t *)args[2],\n"
                                "        (const float *)(uintptr_t) * (const uint64_t *)args[3],\n"
                                "        (float *)(uintptr_t) * (const uint64_t *)args[4]);\n}\n"));
    assert_null(strstr(src, "kiln_launch_1"));
    free(src);
    harness_plan_free(&p);
}

static void repeated_kernel_declared_once(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    char *src = NULL;
    kiln_err_clear(&err);
    fx_saxpy_plan(&p, HB_CPU);
    p.launches[1] = p.launches[0];
    p.nlaunches = 2;
    assert_int_equal(cpu_trampoline_source(&p, &src, &err), KILN_OK);
    char *first = strstr(src, "void saxpy(");
    assert_non_null(first);
    assert_null(strstr(first + 1, "void saxpy("));
    assert_non_null(strstr(src, "void kiln_launch_1(void *const *args)\n"));
    free(src);

    /* Same function, other argument types: no single C prototype fits. */
    p.launches[1].args[0] = 1; /* float where long long was */
    assert_int_equal(cpu_trampoline_source(&p, &src, &err), KILN_E_REJECTED);
    assert_null(src);
    assert_non_null(strstr(err.msg, "different argument types"));
    harness_plan_free(&p);
}

static void every_type_maps_to_c(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    char *src = NULL;
    kiln_err_clear(&err);
    fx_saxpy_plan(&p, HB_CPU);
    p.args[0].type = HS_INT32;
    p.args[1].type = HS_FLOAT64;
    p.args[2].dtype = DT_BFLOAT16;
    p.args[3].dtype = DT_BOOL;
    p.args[4].dtype = DT_UINT64;
    p.args[4].role = HR_INOUT;
    assert_int_equal(cpu_trampoline_source(&p, &src, &err), KILN_OK);
    assert_non_null(strstr(src, "void saxpy(int, double, const uint16_t *, const _Bool *, "
                                "uint64_t *);"));
    free(src);
    harness_plan_free(&p);
}

static void invalid_plan_rejected(void **state)
{
    (void)state;
    struct harness_plan p;
    struct kiln_err err;
    char *src = (char *)"sentinel";
    kiln_err_clear(&err);
    fx_saxpy_plan(&p, HB_CPU);
    strcpy(p.launches[0].kernel, "kiln_launch_0"); /* would collide with the trampoline */
    assert_int_equal(cpu_trampoline_source(&p, &src, &err), KILN_E_REJECTED);
    assert_null(src);
    harness_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(saxpy_trampoline_text),
        cmocka_unit_test(repeated_kernel_declared_once),
        cmocka_unit_test(every_type_maps_to_c),
        cmocka_unit_test(invalid_plan_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
