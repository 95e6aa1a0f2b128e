/* gpuinfo reads the driver's /proc files; these tests build a fake /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuinfo.h"

static char root[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    char *slash = path;
    while ((slash = strchr(slash + 1, '/')))
        if (slash > path + strlen(root)) {
            *slash = '\0';
            mkdir(path, 0755);
            *slash = '/';
        }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/kiln-gpuinfo-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void no_driver_means_no_gpus(void **state)
{
    (void)state;
    struct gpuinfo g[GPUINFO_MAX];
    size_t n = 99;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpuinfo_list(root, g, &n, &e), KILN_OK);
    assert_int_equal(n, 0);
    char v[64];
    assert_int_equal(gpuinfo_driver_version(root, v, sizeof(v), &e), KILN_E_NOTFOUND);
}

static void lists_in_bus_order_with_minors(void **state)
{
    (void)state;
    put("driver/nvidia/gpus/0000:41:00.0/information",
        "Model: \t\t NVIDIA H200\nIRQ: 1\nGPU UUID: \t GPU-bbb\nDevice Minor: \t 0\n");
    put("driver/nvidia/gpus/0000:05:00.0/information",
        "Model: \t\t NVIDIA H200\nGPU UUID: \t GPU-aaa\nDevice Minor: \t 3\n");
    put("driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n");
    struct gpuinfo g[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpuinfo_list(root, g, &n, &e), KILN_OK);
    assert_int_equal(n, 2);
    assert_string_equal(g[0].bus_id, "0000:05:00.0");
    assert_int_equal(g[0].minor, 3);
    assert_string_equal(g[0].uuid, "GPU-aaa");
    assert_string_equal(g[1].model, "NVIDIA H200");
    assert_int_equal(g[1].minor, 0);
    char v[64];
    assert_int_equal(gpuinfo_driver_version(root, v, sizeof(v), &e), KILN_OK);
    assert_string_equal(v, "580.159.04");
}

static void bad_minor_is_an_error(void **state)
{
    (void)state;
    put("driver/nvidia/gpus/0000:01:00.0/information", "Model: X\nDevice Minor: 9999\n");
    struct gpuinfo g[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpuinfo_list(root, g, &n, &e), KILN_E_PARSE);
    assert_non_null(strstr(e.msg, "Device Minor"));
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_driver_means_no_gpus, setup, teardown),
        cmocka_unit_test_setup_teardown(lists_in_bus_order_with_minors, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_minor_is_an_error, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
