/* workload.json and workload directories: the documented example loads
 * with exact values; each hostile variant fails with its exact message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixtures.h"
#include "gpupeak.h"
#include "workload.h"

static struct workload *parse_ok(const char *text)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    struct workload *w = NULL;
    if (workload_parse_json(text, strlen(text), NULL, &w, &e) != KILN_OK)
        fail_msg("unexpected error: %s", e.msg);
    return w;
}

static void parse_bad(const char *text, enum kiln_rc want, const char *msg)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    struct workload *w = (struct workload *)1;
    assert_int_equal(workload_parse_json(text, strlen(text), NULL, &w, &e), want);
    assert_null(w);
    assert_string_equal(e.msg, msg);
}

/* Replaces `from` by `to` in the saxpy fixture and expects `msg`. */
static void mutate_bad(const char *from, const char *to, enum kiln_rc want, const char *msg)
{
    static char buf[8192];
    fixture_replace(buf, sizeof(buf), from, to);
    assert_null(strstr(buf, "fixture_replace:"));
    parse_bad(buf, want, msg);
}

/* "baseline": {"kind": "torch"}: the problem's Model, no expressions. */
static void torch_baseline(void **state)
{
    (void)state;
    static char buf[8192];
    fixture_replace(buf, sizeof(buf), "{\"kind\": \"memcpy\", \"bytes\": \"12*n\"}",
                    "{\"kind\": \"torch\"}");
    struct workload *w = parse_ok(buf);
    assert_int_equal(w->baseline, WL_BASELINE_TORCH);
    assert_null(w->baseline_expr[0]);
    workload_free(w);
}

static void saxpy_example(void **state)
{
    (void)state;
    struct workload *w = parse_ok(saxpy_json);
    assert_string_equal(w->name, "saxpy");
    assert_int_equal(w->nsizes, 1);
    assert_int_equal(w->nargs, 5);
    assert_int_equal(w->ntensors, 3);
    assert_int_equal(w->args[1].type, WL_SCALAR_FLOAT32);
    assert_true(w->args[1].fvalue == 2.5);
    assert_int_equal(w->args[4].role, WL_ROLE_OUT);
    assert_int_equal(w->args[4].tensor_index, 2);
    assert_int_equal(w->args[0].tensor_index, -1);
    assert_int_equal(w->ncases, 3);
    assert_int_equal(w->nheld_out, 1);
    assert_int_equal(w->backends, KILN_BACKEND_CUDA | KILN_BACKEND_CPU);
    assert_int_equal(w->cases[0].backends, KILN_BACKEND_ALL);
    assert_int_equal(w->baseline, WL_BASELINE_MEMCPY);
    assert_int_equal(w->ntolerances, 1);
    assert_true(w->tolerances[0].has_atol && w->tolerances[0].atol == 1e-5);
    assert_string_equal(w->hash, "");

    const struct wl_case *big = workload_case_by_name(w, "big");
    assert_non_null(big);
    assert_int_equal(big->kind, WL_CASE_PERFORMANCE);
    assert_int_equal(big->bytes, UINT64_C(3) * 4 * 268435456);
    assert_int_equal(big->cost_bytes, INT64_C(12) * 268435456);
    assert_int_equal(big->cost_flops, INT64_C(2) * 268435456);
    assert_int_equal(workload_case_by_name(w, "held")->kind, WL_CASE_HELD_OUT);
    assert_null(workload_case_by_name(w, "nope"));

    struct wl_shape shapes[WL_MAX_ARGS];
    struct kiln_err e;
    kiln_err_clear(&e);
    const struct wl_case *prime = workload_case_by_name(w, "prime");
    assert_int_equal(workload_case_shapes(w, prime, shapes, &e), KILN_OK);
    assert_int_equal(shapes[0].arg, 2);
    assert_int_equal(shapes[2].arg, 4);
    assert_int_equal(shapes[2].ndim, 1);
    assert_int_equal(shapes[2].shape[0], 1000003);
    assert_int_equal(shapes[2].nbytes, 4000012);
    int64_t v;
    assert_int_equal(workload_case_int_scalar(w, prime, 0, &v, &e), KILN_OK);
    assert_int_equal(v, 1000003);
    assert_int_equal(workload_case_int_scalar(w, prime, 1, &v, &e), KILN_E_USAGE);
    uint64_t tb;
    int64_t cb, cf;
    kiln_err_clear(&e);
    assert_int_equal(workload_case_cost(w, prime, &tb, &cb, &cf, &e), KILN_OK);
    assert_int_equal(tb, 12000036);
    assert_int_equal(cf, 2000006);
    workload_free(w);
}

