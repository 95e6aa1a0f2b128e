/* kbwrite.c - the workload kiln writes for a KernelBench problem
 * (kbimport.h's kbimport_write): workload.json from what the probe learned
 * (kbprobe.h), and inputs.py / reference.py, which embed the problem's
 * source as text and run it with each case's sizes pinned. */
#include "kbimport.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "expr.h"
#include "fsutil.h"
#include "kbprobe.h"
#include "strbuf.h"

/* The workload's sizes: the probe's (one per distinct constant), then
 * derived sizes for dimensions no expression gives. */
struct sizes {
    size_t n, nprobe; /* sizes[0 .. nprobe) are the probe's */
    char names[KB_SIZES_MAX][KB_NAME_MAX + 1];
    int64_t v[KB_SIZES_MAX][KBP_MAX_CASES];
};

/* A shape's expression for each dimension of each tensor. */
typedef char dim_exprs[KBP_MAX_TENSORS][KB_MAX_DIMS][KB_EXPR_MAX + 1];

static bool same_vec(const int64_t *a, const int64_t *b, size_t n)
{
    for (size_t c = 0; c < n; c++)
        if (a[c] != b[c])
            return false;
    return true;
}

static bool ident_used(const struct kb_probe *pr, const struct sizes *sz, const char *name)
{
    for (size_t i = 0; i < pr->ntensors; i++)
        if (strcmp(pr->t[i].name, name) == 0)
            return true;
    for (size_t i = 0; i < sz->n; i++)
        if (strcmp(sz->names[i], name) == 0)
            return true;
    return false;
}

static enum kiln_rc add_size(struct sizes *sz, const char *name, const int64_t *vec,
                             struct kiln_err *err)
{
    if (sz->n >= KB_SIZES_MAX)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the shapes need more than %d distinct sizes (kiln's limit is 16)",
                         KB_SIZES_MAX);
    snprintf(sz->names[sz->n], KB_NAME_MAX + 1, "%s", name);
    memcpy(sz->v[sz->n++], vec, sizeof(int64_t) * KBP_MAX_CASES);
    return KILN_OK;
}

/* The expression of one dimension: the probe's; else a literal when it
 * never changes, a size that takes the same values, or a derived size
 * "<tensor>_d<axis>" (which rules held-out ranges out: kiln could not draw
 * it consistently with the others). */
static enum kiln_rc dim_expr(const struct kb_probe *pr, size_t ti, int axis, struct sizes *sz,
                             char *out, size_t cap, struct kiln_err *err)
{
    const struct kbp_tensor *t = &pr->t[ti];
    if (t->shape[axis][0]) {
        snprintf(out, cap, "%s", t->shape[axis]);
        return KILN_OK;
    }
    int64_t vec[KBP_MAX_CASES] = {0};
    bool constant = true;
    for (size_t c = 0; c < pr->ncases; c++) {
        vec[c] = pr->cases[c].dims[ti][axis];
        constant = constant && vec[c] == vec[0];
    }
    if (constant) {
        snprintf(out, cap, "%lld", (long long)vec[0]);
        return KILN_OK;
    }
    for (size_t i = 0; i < sz->n; i++)
        if (same_vec(sz->v[i], vec, pr->ncases)) {
            snprintf(out, cap, "%s", sz->names[i]);
            return KILN_OK;
        }
    char name[KB_NAME_MAX + 1];
    snprintf(name, sizeof(name), "%.40s_d%d", t->name, axis);
    for (int k = 2; ident_used(pr, sz, name); k++)
        snprintf(name, sizeof(name), "%.40s_d%d_%d", t->name, axis, k);
    snprintf(out, cap, "%s", name);
    return add_size(sz, name, vec, err);
}

static size_t case_index(const struct kb_probe *pr, const char *name)
{
    for (size_t c = 0; c < pr->ncases; c++)
        if (strcmp(pr->cases[c].name, name) == 0)
            return c;
    return pr->ncases;
}

