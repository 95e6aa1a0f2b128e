/* kbimport.c - KernelBench problem -> kiln workload (kbimport.h). The file
 * is read line by line as bytes; only module-level `NAME = <integer
 * expression>` lines and (for the tensors' names) the body of get_inputs()
 * are interpreted. What the code makes is learned in the sandbox
 * (kbprobe.h); this file writes the workload from that. */
#include "kbimport.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "expr.h"
#include "kbprobe.h"
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

/* A name bound above (in `vars`) at *q, returned by get_inputs: into `in`. */
static enum kiln_rc bound_tensor(const char **q, int line, const struct kb_input *vars,
                                 size_t nvars, struct kb_input *in, struct kiln_err *err)
{
    const char *s = *q;
    size_t n = 0;
    while (is_ident_char(s[n]))
        n++;
    size_t k = 0;
    for (; k < nvars; k++)
        if (strlen(vars[k].name) == n && strncmp(vars[k].name, s, n) == 0)
            break;
    if (n == 0 || k == nvars)
        return kiln_fail(err, KILN_E_REJECTED,
                         "line %d: get_inputs returns '%.40s', which is not a tensor "
                         "it made with torch.randn or torch.rand",
                         line, s);
    *in = vars[k];
    *q = s + n;
    return KILN_OK;
}

/* An inline torch.randn(...) call at *q, returned by get_inputs: into `in`,
 * named by its place (in0, in1, ...). */
static enum kiln_rc inline_tensor(const struct kb_problem *p, const char **q, int line,
                                  struct kb_input *in, struct kiln_err *err)
{
    const char *end;
    enum kiln_rc rc = parse_tensor_call(p, *q, line, in, &end, err);
    if (rc != KILN_OK)
        return rc;
    snprintf(in->name, sizeof(in->name), "in%zu", p->ninputs);
    *q = end;
    return KILN_OK;
}

/* One item of get_inputs' return list at *q: the problem's next input;
 * *q moves past it (to the comma or the end). */
static enum kiln_rc return_item(struct kb_problem *p, const char **q, int line,
                                const struct kb_input *vars, size_t nvars, struct kiln_err *err)
{
    if (p->ninputs >= KB_MAX_INPUTS)
        return kiln_fail(err, KILN_E_LIMIT, "line %d: get_inputs returns more than %d", line,
                         KB_MAX_INPUTS);
    struct kb_input *in = &p->inputs[p->ninputs];
    enum kiln_rc rc = strncmp(*q, "torch.", 6) == 0 ? inline_tensor(p, q, line, in, err)
                                                    : bound_tensor(q, line, vars, nvars, in, err);
    if (rc != KILN_OK)
        return rc;
    for (size_t j = 0; j < p->ninputs; j++)
        if (strcmp(p->inputs[j].name, in->name) == 0)
            return kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs returns %s twice", line,
                             in->name);
    p->ninputs++;
    while (**q == ' ' || **q == '\t')
        (*q)++;
    if (**q && **q != ',')
        return kiln_fail(err, KILN_E_PARSE, "line %d: get_inputs: unexpected '%.20s'", line, *q);
    return KILN_OK;
}

/* What follows get_inputs' `return`: a list, a tuple or bare items, each
 * an input of the problem. */
static enum kiln_rc return_line(struct kb_problem *p, char *r, int line,
                                const struct kb_input *vars, size_t nvars, struct kiln_err *err)
{
    size_t l = strlen(r);
    if (l >= 2 && (r[0] == '[' || r[0] == '(') && (r[l - 1] == ']' || r[l - 1] == ')')) {
        r[l - 1] = '\0';
        r++;
    }
    const char *q = r;
    for (;;) {
        while (*q == ' ' || *q == '\t' || *q == ',')
            q++;
        if (!*q)
            return KILN_OK;
        enum kiln_rc rc = return_item(p, &q, line, vars, nvars, err);
        if (rc != KILN_OK)
            return rc;
    }
}

/* `NAME = torch.randn(dims)` (or torch.rand) in get_inputs: a tensor bound
 * to a name, added to `vars`. */
