/* kiln import kernelbench (kbimport.h, kbprobe.h): what the parser takes
 * from a problem file, each refusal's message, the sandboxed probe's report
 * read as untrusted, and the workload written from it (loaded back by
 * kiln's own workload loader). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "kbimport.h"
#include "kbprobe.h"
#include "workload.h"

static const char *sum_py = "import torch\n"
                            "import torch.nn as nn\n"
                            "\n"
                            "class Model(nn.Module):\n"
                            "    def __init__(self, dim: int):\n"
                            "        super(Model, self).__init__()\n"
                            "        self.dim = dim\n"
                            "\n"
                            "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                            "        return torch.sum(x, dim=self.dim, keepdim=True)  # a comment\n"
                            "\n"
                            "batch_size = 16\n"
                            "dim1 = 256  # rows\n"
                            "dim2 = dim1 * 2\n"
                            "reduce_dim = 1\n"
                            "name = 'not a size'\n"
                            "\n"
                            "def get_inputs():\n"
                            "    x = torch.randn(batch_size, dim1, dim2)\n"
                            "    w = torch.rand((dim2,))\n"
                            "    return [x, w, torch.randn(batch_size)]\n"
                            "\n"
                            "def get_init_inputs():\n"
                            "    return [reduce_dim]\n";

static void parses_constants_and_inputs(void **state)
{
    (void)state;
    struct kb_problem p;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(kbimport_parse(sum_py, strlen(sum_py), &p, &e), KILN_OK);
    assert_int_equal(p.nconsts, 4);
    assert_string_equal(p.consts[2].name, "dim2");
    assert_int_equal(p.consts[2].value, 512);
    assert_int_equal(p.ninputs, 3);
    assert_string_equal(p.inputs[0].name, "x");
    assert_int_equal(p.inputs[0].ndims, 3);
    assert_string_equal(p.inputs[0].dims[2], "dim2");
    assert_string_equal(p.inputs[1].name, "w");
    assert_int_equal(p.inputs[1].ndims, 1);
    assert_string_equal(p.inputs[2].name, "in2");
    assert_string_equal(p.inputs[2].dims[0], "batch_size");
    assert_int_equal(p.len, strlen(sum_py));
    kbimport_free(&p);
}

static char *slurp(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *s = NULL;
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_read_file(path, 4u << 20, &s, &n, &e) != KILN_OK)
        fail_msg("%s", e.msg);
    return s;
}

static void refuse(const char *src, enum kiln_rc want, const char *msg)
{
    struct kb_problem p;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(kbimport_parse(src, strlen(src), &p, &e), want);
    assert_null(p.source);
    assert_string_equal(e.msg, msg);
}

static void accept(const char *src, size_t want_inputs)
{
    struct kb_problem p;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (kbimport_parse(src, strlen(src), &p, &e) != KILN_OK)
        fail_msg("refused: %s", e.msg);
    assert_int_equal(p.ninputs, want_inputs);
    kbimport_free(&p);
}

#define HEAD                                                                                       \
    "class Model(nn.Module):\n    def forward(self, x):\n        return x\nN = 64\n"               \
    "def get_init_inputs():\n    return []\n"

/* The text is read only for constants and names: a get_inputs it does not
 * follow, and layers with weights, are the sandbox's business now. */
static void only_structure_is_refused(void **state)
{
    (void)state;
    accept(HEAD "def get_inputs():\n    x = torch.randn(N, dtype=torch.float16)\n    return [x]\n",
           0);
    accept(HEAD "def get_inputs():\n    \"\"\"doc\"\"\"\n    x = torch.randint(0, 9, (N,))\n"
                "    return [x]\n",
           0);
    accept(HEAD "def get_inputs():\n    x = torch.randn(N)\n    return [x]\n", 1);
    accept(
        "class Model(nn.Module):\n    def __init__(self):\n"
        "        self.fc = nn.Linear(4, 4)\n    def forward(self, x):\n        return x\n"
        "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n",
        1);
    refuse("N = 4\ndef get_inputs():\n    x = torch.randn(N)\n    return [x]\n", KILN_E_REJECTED,
           "not a KernelBench problem: it needs class Model with forward(), get_inputs() and "
           "get_init_inputs() (missing: class Model forward() get_init_inputs())");
    char big[KB_MAX_LINE + 8];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    refuse(big, KILN_E_LIMIT, "line 1: longer than 4096 bytes");
}

/* A report as kbprobe.py writes it for a conv layer with weights: input x,
 * two parameters; sizes batch, h and w (the problem's constants), each
 * dimension an expression over them; held-out ranges with a constraint. */