/* The fixed held-out case must have sizes no visible case has. */
static bool held_is_new(const struct kb_probe *pr, const struct sizes *sz)
{
    size_t h = case_index(pr, "held");
    for (size_t c = 0; c < pr->ncases; c++) {
        bool same = c != h;
        for (size_t i = 0; same && i < sz->n; i++)
            same = sz->v[i][c] == sz->v[i][h];
        if (same)
            return false;
    }
    return true;
}

/* The sizes the shapes need and each dimension's expression; refused when
 * kiln's signature cannot hold them or no held-out case can differ from
 * the visible ones. */
static enum kiln_rc plan_sizes(const struct kb_probe *pr, struct sizes *sz, dim_exprs exprs,
                               struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    for (size_t i = 0; i < pr->nsizes; i++) {
        int64_t vec[KBP_MAX_CASES] = {0};
        for (size_t c = 0; c < pr->ncases; c++)
            vec[c] = pr->cases[c].values[i];
        if ((rc = add_size(sz, pr->size_names[i], vec, err)) != KILN_OK)
            return rc;
    }
    sz->nprobe = sz->n;
    for (size_t i = 0; rc == KILN_OK && i < pr->ntensors; i++)
        for (int d = 0; rc == KILN_OK && d < pr->t[i].ndims; d++)
            rc = dim_expr(pr, i, d, sz, exprs[i][d], sizeof(exprs[i][d]), err);
    if (rc != KILN_OK)
        return rc;
    if (sz->n + pr->ntensors > 32)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the kernel would take %zu sizes and %zu tensors: kiln's signature "
                         "holds 32 arguments",
                         sz->n, pr->ntensors);
    if (sz->n == 0 || (!pr->ranges && !held_is_new(pr, sz)))
        return kiln_fail(err, KILN_E_REJECTED,
                         "the problem's shapes do not change when its constants are scaled "
                         "(or are too small to scale): kiln could not draw a held-out case that "
                         "differs from the visible ones");
    return KILN_OK;
}

static void json_string(struct strbuf *b, const char *s)
{
    strbuf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            strbuf_printf(b, "\\%c", c);
        else if (c < 0x20)
            strbuf_printf(b, "\\u%04x", c);
        else
            strbuf_printf(b, "%c", c);
    }
    strbuf_printf(b, "\"");
}

static size_t dtype_bytes(const char *d)
{
    return strstr(d, "64") ? 8 : strstr(d, "32") ? 4 : strstr(d, "16") ? 2 : 1;
}

static bool dtype_float(const char *d)
{
    return strncmp(d, "float", 5) == 0;
}

/* The sizes of case c as a JSON object. */
static void json_case_sizes(struct strbuf *b, const struct sizes *sz, size_t c)
{
    strbuf_printf(b, "{");
    for (size_t i = 0; i < sz->n; i++)
        strbuf_printf(b, "%s\"%s\": %lld", i ? ", " : "", sz->names[i], (long long)sz->v[i][c]);
    strbuf_printf(b, "}");
}

/* cost.bytes over the tensors of the given roles (mask of 1 << role). */
static void cost_bytes(struct strbuf *b, const struct kb_probe *pr, dim_exprs exprs, unsigned roles)
{
    bool first = true;
    for (size_t i = 0; i < pr->ntensors; i++) {
        if (!(roles & (1u << pr->t[i].role)))
            continue;
        strbuf_printf(b, "%s%zu", first ? "" : " + ", dtype_bytes(pr->t[i].dtype));
        for (int d = 0; d < pr->t[i].ndims; d++) {
            bool simple = expr_ident_valid(exprs[i][d]) ||
                          strspn(exprs[i][d], "0123456789") == strlen(exprs[i][d]);
            strbuf_printf(b, simple ? "*%s" : "*(%s)", exprs[i][d]);
        }
        first = false;
    }
}

