/* cubin_check_heap on cubins nvcc 13.0 made (-cubin -arch=sm_90, kept in
 * tests/evaluator_parsers/cubins/) and on damaged copies of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Why a CUDA candidate cannot write its own timings (SECURITY.md): what
 * kiln loads of it is a cubin, device code only. Host code in its source
 * (a constructor, a destructor rewriting /out/timings.json, as a cpu
 * candidate can) is dropped by `nvcc -cubin`, so nothing of it runs in
 * the harness's process; and an ELF of host code is refused before any
 * load. Compiled here with the flags pipeline/compile.c gives nvcc. */
static const char hostile_cu[] =
    "#include <cstdio>\n"
    "__attribute__((constructor)) static void kiln_forge_host(void)\n"
    "{ FILE *f = fopen(\"/out/timings.json\", \"w\"); if (f) { fputs(\"{}\", f); fclose(f); } }\n"
    "struct Forge { Forge() { kiln_forge_host(); } } kiln_forge_static;\n"
    "extern \"C\" __global__ void saxpy(long long n, float a, const float *x, const float *y,\n"
    "                                   float *out)\n"
    "{ long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) out[i] = a * x[i] + y[i]; }\n";

static bool has_bytes(const unsigned char *b, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(b + i, s, n))
            return true;
    return false;
}

static void cubin_holds_no_host_code(void **state)
{
    (void)state;
    const char *nvcc =
        access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : "nvcc";
    char dir[] = "/tmp/kiln-cubin-host-XXXXXX", cmd[1024], path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/candidate.cu", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(hostile_cu, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "%s -cubin -arch=sm_90 -O3 -o %s/candidate.cubin %s >%s/log 2>&1 && "
             "cc -c -x c -o %s/host.o - <<'EOF' >>%s/log 2>&1\n"
             "__attribute__((constructor)) static void f(void) {}\nint g;\nEOF",
             nvcc, dir, path, dir, dir, dir);
    int st = system(cmd);
    if (st != 0) {
        snprintf(cmd, sizeof(cmd), "cat %s/log; rm -rf %s", dir, dir);
        if (system(cmd) != 0)
            print_message("(the log could not be shown)\n");
        skip(); /* no CUDA toolkit here: the toolkit is part of kiln's CI */
    }
    char name[300];
    snprintf(name, sizeof(name), "%s/candidate.cubin", dir);
    f = fopen(name, "rb");
    assert_non_null(f);
    unsigned char *b = malloc(1 << 20);
    assert_non_null(b);
    size_t len = fread(b, 1, 1 << 20, f);
    fclose(f);
    assert_true(len > 64);
    /* A CUDA ELF (e_machine 190), no host initialiser tables, nothing of
     * the host functions or their strings. */
    assert_int_equal(b[18] | b[19] << 8, 190);
    assert_false(has_bytes(b, len, ".init_array"));
    assert_false(has_bytes(b, len, ".ctors"));
    assert_false(has_bytes(b, len, ".fini_array"));
    assert_false(has_bytes(b, len, "kiln_forge_host"));
    assert_false(has_bytes(b, len, "timings.json"));
    assert_true(has_bytes(b, len, "saxpy"));
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(cubin_check_heap(b, len, &e), KILN_OK);
    free(b);
    /* Host code (an x86-64 ELF with a constructor) is never loaded. */
    snprintf(name, sizeof(name), "%s/host.o", dir);
    f = fopen(name, "rb");
    assert_non_null(f);
    unsigned char host[1 << 16];
    len = fread(host, 1, sizeof(host), f);
    fclose(f);
    kiln_err_clear(&e);
    assert_int_equal(cubin_check_heap(host, len, &e), KILN_E_PARSE);
    assert_non_null(strstr(e.msg, "not a 64-bit little-endian CUDA ELF image"));
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
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
        cmocka_unit_test(cubin_holds_no_host_code),
        cmocka_unit_test(damaged_images_never_crash),
        cmocka_unit_test(launched_kernels_are_found_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
