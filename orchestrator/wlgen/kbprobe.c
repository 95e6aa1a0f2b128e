/* kbprobe.c - run a KernelBench problem in the script sandbox to learn its
 * tensors (kbprobe.h); the python side is kbprobe.py, embedded at build. */
#include "kbprobe.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "fsutil.h"
#include "json_strict.h"
#include "kbprobe_py.h" /* generated: kbprobe_py[], the bytes of kbprobe.py */
#include "sbexec.h"

#define KBP_REPORT_MAX (1u << 20)
/* Tensor bytes per case (float32 inputs, parameters and output). The
 * performance case is kept at the problem's sizes up to PERF: its float64
 * reference (about 3x these bytes plus temporaries) must fit the script
 * sandbox's memory on the checking host, far below kiln's 4 GiB per case. */
#define KBP_BUDGET_SMALL (16u << 10)
#define KBP_BUDGET_ODD   (256u << 10)
#define KBP_BUDGET_HELD  (64u << 10)
#define KBP_BUDGET_PERF  (512u << 20)
#define KBP_REAL_CAP     (64u << 20) /* inputs of a real (not meta) probe run */

static bool dtype_known(const char *d)
{
    static const char *const ok[] = {"float32", "float64", "float16", "int64", "int32",
                                     "int16",   "int8",    "uint8",   "bool"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(d, ok[i]) == 0)
            return true;
    return false;
}

/* A parameter's dotted name ("conv.weight") as an identifier
 * ("conv_weight"): [A-Za-z0-9_] only, at most 40 bytes, never starting
 * with a digit. "" when nothing usable is left. */
static void param_ident(const char *src, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *s = src; *s && n + 1 < cap && n < 40; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        c = ok ? c : '_';
        if (c == '_' && (n == 0 || out[n - 1] == '_'))
            continue;
        out[n++] = c;
    }
    while (n > 0 && out[n - 1] == '_')
        n--;
    out[n] = '\0';
    if (n && out[0] >= '0' && out[0] <= '9')
        out[0] = '_'; /* never reached from torch's names; keeps the charset */
}

static bool name_taken(const struct kb_probe *pr, const char *name)
{
    if (strcmp(name, "out") == 0)
        return true;
    for (size_t i = 0; i < pr->ntensors; i++)
        if (strcmp(pr->t[i].name, name) == 0)
            return true;
    for (size_t i = 0; i < pr->nconsts; i++)
        if (strcmp(pr->const_names[i], name) == 0)
            return true;
    return false;
}

static enum kiln_rc bad(struct kiln_err *err, const char *what)
{
    return kiln_fail(err, KILN_E_REJECTED,
                     "the sandboxed probe's report is malformed (%s): the problem's code "
                     "replaced kiln's probe, or this kiln's kbprobe.py is broken",
                     what);
}

static enum kiln_rc parse_tensor_list(json_t *list, enum kbp_role role, const struct kb_problem *p,
                                      struct kb_probe *pr, struct kiln_err *err)
{
    size_t cap = role == KBP_IN ? KB_MAX_INPUTS : KBP_MAX_PARAMS;
    if (!json_is_array(list) || json_array_size(list) > cap)
        return role == KBP_IN && json_array_size(list) > cap
                   ? kiln_fail(err, KILN_E_LIMIT, "get_inputs returns more than %d tensors",
                               KB_MAX_INPUTS)
               : json_array_size(list) > cap
                   ? kiln_fail(err, KILN_E_LIMIT,
                               "the Model has more than %d parameter tensors (kiln's signature "
                               "holds 32 arguments)",
                               KBP_MAX_PARAMS)
                   : bad(err, "a tensor list");
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        struct kbp_tensor *t = &pr->t[pr->ntensors];
        memset(t, 0, sizeof(*t));
        t->role = role;
        const char *dt = json_string_value(json_object_get(v, "dtype"));
        if (!json_is_object(v) || !dt || !dtype_known(dt))
            return bad(err, "a dtype");
        snprintf(t->dtype, sizeof(t->dtype), "%s", dt);
        json_t *scalar = json_object_get(v, "scalar");
        if (scalar && (!json_is_boolean(scalar) || role != KBP_IN))
            return bad(err, "an input's scalar flag");
        t->scalar = json_is_true(scalar);
        if (role == KBP_IN) {
            /* The names the text parse found (safe identifiers), in order. */
            if (p->ninputs == json_array_size(list) && !name_taken(pr, p->inputs[i].name))
                snprintf(t->name, sizeof(t->name), "%s", p->inputs[i].name);
            else
                snprintf(t->name, sizeof(t->name), "in%zu", i);
        } else {
            const char *n = json_string_value(json_object_get(v, "name"));
            if (!n || strlen(n) > 200)
                return bad(err, "a parameter's name");
            char id[48];
            param_ident(n, id, sizeof(id));
            snprintf(t->source, sizeof(t->source), "%s", n);
            for (char *s = t->source; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
                    return bad(err, "a parameter's name outside [A-Za-z0-9_.]");
            snprintf(t->name, sizeof(t->name), "%s", id[0] ? id : "param");
            for (int k = 2; name_taken(pr, t->name); k++)
                snprintf(t->name, sizeof(t->name), "%s_%d", id[0] ? id : "param", k);
        }
        pr->ntensors++;
    }
    return KILN_OK;
}