static enum kiln_rc assign_line(const struct kb_problem *p, char *s, int line,
                                struct kb_input *vars, size_t *nvars, struct kiln_err *err)
{
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

/* A statement of get_inputs' body. `vars` collects NAME = torch.randn(...). */
static enum kiln_rc body_line(struct kb_problem *p, char *s, int line, struct kb_input *vars,
                              size_t *nvars, bool *returned, struct kiln_err *err)
{
    if (*returned)
        return kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs: code after its return", line);
    if (strncmp(s, "return", 6) != 0 || is_ident_char(s[6]))
        return assign_line(p, s, line, vars, nvars, err);
    enum kiln_rc rc = return_line(p, trim(s + 6), line, vars, *nvars, err);
    if (rc == KILN_OK)
        *returned = true;
    return rc;
}

/* Where in the file a line is: which top-level definition it belongs to. */
enum kb_section { IN_TOP, IN_GET_INPUTS, IN_MODEL, IN_OTHER };

/* What kbimport_parse has seen so far. */
struct parse_state {
    enum kb_section section;
    bool have_model, have_forward, have_gi, have_init;
    bool returned, names_unknown;
    struct kb_input vars[KB_MAX_INPUTS]; /* get_inputs' NAME = torch.randn(...) */
    size_t nvars;
};

/* Line `lineno` of src, from *at, into buf[KB_MAX_LINE + 1] without its
 * newline, carriage return or comment; *at moves to the next line. */
static enum kiln_rc read_line(const char *src, size_t len, size_t *at, int lineno, char *buf,
                              struct kiln_err *err)
{
    const char *nl = memchr(src + *at, '\n', len - *at);
    size_t end = nl ? (size_t)(nl - src) : len, l = end - *at;
    if (l > KB_MAX_LINE)
        return kiln_fail(err, KILN_E_LIMIT, "line %d: longer than %d bytes", lineno, KB_MAX_LINE);
    memcpy(buf, src + *at, l);
    buf[l] = '\0';
    *at = end + 1;
    if (l && buf[l - 1] == '\r')
        buf[--l] = '\0';
    cut_comment(buf);
    return KILN_OK;
}

/* A line at column 0: which definition starts, or a module-level constant. */
static enum kiln_rc top_line(struct kb_problem *p, struct parse_state *st, char *s, int lineno,
                             struct kiln_err *err)
{
    st->section = IN_TOP;
    if (strncmp(s, "def get_inputs(", 15) == 0) {
        if (st->have_gi)
            return kiln_fail(err, KILN_E_REJECTED, "line %d: get_inputs defined twice", lineno);
        st->have_gi = true;
        st->section = IN_GET_INPUTS;
    } else if (strncmp(s, "def get_init_inputs(", 20) == 0) {
        st->have_init = true;
        st->section = IN_OTHER;
    } else if (strncmp(s, "class Model(", 12) == 0 || strncmp(s, "class Model:", 12) == 0) {
        st->have_model = true;
        st->section = IN_MODEL;
    } else if (strncmp(s, "def ", 4) == 0 || strncmp(s, "class ", 6) == 0) {
        st->section = IN_OTHER;
    } else {
        return top_assignment(p, s, lineno, err);
    }
    return KILN_OK;
}

/* An indented line: Model's forward(), or a statement of get_inputs. */
static void indented_line(struct kb_problem *p, struct parse_state *st, char *s, int lineno)
{
    if (st->section == IN_MODEL && strncmp(s, "def forward(", 12) == 0)
        st->have_forward = true;
    /* get_inputs' text only names the tensors; what it makes is learned
     * by running it in the sandbox (kbprobe.h), so a body this reader
     * does not follow just leaves the names in0, in1, ... */
    if (st->section == IN_GET_INPUTS && !st->names_unknown) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        if (body_line(p, s, lineno, st->vars, &st->nvars, &st->returned, &ignore) != KILN_OK) {
            st->names_unknown = true;
            p->ninputs = 0;
        }
    }
}