static void backends_per_case(void **state)
{
    (void)state;
    char buf[8192];
    /* The big case runs only on cuda; the cpu backend then needs its own
     * performance case. */
    fixture_replace(buf, sizeof(buf), "\"kind\": \"performance\", \"sizes\": {\"n\": 268435456}",
                    "\"kind\": \"performance\", \"sizes\": {\"n\": 268435456}, \"backends\": "
                    "[\"cuda\"]");
    parse_bad(buf, KILN_E_PARSE,
              "workload.json: cases: no performance case runs on the cpu backend");
    fixture_replace(
        buf, sizeof(buf), "\"kind\": \"correctness\", \"sizes\": {\"n\": 1000003}",
        "\"kind\": \"performance\", \"sizes\": {\"n\": 1000003}, \"backends\": [\"cpu\"]");
    struct workload *w = parse_ok(buf);
    assert_int_equal(workload_case_by_name(w, "prime")->backends, KILN_BACKEND_CPU);
    workload_free(w);
    char buf2[8192];
    fixture_replace(buf, sizeof(buf), "\"sizes\": {\"n\": 1}}",
                    "\"sizes\": {\"n\": 1}, \"backends\": [\"cpu\"]}");
    replace_in(buf2, sizeof(buf2), buf, "\"backends\": [\"cuda\", \"cpu\"]",
               "\"backends\": [\"cuda\"]");
    parse_bad(buf2, KILN_E_PARSE,
              "workload.json: cases[0].backends: lists a backend the workload does not have");
    mutate_bad("\"backends\": [\"cuda\", \"cpu\"]", "\"backends\": [\"cuda\", \"cuda\"]",
               KILN_E_PARSE, "workload.json: backends[1]: backend \"cuda\" listed twice");
    mutate_bad("\"backends\": [\"cuda\", \"cpu\"]", "\"backends\": []", KILN_E_PARSE,
               "workload.json: backends: must list at least one backend (cuda, cpu)");
    mutate_bad("\"backends\": [\"cuda\", \"cpu\"]", "\"backends\": [\"tpu\"]", KILN_E_PARSE,
               "workload.json: backends[0]: unknown backend \"tpu\" (cuda or cpu)");
}

/* "provenance": absent means a person wrote it; "model-generated" is kept;
 * anything else is refused rather than read as "a person wrote it". */
static void provenance(void **state)
{
    (void)state;
    struct workload *w = parse_ok(saxpy_json);
    assert_int_equal(w->provenance, WL_PROVENANCE_AUTHOR);
    workload_free(w);
    static char buf[8192];
    fixture_replace(buf, sizeof(buf), "\"accept_weak\": []",
                    "\"accept_weak\": [], \"provenance\": \"model-generated\"");
    w = parse_ok(buf);
    assert_int_equal(w->provenance, WL_PROVENANCE_MODEL);
    workload_free(w);
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [], \"provenance\": \"human\"",
               KILN_E_PARSE,
               "workload.json: provenance: \"human\" is not a provenance (the only one is "
               "\"model-generated\"; leave the key out for a workload a person wrote)");
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [], \"provenance\": null", KILN_E_PARSE,
               "workload.json: provenance: must be a string, not null");
    mutate_bad("\"accept_weak\": []",
               "\"accept_weak\": [], \"provenance\": \"model-generated\\u0000x\"", KILN_E_PARSE,
               "workload.json: not valid JSON at line 22 column 59: \\u0000 is not allowed without "
               "JSON_ALLOW_NUL");
}

/* "math": the units the flops may use; FP32 SIMT and undeclared without
 * the key (no tolerance guard then), each listed unit a known name, once. */