/* How a performance case was scaled, for the description and the table. */
static void scaled_text(char *out, size_t cap, const char *which, const struct kbp_scaled *s,
                        const struct kb_options *o)
{
    if (!s->sizes[0]) {
        snprintf(out, cap, " The %s performance case has KernelBench's own sizes.", which);
        return;
    }
    snprintf(out, cap,
             " The %s performance case scales every size by %.3g to fit %.3g GB (%s): %s.", which,
             s->factor, (double)s->bytes / 1e9,
             s->host_bound
                 ? "its float64 reference's memory within half this host's"
                 : (o->budget_why && strcmp(which, "cuda") == 0 ? o->budget_why : "the cpu budget"),
             s->sizes);
}

/* workload.json's name and description. */
static void json_head(struct strbuf *b, const struct kb_probe *pr, const struct kb_options *o,
                      const struct sizes *sz, const char *origin)
{
    strbuf_printf(b, "{\n  \"name\": \"%s\",\n  \"description\": ", o->name);
    char names[600] = "", cpu[700] = "", cuda[700] = "";
    for (size_t i = 0, at = 0; i < sz->n && at < sizeof(names); i++)
        at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", i ? ", " : "", sz->names[i]);
    if (case_index(pr, "cpu") < pr->ncases)
        scaled_text(cpu, sizeof(cpu), "cpu", &pr->scaled_cpu, o);
    if (case_index(pr, "kb") < pr->ncases)
        scaled_text(cuda, sizeof(cuda), "cuda", &pr->scaled_kb, o);
    char desc[4000];
    snprintf(desc, sizeof(desc),
             "Imported from KernelBench (%s) by kiln import kernelbench. The kernel computes the "
             "problem's torch Model (training mode, as KernelBench runs it) and writes its "
             "output to out. Its arguments: the sizes (int64: %s), one per constant of the "
             "problem that changes between cases; the inputs of get_inputs() in order; the "
             "model's parameters in named_parameters() order (%zu of them). Read the problem's "
             "forward() in inputs.py (PROBLEM) for what to compute. The reference runs the "
             "Model in float64 on the CPU with those parameters; inputs and parameters are "
             "drawn from each case's seed. Tolerance: atol %.3g, rtol %.3g (KernelBench's fp32 "
             "rule, atol = rtol = %.3g, with atol lowered to that fraction of the output's RMS "
             "where the output is below 1, so a zero output never passes).%s%s",
             origin, names, pr->nparams, pr->atol, pr->rtol, pr->rtol, cpu, cuda);
    json_string(b, desc);
}

/* workload.json's sizes and signature: the sizes as int64 scalars, then
 * the tensors with their shapes. */
static void json_signature(struct strbuf *b, const struct kb_probe *pr, const struct sizes *sz,
                           dim_exprs exprs)
{
    strbuf_printf(b, ",\n  \"sizes\": [");
    for (size_t i = 0; i < sz->n; i++)
        strbuf_printf(b, "%s\"%s\"", i ? ", " : "", sz->names[i]);
    strbuf_printf(b, "],\n  \"signature\": [\n");
    for (size_t i = 0; i < sz->n; i++)
        strbuf_printf(b,
                      "    {\"name\": \"%s\", \"kind\": \"scalar\", \"type\": \"int64\", \"expr\": "
                      "\"%s\"},\n",
                      sz->names[i], sz->names[i]);
    for (size_t i = 0; i < pr->ntensors; i++) {
        strbuf_printf(
            b, "    {\"name\": \"%s\", \"kind\": \"tensor\", \"dtype\": \"%s\", \"shape\": [",
            pr->t[i].name, pr->t[i].dtype);
        for (int d = 0; d < pr->t[i].ndims; d++)
            strbuf_printf(b, "%s\"%s\"", d ? ", " : "", exprs[i][d]);
        strbuf_printf(b, "], \"role\": \"%s\"}%s\n", pr->t[i].role == KBP_OUT ? "out" : "in",
                      i + 1 < pr->ntensors ? "," : "");
    }
}

/* workload.json's cases: small and odd check correctness on every
 * backend, cpu and kb are each backend's performance case. */