#define CASE(NAME, KIND, BACKEND, B, H, W, OH, OW)                                                 \
    "{\"name\": \"" NAME "\", \"kind\": \"" KIND "\", \"backend\": " BACKEND ", \"values\": "      \
    "{\"batch\": " #B ", \"h\": " #H ", \"w\": " #W "}, \"dims\": [[" #B ", 4, " #H ", " #W "], "  \
    "[8, 4, 3, 3], [8], [" #B ", 8, " #OH ", " #OW "]]}"
#define CASES                                                                                      \
    CASE("small", "correctness", "null", 2, 8, 9, 6, 7)                                            \
    ", " CASE("odd", "correctness", "null", 3, 17, 15, 15, 13) ", " CASE(                          \
        "held", "held", "null", 5, 9, 11, 7,                                                       \
        9) ", " CASE("cpu", "performance", "\"cpu\"", 16, 64, 61, 62,                              \
                     59) ", " CASE("kb", "performance", "\"cuda\"", 32, 128, 128, 126, 126)
#define REPORT_WITH(PARAM0, OUT_H, HELD)                                                           \
    "{\"mode\": \"meta\", \"inputs\": [{\"dtype\": \"float32\", \"scalar\": false}], "             \
    "\"params\": [{\"name\": \"" PARAM0 "\", \"dtype\": \"float32\"}, {\"name\": \"conv.bias\", "  \
    "\"dtype\": \"float32\"}], \"out\": {\"dtype\": \"float32\"}, \"sizes\": [\"batch\", \"h\", "  \
    "\"w\"], \"pins\": {\"batch\": \"batch\", \"h\": \"h\", \"w\": \"w\", \"input_shape__1\": "    \
    "\"h\"}, \"shapes\": [[\"batch\", \"4\", \"h\", \"w\"], [\"8\", \"4\", \"3\", \"3\"], "        \
    "[\"8\"], "                                                                                    \
    "[\"batch\", \"8\", " OUT_H ", \"w - 2\"]], \"cases\": [" CASES "], \"held_out\": " HELD       \
    ", \"flops\": \"576*batch*(h - 2)*(w - 2)\", \"flops_note\": \"\", \"memory_factor\": 9, "     \
    "\"atol\": 0.004, \"rtol\": 0.01, \"scaled\": {\"cpu\": {\"factor\": 0.5, \"bytes\": "         \
    "8388608, \"bound\": \"budget\", \"sizes\": [[\"h\", 128, 64]]}, \"kb\": null}}"
#define RANGES                                                                                     \
    "{\"ranges\": {\"batch\": [2, 32], \"h\": [8, 128], \"w\": [9, 128]}, \"where\": [\"h % 1 == " \
    "0\"]}"
#define REPORT(PARAM0) REPORT_WITH(PARAM0, "\"h - 2\"", RANGES)

static enum kiln_rc probe(const char *json, const struct kb_problem *p, struct kb_probe *pr,
                          struct kiln_err *e)
{
    kiln_err_clear(e);
    return kbprobe_parse(json, strlen(json), p, pr, e);
}