static void math_units(void **state)
{
    (void)state;
    struct workload *w = parse_ok(saxpy_json);
    assert_int_equal(w->math, GPU_UNIT_MASK(GPU_UNIT_FP32_SIMT));
    assert_false(w->math_declared);
    workload_free(w);
    static char buf[8192];
    fixture_replace(buf, sizeof(buf), "\"accept_weak\": []",
                    "\"accept_weak\": [], \"math\": [\"bf16_tensor\", \"fp32_simt\"]");
    w = parse_ok(buf);
    assert_int_equal(w->math, GPU_UNIT_MASK(GPU_UNIT_BF16) | GPU_UNIT_MASK(GPU_UNIT_FP32_SIMT));
    assert_true(w->math_declared);
    workload_free(w);
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [], \"math\": []", KILN_E_PARSE,
               "workload.json: math: must list 1 to 5 units");
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [], \"math\": \"bf16_tensor\"",
               KILN_E_PARSE, "workload.json: math: must be an array of unit names, not a string");
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [], \"math\": [\"bf16\"]", KILN_E_PARSE,
               "workload.json: math[0]: \"bf16\" is not a unit (fp32_simt, tf32_tensor, "
               "fp16_tensor, bf16_tensor, fp8_tensor)");
    mutate_bad("\"accept_weak\": []",
               "\"accept_weak\": [], \"math\": [\"fp8_tensor\", \"fp8_tensor\"]", KILN_E_PARSE,
               "workload.json: math[1]: \"fp8_tensor\" listed twice");
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [], \"math\": [1]", KILN_E_PARSE,
               "workload.json: math[0]: must be a string, not an integer");
}