static void json_cases(struct strbuf *b, const struct kb_probe *pr, const struct sizes *sz)
{
    strbuf_printf(b, "  ],\n  \"cases\": [");
    bool first = true;
    for (size_t c = 0; c < pr->ncases; c++) {
        const struct kbp_case *k = &pr->cases[c];
        if (k->kind == KBP_HELD)
            continue;
        strbuf_printf(b,
                      "%s\n    {\"name\": \"%s\", \"kind\": \"%s\", \"sizes\": ", first ? "" : ",",
                      k->name, k->kind == KBP_PERFORMANCE ? "performance" : "correctness");
        json_case_sizes(b, sz, c);
        if (k->backend)
            strbuf_printf(b, ", \"backends\": [\"%s\"]", k->backend);
        strbuf_printf(b, "}");
        first = false;
    }
    strbuf_printf(b, "\n  ],\n");
}

/* workload.json's held_out: ranges kiln draws from with a secret seed
 * (and the constraints the problem needs), or where no range can be drawn
 * (a dimension no expression gives), the fixed held case. */
static void json_held_out(struct strbuf *b, const struct kb_probe *pr, const struct sizes *sz)
{
    if (pr->ranges && sz->n == sz->nprobe) {
        strbuf_printf(b, "  \"held_out\": {\"draw\": 2, \"sizes\": {");
        for (size_t i = 0; i < sz->n; i++)
            strbuf_printf(b, "%s\"%s\": [%lld, %lld]", i ? ", " : "", sz->names[i],
                          (long long)pr->range[i][0], (long long)pr->range[i][1]);
        strbuf_printf(b, "}");
        if (pr->nwhere) {
            strbuf_printf(b, ", \"where\": [");
            for (size_t i = 0; i < pr->nwhere; i++)
                strbuf_printf(b, "%s\"%s\"", i ? ", " : "", pr->where[i]);
            strbuf_printf(b, "]");
        }
        strbuf_printf(b, "},\n");
        return;
    }
    strbuf_printf(b, "  \"held_out\": [{\"name\": \"held\", \"sizes\": ");
    json_case_sizes(b, sz, case_index(pr, "held"));
    strbuf_printf(b, "}],\n");
}

/* workload.json's tolerance, cost, backends and scripts, to its end. */
static void json_tail(struct strbuf *b, const struct kb_probe *pr, const struct kb_options *o,
                      dim_exprs exprs)
{
    strbuf_printf(b, "  \"tolerance\": {");
    if (dtype_float(pr->t[pr->ntensors - 1].dtype))
        strbuf_printf(b, "\"out\": {\"atol\": %.3g, \"rtol\": %.3g}", pr->atol, pr->rtol);
    /* cost.bytes: every tensor once; shorter forms where that is too long
     * for the 256-character limit. */
    struct strbuf cost;
    strbuf_init(&cost);
    static const unsigned role_sets[] = {1u << KBP_IN | 1u << KBP_PARAM | 1u << KBP_OUT,
                                         1u << KBP_IN | 1u << KBP_OUT, 1u << KBP_OUT};
    for (size_t r = 0; r < 3; r++) {
        cost.len = 0;
        if (cost.data)
            cost.data[0] = '\0';
        cost_bytes(&cost, pr, exprs, role_sets[r]);
        if (!cost.oom && cost.len <= 250)
            break;
    }
    strbuf_printf(b, "},\n  \"cost\": {\"bytes\": \"%s\", \"flops\": ",
                  cost.oom || cost.len > 250 ? "0" : cost.data);
    strbuf_free(&cost);
    json_string(b, o->flops ? o->flops : pr->flops);
    bool cuda = case_index(pr, "kb") < pr->ncases, cpu = case_index(pr, "cpu") < pr->ncases;
    strbuf_printf(b, "},\n  \"backends\": [%s%s%s],\n", cuda ? "\"cuda\"" : "",
                  cuda && cpu ? ", " : "", cpu ? "\"cpu\"" : "");
    strbuf_printf(b, "  \"scripts\": {\"memory_per_byte\": %d},\n", pr->memory_per_byte);
    strbuf_printf(b, "  \"baseline\": {\"kind\": \"torch\"}\n}\n");
}