static enum kiln_rc parse_lines(const char *src, size_t len, struct kb_problem *p,
                                struct parse_state *st, struct kiln_err *err)
{
    char buf[KB_MAX_LINE + 1];
    int lineno = 0;
    for (size_t at = 0; at < len;) {
        enum kiln_rc rc = read_line(src, len, &at, ++lineno, buf, err);
        if (rc != KILN_OK)
            return rc;
        bool indented = buf[0] == ' ' || buf[0] == '\t';
        char *s = trim(buf);
        if (!*s)
            continue;
        if (indented)
            indented_line(p, st, s, lineno);
        else if ((rc = top_line(p, st, s, lineno, err)) != KILN_OK)
            return rc;
    }
    return KILN_OK;
}

static enum kiln_rc check_complete(const struct parse_state *st, struct kiln_err *err)
{
    if (st->have_model && st->have_forward && st->have_gi && st->have_init)
        return KILN_OK;
    return kiln_fail(err, KILN_E_REJECTED,
                     "not a KernelBench problem: it needs class Model with forward(), "
                     "get_inputs() and get_init_inputs() (missing: %s%s%s%s)",
                     st->have_model ? "" : "class Model ", st->have_forward ? "" : "forward() ",
                     st->have_gi ? "" : "get_inputs() ", st->have_init ? "" : "get_init_inputs()");
}

