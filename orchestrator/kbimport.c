/* kbimport.c - KernelBench problem -> kiln workload (kbimport.h). The file
 * is read line by line as bytes; only module-level `NAME = <integer
 * expression>` lines and the body of get_inputs() are interpreted. */
#include "kbimport.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "expr.h"
#include "fsutil.h"
#include "strbuf.h"

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* Trims blanks at both ends, in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* Cuts a `#` comment that is not inside a string literal. */
static void cut_comment(char *s)
{
    char quote = 0;
    for (char *p = s; *p; p++) {
        if (quote) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == quote)
                quote = 0;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (*p == '#') {
            *p = '\0';
            return;
        }
    }
}

static const struct kb_const *find_const(const struct kb_problem *p, const char *name)
{
    for (size_t i = 0; i < p->nconsts; i++)
        if (strcmp(p->consts[i].name, name) == 0)
            return &p->consts[i];
    return NULL;
}

static size_t const_vars(const struct kb_problem *p, struct expr_var *vars)
{
    for (size_t i = 0; i < p->nconsts; i++)
        vars[i] = (struct expr_var){p->consts[i].name, p->consts[i].value};
    return p->nconsts;
}

/* `NAME = EXPR` at module level: a constant when EXPR is an integer
 * expression over earlier constants (anything else, a string say, is not a
 * size and is left alone). */
static enum kiln_rc top_assignment(struct kb_problem *p, char *s, int line, struct kiln_err *err)
{
    size_t n = 0;
    while (is_ident_char(s[n]))
        n++;
    char *rest = s + n;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (n == 0 || n > KB_NAME_MAX || rest[0] != '=' || rest[1] == '=')
        return KILN_OK;
    char name[KB_NAME_MAX + 1];
    memcpy(name, s, n);
    name[n] = '\0';
    char *rhs = trim(rest + 1);
    if (strlen(rhs) > KB_EXPR_MAX || !expr_ident_valid(name))
        return KILN_OK;
    struct expr_var vars[KB_MAX_CONSTS];
    size_t nv = const_vars(p, vars);
    int64_t v;
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    if (expr_evaluate(rhs, vars, nv, &v, &ignore) != KILN_OK)
        return KILN_OK;
    struct kb_const *c = (struct kb_const *)find_const(p, name);
    if (!c) {
        if (p->nconsts >= KB_MAX_CONSTS)
            return kiln_fail(err, KILN_E_LIMIT, "line %d: more than %d module-level constants",
                             line, KB_MAX_CONSTS);
        c = &p->consts[p->nconsts++];
        snprintf(c->name, sizeof(c->name), "%s", name);
    }
    c->value = v; /* rebinding: the last value wins, as in python */
    c->line = line;
    return KILN_OK;
}

/* Parses `torch.randn(ARGS)` / `torch.rand(ARGS)` at s into `in`; returns
 * the text after the closing parenthesis through *end. */
