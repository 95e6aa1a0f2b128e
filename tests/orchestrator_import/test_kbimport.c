/* kiln import kernelbench (kbimport.h): what the parser takes from a
 * problem file, each refusal's message, and the workload it writes (loaded
 * back by kiln's own workload loader). */
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

static void refuse(const char *src, enum kiln_rc want, const char *msg)
{
    struct kb_problem p;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(kbimport_parse(src, strlen(src), &p, &e), want);
    assert_null(p.source);
    assert_string_equal(e.msg, msg);
}

#define HEAD                                                                                       \
    "class Model(nn.Module):\n    def forward(self, x):\n        return x\nN = 64\n"               \
    "def get_init_inputs():\n    return []\n"

static void refusals_name_the_line(void **state)
{
    (void)state;
    refuse(HEAD "def get_inputs():\n    x = torch.randn(N, dtype=torch.float16)\n    return [x]\n",
           KILN_E_REJECTED,
           "line 8: get_inputs: keyword argument 'dtype=torch.float16' (dtype, device, generator) "
           "is not supported: the workload's tensors are float32");
    refuse(HEAD "def get_inputs():\n    x = torch.randint(0, 9, (N,))\n    return [x]\n",
           KILN_E_REJECTED,
           "line 8: get_inputs: expected torch.randn(...) or torch.rand(...); other tensor makers "
           "(integer tensors, loaded data) are not supported");
    refuse(HEAD "def get_inputs():\n    x = torch.randn(N)\n    print(x)\n    return [x]\n",
           KILN_E_REJECTED,
           "line 9: get_inputs: only 'NAME = torch.randn(dims)' (or torch.rand) and 'return "
           "[NAME, ...]' are understood, not 'print(x)'");
    refuse(HEAD "def get_inputs():\n    x = torch.randn(N)\n    return [y]\n", KILN_E_REJECTED,
           "line 9: get_inputs returns 'y', which is not a tensor it made with torch.randn or "
           "torch.rand");
    refuse(HEAD "def get_inputs():\n    x = torch.randn(2 ** N)\n    return [x]\n", KILN_E_PARSE,
           "line 8: get_inputs: dimension '2 ** N' must be an integer expression over the "
           "module's constants (+ - * / %, no **): \"2 ** N\": column 4: expected a number, a name "
           "or '('");
    refuse("N = 4\ndef get_inputs():\n    x = torch.randn(N)\n    return [x]\n", KILN_E_REJECTED,
           "not a KernelBench problem: it needs class Model with forward(), get_inputs() and "
           "get_init_inputs() (missing: class Model forward() get_init_inputs())");
    refuse("class Model(nn.Module):\n    def __init__(self):\n"
           "        self.fc = nn.Linear(4, 4)\n    def forward(self, x):\n        return x\n",
           KILN_E_REJECTED,
           "line 3: the Model has parameters or layers ('self.fc = nn.Linear(4, 4)'): their "
           "weights would have to be inputs of the kernel, which kiln import does not export "
           "yet; only parameter-free models are supported");
    char big[KB_MAX_LINE + 8];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    refuse(big, KILN_E_LIMIT, "line 1: longer than 4096 bytes");
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

static void writes_a_workload_kiln_loads(void **state)
{
    (void)state;
    struct kb_problem p;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(kbimport_parse(sum_py, strlen(sum_py), &p, &e), KILN_OK);
    char tmp[4096], dir[4200];
    assert_int_equal(fs_make_tempdir("kbimport", tmp, sizeof(tmp), &e), KILN_OK);
    snprintf(dir, sizeof(dir), "%s/wl", tmp);
    const char *kernel = "// kiln: launch k grid(1) block(1) args(x, out)\n"
                         "extern \"C\" __global__ void k(const float *x, float *out) {}\n";
    struct kb_options o = {.name = "kb_sum",
                           .origin = "47_Sum.py",
                           .out_shape = "batch_size, 1, dim2",
                           .flops = "batch_size*dim1*dim2",
                           .kernel = kernel,
                           .kernel_len = strlen(kernel)};
    assert_int_equal(kbimport_write(&p, &o, dir, &e), KILN_OK);
    struct workload *w = NULL;
    if (workload_load(dir, &w, &e) != KILN_OK)
        fail_msg("the written workload does not load: %s", e.msg);
    assert_string_equal(w->name, "kb_sum");
    workload_free(w);
    char *json = slurp(dir, "workload.json");
    assert_non_null(strstr(json, "\"sizes\": [\"batch_size\", \"dim1\", \"dim2\"]"));
    assert_null(strstr(json, "reduce_dim")); /* not a shape: not a size */
    assert_non_null(strstr(json, "{\"name\": \"kb\", \"kind\": \"performance\", \"sizes\": "
                                 "{\"batch_size\": 16, \"dim1\": 256, \"dim2\": 512}}"));
    assert_non_null(
        strstr(json, "\"shape\": [\"batch_size\", \"1\", \"dim2\"], \"role\": \"out\""));
    free(json);
    char *in = slurp(dir, "inputs.py"), *ref = slurp(dir, "reference.py");
    /* Without torch: a message naming the module and the fix. */
    assert_non_null(strstr(in, "importing torch failed (%s). Fix: run it"));
    assert_non_null(strstr(ref, "import torch\n"));
    assert_non_null(strstr(in, "NAMES = [\"x\", \"w\", \"in2\"]"));
    assert_non_null(strstr(ref, ".double().eval()"));
    /* The problem travels hex-encoded: "import torch" is 696d706f727420746f726368. */
    assert_non_null(strstr(in, "696d706f727420746f726368"));
    free(in);
    free(ref);
    /* An existing directory is never overwritten. */
    assert_int_equal(kbimport_write(&p, &o, dir, &e), KILN_E_IO);
    assert_non_null(strstr(e.msg, "kiln does not overwrite"));
    o.out_shape = "batch_size, nope";
    assert_int_equal(kbimport_write(&p, &o, tmp, &e), KILN_E_USAGE);
    kbimport_free(&p);
    assert_int_equal(fs_remove_tree(tmp, &e), KILN_OK);
}

/* The problem file's name is pasted into the scripts' first comment: a
 * newline in it must not start a line of python. */
static void hostile_origin_stays_in_the_comment(void **state)
{
    (void)state;
    struct kb_problem p;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(kbimport_parse(sum_py, strlen(sum_py), &p, &e), KILN_OK);
    char tmp[4096], dir[4200];
    assert_int_equal(fs_make_tempdir("kbimport", tmp, sizeof(tmp), &e), KILN_OK);
    snprintf(dir, sizeof(dir), "%s/wl", tmp);
    struct kb_options o = {.name = "kb_sum",
                           .origin = "x.py\nimport os; os.system('id')\r\n#\"",
                           .out_shape = "batch_size, 1, dim2",
                           .flops = "0"};
    assert_int_equal(kbimport_write(&p, &o, dir, &e), KILN_OK);
    const char *files[] = {"inputs.py", "reference.py"};
    for (size_t f = 0; f < 2; f++) {
        char *py = slurp(dir, files[f]);
        assert_null(strstr(py, "\nimport os;"));
        assert_null(strchr(py, '\r'));
        assert_non_null(strstr(py, "from x.py_import_os__os.system__id______.\n"));
        free(py);
    }
    kbimport_free(&p);
    assert_int_equal(fs_remove_tree(tmp, &e), KILN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_constants_and_inputs),
        cmocka_unit_test(refusals_name_the_line),
        cmocka_unit_test(writes_a_workload_kiln_loads),
        cmocka_unit_test(hostile_origin_stays_in_the_comment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
