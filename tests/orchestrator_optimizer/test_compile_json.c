/* The compile result's JSON form (compile.h): what a compile worker hands
 * its parent under kiln optimize --jobs, and compile_request_hash, which
 * decides whether a result left in a directory may be reused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void round_trips(void **state)
{
    (void)state;
    struct compile_result a;
    memset(&a, 0, sizeof(a));
    a.ok = true;
    a.seconds = 0.25;
    a.started = 1765000000.125;
    a.finished = 1765000000.5;
    memcpy(a.input_sha256, HASH, sizeof(a.input_sha256));
    a.diagnostics = strdup("candidate.cu(3): warning: \"quoted\"\n\ttab\n");
    a.nkernels = 2;
    snprintf(a.kernels[0].name, sizeof(a.kernels[0].name), "saxpy");
    a.kernels[0].registers = 16;
    a.kernels[0].smem_bytes = 4096;
    snprintf(a.kernels[1].name, sizeof(a.kernels[1].name), "other");
    a.kernels[1].spill_stores = 8;
    a.kernels[1].spill_loads = 4;
    a.kernels[1].stack_bytes = 32;
    char *text = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(compile_result_to_json(&a, &text, &e), KILN_OK);
    struct compile_result b;
    assert_int_equal(compile_result_from_json(text, strlen(text), &b, &e), KILN_OK);
    assert_true(b.ok);
    assert_true(b.seconds == 0.25 && b.started == a.started && b.finished == a.finished);
    assert_string_equal(b.input_sha256, HASH);
    assert_string_equal(b.diagnostics, a.diagnostics);
    assert_int_equal(b.nkernels, 2);
    assert_string_equal(b.kernels[1].name, "other");
    assert_int_equal(b.kernels[0].registers, 16);
    assert_int_equal(b.kernels[0].smem_bytes, 4096);
    assert_int_equal(b.kernels[1].spill_stores, 8);
    assert_int_equal(b.kernels[1].spill_loads, 4);
    assert_int_equal(b.kernels[1].stack_bytes, 32);
    assert_string_equal(b.artifact, ""); /* never carried */
    free(text);
    compile_result_free(&a);
    compile_result_free(&b);
}

static enum kiln_rc parse(const char *text)
{
    struct compile_result r;
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc rc = compile_result_from_json(text, strlen(text), &r, &e);
    if (rc == KILN_OK)
        compile_result_free(&r);
    else
        assert_true(e.msg[0] != '\0');
    return rc;
}

#define DOC(extra, kernels)                                                                        \
    "{\"ok\": true, \"input_sha256\": \"" HASH "\", \"seconds\": 1, \"started\": 2, "              \
    "\"finished\": 3, \"diagnostics\": \"\", \"kernels\": [" kernels "]" extra "}"

static void rejects_what_it_does_not_know(void **state)
{
    (void)state;
    assert_int_equal(parse(DOC("", "")), KILN_OK); /* no version: written before it had one */
    assert_int_equal(parse(DOC(", \"version\": 1", "")), KILN_OK);
    assert_int_equal(parse(DOC(", \"version\": 2", "")), KILN_E_UNSUPPORTED); /* newer kiln */
    assert_int_equal(parse(DOC(", \"version\": 0", "")), KILN_E_REJECTED);
    assert_int_equal(parse(DOC(", \"version\": \"1\"", "")), KILN_E_REJECTED);
    assert_int_equal(parse(DOC(", \"artifact\": \"/etc/passwd\"", "")), KILN_E_REJECTED);
    assert_int_equal(parse(DOC(", \"ok\": false", "")), KILN_E_PARSE); /* duplicate key */
    assert_int_equal(parse("[]"), KILN_E_REJECTED);
    assert_int_equal(parse("{\"ok\": true"), KILN_E_PARSE);
    assert_int_equal(parse("{\"ok\": 1, \"input_sha256\": \"" HASH "\", \"seconds\": 1, "
                           "\"started\": 2, \"finished\": 3, \"diagnostics\": \"\", "
                           "\"kernels\": []}"),
                     KILN_E_REJECTED);
    assert_int_equal(parse("{\"ok\": true, \"input_sha256\": \"ABC\", \"seconds\": 1, "
                           "\"started\": 2, \"finished\": 3, \"diagnostics\": \"\", "
                           "\"kernels\": []}"),
                     KILN_E_REJECTED);
    assert_int_equal(parse("{\"ok\": true, \"input_sha256\": \"" HASH "\", \"seconds\": -1, "
                           "\"started\": 2, \"finished\": 3, \"diagnostics\": \"\", "
                           "\"kernels\": []}"),
                     KILN_E_REJECTED);
    assert_int_equal(parse(DOC("", "{\"name\": \"k\", \"registers\": 1, \"smem_bytes\": 0, "
                                   "\"stack_bytes\": 0, \"spill_stores\": 0, \"spill_loads\": 0}")),
                     KILN_OK);
    assert_int_equal(parse(DOC("", "{\"name\": \"k\", \"registers\": -1, \"smem_bytes\": 0, "
                                   "\"stack_bytes\": 0, \"spill_stores\": 0, \"spill_loads\": 0}")),
                     KILN_E_REJECTED);
    assert_int_equal(parse(DOC("", "{\"name\": \"k\", \"registers\": 1}")), KILN_E_REJECTED);
    assert_int_equal(parse(DOC("", "{\"name\": \"a\\u0000b\", \"registers\": 1, \"smem_bytes\": 0, "
                                   "\"stack_bytes\": 0, \"spill_stores\": 0, \"spill_loads\": 0}")),
                     KILN_E_PARSE); /* jansson refuses NUL in strings */
}

