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
 * two parameters, the problem's constants batch, h and k per case. */
#define CASE(NAME, B, H, OH)                                                                       \
    "{\"name\": \"" NAME "\", \"consts\": {\"batch\": " #B ", \"h\": " #H ", \"k\": 3}, "          \
    "\"shapes\": [[" #B ", 4, " #H ", " #H "], [8, 4, 3, 3], [8], [" #B ", 8, " #OH ", " #OH "]]}"
#define REPORT(PARAM0)                                                                             \
    "{\"mode\": \"meta\", \"inputs\": [{\"dtype\": \"float32\"}], \"params\": [{\"name\": "        \
    "\"" PARAM0 "\", \"dtype\": \"float32\"}, {\"name\": \"conv.bias\", \"dtype\": "               \
    "\"float32\"}], \"out\": {\"dtype\": \"float32\"}, \"cases\": [" CASE(                         \
        "small", 2, 8,                                                                             \
        6) ", " CASE("odd", 3, 17,                                                                 \
                     15) ", " CASE("held", 3, 9,                                                   \
                                   7) ", " CASE("kb", 16, 128,                                     \
                                                126) "], \"scaled\": [[\"h\", 512, 128]]}"

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
    assert_int_equal(probe(REPORT("conv.weight"), &p, &pr, &e), KILN_OK);
    assert_int_equal(pr.ninputs, 1);
    assert_int_equal(pr.nparams, 2);
    assert_string_equal(pr.t[0].name, "x");
    assert_string_equal(pr.t[1].name, "conv_weight");
    assert_string_equal(pr.t[1].source, "conv.weight");
    assert_string_equal(pr.t[3].name, "out");
    assert_int_equal(pr.t[3].dims[3][2], 126);
    assert_string_equal(pr.scaled, "h 512 -> 128");
    /* A name that would end a python literal is refused, not pasted. */
    assert_int_equal(probe(REPORT("w\\\"); import os #"), &p, &pr, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "outside [A-Za-z0-9_.]"));
    /* The probe's refusal is the import's reason, quoted. */
    assert_int_equal(probe("{\"error\": \"forward() returns a tuple\\n\"}", &p, &pr, &e),
                     KILN_E_REJECTED);
    assert_string_equal(e.msg, "forward() returns a tuple\\x0a");
    assert_int_equal(probe("{\"mode\": \"meta\"}", &p, &pr, &e), KILN_E_REJECTED);
    assert_int_equal(probe("[1]", &p, &pr, &e), KILN_E_PARSE);
    char zero[4096];
    snprintf(zero, sizeof(zero), "%s", REPORT("conv.weight"));
    char *at = strstr(zero, "[8], [2, 8, 6, 6]");
    assert_non_null(at);
    memcpy(at, "[0]", 3);
    assert_int_equal(probe(zero, &p, &pr, &e), KILN_E_REJECTED);
    assert_non_null(strstr(e.msg, "has a dimension of 0"));
}

static void writes_a_workload_kiln_loads(void **state)
{
    (void)state;
    struct kb_problem p;
    static struct kb_probe pr;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(kbimport_parse(sum_py, strlen(sum_py), &p, &e), KILN_OK);
    p.ninputs = 1; /* the report below has one input */
    assert_int_equal(probe(REPORT("conv.weight"), &p, &pr, &e), KILN_OK);
    char tmp[4096], dir[4200];
    assert_int_equal(fs_make_tempdir("kbimport", tmp, sizeof(tmp), &e), KILN_OK);
    snprintf(dir, sizeof(dir), "%s/wl", tmp);
    const char *kernel = "// kiln: launch k grid(1) block(1) args(x, out)\n"
                         "extern \"C\" __global__ void k(const float *x, float *out) {}\n";
    struct kb_options o = {.name = "kb_conv",
                           .origin = "9_Conv\n\"evil\".py",
                           .flops = "0",
                           .kernel = kernel,
                           .kernel_len = strlen(kernel)};
    assert_int_equal(kbimport_write(&p, &pr, &o, dir, &e), KILN_OK);
    struct workload *w = NULL;
    if (workload_load(dir, &w, &e) != KILN_OK)
        fail_msg("the written workload does not load: %s", e.msg);
    assert_string_equal(w->name, "kb_conv");
    workload_free(w);
    char *json = slurp(dir, "workload.json");
    /* Constants that follow a dimension are sizes; others a derived size. */
    assert_non_null(strstr(json, "\"sizes\": [\"batch\", \"h\", \"out_d2\"]"));
    assert_non_null(strstr(json, "\"shape\": [\"batch\", \"4\", \"h\", \"h\"], \"role\": \"in\""));
    assert_non_null(strstr(json, "{\"name\": \"conv_weight\", \"kind\": \"tensor\", \"dtype\": "
                                 "\"float32\", \"shape\": [\"8\", \"4\", \"3\", \"3\"]"));
    assert_non_null(strstr(json, "\"shape\": [\"batch\", \"8\", \"out_d2\", \"out_d2\"], "
                                 "\"role\": \"out\""));
    assert_non_null(strstr(json, "{\"name\": \"kb\", \"kind\": \"performance\", \"sizes\": "
                                 "{\"batch\": 16, \"h\": 128, \"out_d2\": 126}}"));
    assert_non_null(strstr(json, "scaled down to fit: h 512 -> 128"));
    assert_non_null(strstr(json, "9_Conv__evil_.py")); /* the file name, safe charset */
    free(json);
    char *in = slurp(dir, "inputs.py"), *ref = slurp(dir, "reference.py");
    assert_non_null(strstr(in, "importing torch failed (%s). Fix: run it"));
    assert_non_null(
        strstr(in, "# Generated by `kiln import kernelbench` from 9_Conv__evil_.py.\n"));
    assert_non_null(strstr(in, "INPUTS = [(\"x\", \"float32\", False)]"));
    assert_non_null(strstr(in, "PARAMS = [(\"conv.weight\", \"conv_weight\", \"float32\"),"));
    assert_non_null(strstr(in, "\"kb\": {\"batch\": 16, \"h\": 128, \"k\": 3}"));
    assert_non_null(strstr(ref, "params[source].copy_(load(name))"));
    /* The problem travels hex-encoded: "import torch" is 696d706f727420746f726368. */
    assert_non_null(strstr(in, "696d706f727420746f726368"));
    free(in);
    free(ref);
    /* An existing directory is never overwritten. */
    assert_int_equal(kbimport_write(&p, &pr, &o, dir, &e), KILN_E_IO);
    assert_non_null(strstr(e.msg, "kiln does not overwrite"));
    kbimport_free(&p);
    assert_int_equal(fs_remove_tree(tmp, &e), KILN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_constants_and_inputs),
        cmocka_unit_test(only_structure_is_refused),
        cmocka_unit_test(probe_report_is_untrusted),
        cmocka_unit_test(writes_a_workload_kiln_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