/* The problem's source, kept for the scripts (they embed it). */
static enum kiln_rc keep_source(struct kb_problem *p, const char *src, size_t len,
                                struct kiln_err *err)
{
    p->source = malloc(len + 1);
    if (!p->source)
        return kiln_fail(err, KILN_E_NOMEM, "copying the problem");
    memcpy(p->source, src, len);
    p->source[len] = '\0';
    p->len = len;
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
    struct parse_state st = {.section = IN_TOP};
    enum kiln_rc rc = parse_lines(src, len, p, &st, err);
    if (rc == KILN_OK)
        rc = check_complete(&st, err);
    if (rc == KILN_OK)
        rc = keep_source(p, src, len, err);
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

const char *const kbp_case_names[KBP_CASES] = {"small", "odd", "held", "kb"};

/* The workload's sizes: problem constants a shape follows, and derived
 * sizes for dimensions no constant gives (a conv's output height). */
struct sizes {
    size_t n;
    char names[KB_SIZES_MAX][KB_NAME_MAX + 1];
    int64_t v[KB_SIZES_MAX][KBP_CASES];
};

static bool same_vec(const int64_t *a, const int64_t *b)
{
    for (int c = 0; c < KBP_CASES; c++)
        if (a[c] != b[c])
            return false;
    return true;
}

static bool ident_used(const struct kb_probe *pr, const struct sizes *sz, const char *name)
{
    for (size_t i = 0; i < pr->ntensors; i++)
        if (strcmp(pr->t[i].name, name) == 0)
            return true;
    for (size_t i = 0; i < pr->nconsts; i++)
        if (strcmp(pr->const_names[i], name) == 0)
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
    memcpy(sz->v[sz->n++], vec, sizeof(int64_t) * KBP_CASES);
    return KILN_OK;
}

/* The expression for one dimension (its value in every case): a literal
 * when it never changes, a constant that takes the same values, else a
 * derived size "<tensor>_d<axis>". */
static enum kiln_rc dim_expr(const struct kb_probe *pr, const struct kbp_tensor *t, int axis,
                             struct sizes *sz, char *out, size_t cap, struct kiln_err *err)
{
    int64_t vec[KBP_CASES];
    bool constant = true;
    for (int c = 0; c < KBP_CASES; c++) {
        vec[c] = t->dims[c][axis];
        constant = constant && vec[c] == vec[0];
    }
    if (constant) {
        snprintf(out, cap, "%lld", (long long)vec[0]);
        return KILN_OK;
    }
    for (size_t i = 0; i < sz->n; i++)
        if (same_vec(sz->v[i], vec)) {
            snprintf(out, cap, "%s", sz->names[i]);
            return KILN_OK;
        }
    for (size_t j = 0; j < pr->nconsts; j++) {
        int64_t cv[KBP_CASES];
        for (int c = 0; c < KBP_CASES; c++)
            cv[c] = pr->consts[c][j];
        if (same_vec(cv, vec)) {
            snprintf(out, cap, "%s", pr->const_names[j]);
            return add_size(sz, pr->const_names[j], vec, err);
        }
    }
    char name[KB_NAME_MAX + 1];
    snprintf(name, sizeof(name), "%.40s_d%d", t->name, axis);
    for (int k = 2; ident_used(pr, sz, name); k++)
        snprintf(name, sizeof(name), "%.40s_d%d_%d", t->name, axis, k);
    snprintf(out, cap, "%s", name);
    return add_size(sz, name, vec, err);
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

/* The case's sizes as a JSON object. */
static void json_case_sizes(struct strbuf *b, const struct sizes *sz, int c)
{
    strbuf_printf(b, "{");
    for (size_t i = 0; i < sz->n; i++)
        strbuf_printf(b, "%s\"%s\": %lld", i ? ", " : "", sz->names[i], (long long)sz->v[i][c]);
    strbuf_printf(b, "}");
}

/* cost.bytes over the tensors of the given roles (mask of 1 << role). */
static void cost_bytes(struct strbuf *b, const struct kb_probe *pr,
                       char exprs[][KB_MAX_DIMS][KB_NAME_MAX + 24], unsigned roles)
{
    bool first = true;
    for (size_t i = 0; i < pr->ntensors; i++) {
        if (!(roles & (1u << pr->t[i].role)))
            continue;
        strbuf_printf(b, "%s%zu", first ? "" : " + ", dtype_bytes(pr->t[i].dtype));
        for (int d = 0; d < pr->t[i].ndims; d++)
            strbuf_printf(b, "*%s", exprs[i][d]);
        first = false;
    }
}

/* The scripts' first lines: where they came from, and torch (or a clear
 * error when the sandbox's python3 has none). */
static void prologue_imports(struct strbuf *b, const char *origin)
{
    strbuf_printf(
        b,
        "# Generated by `kiln import kernelbench` from %s.\n"
        "# The KernelBench problem's source is embedded below (PROBLEM, hex) and runs\n"
        "# with the case's constants (PINS) in place of its module-level ones.\n"
        "import ast\nimport json\nimport os\nimport sys\n\n"
        "try:\n"
        "    import torch\n"
        "except ImportError as e:\n"
        "    sys.exit(\"kiln: this workload was imported from KernelBench and runs torch in \"\n"
        "             \"the script sandbox, but importing torch failed (%%s). Fix: run it \"\n"
        "             \"where the sandbox's python3 has torch (kiln doctor names that \"\n"
        "             \"python3), or install torch for it.\" %% e)\n"
        "import numpy as np\n\n"
        "PROBLEM = bytes.fromhex(\n",
        origin);
}

/* The problem's source as hex lines: no byte of it can end a literal. */
static void prologue_problem(struct strbuf *b, const struct kb_problem *p)
{
    for (size_t i = 0; i < p->len; i += 48) {
        strbuf_printf(b, "    \"");
        for (size_t j = i; j < p->len && j < i + 48; j++)
            strbuf_printf(b, "%02x", (unsigned char)p->source[j]);
        strbuf_printf(b, "\"\n");
    }
}

/* INPUTS, PARAMS, OUT_DTYPE and each case's PINS, from the probe. */
static void prologue_tables(struct strbuf *b, const struct kb_probe *pr)
{
    /* Every name below was checked to be [A-Za-z0-9_.]: safe in a literal. */
    strbuf_printf(b, ").decode(\"utf-8\")\nINPUTS = [");
    for (size_t i = 0; i < pr->ninputs; i++)
        strbuf_printf(b, "%s(\"%s\", \"%s\", %s)", i ? ", " : "", pr->t[i].name, pr->t[i].dtype,
                      pr->t[i].scalar ? "True" : "False");
    strbuf_printf(b, "]\nPARAMS = [");
    for (size_t i = pr->ninputs; i < pr->ninputs + pr->nparams; i++)
        strbuf_printf(b, "%s(\"%s\", \"%s\", \"%s\")", i > pr->ninputs ? ",\n          " : "",
                      pr->t[i].source, pr->t[i].name, pr->t[i].dtype);
    strbuf_printf(b, "]\nOUT_DTYPE = \"%s\"\nPINS = {", pr->t[pr->ntensors - 1].dtype);
    for (int c = 0; c < KBP_CASES; c++) {
        strbuf_printf(b, "%s\"%s\": {", c ? ",\n        " : "", kbp_case_names[c]);
        for (size_t j = 0; j < pr->nconsts; j++)
            strbuf_printf(b, "%s\"%s\": %lld", j ? ", " : "", pr->const_names[j],
                          (long long)pr->consts[c][j]);
        strbuf_printf(b, "}");
    }
}

/* load_problem(), which runs PROBLEM with the case's constants pinned,
 * save(), and the lines that load the case and the problem. */
static void prologue_loader(struct strbuf *b)
{
    strbuf_printf(
        b,
        "}\n\n\n"
        "def load_problem(case):\n"
        "    \"\"\"Runs PROBLEM with each module-level `NAME = ...` followed by\n"
        "    `NAME = _kiln_pin(NAME, \"NAME\")`: an int constant, or a tuple's element\n"
        "    (\"NAME__i\"), takes the case's value, as kiln's import probe did.\"\"\"\n"
        "    pins = PINS.get(case[\"case\"])\n"
        "    if pins is None:\n"
        "        sys.exit(\"kiln: case %%s is not one `kiln import kernelbench` probed; its \"\n"
        "                 \"constants are unknown (cases: %%s)\" %% (case[\"case\"], \", "
        "\".join(PINS)))\n"
        "\n"
        "    def pin(v, n):\n"
        "        if type(v) is int:\n"
        "            return pins.get(n, v)\n"
        "        if type(v) in (tuple, list):\n"
        "            return type(v)(pins.get(\"%%s__%%d\" %% (n, i), x) for i, x in enumerate(v))\n"
        "        return v\n"
        "\n"
        "    tree = ast.parse(PROBLEM)\n"
        "    body = []\n"
        "    for node in tree.body:\n"
        "        body.append(node)\n"
        "        t = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 "
        "else None\n"
        "        names = [t.id] if isinstance(t, ast.Name) else [e.id for e in t.elts] if "
        "isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts) else []\n"
        "        body += [ast.parse(\"%%s = _kiln_pin(%%s, %%r)\" %% (n, n, n)).body[0] for n in "
        "names]\n"
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

/* The python both scripts start with: torch (or a clear error), the
 * problem's own source, hex-encoded so no byte of it can end a literal, and
 * load_problem(), which runs it with the case's constants pinned. */
static void script_prologue(struct strbuf *b, const struct kb_problem *p, const struct kb_probe *pr,
                            const char *origin)
{
    prologue_imports(b, origin);
    prologue_problem(b, p);
    prologue_tables(b, pr);
    prologue_loader(b);
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

/* The held-out case must have sizes no visible case has. */
static bool held_is_new(const struct sizes *sz)
{
    for (int c = 0; c < KBP_CASES; c++) {
        if (c == 2)
            continue;
        bool same = true;
        for (size_t i = 0; i < sz->n; i++)
            same = same && sz->v[i][c] == sz->v[i][2];
        if (same)
            return false;
    }
    return true;
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

/* A shape's expression for each dimension of each tensor. */
typedef char dim_exprs[KBP_MAX_TENSORS][KB_MAX_DIMS][KB_NAME_MAX + 24];

/* The sizes the tensors' shapes need, and each dimension's expression over
 * them; refused when kiln's signature cannot hold them or no held-out case
 * can differ from the visible ones. */
static enum kiln_rc plan_sizes(const struct kb_probe *pr, struct sizes *sz, dim_exprs exprs,
                               struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    for (size_t i = 0; rc == KILN_OK && i < pr->ntensors; i++)
        for (int d = 0; rc == KILN_OK && d < pr->t[i].ndims; d++)
            rc = dim_expr(pr, &pr->t[i], d, sz, exprs[i][d], sizeof(exprs[i][d]), err);
    if (rc != KILN_OK)
        return rc;
    if (sz->n + pr->ntensors > 32)
        return kiln_fail(err, KILN_E_LIMIT,
                         "the kernel would take %zu sizes and %zu tensors: kiln's signature "
                         "holds 32 arguments",
                         sz->n, pr->ntensors);
    if (sz->n == 0 || !held_is_new(sz))
        return kiln_fail(err, KILN_E_REJECTED,
                         "the problem's shapes do not change when its constants are halved "
                         "(or are too small to halve): kiln could not draw a held-out case that "
                         "differs from the visible ones");
    return KILN_OK;
}

/* workload.json's name and description. */
static void json_head(struct strbuf *b, const struct kb_probe *pr, const struct kb_options *o,
                      const char *origin)
{
    strbuf_printf(b, "{\n  \"name\": \"%s\",\n  \"description\": ", o->name);
    char desc[2048];
    snprintf(desc, sizeof(desc),
             "Imported from KernelBench (%s) by kiln import kernelbench. The kernel computes the "
             "problem's torch Model (training mode, as KernelBench runs it) on the inputs of "
             "get_inputs() in order, then the model's parameters in named_parameters() order "
             "(%zu of them), and writes its output to out. The reference runs the Model in "
             "float64 with those parameters; inputs and parameters are drawn from each case's "
             "seed. Read the problem's forward() in inputs.py (PROBLEM) for what to compute.%s%s",
             origin, pr->nparams,
             pr->scaled[0] ? " The performance case is scaled down to fit: " : "", pr->scaled);
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

/* workload.json's cases: small and odd check correctness at every edge; kb
 * is the problem's own sizes (or scaled to fit); held is the held-out check. */
static void json_cases(struct strbuf *b, const struct sizes *sz)
{
    strbuf_printf(b, "  ],\n  \"cases\": [\n");
    static const char *const kinds[] = {"correctness", "correctness", NULL, "performance"};
    for (int c = 0; c < KBP_CASES; c++) {
        if (!kinds[c])
            continue;
        strbuf_printf(b, "    {\"name\": \"%s\", \"kind\": \"%s\", \"sizes\": ", kbp_case_names[c],
                      kinds[c]);
        json_case_sizes(b, sz, c);
        strbuf_printf(b, "}%s\n", c == 3 ? "" : ",");
    }
    strbuf_printf(b, "  ],\n  \"held_out\": [{\"name\": \"held\", \"sizes\": ");
    json_case_sizes(b, sz, 2);
}

/* workload.json's tolerance, cost and backends, to its end. */
static void json_tail(struct strbuf *b, const struct kb_probe *pr, const struct kb_options *o,
                      dim_exprs exprs)
{
    strbuf_printf(b, "}],\n  \"tolerance\": {");
    if (dtype_float(pr->t[pr->ntensors - 1].dtype))
        strbuf_printf(b, "\"out\": {\"atol\": 1e-5, \"rtol\": 1e-3}");
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
    json_string(b, o->flops ? o->flops : "0");
    strbuf_printf(b, "},\n  \"backends\": [\"cuda\"]");
    /* KernelBench's baselines, the problem's Model in torch eager and
     * compiled (pipeline/torch_baseline.h), as the vendor columns. */
    strbuf_printf(b, ",\n  \"baseline\": {\"kind\": \"torch\"}\n}\n");
}

/* The workload's folder, new, with its files (a kernel.cu when given). */
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
        rc = write_file(dir, "kernel.cu", o->kernel, o->kernel_len, err);
    return rc;
}

enum kiln_rc kbimport_write(const struct kb_problem *p, const struct kb_probe *pr,
                            const struct kb_options *o, const char *dir, struct kiln_err *err)
{
    static dim_exprs exprs;
    struct sizes sz = {0};
    enum kiln_rc rc = plan_sizes(pr, &sz, exprs, err);
    if (rc != KILN_OK)
        return rc;
    char origin[256];
    kbimport_safe_text(o->origin, origin, sizeof(origin));

    struct strbuf json, in, ref;
    strbuf_init(&json);
    strbuf_init(&in);
    strbuf_init(&ref);
    json_head(&json, pr, o, origin);
    json_signature(&json, pr, &sz, exprs);
    json_cases(&json, &sz);
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
