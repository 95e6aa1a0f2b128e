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
