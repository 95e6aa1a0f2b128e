/* envcap: what a run recorded vs what a host shows, and the drift between
 * them that kiln replay and compare print before judging any timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "envcap.h"

static void from_run_marks_what_was_not_recorded(void **state)
{
    (void)state;
    json_t *run = json_pack("{s:{s:s}, s:{s:s, s:s, s:s}}", "kiln", "cuda", "13.0.88", "gpu",
                            "model", "NVIDIA H200", "uuid", "GPU-1", "driver", "580.159.04");
    json_t *env = json_pack("{s:s}", "sm_clock_mhz", "1980");
    json_t *e = envcap_from_run(run, env);
    assert_string_equal(json_string_value(json_object_get(e, "gpu_model")), "NVIDIA H200");
    assert_string_equal(json_string_value(json_object_get(e, "driver")), "580.159.04");
    assert_string_equal(json_string_value(json_object_get(e, "cuda_toolkit_kiln")), "13.0.88");
    assert_string_equal(json_string_value(json_object_get(e, "sm_clock_mhz")), "1980");
    assert_string_equal(json_string_value(json_object_get(e, "nvcc")), "not recorded");
    json_decref(e);
    json_decref(env);
    json_decref(run);
}

static void drift_names_changes_and_skips_unknowns(void **state)
{
    (void)state;
    json_t *a =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "gpu_model", "NVIDIA H200", "driver", "580.159.04",
                  "nvcc", "not recorded", "sm_clock_mhz", "1980", "cc", "gcc 12");
    json_t *b =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "gpu_model", "NVIDIA H200", "driver", "590.10",
                  "nvcc", "release 13.1", "sm_clock_mhz", "1755", "cc", "unavailable");
    char out[512];
    assert_int_equal(envcap_drift(a, b, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "driver: 580.159.04 -> 590.10"));
    assert_non_null(strstr(out, "sm_clock_mhz: 1980 -> 1755"));
    assert_null(strstr(out, "nvcc")); /* unknown on one side: not drift */
    assert_null(strstr(out, "gpu_model"));
    assert_int_equal(envcap_drift(a, a, out, sizeof(out)), 0);
    json_decref(a);
    json_decref(b);
}

static void now_always_fills_every_key(void **state)
{
    (void)state;
    json_t *e = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(envcap_now(-1, &e, &err), KILN_OK);
    static const char *const keys[] = {"gpu_model", "driver",       "cuda_toolkit_kiln", "nvcc",
                                       "cc",        "sm_clock_mhz", "host_kernel"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_non_null(json_string_value(json_object_get(e, keys[i])));
    assert_string_equal(json_string_value(json_object_get(e, "gpu_model")), "unavailable");
    json_decref(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(from_run_marks_what_was_not_recorded),
        cmocka_unit_test(drift_names_changes_and_skips_unknowns),
        cmocka_unit_test(now_always_fills_every_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