static enum kiln_rc parse_case(json_t *c, size_t ci, struct kb_probe *pr, struct kiln_err *err)
{
    static const char *const keys[] = {"name", "consts", "shapes", NULL};
    if (!json_is_object(c) || json_strict_keys(c, "probe case", keys, keys, err) != KILN_OK)
        return bad(err, "a case");
    if (!json_is_string(json_object_get(c, "name")) ||
        strcmp(json_string_value(json_object_get(c, "name")), kbp_case_names[ci]) != 0)
        return bad(err, "the cases' order");
    json_t *consts = json_object_get(c, "consts"), *shapes = json_object_get(c, "shapes");
    if (!json_is_object(consts) || json_object_size(consts) > KB_MAX_CONSTS ||
        (ci > 0 && json_object_size(consts) != pr->nconsts))
        return bad(err, "a case's constants");
    const char *k;
    json_t *v;
    json_object_foreach(consts, k, v)
    {
        if (!expr_ident_valid(k) || strlen(k) > KB_NAME_MAX || !json_is_integer(v) ||
            json_integer_value(v) < 1 || json_integer_value(v) > (1ll << 40))
            return bad(err, "a constant");
        size_t j = 0;
        while (j < pr->nconsts && strcmp(pr->const_names[j], k) != 0)
            j++;
        if (j == pr->nconsts) {
            if (ci > 0)
                return bad(err, "a constant not in every case");
            snprintf(pr->const_names[pr->nconsts++], KB_NAME_MAX + 1, "%s", k);
        }
        pr->consts[ci][j] = json_integer_value(v);
    }
    if (!json_is_array(shapes) || json_array_size(shapes) != pr->ntensors)
        return bad(err, "a case's shapes");
    size_t ti;
    json_array_foreach(shapes, ti, v)
    {
        struct kbp_tensor *t = &pr->t[ti];
        if (!json_is_array(v) || json_array_size(v) > KB_MAX_DIMS ||
            (ci > 0 && (int)json_array_size(v) != t->ndims))
            return json_array_size(v) > KB_MAX_DIMS
                       ? kiln_fail(err, KILN_E_LIMIT, "%s has more than %d dimensions", t->name,
                                   KB_MAX_DIMS)
                       : bad(err, "a shape");
        t->ndims = (int)json_array_size(v);
        size_t d;
        json_t *dim;
        json_array_foreach(v, d, dim)
        {
            if (!json_is_integer(dim) || json_integer_value(dim) > (1ll << 40))
                return bad(err, "a dimension");
            if (json_integer_value(dim) < 1)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "case %s: %s has a dimension of %lld (kiln's tensors have "
                                 "dimensions >= 1)",
                                 kbp_case_names[ci], t->name, (long long)json_integer_value(dim));
            t->dims[ci][d] = json_integer_value(dim);
        }
    }
    return KILN_OK;
}