/* ---- inputs.py and reference.py ---- */

/* The scripts' first lines: where they came from, and torch (or a clear
 * error when the sandbox's python3 has none). */
static void prologue_imports(struct strbuf *b, const char *origin)
{
    strbuf_printf(
        b,
        "# Generated by `kiln import kernelbench` from %s.\n"
        "# The KernelBench problem's source is embedded below (PROBLEM) and runs with\n"
        "# the case's sizes in place of its module-level constants (PIN_OF).\n"
        "import ast\nimport json\nimport os\nimport sys\n\n"
        "try:\n"
        "    import torch\n"
        "except ImportError as e:\n"
        "    sys.exit(\"kiln: this workload was imported from KernelBench and runs torch in \"\n"
        "             \"the script sandbox, but importing torch failed (%%s). Fix: run it \"\n"
        "             \"where the sandbox's python3 has torch (kiln doctor names that \"\n"
        "             \"python3), or install torch for it.\" %% e)\n"
        "import numpy as np\n\n"
        "PROBLEM = b\"\".join([\n",
        origin);
}

/* The problem's source as text, a bytes literal per line: printable ASCII
 * as it is, every other byte (quotes, backslashes, control bytes, UTF-8)
 * escaped, so no byte of it can end the literal. */
static void prologue_problem(struct strbuf *b, const struct kb_problem *p)
{
    bool open = false;
    for (size_t i = 0; i < p->len; i++) {
        unsigned char c = (unsigned char)p->source[i];
        if (!open) {
            strbuf_printf(b, "    b\"");
            open = true;
        }
        if (c == '\n')
            strbuf_printf(b, "\\n\",\n");
        else if (c == '"' || c == '\\')
            strbuf_printf(b, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            strbuf_printf(b, "%c", c);
        else
            strbuf_printf(b, "\\x%02x", c);
        open = c != '\n';
    }
    if (open)
        strbuf_printf(b, "\",\n");
}

/* INPUTS, PARAMS, OUT_DTYPE and PIN_OF, from the probe. */
static void prologue_tables(struct strbuf *b, const struct kb_probe *pr)
{
    /* Every name below was checked to be [A-Za-z0-9_.]: safe in a literal. */
    strbuf_printf(b, "]).decode(\"utf-8\")\nINPUTS = [");
    for (size_t i = 0; i < pr->ninputs; i++)
        strbuf_printf(b, "%s(\"%s\", \"%s\", %s)", i ? ", " : "", pr->t[i].name, pr->t[i].dtype,
                      pr->t[i].scalar ? "True" : "False");
    strbuf_printf(b, "]\nPARAMS = [");
    for (size_t i = pr->ninputs; i < pr->ninputs + pr->nparams; i++)
        strbuf_printf(b, "%s(\"%s\", \"%s\", \"%s\")", i > pr->ninputs ? ",\n          " : "",
                      pr->t[i].source, pr->t[i].name, pr->t[i].dtype);
    strbuf_printf(b, "]\nOUT_DTYPE = \"%s\"\n", pr->t[pr->ntensors - 1].dtype);
    strbuf_printf(b,
                  "# Each module-level constant of the problem -> the size it takes.\nPIN_OF = {");
    for (size_t i = 0; i < pr->npins; i++)
        strbuf_printf(b, "%s\"%s\": \"%s\"", i ? ", " : "", pr->pins[i].name,
                      pr->size_names[pr->pins[i].size]);
    strbuf_printf(b, "}\n");
}

/* load_problem(), which runs PROBLEM with the case's sizes pinned, save(),
 * and the lines that load the case and the problem. */
static void prologue_loader(struct strbuf *b)
{
    strbuf_printf(
        b,
        "\n\n"
        "def load_problem(case):\n"
        "    \"\"\"Runs PROBLEM with each module-level `NAME = ...` followed by\n"
        "    `NAME = _kiln_pin(NAME, \"NAME\")`: an int constant, or a tuple's element\n"
        "    (\"NAME__i\"), takes its size's value in this case (drawn held-out cases\n"
        "    too); constants computed from it follow, as in kiln's import probe.\"\"\"\n"
        "    sizes = case[\"sizes\"]\n"
        "    missing = sorted(set(PIN_OF.values()) - set(sizes))\n"
        "    if missing:\n"
        "        sys.exit(\"kiln: case %%s gives no value for %%s\" %% (case[\"case\"], \", "
        "\".join("
        "missing)))\n"
        "    pins = {c: int(sizes[s]) for c, s in PIN_OF.items()}\n"
        "\n"
        "    def pin(v, n):\n"
        "        if type(v) is int:\n"
        "            return pins.get(n, v)\n"
        "        if type(v) in (tuple, list):\n"
        "            return type(v)(pins.get(\"%%s__%%d\" %% (n, i), x) for i, x in enumerate(v))\n"
        "        return v\n"
        "\n"
        "    def names(node):\n"
        "        out = []\n"
        "        for t in node.targets if isinstance(node, ast.Assign) else []:\n"
        "            if isinstance(t, ast.Name):\n"
        "                out.append(t.id)\n"
        "            elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in "
        "t.elts):\n"
        "                out += [e.id for e in t.elts]\n"
        "        return out\n"
        "\n"
        "    tree = ast.parse(PROBLEM)\n"
        "    body = []\n"
        "    for node in tree.body:\n"
        "        body.append(node)\n"
        "        body += [ast.parse(\"%%s = _kiln_pin(%%s, %%r)\" %% (n, n, n)).body[0] "
        "for n in names(node)]\n"
        "    tree.body = body\n"
        "    ast.fix_missing_locations(tree)\n"
        "    ns = {\"__name__\": \"kernelbench_problem\", \"_kiln_pin\": pin}\n"
        "    exec(compile(tree, \"PROBLEM.py\", \"exec\"), ns)\n"
        "    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))\n"
        "    return ns\n\n\n"
        "def save(directory, name, t, dtype):\n"
        "    a = t.detach().cpu().numpy().astype(dtype)\n"
        "    a = np.ascontiguousarray(a) if a.ndim else a  # it makes a 0-d array 1-d\n"
        "    np.save(os.path.join(directory, name + \".npy\"), a)\n\n\n"
        "case = json.load(open(sys.argv[1]))\n"
        "ns = load_problem(case)\n");
}

/* The python both scripts start with. */
static void script_prologue(struct strbuf *b, const struct kb_problem *p, const struct kb_probe *pr,
                            const char *origin)
{
    prologue_imports(b, origin);
    prologue_problem(b, p);
    prologue_tables(b, pr);
    prologue_loader(b);
}

static void write_scripts(struct strbuf *in, struct strbuf *ref, const struct kb_problem *p,
                          const struct kb_probe *pr, const char *origin)
{
    script_prologue(in, p, pr, origin);
    strbuf_printf(in, "torch.manual_seed(int(case[\"seed\"]) %% (1 << 63))\n"
                      "# The model first: its parameters are drawn from the case's seed too.\n"
                      "model = ns[\"Model\"](*ns[\"get_init_inputs\"]())\n"
                      "tensors = list(ns[\"get_inputs\"]())\n"
                      "if len(tensors) != len(INPUTS):\n"
                      "    sys.exit(\"get_inputs returned %%d tensors, expected %%d\" %% "
                      "(len(tensors), len(INPUTS)))\n"
                      "for (name, dtype, scalar), t in zip(INPUTS, tensors):\n"
                      "    # A python number travels as a 0-d tensor.\n"
                      "    save(sys.argv[2], name, torch.tensor(t) if scalar else t, dtype)\n"
                      "params = dict(model.named_parameters())\n"
                      "for source, name, dtype in PARAMS:\n"
                      "    save(sys.argv[2], name, params[source], dtype)\n");
    script_prologue(ref, p, pr, origin);
    strbuf_printf(ref, "torch.manual_seed(0)\n"
                       "model = ns[\"Model\"](*ns[\"get_init_inputs\"]())\n"
                       "params = dict(model.named_parameters())\n"
                       "load = lambda n: torch.from_numpy(np.load(os.path.join(sys.argv[2], n + "
                       "\".npy\")))\n"
                       "with torch.no_grad():\n"
                       "    for source, name, dtype in PARAMS:\n"
                       "        params[source].copy_(load(name))\n"
                       "model = model.double()  # float64: an oracle for float32 kernels\n"
                       "xs = [load(n) for n, _, _ in INPUTS]\n"
                       "xs = [x.item() if s else x.double() if x.is_floating_point() else x\n"
                       "      for x, (_, _, s) in zip(xs, INPUTS)]\n"
                       "with torch.no_grad():\n"
                       "    y = model(*xs)\n"
                       "save(sys.argv[3], \"out\", y, OUT_DTYPE)\n");
}

/* ---- the folder ---- */

static enum kiln_rc write_file(const char *dir, const char *name, const char *data, size_t len,
                               struct kiln_err *err)
{
    char path[4096];
    enum kiln_rc rc = fs_join(path, sizeof(path), dir, name, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(path, data, len, err);
    return rc;
}

void kbimport_safe_text(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (; *in && n + 1 < cap; in++) {
        char c = *in;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '/' || c == '-';
        out[n++] = ok ? c : '_';
    }
    out[n] = '\0';
}

/* The workload's folder, new, with its files (a starting kernel when given). */
static enum kiln_rc save_workload(const char *dir, const struct kb_options *o,
                                  const struct strbuf *json, const struct strbuf *in,
                                  const struct strbuf *ref, struct kiln_err *err)
{
    if (mkdir(dir, 0755) != 0)
        return kiln_fail(err, KILN_E_IO, "%s: %s%s", dir, strerror(errno),
                         errno == EEXIST ? " (choose another -o DIR; kiln does not overwrite)"
                                         : "");
    enum kiln_rc rc = write_file(dir, "workload.json", json->data, json->len, err);
    if (rc == KILN_OK)
        rc = write_file(dir, "inputs.py", in->data, in->len, err);
    if (rc == KILN_OK)
        rc = write_file(dir, "reference.py", ref->data, ref->len, err);
    if (rc == KILN_OK && o->kernel)
        rc = write_file(dir, o->kernel_file ? o->kernel_file : "kernel.cu", o->kernel,
                        o->kernel_len, err);
    return rc;
}

enum kiln_rc kbimport_write(const struct kb_problem *p, const struct kb_probe *pr,
                            const struct kb_options *o, const char *dir, struct kiln_err *err)
{
    static dim_exprs exprs;
    static struct sizes sz;
    memset(&sz, 0, sizeof(sz));
    enum kiln_rc rc = plan_sizes(pr, &sz, exprs, err);
    if (rc != KILN_OK)
        return rc;
    char origin[256];
    kbimport_safe_text(o->origin, origin, sizeof(origin));

    struct strbuf json, in, ref;
    strbuf_init(&json);
    strbuf_init(&in);
    strbuf_init(&ref);
    json_head(&json, pr, o, &sz, origin);
    json_signature(&json, pr, &sz, exprs);
    json_cases(&json, pr, &sz);
    json_held_out(&json, pr, &sz);
    json_tail(&json, pr, o, exprs);
    write_scripts(&in, &ref, p, pr, origin);
    if (json.oom || in.oom || ref.oom)
        rc = kiln_fail(err, KILN_E_NOMEM, "writing the workload");
    if (rc == KILN_OK)
        rc = save_workload(dir, o, &json, &in, &ref, err);
    strbuf_free(&json);
    strbuf_free(&in);
    strbuf_free(&ref);
    return rc;
}