static void hostile_fields(void **state)
{
    (void)state;
    mutate_bad("{\"n\": 1000003}", "{\"n\": -4}", KILN_E_PARSE,
               "workload.json: cases[1].sizes.n: -4 is not in 1..2^40");
    mutate_bad("{\"n\": 1000003}", "{\"n\": 1099511627777}", KILN_E_PARSE,
               "workload.json: cases[1].sizes.n: 1099511627777 is not in 1..2^40");
    mutate_bad("{\"n\": 1000003}", "{\"n\": 1e3}", KILN_E_PARSE,
               "workload.json: cases[1].sizes.n: must be an integer, not a real number");
    mutate_bad("{\"n\": 1000003}", "{\"n\": 3, \"m\": 4}", KILN_E_PARSE,
               "workload.json: cases[1].sizes.m: not a size of this workload");
    mutate_bad("{\"n\": 1000003}", "{}", KILN_E_PARSE,
               "workload.json: cases[1].sizes: missing size \"n\"");
    mutate_bad("\"name\": \"prime\"", "\"name\": \"n1\"", KILN_E_PARSE,
               "workload.json: cases[1].name: case name \"n1\" is used twice");
    mutate_bad("\"name\": \"held\"", "\"name\": \"big\"", KILN_E_PARSE,
               "workload.json: held_out[0].name: case name \"big\" is used twice");
    mutate_bad("\"name\": \"prime\"", "\"name\": \"Prime\"", KILN_E_PARSE,
               "workload.json: cases[1].name: \"Prime\" is not a case name ([a-z0-9_]{1,32})");
    mutate_bad("\"name\": \"saxpy\"", "\"name\": \"sa\\u0001xpy\"", KILN_E_PARSE,
               "workload.json: name: \"sa?xpy\" is not a workload name ([a-z0-9_]{1,64})");
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [], \"extra\": 1", KILN_E_PARSE,
               "workload.json: (top level): unknown key \"extra\"");
    mutate_bad("\"tolerance\"", "\"tolerance\": {}, \"tol\"", KILN_E_PARSE,
               "workload.json: (top level): unknown key \"tol\"");
    mutate_bad("\"cost\": {\"bytes\": \"12*n\", \"flops\": \"2*n\"},", "", KILN_E_PARSE,
               "workload.json: (top level): missing required key \"cost\"");
    mutate_bad(
        "\"name\": \"saxpy\"", "\"name\": \"saxpy\", \"name\": \"other\"", KILN_E_PARSE,
        "workload.json: not valid JSON at line 2 column 25: duplicate object key near '\"name\"'");
    mutate_bad("\"role\": \"in\"", "\"role\": \"output\"", KILN_E_PARSE,
               "workload.json: signature[2].role: unknown role \"output\" (in, out, inout)");
    mutate_bad("\"dtype\": \"float32\"", "\"dtype\": \"float128\"", KILN_E_PARSE,
               "workload.json: signature[2].dtype: unknown dtype \"float128\" (see "
               "workloads/README.md)");
    mutate_bad("\"shape\": [\"n\"]", "\"shape\": [\"m\"]", KILN_E_NOTFOUND,
               "workload.json: signature[2].shape[0]: \"m\": column 1: unknown name 'm'");
    mutate_bad("\"shape\": [\"n\"]", "\"shape\": [3]", KILN_E_PARSE,
               "workload.json: signature[2].shape[0]: must be a string (a size expression), "
               "not an integer");
    mutate_bad("\"shape\": [\"n\"]", "\"shape\": [\"n - 2\"]", KILN_E_REJECTED,
               "workload.json: case n1: x.shape[0] = -1 is not in 1..2^40 (\"n - 2\")");
    mutate_bad("\"shape\": [\"n\"]", "\"shape\": [\"n / (n - 1)\"]", KILN_E_REJECTED,
               "workload.json: case n1: x.shape[0]: \"n / (n - 1)\": column 3: division by zero");
    mutate_bad("\"shape\": [\"n\"]", "\"shape\": [\"n\", \"n\", \"n\"]", KILN_E_LIMIT,
               "workload.json: case prime: its tensors take 4000036000116000132 bytes; the "
               "limit is 4 GiB");
    mutate_bad("\"shape\": [\"n\"]", "\"shape\": [\"n\",\"n\",\"n\",\"n\",\"n\"]", KILN_E_LIMIT,
               "workload.json: case prime: x has too many elements");
    mutate_bad("\"shape\": [\"n\"]",
               "\"shape\": [\"1\",\"1\",\"1\",\"1\",\"1\",\"1\",\"1\",\"1\",\"1\"]", KILN_E_LIMIT,
               "workload.json: signature[2].shape: 9 dimensions; at most 8");
    mutate_bad("\"expr\": \"n\"", "\"expr\": \"n\", \"value\": 3", KILN_E_PARSE,
               "workload.json: signature[0]: a scalar needs exactly one of \"value\" and "
               "\"expr\"");
    mutate_bad("\"type\": \"int64\",   \"expr\": \"n\"",
               "\"type\": \"int32\", \"expr\": \"n * 4096\"", KILN_E_REJECTED,
               "workload.json: case prime: n = 4096012288 does not fit in int32");
    mutate_bad("\"value\": 2.5", "\"value\": 1e300", KILN_E_PARSE,
               "workload.json: signature[1].value: 1e+300 is out of range for float32");
    mutate_bad("\"value\": 2.5", "\"value\": \"2.5\"", KILN_E_PARSE,
               "workload.json: signature[1].value: must be a number, not a string");
    mutate_bad("{\"name\": \"a\", ", "{\"name\": \"x\", ", KILN_E_PARSE,
               "workload.json: signature[2].name: argument \"x\" listed twice");
    mutate_bad("\"sizes\": [\"n\"]", "\"sizes\": [\"n\", \"n\"]", KILN_E_PARSE,
               "workload.json: sizes[1]: size \"n\" listed twice");
    mutate_bad(
        "\"sizes\": [\"n\"]", "\"sizes\": [\"max\"]", KILN_E_PARSE,
        "workload.json: sizes[0]: \"max\" is not an identifier ([A-Za-z_][A-Za-z0-9_]{0,63}, "
        "not cdiv, min or max)");
    mutate_bad("\"flops\": \"2*n\"", "\"flops\": \"n*n*n*n\"", KILN_E_REJECTED,
               "workload.json: case prime: cost.flops: \"n*n*n*n\": column 6: multiplication "
               "overflows int64");
    mutate_bad("\"flops\": \"2*n\"", "\"flops\": \"-n\"", KILN_E_REJECTED,
               "workload.json: case n1: cost.flops is negative (-1)");
    mutate_bad("{\"out\": {\"atol\": 1e-5, \"rtol\": 1e-5}}", "{\"x\": {\"atol\": 1}}",
               KILN_E_PARSE,
               "workload.json: tolerance.x: not an out or inout tensor of the "
               "signature");
    mutate_bad("\"atol\": 1e-5", "\"atol\": -1", KILN_E_PARSE,
               "workload.json: tolerance.out.atol: must be a finite number >= 0");
    mutate_bad("\"accept_weak\": []", "\"accept_weak\": [\"held\"]", KILN_E_PARSE,
               "workload.json: accept_weak[0]: \"held\" is not a visible case");
    mutate_bad("{\"kind\": \"memcpy\", \"bytes\": \"12*n\"}", "{\"kind\": \"memcpy\"}",
               KILN_E_PARSE, "workload.json: baseline: missing required key \"bytes\"");
    mutate_bad("{\"kind\": \"memcpy\", \"bytes\": \"12*n\"}",
               "{\"kind\": \"cublas_sgemm\", \"m\": \"n\", \"n\": \"n\", \"k\": \"n * 4096\"}",
               KILN_E_REJECTED,
               "workload.json: case prime: baseline value 3 = 4096012288 is out of range "
               "(1..2^31-1)");
    /* The torch baseline (imported KernelBench workloads) takes no sizes. */
    mutate_bad("{\"kind\": \"memcpy\", \"bytes\": \"12*n\"}",
               "{\"kind\": \"torch\", \"bytes\": \"12*n\"}", KILN_E_PARSE,
               "workload.json: baseline: unknown key \"bytes\"");
    mutate_bad("{\"kind\": \"memcpy\", \"bytes\": \"12*n\"}", "{\"kind\": \"pytorch\"}",
               KILN_E_PARSE,
               "workload.json: baseline.kind: unknown baseline \"pytorch\" (cublas_sgemm, "
               "cublaslt_bf16, memcpy, torch)");
    /* The held-out rule: a held-out case with visible sizes proves nothing. */
    mutate_bad("{\"n\": 7340033}", "{\"n\": 1000003}", KILN_E_PARSE,
               "workload.json: held_out: no held-out case of the cuda backend has sizes that "
               "differ from every visible case (add one with new sizes)");
    mutate_bad("\"held_out\": [{\"name\": \"held\", \"sizes\": {\"n\": 7340033}}]",
               "\"held_out\": []", KILN_E_LIMIT, "workload.json: held_out: 0 cases; must be 1..16");
}