enum kiln_rc kbprobe_parse(const char *json, size_t len, const struct kb_problem *p,
                           struct kb_probe *pr, struct kiln_err *err)
{
    memset(pr, 0, sizeof(*pr));
    struct json_strict_rules rules = {.max_bytes = KBP_REPORT_MAX};
    json_t *doc = NULL;
    enum kiln_rc rc = json_strict_parse("the probe's report", json, len, &rules, &doc, err);
    if (rc != KILN_OK)
        return rc;
    json_t *error = json_object_get(doc, "error");
    if (error) {
        char q[400];
        rc = kiln_fail(err, KILN_E_REJECTED, "%s",
                       json_strict_quote(json_is_string(error) ? json_string_value(error)
                                                               : "(no reason given)",
                                         q, sizeof(q)));
        json_decref(doc);
        return rc;
    }
    static const char *const keys[] = {"mode", "inputs", "params", "out", "cases", "scaled", NULL};
    json_t *out = json_object_get(doc, "out"), *cases = json_object_get(doc, "cases");
    const char *mode = json_string_value(json_object_get(doc, "mode"));
    const char *odt = json_string_value(json_object_get(out, "dtype"));
    if (json_strict_keys(doc, "the probe's report", keys, keys, err) != KILN_OK || !mode || !odt ||
        !dtype_known(odt) || !json_is_array(cases) || json_array_size(cases) != KBP_CASES)
        rc = bad(err, "its top level");
    pr->meta = mode && strcmp(mode, "meta") == 0;
    if (rc == KILN_OK)
        rc = parse_tensor_list(json_object_get(doc, "inputs"), KBP_IN, p, pr, err);
    pr->ninputs = pr->ntensors;
    if (rc == KILN_OK && pr->ninputs == 0)
        rc = kiln_fail(err, KILN_E_REJECTED, "get_inputs returns no tensor");
    if (rc == KILN_OK)
        rc = parse_tensor_list(json_object_get(doc, "params"), KBP_PARAM, p, pr, err);
    pr->nparams = pr->ntensors - pr->ninputs;
    if (rc == KILN_OK) {
        struct kbp_tensor *t = &pr->t[pr->ntensors++];
        memset(t, 0, sizeof(*t));
        t->role = KBP_OUT;
        snprintf(t->name, sizeof(t->name), "out");
        snprintf(t->dtype, sizeof(t->dtype), "%s", odt);
    }
    for (size_t ci = 0; rc == KILN_OK && ci < KBP_CASES; ci++)
        rc = parse_case(json_array_get(cases, ci), ci, pr, err);
    json_t *scaled = json_object_get(doc, "scaled");
    if (rc == KILN_OK && (!json_is_array(scaled) || json_array_size(scaled) > KB_MAX_CONSTS))
        rc = bad(err, "scaled");
    size_t i;
    json_t *s;
    size_t at = 0;
    json_array_foreach(scaled, i, s)
    {
        if (rc != KILN_OK)
            break;
        const char *n = json_string_value(json_array_get(s, 0));
        json_t *from = json_array_get(s, 1), *to = json_array_get(s, 2);
        if (!n || !expr_ident_valid(n) || !json_is_integer(from) || !json_is_integer(to)) {
            rc = bad(err, "scaled");
            break;
        }
        int w =
            snprintf(pr->scaled + at, sizeof(pr->scaled) - at, "%s%s %lld -> %lld", at ? ", " : "",
                     n, (long long)json_integer_value(from), (long long)json_integer_value(to));
        at = w > 0 && (size_t)w < sizeof(pr->scaled) - at ? at + (size_t)w : at;
    }
    /* The parameters' names must not shadow a size either. */
    for (size_t t = 0; rc == KILN_OK && t < pr->ntensors; t++)
        for (size_t c = 0; c < pr->nconsts; c++)
            if (strcmp(pr->t[t].name, pr->const_names[c]) == 0)
                snprintf(pr->t[t].name, sizeof(pr->t[t].name), "%s_t",
                         pr->const_names[c]); /* an input named like a constant */
    json_decref(doc);
    return rc;
}