static enum kiln_rc parse_tensor_call(const struct kb_problem *p, const char *s, int line,
                                      struct kb_input *in, const char **end, struct kiln_err *err)
{
    static const char *const calls[] = {"torch.randn(", "torch.rand("};
    size_t at = 0;
    for (size_t i = 0; i < 2 && !at; i++)
        if (strncmp(s, calls[i], strlen(calls[i])) == 0)
            at = strlen(calls[i]);
    if (!at)
        return kiln_fail(err, KILN_E_REJECTED,
                         "line %d: get_inputs: expected torch.randn(...) or torch.rand(...); "
                         "other tensor makers (integer tensors, loaded data) are not supported",
                         line);
    int depth = 1;
    size_t i = at;
    for (; s[i] && depth; i++)
        depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth)
        return kiln_fail(err, KILN_E_PARSE, "line %d: get_inputs: unbalanced parentheses", line);
    char args[KB_MAX_LINE + 1];
    size_t alen = i - 1 - at;
    memcpy(args, s + at, alen);
    args[alen] = '\0';
    char *a = trim(args);
    /* torch.randn((M, K)): a single tuple argument. */
    size_t l = strlen(a);
    if (l >= 2 && a[0] == '(' && a[l - 1] == ')') {
        a[l - 1] = '\0';
        a = trim(a + 1);
    }
    in->ndims = 0;
    in->line = line;
    char *save = NULL;
    for (char *tok = strtok_r(a, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *d = trim(tok);
        if (!*d)
            continue; /* a trailing comma */
        if (strchr(d, '='))
            return kiln_fail(err, KILN_E_REJECTED,
                             "line %d: get_inputs: keyword argument '%s' (dtype, device, "
                             "generator) is not supported: the workload's tensors are float32",
                             line, d);
        if (in->ndims >= KB_MAX_DIMS)
            return kiln_fail(err, KILN_E_LIMIT, "line %d: get_inputs: more than %d dimensions",
                             line, KB_MAX_DIMS);
        if (strlen(d) > KB_EXPR_MAX)
            return kiln_fail(err, KILN_E_LIMIT, "line %d: get_inputs: a dimension longer than %d",
                             line, KB_EXPR_MAX);
        struct expr_var vars[KB_MAX_CONSTS];
        size_t nv = const_vars(p, vars);
        int64_t v;
        enum kiln_rc rc = expr_evaluate(d, vars, nv, &v, err);
        if (rc != KILN_OK) {
            kiln_err_prefix(err,
                            "line %d: get_inputs: dimension '%s' must be an integer expression "
                            "over the module's constants (+ - * / %%, no **)",
                            line, d);
            return rc;
        }
        if (v < 1)
            return kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs: dimension '%s' is %lld",
                             line, d, (long long)v);
        snprintf(in->dims[in->ndims++], KB_EXPR_MAX + 1, "%s", d);
    }
    if (in->ndims == 0)
        return kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs: a scalar tensor (no shape)",
                         line);
    *end = s + i;
    return KILN_OK;
}

/* A statement of get_inputs' body. `vars` collects NAME = torch.randn(...). */
static enum kiln_rc body_line(struct kb_problem *p, char *s, int line, struct kb_input *vars,
                              size_t *nvars, bool *returned, struct kiln_err *err)
{
    if (*returned)
        return kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs: code after its return", line);
    if (strncmp(s, "return", 6) == 0 && !is_ident_char(s[6])) {
        char *r = trim(s + 6);
        size_t l = strlen(r);
        if (l >= 2 && (r[0] == '[' || r[0] == '(') && (r[l - 1] == ']' || r[l - 1] == ')')) {
            r[l - 1] = '\0';
            r++;
        }
        /* Items: names bound above, or inline torch.randn(...) calls. */
        const char *q = r;
        for (;;) {
            while (*q == ' ' || *q == '\t' || *q == ',')
                q++;
            if (!*q)
                break;
            if (p->ninputs >= KB_MAX_INPUTS)
                return kiln_fail(err, KILN_E_LIMIT, "line %d: get_inputs returns more than %d",
                                 line, KB_MAX_INPUTS);
            struct kb_input *in = &p->inputs[p->ninputs];
            if (strncmp(q, "torch.", 6) == 0) {
                const char *end;
                enum kiln_rc rc = parse_tensor_call(p, q, line, in, &end, err);
                if (rc != KILN_OK)
                    return rc;
                snprintf(in->name, sizeof(in->name), "in%zu", p->ninputs);
                q = end;
            } else {
                size_t n = 0;
                while (is_ident_char(q[n]))
                    n++;
                size_t k = 0;
                for (; k < *nvars; k++)
                    if (strlen(vars[k].name) == n && strncmp(vars[k].name, q, n) == 0)
                        break;
                if (n == 0 || k == *nvars)
                    return kiln_fail(err, KILN_E_REJECTED,
                                     "line %d: get_inputs returns '%.40s', which is not a tensor "
                                     "it made with torch.randn or torch.rand",
                                     line, q);
                *in = vars[k];
                q += n;
            }
            for (size_t j = 0; j < p->ninputs; j++)
                if (strcmp(p->inputs[j].name, in->name) == 0)
                    return kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs returns %s twice",
                                     line, in->name);
            p->ninputs++;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q && *q != ',')
                return kiln_fail(err, KILN_E_PARSE, "line %d: get_inputs: unexpected '%.20s'", line,
                                 q);
        }
        *returned = true;
        return KILN_OK;
    }
    size_t n = 0;
    while (is_ident_char(s[n]))
        n++;
    char *rest = s + n;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (n == 0 || n > KB_NAME_MAX || rest[0] != '=' || !is_ident_start(s[0]))
        return kiln_fail(err, KILN_E_REJECTED,
                         "line %d: get_inputs: only 'NAME = torch.randn(dims)' (or torch.rand) "
                         "and 'return [NAME, ...]' are understood, not '%.60s'",
                         line, s);
    if (*nvars >= KB_MAX_INPUTS)
        return kiln_fail(err, KILN_E_LIMIT, "line %d: get_inputs makes more than %d tensors", line,
                         KB_MAX_INPUTS);
    struct kb_input *in = &vars[*nvars];
    memset(in, 0, sizeof(*in));
    memcpy(in->name, s, n);
    in->name[n] = '\0';
    if (!expr_ident_valid(in->name) || strcmp(in->name, "out") == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "line %d: get_inputs: '%s' cannot name a tensor (reserved)", line,
                         in->name);
    const char *end;
    enum kiln_rc rc = parse_tensor_call(p, trim(rest + 1), line, in, &end, err);
    if (rc != KILN_OK)
        return rc;
    if (*trim((char *)end))
        return kiln_fail(err, KILN_E_PARSE, "line %d: get_inputs: text after the call", line);
    (*nvars)++;
    return KILN_OK;
}