static void hostile_json(void **state)
{
    (void)state;
    parse_bad(
        "", KILN_E_PARSE,
        "workload.json: not valid JSON at line 1 column 0: '[' or '{' expected near end of file");
    parse_bad("[]", KILN_E_PARSE, "workload.json: (top level): must be an object, not an array");
    parse_bad("{\"name\": \"a\\u0000b\"}", KILN_E_PARSE,
              "workload.json: not valid JSON at line 1 column 19: \\u0000 is not allowed without "
              "JSON_ALLOW_NUL near "
              "'\"a\\u0000b\"'");
    /* Over the cap, before any parsing. */
    size_t n = WL_MAX_JSON + 1;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, ' ', n);
    big[n] = '\0';
    parse_bad(big, KILN_E_LIMIT, "workload.json: 262145 bytes; the limit is 262144");
    /* Deep nesting is refused by the nesting cap before jansson recurses. */
    size_t at = (size_t)snprintf(big, n, "{\"x\": ");
    for (int i = 0; i < 3000; i++)
        big[at++] = '[';
    for (int i = 0; i < 3000; i++)
        big[at++] = ']';
    snprintf(big + at, n - at, "}");
    struct kiln_err e;
    kiln_err_clear(&e);
    struct workload *w = NULL;
    assert_int_equal(workload_parse_json(big, strlen(big), NULL, &w, &e), KILN_E_LIMIT);
    assert_string_equal(e.msg, "workload.json: nested deeper than 16 levels");
    assert_null(w);
    free(big);
    /* Too many cases. */
    char *many = malloc(65536);
    assert_non_null(many);
    char cases[16384];
    at = 0;
    for (int i = 0; i < 65; i++)
        at += (size_t)snprintf(cases + at, sizeof(cases) - at,
                               "%s{\"name\": \"c%d\", \"kind\": \"performance\", \"sizes\": "
                               "{\"n\": %d}}",
                               i ? ", " : "", i, i + 1);
    char repl[16500];
    snprintf(repl, sizeof(repl), "\"cases\": [%s],\n  \"held_out\"", cases);
    const char *from = strstr(saxpy_json, "\"cases\"");
    const char *to = strstr(saxpy_json, "\"held_out\"");
    snprintf(many, 65536, "%.*s%s%s", (int)(from - saxpy_json), saxpy_json, repl,
             to + strlen("\"held_out\""));
    parse_bad(many, KILN_E_LIMIT, "workload.json: cases: 65 cases; must be 1..64");
    free(many);
}