static enum kiln_rc write_plan(const struct kb_problem *p, const char *path, struct kiln_err *err)
{
    json_t *consts = json_object();
    for (size_t i = 0; i < p->nconsts; i++)
        json_object_set_new(consts, p->consts[i].name, json_integer(p->consts[i].value));
    json_t *doc =
        json_pack("{s:o, s:{s:I, s:I, s:I, s:I}, s:[s, s], s:s, s:I}", "consts", consts, "budgets",
                  "small", (json_int_t)KBP_BUDGET_SMALL, "odd", (json_int_t)KBP_BUDGET_ODD, "held",
                  (json_int_t)KBP_BUDGET_HELD, "kb", (json_int_t)KBP_BUDGET_PERF, "odd", "odd",
                  "held", "perf", "kb", "real_cap", (json_int_t)KBP_REAL_CAP);
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "writing the probe's plan");
    enum kiln_rc rc = fs_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

enum kiln_rc kbprobe_run(const struct kb_problem *p, long long timeout_ms, struct kb_probe *out,
                         struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    char tmp[PATH_MAX], plan[PATH_MAX], prob[PATH_MAX], script[PATH_MAX], got[PATH_MAX],
        report[PATH_MAX];
    enum kiln_rc rc = fs_make_tempdir("kbprobe", tmp, sizeof(tmp), err);
    if (rc != KILN_OK)
        return rc;
    if ((rc = fs_join(plan, sizeof(plan), tmp, "plan.json", err)) ||
        (rc = fs_join(prob, sizeof(prob), tmp, "problem.py", err)) ||
        (rc = fs_join(script, sizeof(script), tmp, "kbprobe.py", err)) ||
        (rc = fs_join(got, sizeof(got), tmp, "out", err)) ||
        (rc = fs_join(report, sizeof(report), got, "probe.json", err)) ||
        (rc = write_plan(p, plan, err)) || (rc = fs_write_atomic(prob, p->source, p->len, err)) ||
        (rc = fs_write_atomic(script, (const char *)kbprobe_py, sizeof(kbprobe_py), err))) {
        kiln_err_prefix(err, "preparing the probe");
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        if (fs_remove_tree(tmp, &ignore) != KILN_OK)
            kiln_err_clear(&ignore); /* a leftover temp dir; the error above matters */
        return rc;
    }
    static const char *const patterns[] = {"probe.json"};
    struct tar_rules rules = {.patterns = patterns,
                              .n_patterns = 1,
                              .max_file_bytes = KBP_REPORT_MAX,
                              .max_total_bytes = KBP_REPORT_MAX,
                              .max_files = 1};
    struct sandbox_input in[] = {{script, "kbprobe.py"}, {plan, "plan.json"}, {prob, "problem.py"}};
    char *argv[] = {"python3",        "/in/kbprobe.py",  "/in/plan.json",
                    "/in/problem.py", "/out/probe.json", NULL};
    struct sbexec_step step = {.what = "the KernelBench probe", .rules = &rules, .out_dir = got};
    step.spec.policy = "script";
    step.spec.image = "script";
    step.spec.inputs = in;
    step.spec.n_inputs = 3;
    step.spec.argv = argv;
    step.spec.stdin_fd = -1;
    step.spec.limits.timeout_ms = timeout_ms;
    step.gpu = -1;
    struct sbexec_result res;
    rc = sbexec_run(&step, &res, err);
    if (rc == KILN_OK && !res.exited_ok) {
        char d[600];
        sbexec_describe(&res, d, sizeof(d));
        rc = kiln_fail(err, res.sb.verdict == SANDBOX_TIMEOUT ? KILN_E_TIMEOUT : KILN_E_CHILD,
                       "the problem's probe in the script sandbox failed: %s", d);
    }
    sbexec_result_free(&res);
    char *text = NULL;
    size_t len = 0;
    if (rc == KILN_OK && (rc = fs_read_file(report, KBP_REPORT_MAX, &text, &len, err)) != KILN_OK)
        kiln_err_prefix(err, "the probe wrote no report");
    if (rc == KILN_OK)
        rc = kbprobe_parse(text, len, p, out, err);
    free(text);
    struct kiln_err rm;
    kiln_err_clear(&rm);
    if (fs_remove_tree(tmp, &rm) != KILN_OK)
        fprintf(stderr, "kiln import: warning: %s\n", rm.msg); /* the import still stands */
    return rc;
}