enum kiln_rc kbimport_parse(const char *src, size_t len, struct kb_problem *p, struct kiln_err *err)
{
    memset(p, 0, sizeof(*p));
    if (len > KB_MAX_SRC)
        return kiln_fail(err, KILN_E_LIMIT, "the problem file is %zu bytes; at most %u", len,
                         KB_MAX_SRC);
    if (memchr(src, '\0', len))
        return kiln_fail(err, KILN_E_REJECTED, "the problem file has a NUL byte: not python text");
    enum { TOP, GET_INPUTS, MODEL, OTHER } state = TOP;
    bool have_model = false, have_forward = false, have_gi = false, have_init = false;
    bool returned = false;
    struct kb_input vars[KB_MAX_INPUTS];
    size_t nvars = 0;
    enum kiln_rc rc = KILN_OK;
    int lineno = 0;
    char buf[KB_MAX_LINE + 1];
    for (size_t at = 0; at < len && rc == KILN_OK;) {
        const char *nl = memchr(src + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - src) : len, l = end - at;
        lineno++;
        if (l > KB_MAX_LINE) {
            rc = kiln_fail(err, KILN_E_LIMIT, "line %d: longer than %d bytes", lineno, KB_MAX_LINE);
            break;
        }
        memcpy(buf, src + at, l);
        buf[l] = '\0';
        at = end + 1;
        if (l && buf[l - 1] == '\r')
            buf[--l] = '\0';
        cut_comment(buf);
        bool indented = buf[0] == ' ' || buf[0] == '\t';
        char *s = trim(buf);
        if (!*s)
            continue;
        if (!indented) {
            state = TOP;
            if (strncmp(s, "def get_inputs(", 15) == 0) {
                if (have_gi)
                    rc = kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs defined twice",
                                   lineno);
                have_gi = true;
                state = GET_INPUTS;
            } else if (strncmp(s, "def get_init_inputs(", 20) == 0) {
                have_init = true;
                state = OTHER;
            } else if (strncmp(s, "class Model(", 12) == 0 || strncmp(s, "class Model:", 12) == 0) {
                have_model = true;
                state = MODEL;
            } else if (strncmp(s, "def ", 4) == 0 || strncmp(s, "class ", 6) == 0) {
                state = OTHER;
            } else {
                rc = top_assignment(p, s, lineno, err);
            }
            continue;
        }
        /* Layers and parameters hold weights the kernel would need as
         * inputs; kiln does not export them yet, so it refuses. */
        if (state == MODEL && (strstr(s, "nn.Parameter") || strstr(s, "= nn.") ||
                               strstr(s, "=nn.") || strstr(s, "register_buffer"))) {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "line %d: the Model has parameters or layers ('%.60s'): their "
                           "weights would have to be inputs of the kernel, which kiln import "
                           "does not export yet; only parameter-free models are supported",
                           lineno, s);
            break;
        }
        if (state == MODEL && strncmp(s, "def forward(", 12) == 0)
            have_forward = true;
        if (state == GET_INPUTS)
            rc = body_line(p, s, lineno, vars, &nvars, &returned, err);
    }
    if (rc == KILN_OK && (!have_model || !have_forward || !have_gi || !have_init))
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "not a KernelBench problem: it needs class Model with forward(), "
                       "get_inputs() and get_init_inputs() (missing: %s%s%s%s)",
                       have_model ? "" : "class Model ", have_forward ? "" : "forward() ",
                       have_gi ? "" : "get_inputs() ", have_init ? "" : "get_init_inputs()");
    if (rc == KILN_OK && p->ninputs == 0)
        rc = kiln_fail(err, KILN_E_REJECTED, "get_inputs returns no tensor");
    if (rc == KILN_OK) {
        p->source = malloc(len + 1);
        if (!p->source)
            rc = kiln_fail(err, KILN_E_NOMEM, "copying the problem");
        else {
            memcpy(p->source, src, len);
            p->source[len] = '\0';
            p->len = len;
        }
    }
    if (rc != KILN_OK)
        kbimport_free(p);
    return rc;
}