/* A temporary workload directory. */
static char dir[64];

static void put(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void load_bad(enum kiln_rc want, const char *suffix)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    struct workload *w = (struct workload *)1;
    assert_int_equal(workload_load(dir, &w, &e), want);
    assert_null(w);
    char msg[256];
    snprintf(msg, sizeof(msg), "%s/%s", dir, suffix);
    assert_string_equal(e.msg, msg);
}

static void directory_loading(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/kiln-wl-XXXXXX");
    assert_non_null(mkdtemp(dir));
    put("workload.json", saxpy_json);
    put("inputs.py", "print('in')\n");
    put("reference.py", "print('ref')\n");
    put("kernel.cu", "// cu\n");
    /* A starting kernel is optional (issue 29): loaded without kernel.c,
     * absent, and the hash says so. */
    struct kiln_err e;
    kiln_err_clear(&e);
    struct workload *w = NULL;
    assert_int_equal(workload_load(dir, &w, &e), KILN_OK);
    assert_false(w->files[WL_FILE_KERNEL_C].present);
    assert_null(workload_start_kernel(w, KILN_BACKEND_CPU));
    assert_ptr_equal(workload_start_kernel(w, KILN_BACKEND_CUDA), &w->files[WL_FILE_KERNEL_CU]);
    char without[SHA256_HEX_LEN + 1];
    strcpy(without, w->hash);
    workload_free(w);
    /* The scripts stay required. */
    char ref[128];
    snprintf(ref, sizeof(ref), "%s/reference.py", dir);
    unlink(ref);
    load_bad(KILN_E_NOTFOUND,
             "reference.py is missing (workloads/README.md lists the files each backend needs)");
    put("reference.py", "print('ref')\n");
    put("kernel.c", "// c\n");

    assert_int_equal(workload_load(dir, &w, &e), KILN_OK);
    assert_int_equal(strlen(w->hash), 64);
    assert_string_not_equal(w->hash, without);
    assert_ptr_equal(workload_start_kernel(w, KILN_BACKEND_CPU), &w->files[WL_FILE_KERNEL_C]);
    assert_string_equal(w->files[WL_FILE_INPUTS].data, "print('in')\n");
    assert_int_equal(w->files[WL_FILE_KERNEL_C].len, 5);
    char first[SHA256_HEX_LEN + 1];
    strcpy(first, w->hash);
    workload_free(w);
    /* The hash covers every file: one byte in reference.py changes it. */
    put("reference.py", "print('reF')\n");
    assert_int_equal(workload_load(dir, &w, &e), KILN_OK);
    assert_string_not_equal(w->hash, first);
    workload_free(w);

    /* A symlink is refused even when it points at a fine file. */
    char path[128], target[128];
    snprintf(path, sizeof(path), "%s/inputs.py", dir);
    snprintf(target, sizeof(target), "%s/reference.py", dir);
    unlink(path);
    assert_int_equal(symlink(target, path), 0);
    load_bad(KILN_E_REJECTED, "inputs.py is a symbolic link; a workload holds regular files only");
    unlink(path);
    /* A FIFO must neither block the open nor be read. */
    assert_int_equal(mkfifo(path, 0600), 0);
    load_bad(KILN_E_REJECTED, "inputs.py is not a regular file");
    unlink(path);
    /* Size caps. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, WL_MAX_SCRIPT + 1), 0);
    close(fd);
    load_bad(KILN_E_LIMIT, "inputs.py is 1048577 bytes; the limit is 1048576");
    put("inputs.py", "ok\n");
    /* JSON errors carry the directory. */
    char bad_json[8192];
    fixture_replace(bad_json, sizeof(bad_json), "\"name\": \"saxpy\"", "\"name\": 5");
    put("workload.json", bad_json);
    char msg[256];
    snprintf(msg, sizeof(msg), "%s/workload.json: name: must be a string, not an integer", dir);
    kiln_err_clear(&e);
    assert_int_equal(workload_load(dir, &w, &e), KILN_E_PARSE);
    assert_string_equal(e.msg, msg);

    const char *names[] = {"workload.json", "inputs.py", "reference.py", "kernel.cu", "kernel.c"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
    kiln_err_clear(&e);
    assert_int_equal(workload_load(dir, &w, &e), KILN_E_NOTFOUND);
}

/* Every problem of a workload.json in one parse (issue 35 item 11: four
 * mistakes took four runs), in the order of the file's sections. */
static void every_problem_at_once(void **state)
{
    (void)state;
    char a[8192], b[8192];
    fixture_replace(a, sizeof(a), "\"description\"", "\"descripton\"");
    replace_in(b, sizeof(b), a, "\"sizes\": {\"n\": 1}", "\"sizes\": {\"n\": 0}");
    replace_in(a, sizeof(a), b, "\"kind\": \"performance\"", "\"kind\": \"perf\"");
    struct wl_problems *p = malloc(sizeof(*p));
    assert_non_null(p);
    struct workload *w = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(workload_parse_json_problems(a, strlen(a), "d", &w, p, &e), KILN_E_PARSE);
    assert_null(w);
    assert_int_equal(p->n, 4);
    const char *lines = "(top level): unknown key \"descripton\"; did you mean \"description\"?\n"
                        "(top level): missing required key \"description\"\n"
                        "cases[0].sizes.n: 0 is not in 1..2^40\n"
                        "cases[2].kind: unknown kind \"perf\" (correctness or performance)\n";
    assert_string_equal(p->text, lines);
    assert_non_null(strstr(e.msg, "d/workload.json: 4 problems:\n  (top level): unknown key"));
    assert_null(strstr(e.msg, "more"));
    free(p);
}

/* More problems than the list holds: whole lines only, the rest counted
 * and said ("... and N more"), never a line cut in two. */
static void problems_beyond_the_list(void **state)
{
    (void)state;
    static char text[65536];
    char key[120];
    memset(key, 'k', 100);
    key[100] = '\0';
    int off = snprintf(text, sizeof(text), "%s", saxpy_json);
    char *cases = strstr(text, "\"cases\": [");
    assert_non_null(cases);
    char *end = strstr(cases, "]");
    char tail[4096];
    snprintf(tail, sizeof(tail), "%s", end);
    off = (int)(cases - text) +
          snprintf(cases, sizeof(text) - (size_t)(cases - text), "\"cases\": [");
    for (int i = 0; i < 64; i++)
        off += snprintf(text + off, sizeof(text) - (size_t)off,
                        "%s{\"name\": \"c%d\", \"kind\": \"correctness\", \"sizes\": {\"n\": 1}, "
                        "\"%s%d\": 1}",
                        i ? ", " : "", i, key, i);
    snprintf(text + off, sizeof(text) - (size_t)off, "%s", tail);
    struct wl_problems *p = malloc(sizeof(*p));
    assert_non_null(p);
    struct workload *w = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(workload_parse_json_problems(text, strlen(text), NULL, &w, p, &e),
                     KILN_E_PARSE);
    assert_int_equal(p->n, 64);
    size_t lines = 0;
    for (const char *c = p->text; *c; c++)
        lines += *c == '\n';
    assert_true(lines > 10 && lines < 64);
    assert_int_equal(p->text[strlen(p->text) - 1], '\n');
    char last[64];
    snprintf(last, sizeof(last), "cases[%zu]: unknown key \"", lines - 1);
    assert_non_null(strstr(p->text, last));
    assert_non_null(strstr(e.msg, "workload.json: 64 problems:\n  cases[0]: unknown key"));
    const char *more = strstr(e.msg, "\n  ... and ");
    assert_non_null(more);
    size_t rest = 0;
    assert_int_equal(sscanf(more, "\n  ... and %zu more", &rest), 1);
    size_t shown = 0;
    for (const char *c = e.msg; c < more; c++)
        shown += *c == '\n';
    assert_int_equal(shown + rest, 64);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(saxpy_example),
        cmocka_unit_test(backends_per_case),
        cmocka_unit_test(hostile_fields),
        cmocka_unit_test(hostile_json),
        cmocka_unit_test(directory_loading),
        cmocka_unit_test(provenance),
        cmocka_unit_test(every_problem_at_once),
        cmocka_unit_test(problems_beyond_the_list),
        cmocka_unit_test(math_units),
        cmocka_unit_test(torch_baseline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
