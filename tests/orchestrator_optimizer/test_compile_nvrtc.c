/* --compiler nvrtc: kiln-nvrtc in the `nvrtc` sandbox against nvcc in the
 * `compile` sandbox, on the same sources. Needs the CUDA toolkit (nvcc and
 * kiln-nvrtc built), not a GPU; skipped, saying why, without them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "evaluate.h"
#include "fsutil.h"

static char nvrtc[PATH_MAX], work[PATH_MAX];

static enum kiln_rc compile(enum compile_tool tool, const char *src, const char *const *defs,
                            size_t ndefs, const char *dir, struct compile_result *res)
{
    char wd[PATH_MAX + 32];
    snprintf(wd, sizeof(wd), "%s/%s", work, dir);
    struct compile_request req = {.backend = KILN_BACKEND_CUDA,
                                  .tool = tool,
                                  .nvrtc = nvrtc,
                                  .source = src,
                                  .len = strlen(src),
                                  .defines = defs,
                                  .ndefines = ndefs,
                                  .arch = "sm_90",
                                  .work_dir = wd};
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc rc = compile_candidate(&req, res, &e);
    if (rc != KILN_OK)
        fprintf(stderr, "compile: %s\n", e.msg);
    return rc;
}

/* The bytes of section `want` of an ELF64 file (the kernel's code). */
static size_t section(const char *path, const char *want, unsigned char *out, size_t cap)
{
    char *b = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_read_file(path, 1u << 24, &b, &len, &e) != KILN_OK || len < 64)
        return 0;
    uint64_t shoff;
    uint16_t ent, num, strndx;
    memcpy(&shoff, b + 0x28, 8);
    memcpy(&ent, b + 0x3a, 2);
    memcpy(&num, b + 0x3c, 2);
    memcpy(&strndx, b + 0x3e, 2);
    size_t got = 0;
    uint64_t names;
    memcpy(&names, b + shoff + (uint64_t)strndx * ent + 0x18, 8);
    for (uint16_t i = 0; i < num && shoff + (uint64_t)(i + 1) * ent <= len; i++) {
        const char *h = b + shoff + (uint64_t)i * ent;
        uint32_t name;
        uint64_t off, size;
        memcpy(&name, h, 4);
        memcpy(&off, h + 0x18, 8);
        memcpy(&size, h + 0x20, 8);
        if (names + name < len && strcmp(b + names + name, want) == 0 && off + size <= len &&
            size <= cap) {
            memcpy(out, b + off, size);
            got = size;
        }
    }
    free(b);
    return got;
}

static int setup(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (eval_program_path("kiln-nvrtc", nvrtc, sizeof(nvrtc), &e) != KILN_OK ||
        access("/usr/local/cuda/bin/nvcc", X_OK) != 0) {
        printf("skipped: needs the CUDA toolkit (nvcc) and kiln-nvrtc: %s\n", e.msg);
        exit(77);
    }
    return fs_make_tempdir("nvrtc-test", work, sizeof(work), &e) == KILN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    (void)(fs_remove_tree(work, &e) == KILN_OK);
    return 0;
}

static const char SAXPY[] =
    "extern \"C\" __global__ void saxpy(long long n, float a, const float *x, const float *y,\n"
    "                                   float *out)\n"
    "{\n"
    "    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;\n"
    "    if (i < n)\n"
    "        out[i] = a * x[i] + y[i];\n"
    "}\n";

/* Shared memory: NVRTC 13.0 addresses it with 64-bit pointers where nvcc
 * uses 32-bit ones, so the code may differ; the usage report must not. */
static const char STAGED[] =
    "extern \"C\" __global__ void staged(long long n, const float *x, float *out)\n"
    "{\n"
    "    long long i = (long long)blockIdx.x * BLOCK + threadIdx.x;\n"
    "    __shared__ float s[BLOCK];\n"
    "    s[threadIdx.x] = i < n ? x[i] : 0.0f;\n"
    "    __syncthreads();\n"
    "    if (i < n)\n"
    "        out[i] = s[BLOCK - 1 - threadIdx.x];\n"
    "}\n";

static void reports_resource_usage(void **state)
{
    (void)state;
    const char *defs[] = {"-DBLOCK=256"};
    struct compile_result r;
    assert_int_equal(compile(COMPILE_NVRTC, STAGED, defs, 1, "staged", &r), KILN_OK);
    assert_true(r.ok);
    assert_int_equal(r.nkernels, 1);
    assert_string_equal(r.kernels[0].name, "staged");
    assert_true(r.kernels[0].registers > 0);
    assert_int_equal(r.kernels[0].smem_bytes, 1024); /* BLOCK floats */
    assert_int_equal(r.kernels[0].stack_bytes, 0);
    compile_result_free(&r);
}

static void same_code_as_nvcc(void **state)
{
    (void)state;
    const char *defs[] = {"-DBLOCK=256"};
    struct compile_result a, b;
    assert_int_equal(compile(COMPILE_NVCC, SAXPY, defs, 1, "nvcc", &a), KILN_OK);
    assert_int_equal(compile(COMPILE_NVRTC, SAXPY, defs, 1, "nvrtc", &b), KILN_OK);
    assert_true(a.ok);
    assert_true(b.ok);
    assert_int_equal(b.nkernels, 1);
    assert_int_equal(a.kernels[0].registers, b.kernels[0].registers);
    static unsigned char ta[1 << 16], tb[1 << 16];
    size_t na = section(a.artifact, ".text.saxpy", ta, sizeof(ta));
    size_t nb = section(b.artifact, ".text.saxpy", tb, sizeof(tb));
    assert_true(na > 0);
    assert_int_equal(na, nb);
    assert_memory_equal(ta, tb, na);
    compile_result_free(&a);
    compile_result_free(&b);
}

static void compile_errors_come_back_as_diagnostics(void **state)
{
    (void)state;
    struct compile_result r;
    assert_int_equal(
        compile(COMPILE_NVRTC,
                "extern \"C\" __global__ void k(float *x) { x[0] = kiln_undeclared; }\n", NULL, 0,
                "bad", &r),
        KILN_OK);
    assert_false(r.ok);
    assert_non_null(strstr(r.diagnostics, "kiln_undeclared"));
    const char *nl = strchr(r.diagnostics, '\n');
    const char *e = strstr(r.diagnostics, "error");
    assert_true(e && (!nl || e < nl)); /* error lines first */
    compile_result_free(&r);
}

static void toolkit_headers_are_found(void **state)
{
    (void)state;
    struct compile_result r;
    assert_int_equal(
        compile(COMPILE_NVRTC,
                "#include <cuda_fp16.h>\n"
                "extern \"C\" __global__ void h(__half *x) { x[0] = __float2half(1.0f); }\n",
                NULL, 0, "fp16", &r),
        KILN_OK);
    if (!r.ok)
        fprintf(stderr, "%s\n", r.diagnostics);
    assert_true(r.ok);
    compile_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reports_resource_usage),
        cmocka_unit_test(same_code_as_nvcc),
        cmocka_unit_test(compile_errors_come_back_as_diagnostics),
        cmocka_unit_test(toolkit_headers_are_found),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