static void probe_report_is_untrusted(void **state)
{
    (void)state;
    static struct kb_problem p; /* names from the text: x */
    static struct kb_probe pr;
    struct kiln_err e;
    p.ninputs = 1;
    snprintf(p.inputs[0].name, sizeof(p.inputs[0].name), "x");
    if (probe(REPORT("conv.weight"), &p, &pr, &e) != KILN_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(pr.ninputs, 1);
    assert_int_equal(pr.nparams, 2);
    assert_string_equal(pr.t[0].name, "x");
    assert_string_equal(pr.t[1].name, "conv_weight");
    assert_string_equal(pr.t[1].source, "conv.weight");
    assert_string_equal(pr.t[3].name, "out");
    assert_string_equal(pr.t[3].shape[2], "h - 2");
    assert_int_equal(pr.ncases, 5);
    assert_int_equal(pr.cases[4].dims[3][2], 126);
    assert_string_equal(pr.cases[3].backend, "cpu");
    assert_int_equal(pr.npins, 4);
    assert_string_equal(pr.pins[3].name, "input_shape__1");
    assert_int_equal(pr.pins[3].size, 1);
    assert_true(pr.ranges);
    assert_int_equal(pr.range[1][1], 128);
    assert_string_equal(pr.where[0], "h % 1 == 0");
    assert_string_equal(pr.scaled_cpu.sizes, "h 128 -> 64");
    assert_int_equal(pr.memory_per_byte, 9);
    /* A name that would end a python literal is refused, not pasted. */
    assert_int_equal(probe(REPORT("w\\\"); import os #"), &p, &pr, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "outside [A-Za-z0-9_.]"));
    /* An expression that does not give a case's dimensions is a lie. */
    assert_int_equal(probe(REPORT_WITH("conv.weight", "\"h - 3\"", RANGES), &p, &pr, &e),
                     KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "a dimension its expression does not give"));
    /* ... and one outside the charset never reaches workload.json. */
    assert_int_equal(probe(REPORT_WITH("conv.weight", "\"h\\\", \\\"x\"", RANGES), &p, &pr, &e),
                     KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "expression"));
    assert_int_equal(probe(REPORT_WITH("conv.weight", "\"h - 2\"",
                                       "{\"ranges\": {}, \"where\": "
                                       "[]}"),
                           &p, &pr, &e),
                     KILN_E_REJECTED);
    /* The probe's refusal is the import's reason, quoted. */
    assert_int_equal(probe("{\"error\": \"forward() returns a tuple\\n\"}", &p, &pr, &e),
                     KILN_E_REJECTED);
    assert_string_equal(e.msg, "forward() returns a tuple\\x0a");
    assert_int_equal(probe("{\"mode\": \"meta\"}", &p, &pr, &e), KILN_E_REJECTED);
    assert_int_equal(probe("[1]", &p, &pr, &e), KILN_E_PARSE);
    char zero[8192];
    snprintf(zero, sizeof(zero), "%s", REPORT_WITH("conv.weight", "null", RANGES));
    char *at = strstr(zero, "[8], [2, 8, 6, 7]");
    assert_non_null(at);
    memcpy(at + 9, "0,", 2); /* 8 channels -> 0 */
    assert_int_equal(probe(zero, &p, &pr, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "has a dimension of 0"));
}

/* The problem as the scripts carry it: text, every byte that could end
 * the literal escaped. */
static const char *hostile_py = "class Model(nn.Module):\n    def forward(self, x):\n"
                                "        return x  # \"\"\") \\ \xc3\xa9\n"
                                "def get_inputs():\n    x = torch.randn(4)\n    return [x]\n"
                                "def get_init_inputs():\n    return []\n";

static void write_one(const char *src, const char *report, const char *dir, struct kiln_err *e)
{
    struct kb_problem p;
    static struct kb_probe pr;
    kiln_err_clear(e);
    assert_int_equal(kbimport_parse(src, strlen(src), &p, e), KILN_OK);
    p.ninputs = 1; /* the report has one input */
    if (probe(report, &p, &pr, e) != KILN_OK)
        fail_msg("%s", e->msg);
    const char *kernel = "// kiln: launch k grid(1) block(1) args(x, out)\n"
                         "extern \"C\" __global__ void k(const float *x, float *out) {}\n";
    struct kb_options o = {.name = "kb_conv",
                           .origin = "9_Conv\n\"evil\".py",
                           .kernel = kernel,
                           .kernel_len = strlen(kernel),
                           .budget_why = "kiln's 4 GiB per case"};
    assert_int_equal(kbimport_write(&p, &pr, &o, dir, e), KILN_OK);
    /* An existing directory is never overwritten. */
    assert_int_equal(kbimport_write(&p, &pr, &o, dir, e), KILN_E_IO);
    assert_non_null(strstr(e->msg, "kiln does not overwrite"));
    kbimport_free(&p);
}

/* Writes problem `py` with probe report `report` into a fresh tmp/wl and
 * loads it as kiln would; the caller frees *w and removes tmp. */
static struct workload *write_and_load(const char *py, const char *report, char *tmp, size_t tmpsz,
                                       char *dir, size_t dirsz)
{
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(fs_make_tempdir("kbimport", tmp, tmpsz, &e), KILN_OK);
    snprintf(dir, dirsz, "%s/wl", tmp);
    write_one(py, report, dir, &e);
    struct workload *w = NULL;
    if (workload_load(dir, &w, &e) != KILN_OK)
        fail_msg("the written workload does not load: %s", e.msg);
    return w;
}