static void caps_sizes(void **state)
{
    (void)state;
    /* A kernel name longer than the record's field. */
    char name[200];
    memset(name, 'k', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    char doc[1024];
    snprintf(doc, sizeof(doc),
             DOC("", "{\"name\": \"%s\", \"registers\": 1, \"smem_bytes\": 0, \"stack_bytes\": 0, "
                     "\"spill_stores\": 0, \"spill_loads\": 0}"),
             name);
    assert_int_equal(parse(doc), KILN_E_REJECTED);
    /* More kernels than COMPILE_MAX_KERNELS. */
    char many[8192] = "";
    size_t off = 0;
    for (int i = 0; i <= COMPILE_MAX_KERNELS; i++)
        off += (size_t)snprintf(many + off, sizeof(many) - off,
                                "%s{\"name\": \"k%d\", \"registers\": 1, \"smem_bytes\": 0, "
                                "\"stack_bytes\": 0, \"spill_stores\": 0, \"spill_loads\": 0}",
                                i ? ", " : "", i);
    char *big = malloc(off + 512);
    assert_non_null(big);
    sprintf(big, DOC("", "%s"), many);
    assert_int_equal(parse(big), KILN_E_REJECTED);
    free(big);
    /* Diagnostics beyond the cap, and a document beyond COMPILE_JSON_MAX. */
    size_t n = COMPILE_DIAG_MAX + 2048;
    char *diag = malloc(n + 1024);
    assert_non_null(diag);
    int k = sprintf(diag,
                    "{\"ok\": true, \"input_sha256\": \"%s\", \"seconds\": 1, \"started\": 2, "
                    "\"finished\": 3, \"kernels\": [], \"diagnostics\": \"",
                    HASH);
    memset(diag + k, 'x', n);
    strcpy(diag + k + n, "\"}");
    assert_int_equal(parse(diag), KILN_E_REJECTED);
    free(diag);
    size_t huge = COMPILE_JSON_MAX + 1;
    char *h = malloc(huge + 1);
    assert_non_null(h);
    memset(h, ' ', huge);
    h[huge] = '\0';
    struct compile_result r;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(compile_result_from_json(h, huge, &r, &e), KILN_E_LIMIT);
    free(h);
}

static void hash_covers_every_input(void **state)
{
    (void)state;
    const char *defs[] = {"-DBLOCK=256", "-DITEMS=1"};
    const char *defs2[] = {"-DBLOCK=256", "-DITEMS=2"};
    const char *defs3[] = {"-DBLOCK=256"};
    struct compile_request a = {.backend = KILN_BACKEND_CPU,
                                .source = "int x;",
                                .len = 6,
                                .trampoline = "void t(void) {}",
                                .defines = defs,
                                .ndefines = 2,
                                .arch = "sm_90"};
    char h0[65], h[65];
    compile_request_hash(&a, h0);
    assert_int_equal(strlen(h0), 64);
    compile_request_hash(&a, h);
    assert_string_equal(h, h0); /* deterministic */
    struct compile_request b = a;
    b.defines = defs2;
    compile_request_hash(&b, h);
    assert_string_not_equal(h, h0);
    b = a;
    b.defines = defs3;
    b.ndefines = 1;
    compile_request_hash(&b, h);
    assert_string_not_equal(h, h0);
    b = a;
    b.source = "int y;";
    compile_request_hash(&b, h);
    assert_string_not_equal(h, h0);
    b = a;
    b.trampoline = "void u(void) {}";
    compile_request_hash(&b, h);
    assert_string_not_equal(h, h0);
    b = a;
    b.backend = KILN_BACKEND_CUDA;
    compile_request_hash(&b, h);
    assert_string_not_equal(h, h0);
    b = a;
    b.arch = "sm_80";
    compile_request_hash(&b, h);
    assert_string_not_equal(h, h0);
    /* The tool matters for cuda (NVRTC's cubin carries another tool note),
     * not for cpu, which has one compiler. */
    b = a;
    b.tool = COMPILE_NVRTC;
    compile_request_hash(&b, h);
    assert_string_equal(h, h0);
    b.backend = KILN_BACKEND_CUDA;
    char hc[65];
    compile_request_hash(&b, h);
    b.tool = COMPILE_NVCC;
    compile_request_hash(&b, hc);
    assert_string_not_equal(h, hc);
}

/* ptxas -v as nvcc prints it and as NVRTC's log does ("ptxas   ." prefix). */
static void parses_ptxas_from_both_compilers(void **state)
{
    (void)state;
    static const char *const logs[] = {
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "    24 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n",
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n",
    };
    for (int i = 0; i < 2; i++) {
        struct compile_result r;
        memset(&r, 0, sizeof(r));
        compile_parse_ptxas(logs[i], &r);
        assert_int_equal(r.nkernels, 1);
        assert_string_equal(r.kernels[0].name, "k");
        assert_int_equal(r.kernels[0].registers, 40);
        assert_int_equal(r.kernels[0].smem_bytes, 2048);
        assert_int_equal(r.kernels[0].stack_bytes, 24);
        assert_int_equal(r.kernels[0].spill_stores, 8);
        assert_int_equal(r.kernels[0].spill_loads, 4);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips),
        cmocka_unit_test(rejects_what_it_does_not_know),
        cmocka_unit_test(caps_sizes),
        cmocka_unit_test(hash_covers_every_input),
        cmocka_unit_test(parses_ptxas_from_both_compilers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
