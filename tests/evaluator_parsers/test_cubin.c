/* cubin_check_heap on cubins nvcc 13.0 made (-cubin -arch=sm_90, kept in
 * tests/evaluator_parsers/cubins/) and on damaged copies of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubin.h"

static unsigned char *load(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/tests/evaluator_parsers/cubins/%s", getenv("KILN_SOURCE_DIR"),
             name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    unsigned char *b = malloc(1 << 20);
    assert_non_null(b);
    *len = fread(b, 1, 1 << 20, f);
    fclose(f);
    assert_true(*len > 64);
    return b;
}

static enum kiln_rc check(const char *name, struct kiln_err *e)
{
    size_t len;
    unsigned char *b = load(name, &len);
    kiln_err_clear(e);
    enum kiln_rc rc = cubin_check_heap(b, len, e);
    free(b);
    return rc;
}

static void plain_and_printf_kernels_pass(void **state)
{
    (void)state;
    struct kiln_err e;
    assert_int_equal(check("plain.cubin", &e), KILN_OK);
    /* printf (vprintf) is allowed; its FIFO is capped by the harness. */
    assert_int_equal(check("printf.cubin", &e), KILN_OK);
}

static void heap_functions_are_refused_by_name(void **state)
{
    (void)state;
    struct kiln_err e;
    assert_int_equal(check("malloc_free_printf.cubin", &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "malloc"));
    assert_non_null(strstr(e.msg, "survives module reloads"));
    assert_int_equal(check("free.cubin", &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "device-side free"));
    /* __nv_aligned_device_malloc compiles to another import. */
    assert_int_equal(check("aligned_malloc.cubin", &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "__cuda_syscall_aligned_malloc"));
}

static void not_a_cubin_is_refused(void **state)
{
    (void)state;
    struct kiln_err e;
    const char *ptx = "//\n.version 8.0\n.target sm_90\n.address_size 64\n"
                      ".extern .func (.param .b64 r) malloc (.param .b64 n);\n"
                      "                                                    ";
    kiln_err_clear(&e);
    assert_int_equal(cubin_check_heap(ptx, strlen(ptx), &e), KILN_E_PARSE);
    assert_non_null(strstr(e.msg, "not an ELF image"));
    unsigned char big[8] = "\177ELF";
    assert_int_equal(cubin_check_heap(big, (size_t)CUBIN_MAX_BYTES + 1, &e), KILN_E_LIMIT);
}

/* Every truncation and many single-byte corruptions: never a crash (ASan
 * builds check the reads), never a pass for the malloc image unless the
 * damage hid the symbol in a way that still parses. */
static void damaged_images_never_crash(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = load("malloc_free_printf.cubin", &len);
    struct kiln_err e;
    for (size_t n = 0; n < len; n++) {
        unsigned char *c = malloc(n ? n : 1);
        assert_non_null(c);
        memcpy(c, b, n);
        kiln_err_clear(&e);
        enum kiln_rc rc = cubin_check_heap(c, n, &e);
        assert_true(rc == KILN_E_PARSE || rc == KILN_E_REJECTED);
        free(c);
    }
    unsigned char *c = malloc(len);
    assert_non_null(c);
    for (size_t i = 0; i < len; i += 3) {
        memcpy(c, b, len);
        c[i] ^= 0xA5;
        kiln_err_clear(&e);
        enum kiln_rc rc = cubin_check_heap(c, len, &e);
        assert_true(rc == KILN_OK || rc == KILN_E_PARSE || rc == KILN_E_REJECTED);
    }
    /* The section header table's offset pointing past the end. */
    memcpy(c, b, len);
    memset(c + 40, 0xFF, 8);
    assert_int_equal(cubin_check_heap(c, len, &e), KILN_E_PARSE);
    free(c);
    free(b);
}

/* elf_find_functions: a cubin's kernels by name, and the ones it has for
 * the message (issue 26 item 4: a misspelt launch is a compile error). */
static void launched_kernels_are_found_by_name(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = load("plain.cubin", &len);
    struct kiln_err e;
    kiln_err_clear(&e);
    const char *want[] = {"k", "kk"};
    bool found[2];
    char defined[64];
    assert_int_equal(elf_find_functions(b, len, 1, want, 2, found, defined, sizeof(defined), &e),
                     KILN_OK);
    assert_true(found[0]);
    assert_false(found[1]);
    assert_string_equal(defined, "k");
    /* A full list ends in "...", never past its buffer. */
    char tiny[4];
    assert_int_equal(elf_find_functions(b, len, 1, want, 1, found, tiny, sizeof(tiny), &e),
                     KILN_OK);
    assert_true(strlen(tiny) < sizeof(tiny));
    /* Damage: never a crash, never a read outside the image (ASan). */
    for (size_t n = 0; n < len; n += 7) {
        kiln_err_clear(&e);
        enum kiln_rc rc = elf_find_functions(b, n, 1, want, 2, found, defined, sizeof(defined), &e);
        assert_true(rc == KILN_OK || rc == KILN_E_PARSE);
    }
    /* A cubin is not a host object when the caller wants one, and back. */
    b[18] = 62; /* EM_X86_64 */
    assert_int_equal(elf_find_functions(b, len, 1, want, 2, found, defined, sizeof(defined), &e),
                     KILN_E_PARSE);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_and_printf_kernels_pass),
        cmocka_unit_test(heap_functions_are_refused_by_name),
        cmocka_unit_test(not_a_cubin_is_refused),
        cmocka_unit_test(damaged_images_never_crash),
        cmocka_unit_test(launched_kernels_are_found_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