static void writes_a_workload_kiln_loads(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    char tmp[4096], dir[4200];
    struct workload *w =
        write_and_load(hostile_py, REPORT("conv.weight"), tmp, sizeof(tmp), dir, sizeof(dir));
    assert_string_equal(w->name, "kb_conv");
    assert_int_equal(w->held_draw.draw, 2);
    assert_int_equal(w->script_memory_per_byte, 9);
    workload_free(w);
    char *json = slurp(dir, "workload.json");
    /* One size per distinct constant, and the dimensions' expressions. */
    assert_non_null(strstr(json, "\"sizes\": [\"batch\", \"h\", \"w\"]"));
    assert_non_null(strstr(json, "\"shape\": [\"batch\", \"4\", \"h\", \"w\"], \"role\": \"in\""));
    assert_non_null(strstr(json, "{\"name\": \"conv_weight\", \"kind\": \"tensor\", \"dtype\": "
                                 "\"float32\", \"shape\": [\"8\", \"4\", \"3\", \"3\"]"));
    assert_non_null(strstr(json, "\"shape\": [\"batch\", \"8\", \"h - 2\", \"w - 2\"], "
                                 "\"role\": \"out\""));
    assert_non_null(strstr(json,
                           "{\"name\": \"cpu\", \"kind\": \"performance\", \"sizes\": "
                           "{\"batch\": 16, \"h\": 64, \"w\": 61}, \"backends\": [\"cpu\"]}"));
    assert_non_null(strstr(json, "{\"name\": \"kb\", \"kind\": \"performance\", \"sizes\": "
                                 "{\"batch\": 32, \"h\": 128, \"w\": 128}, \"backends\": "
                                 "[\"cuda\"]}"));
    assert_non_null(strstr(json,
                           "\"held_out\": {\"draw\": 2, \"sizes\": {\"batch\": [2, 32], "
                           "\"h\": [8, 128], \"w\": [9, 128]}, \"where\": [\"h % 1 == 0\"]}"));
    assert_null(strstr(json, "\"held\"")); /* the fixed case stays unused */
    assert_non_null(strstr(json, "\"tolerance\": {\"out\": {\"atol\": 0.004, \"rtol\": 0.01}}"));
    assert_non_null(strstr(json, "\"flops\": \"576*batch*(h - 2)*(w - 2)\""));
    assert_non_null(strstr(json, "\"backends\": [\"cuda\", \"cpu\"]"));
    assert_non_null(strstr(json, "\"scripts\": {\"memory_per_byte\": 9}"));
    assert_non_null(strstr(json, "h 128 -> 64"));
    assert_non_null(strstr(json, "9_Conv__evil_.py")); /* the file name, safe charset */
    free(json);
    char *in = slurp(dir, "inputs.py"), *ref = slurp(dir, "reference.py");
    assert_non_null(strstr(in, "importing torch failed (%s). Fix: run it"));
    assert_non_null(
        strstr(in, "# Generated by `kiln import kernelbench` from 9_Conv__evil_.py.\n"));
    assert_non_null(strstr(in, "INPUTS = [(\"x\", \"float32\", False)]"));
    assert_non_null(strstr(in, "PARAMS = [(\"conv.weight\", \"conv_weight\", \"float32\"),"));
    assert_non_null(strstr(in, "PIN_OF = {\"batch\": \"batch\", \"h\": \"h\", \"w\": \"w\", "
                               "\"input_shape__1\": \"h\"}"));
    assert_non_null(strstr(ref, "params[source].copy_(load(name))"));
    /* The problem as text; quotes, backslashes and UTF-8 escaped. */
    assert_non_null(strstr(in, "    b\"def get_inputs():\\n\",\n"));
    assert_non_null(strstr(in, "    b\"        return x  # \\\"\\\"\\\") \\\\ \\xc3\\xa9\\n\",\n"));
    free(in);
    free(ref);
    free(slurp(dir, "kernel.cu")); /* --kernel's bytes were written (slurp fails if not) */
    assert_int_equal(fs_remove_tree(tmp, &e), KILN_OK);
}

/* A dimension no expression fits: a derived size, and then the fixed held
 * case (kiln could not draw the derived size consistently). */
static void derived_size_falls_back_to_a_fixed_held_case(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    char tmp[4096], dir[4200];
    struct workload *w = write_and_load(sum_py, REPORT_WITH("conv.weight", "null", RANGES), tmp,
                                        sizeof(tmp), dir, sizeof(dir));
    assert_int_equal(w->held_draw.draw, 0);
    assert_int_equal(w->nheld_out, 1);
    workload_free(w);
    char *json = slurp(dir, "workload.json");
    assert_non_null(strstr(json, "\"sizes\": [\"batch\", \"h\", \"w\", \"out_d2\"]"));
    assert_non_null(strstr(json, "\"held_out\": [{\"name\": \"held\", \"sizes\": {\"batch\": 5, "
                                 "\"h\": 9, \"w\": 11, \"out_d2\": 7}}]"));
    free(json);
    assert_int_equal(fs_remove_tree(tmp, &e), KILN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_constants_and_inputs),
        cmocka_unit_test(only_structure_is_refused),
        cmocka_unit_test(probe_report_is_untrusted),
        cmocka_unit_test(writes_a_workload_kiln_loads),
        cmocka_unit_test(derived_size_falls_back_to_a_fixed_held_case),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