void kbimport_free(struct kb_problem *p)
{
    free(p->source);
    memset(p, 0, sizeof(*p));
}

/* ---- writing the workload ---- */

/* The sizes: constants named by any dimension or by the output shape. */
static size_t collect_sizes(const struct kb_problem *p, const char *const *texts, size_t ntexts,
                            const struct kb_const **sizes)
{
    size_t n = 0;
    for (size_t c = 0; c < p->nconsts; c++) {
        const char *name = p->consts[c].name;
        size_t nl = strlen(name);
        bool used = false;
        for (size_t t = 0; t < ntexts && !used; t++)
            for (const char *q = texts[t]; *q && !used; q++)
                if ((q == texts[t] || !is_ident_char(q[-1])) && strncmp(q, name, nl) == 0 &&
                    !is_ident_char(q[nl]))
                    used = true;
        if (used)
            sizes[n++] = &p->consts[c];
    }
    return n;
}

static void json_sizes(struct strbuf *b, const struct kb_const **sizes, size_t n, int64_t cap)
{
    strbuf_printf(b, "{");
    for (size_t i = 0; i < n; i++) {
        int64_t v = sizes[i]->value;
        if (cap > 0 && v > cap)
            v = cap;
        strbuf_printf(b, "%s\"%s\": %lld", i ? ", " : "", sizes[i]->name, (long long)v);
    }
    strbuf_printf(b, "}");
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

static void json_shape(struct strbuf *b, char dims[][KB_EXPR_MAX + 1], int n)
{
    strbuf_printf(b, "[");
    for (int d = 0; d < n; d++) {
        strbuf_printf(b, "%s", d ? ", " : "");
        json_string(b, dims[d]);
    }
    strbuf_printf(b, "]");
}

/* The problem file's name as the scripts' comment shows it: the name is
 * the user's (or a downloaded archive's), so a newline in it would end the
 * comment and add code that runs in the script sandbox. Only [A-Za-z0-9._-]
 * and '/' pass, anything else is '_'; cut at KB_ORIGIN_SHOWN bytes. */
#define KB_ORIGIN_SHOWN 200
static char *origin_shown(char *out, size_t cap, const char *origin)
{
    size_t n = 0;
    for (const char *s = origin ? origin : "?"; *s && n + 1 < cap && n < KB_ORIGIN_SHOWN; s++) {
        unsigned char c = (unsigned char)*s;
        bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '/';
        out[n++] = safe ? (char)c : '_';
    }
    out[n] = '\0';
    return out;
}

/* The python both scripts start with: torch (or a clear error), and the
 * problem's own source, hex-encoded so no byte of it can end a literal. */
static void script_prologue(struct strbuf *b, const struct kb_problem *p, const char *origin)
{
    char shown[KB_ORIGIN_SHOWN + 1];
    strbuf_printf(
        b,
        "# Generated by `kiln import kernelbench` from %s.\n"
        "# The KernelBench problem's source is embedded below (PROBLEM, hex) and runs\n"
        "# with the case's sizes in place of its module-level constants.\n"
        "import json\nimport os\nimport sys\n\n"
        "try:\n"
        "    import torch\n"
        "except ImportError as e:\n"
        "    sys.exit(\"kiln: this workload was imported from KernelBench and runs torch in \"\n"
        "             \"the script sandbox, but importing torch failed (%%s). Fix: run it \"\n"
        "             \"where the sandbox's python3 has torch (kiln doctor names that \"\n"
        "             \"python3), or install torch for it.\" %% e)\n"
        "import numpy as np\n\n"
        "PROBLEM = bytes.fromhex(\n",
        origin_shown(shown, sizeof(shown), origin));
    for (size_t i = 0; i < p->len; i += 48) {
        strbuf_printf(b, "    \"");
        for (size_t j = i; j < p->len && j < i + 48; j++)
            strbuf_printf(b, "%02x", (unsigned char)p->source[j]);
        strbuf_printf(b, "\"\n");
    }
    strbuf_printf(b, ").decode(\"utf-8\")\nNAMES = [");
    for (size_t i = 0; i < p->ninputs; i++)
        strbuf_printf(b, "%s\"%s\"", i ? ", " : "", p->inputs[i].name);
    strbuf_printf(b, "]\n\n\n"
                     "def load_problem(case):\n"
                     "    ns = {\"__name__\": \"kernelbench_problem\"}\n"
                     "    exec(compile(PROBLEM, \"PROBLEM.py\", \"exec\"), ns)\n"
                     "    ns.update(case[\"sizes\"])  # get_inputs reads these at call time\n"
                     "    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))\n"
                     "    return ns\n\n\n"
                     "case = json.load(open(sys.argv[1]))\n"
                     "ns = load_problem(case)\n");
}

static enum kiln_rc write_file(const char *dir, const char *name, const char *data, size_t len,
                               struct kiln_err *err)
{
    char path[4096];
    enum kiln_rc rc = fs_join(path, sizeof(path), dir, name, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(path, data, len, err);
    return rc;
}

enum kiln_rc kbimport_write(const struct kb_problem *p, const struct kb_options *o, const char *dir,
                            struct kiln_err *err)
{
    /* The output shape: expressions over the constants. */
    char out_dims[KB_MAX_DIMS][KB_EXPR_MAX + 1];
    int nout = 0;
    if (!o->out_shape || strlen(o->out_shape) > KB_MAX_LINE)
        return kiln_fail(err, KILN_E_USAGE,
                         "the output's shape is needed (--out-shape \"M, N\"): kiln does not run "
                         "the problem to find it");
    char shape[KB_MAX_LINE + 1];
    snprintf(shape, sizeof(shape), "%s", o->out_shape);
    char *save = NULL;
    struct expr_var vars[KB_MAX_CONSTS];
    size_t nv = const_vars(p, vars);
    for (char *tok = strtok_r(shape, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *d = trim(tok);
        if (!*d)
            continue;
        int64_t v;
        if (nout >= KB_MAX_DIMS || strlen(d) > KB_EXPR_MAX)
            return kiln_fail(err, KILN_E_LIMIT, "--out-shape: at most %d dimensions of %d bytes",
                             KB_MAX_DIMS, KB_EXPR_MAX);
        enum kiln_rc rc = expr_evaluate(d, vars, nv, &v, err);
        if (rc != KILN_OK) {
            kiln_err_prefix(err, "--out-shape: '%s' (use the problem's constants)", d);
            return KILN_E_USAGE;
        }
        snprintf(out_dims[nout++], KB_EXPR_MAX + 1, "%s", d);
    }
    if (nout == 0)
        return kiln_fail(err, KILN_E_USAGE, "--out-shape has no dimension");

    const char *texts[KB_MAX_INPUTS * KB_MAX_DIMS + KB_MAX_DIMS];
    size_t nt = 0;
    for (size_t i = 0; i < p->ninputs; i++)
        for (int d = 0; d < p->inputs[i].ndims; d++)
            texts[nt++] = p->inputs[i].dims[d];
    for (int d = 0; d < nout; d++)
        texts[nt++] = out_dims[d];
    const struct kb_const *sizes[KB_MAX_CONSTS];
    size_t ns = collect_sizes(p, texts, nt, sizes);
    if (ns == 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "the shapes use no module-level constant: kiln needs named sizes "
                         "(N = 2048, then torch.randn(N, N)) to draw smaller cases");
    bool all_small = true;
    for (size_t i = 0; i < ns; i++)
        all_small = all_small && sizes[i]->value <= 13;
    if (all_small)
        return kiln_fail(err, KILN_E_REJECTED,
                         "every size is at most 13: kiln could not draw a held-out case that "
                         "differs from the visible ones");

    struct strbuf b;
    strbuf_init(&b);
    strbuf_printf(&b, "{\n  \"name\": \"%s\",\n  \"description\": ", o->name);
    char desc[1024];
    snprintf(desc, sizeof(desc),
             "Imported from KernelBench (%s) by kiln import kernelbench. The reference runs the "
             "problem's torch Model in float64 on float32 inputs from get_inputs() (torch.randn "
             "or torch.rand, seeded per case) with the case's sizes in place of the module "
             "constants; the kernel writes the float32 output out. Read the problem's forward() "
             "in inputs.py (PROBLEM) for what to compute.",
             o->origin);
    json_string(&b, desc);
    strbuf_printf(&b, ",\n  \"sizes\": [");
    for (size_t i = 0; i < ns; i++)
        strbuf_printf(&b, "%s\"%s\"", i ? ", " : "", sizes[i]->name);
    strbuf_printf(&b, "],\n  \"signature\": [\n");
    for (size_t i = 0; i < ns; i++)
        strbuf_printf(&b,
                      "    {\"name\": \"%s\", \"kind\": \"scalar\", \"type\": \"int64\", \"expr\": "
                      "\"%s\"},\n",
                      sizes[i]->name, sizes[i]->name);
    for (size_t i = 0; i < p->ninputs; i++) {
        strbuf_printf(&b,
                      "    {\"name\": \"%s\", \"kind\": \"tensor\", \"dtype\": \"float32\", "
                      "\"shape\": ",
                      p->inputs[i].name);
        json_shape(&b, (char(*)[KB_EXPR_MAX + 1]) p->inputs[i].dims, p->inputs[i].ndims);
        strbuf_printf(&b, ", \"role\": \"in\"},\n");
    }
    strbuf_printf(&b, "    {\"name\": \"out\", \"kind\": \"tensor\", \"dtype\": \"float32\", "
                      "\"shape\": ");
    json_shape(&b, out_dims, nout);
    strbuf_printf(&b, ", \"role\": \"out\"}\n  ],\n  \"cases\": [\n");
    /* Small shapes for correctness (every edge of a tile), the problem's own
     * for performance, a third size for the held-out check. */
    strbuf_printf(&b, "    {\"name\": \"small\", \"kind\": \"correctness\", \"sizes\": ");
    json_sizes(&b, sizes, ns, 13);
    strbuf_printf(&b, "},\n    {\"name\": \"odd\", \"kind\": \"correctness\", \"sizes\": ");
    json_sizes(&b, sizes, ns, 67);
    strbuf_printf(&b, "},\n    {\"name\": \"kb\", \"kind\": \"performance\", \"sizes\": ");
    json_sizes(&b, sizes, ns, 0);
    strbuf_printf(&b, "}\n  ],\n  \"held_out\": [{\"name\": \"held\", \"sizes\": ");
    json_sizes(&b, sizes, ns, 41);
    strbuf_printf(&b, "}],\n  \"tolerance\": {\"out\": {\"atol\": 1e-5, \"rtol\": 1e-3}},\n"
                      "  \"cost\": {\"bytes\": \"4*(");
    for (size_t i = 0; i <= p->ninputs; i++) {
        int n = i < p->ninputs ? p->inputs[i].ndims : nout;
        strbuf_printf(&b, "%s", i ? " + " : "");
        for (int d = 0; d < n; d++)
            strbuf_printf(&b, "%s(%s)", d ? "*" : "",
                          i < p->ninputs ? p->inputs[i].dims[d] : out_dims[d]);
    }
    strbuf_printf(&b, ")\", \"flops\": ");
    json_string(&b, o->flops ? o->flops : "0");
    strbuf_printf(&b, "},\n  \"backends\": [\"cuda\"]\n}\n");

    struct strbuf in, ref;
    strbuf_init(&in);
    strbuf_init(&ref);
    script_prologue(&in, p, o->origin);
    strbuf_printf(&in, "torch.manual_seed(int(case[\"seed\"]) %% (1 << 63))\n"
                       "tensors = list(ns[\"get_inputs\"]())\n"
                       "if len(tensors) != len(NAMES):\n"
                       "    sys.exit(\"get_inputs returned %%d tensors, expected %%d\" %% "
                       "(len(tensors), len(NAMES)))\n"
                       "for name, t in zip(NAMES, tensors):\n"
                       "    a = np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32))\n"
                       "    np.save(os.path.join(sys.argv[2], name + \".npy\"), a)\n");
    script_prologue(&ref, p, o->origin);
    strbuf_printf(&ref, "model = ns[\"Model\"](*ns[\"get_init_inputs\"]()).double().eval()\n"
                        "xs = [torch.from_numpy(np.load(os.path.join(sys.argv[2], n + \".npy\")))"
                        ".double() for n in NAMES]\n"
                        "with torch.no_grad():\n"
                        "    y = model(*xs)\n"
                        "a = np.ascontiguousarray(y.detach().cpu().numpy().astype(np.float32))\n"
                        "np.save(os.path.join(sys.argv[3], \"out.npy\"), a)\n");

    enum kiln_rc rc = KILN_OK;
    if (b.oom || in.oom || ref.oom)
        rc = kiln_fail(err, KILN_E_NOMEM, "writing the workload");
    if (rc == KILN_OK && mkdir(dir, 0755) != 0)
        rc = kiln_fail(err, KILN_E_IO, "%s: %s%s", dir, strerror(errno),
                       errno == EEXIST ? " (choose another -o DIR; kiln does not overwrite)" : "");
    if (rc == KILN_OK)
        rc = write_file(dir, "workload.json", b.data, b.len, err);
    if (rc == KILN_OK)
        rc = write_file(dir, "inputs.py", in.data, in.len, err);
    if (rc == KILN_OK)
        rc = write_file(dir, "reference.py", ref.data, ref.len, err);
    if (rc == KILN_OK && o->kernel)
        rc = write_file(dir, "kernel.cu", o->kernel, o->kernel_len, err);
    strbuf_free(&b);
    strbuf_free(&in);
    strbuf_free(&ref);
    return rc;
}
