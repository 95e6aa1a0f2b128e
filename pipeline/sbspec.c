/*
 * sbspec.c - see sbspec.h.
 */
#include "sbspec.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"

#define NLIMITS 10
static const char *const limit_names[NLIMITS] = {
    "timeout_ms", "cpu_s",     "memory_bytes", "pids",      "fsize_bytes",
    "nofile",     "tmp_bytes", "out_bytes",    "tar_bytes", "output_bytes"};

static long long *limit_field(struct sandbox_limits *l, int i)
{
    long long *f[NLIMITS] = {&l->timeout_ms,  &l->cpu_s,       &l->memory_bytes, &l->pids,
                             &l->fsize_bytes, &l->nofile,      &l->tmp_bytes,    &l->out_bytes,
                             &l->tar_bytes,   &l->output_bytes};
    return f[i];
}

static json_t *string_array(char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; a && v && v[i]; i++)
        if (json_array_append_new(a, json_string(v[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

enum kiln_rc sbspec_to_json(const struct sandbox_spec *spec, int gpu, char **out,
                            struct kiln_err *err)
{
    *out = NULL;
    json_t *doc = json_pack("{s:i, s:s, s:s?, s:b, s:s?}", "version", 1, "policy", spec->policy,
                            "image", spec->image, "gpu", gpu >= 0, "cwd", spec->cwd);
    json_t *in = json_array(), *lim = json_object();
    json_t *argv = string_array(spec->argv), *env = string_array(spec->env);
    bool ok = doc && in && lim && argv && env;
    for (size_t i = 0; ok && i < spec->n_inputs; i++)
        ok = json_array_append_new(in, json_pack("{s:s, s:s}", "name", spec->inputs[i].name, "path",
                                                 spec->inputs[i].host_path)) == 0;
    struct sandbox_limits l = spec->limits;
    for (int i = 0; ok && i < NLIMITS; i++)
        if (*limit_field(&l, i))
            ok = json_object_set_new(lim, limit_names[i], json_integer(*limit_field(&l, i))) == 0;
    if (ok)
        ok = !json_object_set(doc, "inputs", in) && !json_object_set(doc, "limits", lim) &&
             !json_object_set(doc, "argv", argv) && !json_object_set(doc, "env", env);
    *out = ok ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    json_decref(in);
    json_decref(lim);
    json_decref(argv);
    json_decref(env);
    return *out ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "spec.json: out of memory");
}

/* A string of 1..max bytes without control characters, copied. */
static char *take_text(json_t *v, size_t max)
{
    const char *s = json_string_value(v);
    if (!s || !*s || json_string_length(v) > max || strlen(s) != json_string_length(v))
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return NULL;
    return strdup(s);
}

static enum kiln_rc take_strings(json_t *a, const char *what, char **dst, struct kiln_err *err)
{
    if (!json_is_array(a) || json_array_size(a) > SBSPEC_MAX_ARGS)
        return kiln_fail(err, KILN_E_PARSE,
                         "spec.json: \"%s\" must be an array of at most %d strings", what,
                         SBSPEC_MAX_ARGS);
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!(dst[i] = take_text(json_array_get(a, i), 4096)))
            return kiln_fail(err, KILN_E_PARSE, "spec.json: %s[%zu] must be a printable string",
                             what, i);
    return KILN_OK;
}

/* version 1, gpu a boolean, limits an object, inputs an array of at most
 * SBSPEC_MAX_INPUTS; takes the policy. */
static enum kiln_rc take_header(json_t *root, struct sbspec_doc *doc, struct kiln_err *err)
{
    json_t *in = json_object_get(root, "inputs"), *lim = json_object_get(root, "limits");
    if (json_integer_value(json_object_get(root, "version")) != 1 ||
        !json_is_boolean(json_object_get(root, "gpu")) || !json_is_object(lim) ||
        !json_is_array(in) || json_array_size(in) > SBSPEC_MAX_INPUTS ||
        !(doc->policy = take_text(json_object_get(root, "policy"), 64)))
        return kiln_fail(err, KILN_E_PARSE,
                         "spec.json: needs version 1, a policy, gpu (boolean), limits (object) "
                         "and at most %d inputs",
                         SBSPEC_MAX_INPUTS);
    return KILN_OK;
}

/* The optional image and cwd (absent or null: none). */
static enum kiln_rc take_image_and_cwd(json_t *root, struct sbspec_doc *doc, struct kiln_err *err)
{
    json_t *image = json_object_get(root, "image"), *cwd = json_object_get(root, "cwd");
    if (image && !json_is_null(image) && !(doc->image = take_text(image, 64)))
        return kiln_fail(err, KILN_E_PARSE, "spec.json: \"image\" must be a name");
    if (cwd && !json_is_null(cwd) && !(doc->cwd = take_text(cwd, 4096)))
        return kiln_fail(err, KILN_E_PARSE, "spec.json: \"cwd\" must be a path");
    return KILN_OK;
}

static enum kiln_rc take_inputs(json_t *in, struct sbspec_doc *doc, struct kiln_err *err)
{
    static const char *const ikeys[] = {"name", "path", NULL};
    for (size_t i = 0; i < json_array_size(in); i++) {
        json_t *e = json_array_get(in, i);
        bool ok = json_is_object(e) &&
                  json_strict_keys(e, "spec.json: inputs[]", ikeys, ikeys, err) == KILN_OK;
        if (ok) {
            doc->input_names[i] = take_text(json_object_get(e, "name"), 255);
            doc->input_paths[i] = take_text(json_object_get(e, "path"), 4096);
            ok = doc->input_names[i] && doc->input_paths[i] && doc->input_paths[i][0] == '/';
        }
        if (!ok)
            return kiln_fail(err, KILN_E_PARSE,
                             "spec.json: every input needs a \"name\" and an absolute \"path\"");
        doc->inputs[i].name = doc->input_names[i];
        doc->inputs[i].host_path = doc->input_paths[i];
    }
    return KILN_OK;
}

/* Every limit named one of limit_names, an integer in 1..2^50. */
static enum kiln_rc take_limits(json_t *lim, struct sandbox_limits *l, struct kiln_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(lim, key, v)
    {
        int i = 0;
        while (i < NLIMITS && strcmp(limit_names[i], key) != 0)
            i++;
        if (i == NLIMITS || !json_is_integer(v) || json_integer_value(v) <= 0 ||
            json_integer_value(v) > (1LL << 50)) {
            char q[72];
            return kiln_fail(err, KILN_E_PARSE,
                             "spec.json: limits: \"%s\" is unknown or not in 1..2^50",
                             json_strict_quote(key, q, sizeof(q)));
        }
        *limit_field(l, i) = json_integer_value(v);
    }
    return KILN_OK;
}

/* argv (not empty) and the optional env. */
static enum kiln_rc take_command(json_t *root, struct sbspec_doc *doc, struct kiln_err *err)
{
    json_t *env = json_object_get(root, "env");
    enum kiln_rc rc;
    if ((rc = take_strings(json_object_get(root, "argv"), "argv", doc->argv, err)) ||
        (env && (rc = take_strings(env, "env", doc->env, err))))
        return rc;
    if (!doc->argv[0])
        return kiln_fail(err, KILN_E_PARSE, "spec.json: \"argv\" is empty");
    return KILN_OK;
}

/* Points doc->spec at what the steps took. */
static void link_spec(json_t *root, struct sbspec_doc *doc)
{
    doc->wants_gpu = json_is_true(json_object_get(root, "gpu"));
    doc->spec.policy = doc->policy;
    doc->spec.image = doc->image;
    doc->spec.cwd = doc->cwd;
    doc->spec.inputs = doc->inputs;
    doc->spec.n_inputs = json_array_size(json_object_get(root, "inputs"));
    doc->spec.argv = doc->argv;
    doc->spec.env = doc->env[0] ? doc->env : NULL;
    doc->spec.stdin_fd = -1;
    doc->spec.tar_fd = -1;
}

enum kiln_rc sbspec_from_json(const char *text, size_t len, struct sbspec_doc *doc,
                              struct kiln_err *err)
{
    static const char *const keys[] = {"version", "policy", "image", "gpu", "cwd",
                                       "inputs",  "limits", "argv",  "env", NULL};
    static const char *const req[] = {"version", "policy", "gpu", "inputs", "limits", "argv", NULL};
    static const struct json_strict_rules rules = {.max_bytes = SBSPEC_MAX_BYTES, .max_depth = 4};
    memset(doc, 0, sizeof(*doc));
    json_t *root;
    enum kiln_rc rc = json_strict_parse("spec.json", text, len, &rules, &root, err);
    if (rc)
        return rc;
    rc = json_strict_keys(root, "spec.json", keys, req, err);
    if (rc == KILN_OK)
        rc = take_header(root, doc, err);
    if (rc == KILN_OK)
        rc = take_image_and_cwd(root, doc, err);
    if (rc == KILN_OK)
        rc = take_inputs(json_object_get(root, "inputs"), doc, err);
    if (rc == KILN_OK)
        rc = take_limits(json_object_get(root, "limits"), &doc->spec.limits, err);
    if (rc == KILN_OK)
        rc = take_command(root, doc, err);
    if (rc == KILN_OK)
        link_spec(root, doc);
    json_decref(root);
    if (rc)
        sbspec_doc_free(doc);
    return rc;
}

void sbspec_doc_free(struct sbspec_doc *doc)
{
    free(doc->policy);
    free(doc->image);
    free(doc->cwd);
    for (int i = 0; i < SBSPEC_MAX_INPUTS; i++) {
        free(doc->input_paths[i]);
        free(doc->input_names[i]);
    }
    for (int i = 0; i < SBSPEC_MAX_ARGS; i++) {
        free(doc->argv[i]);
        free(doc->env[i]);
    }
    memset(doc, 0, sizeof(*doc));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80             ? 1
                 : (s[0] & 0xe0) == 0xc0 ? 2
                 : (s[0] & 0xf0) == 0xe0 ? 3
                 : (s[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (len == 0 || len > n || (len == 2 && s[0] < 0xc2))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* A copy of a program's output that JSON can carry: NUL and bytes that are
 * not UTF-8 become '?'. */
static char *json_safe_copy(const char *data, size_t len)
{
    char *c = malloc(len + 1);
    if (!c)
        return NULL;
    const unsigned char *s = (const unsigned char *)(data ? data : "");
    for (size_t i = 0; i < len;) {
        size_t k = s[i] ? utf8_seq(s + i, len - i) : 0;
        if (k == 0) {
            c[i++] = '?';
            continue;
        }
        memcpy(c + i, s + i, k);
        i += k;
    }
    c[len] = '\0';
    return c;
}

#define NPROPS 7
static const char *const prop_names[NPROPS] = {"sm_count",     "sm_clock_khz",  "cc_major",
                                               "cc_minor",     "mem_clock_khz", "bus_width_bits",
                                               "copy_mb_per_s"};
/* Plausible ranges only; gpupeak_compute checks the device makes sense. */
static const long long prop_min[NPROPS] = {1, 1, 1, 0, 1, 1, 0};
static const long long prop_max[NPROPS] = {100000,    100000000, 99,       99,
                                           100000000, 1000000,   100000000};

static int *prop_field(struct gpu_props *p, int i)
{
    int *f[NPROPS] = {&p->sm_count,      &p->sm_clock_khz,   &p->cc_major,     &p->cc_minor,
                      &p->mem_clock_khz, &p->bus_width_bits, &p->copy_mb_per_s};
    return f[i];
}

json_t *sbnode_device_json(const struct sbnode_device *d)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "node", d->node, "model", d->model, "uuid",
                          d->uuid, "driver", d->driver, "bus_id", d->bus_id);
    struct gpu_props p = d->props;
    for (int i = 0; o && d->has_props && i < NPROPS; i++)
        if (json_object_set_new(o, prop_names[i], json_integer(*prop_field(&p, i))) != 0) {
            json_decref(o);
            o = NULL;
        }
    return o;
}

enum kiln_rc sbresult_to_json(const struct sandbox_result *r, const char *where,
                              const struct sbnode_device *dev, char **out, struct kiln_err *err)
{
    *out = NULL;
    char *so = json_safe_copy(r->out.data, r->out.data ? r->out.len : 0);
    char *se = json_safe_copy(r->err.data, r->err.data ? r->err.len : 0);
    json_t *doc =
        !so || !se
            ? NULL
            : json_pack("{s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:f, s:f, s:I, s:f, s:b, "
                        "s:s, s:s, "
                        "s:s%, s:s%, s:I, s:I, s:I, s:I}",
                        "version", 1, "verdict", (int)r->verdict, "exit_code", r->exit_code,
                        "signal", r->signal, "syscall_nr", r->syscall_nr, "syscall_name",
                        r->syscall_name, "syscall_args", r->syscall_args, "policy", r->policy,
                        "limit", r->limit, "wall_s", r->wall_s, "cpu_s", r->cpu_s, "tar_bytes",
                        (json_int_t)r->tar_bytes, "tar_s", r->tar_s, "tar_truncated",
                        r->tar_truncated != 0, "memory_cap", r->memory_cap, "where",
                        where ? where : "", "stdout", so, r->out.data ? r->out.len : 0, "stderr",
                        se, r->err.data ? r->err.len : 0, "stdout_total", (json_int_t)r->out.total,
                        "stdout_dropped", (json_int_t)r->out.dropped, "stderr_total",
                        (json_int_t)r->err.total, "stderr_dropped", (json_int_t)r->err.dropped);
    free(so);
    free(se);
    if (doc && dev && dev->present) {
        json_t *d = sbnode_device_json(dev);
        if (!d || json_object_set_new(doc, "device", d) != 0) {
            json_decref(doc);
            doc = NULL;
        }
    }
    *out = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    return *out ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "result.json: out of memory");
}

static bool take_fixed(json_t *root, const char *key, char *dst, size_t cap)
{
    json_t *v = json_object_get(root, key);
    const char *s = json_string_value(v);
    if (!s || json_string_length(v) >= cap || strlen(s) != json_string_length(v))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    memcpy(dst, s, json_string_length(v) + 1);
    return true;
}

static bool take_stream(json_t *root, const char *key, const char *tkey, const char *dkey,
                        struct sandbox_stream *s)
{
    json_t *v = json_object_get(root, key), *t = json_object_get(root, tkey);
    json_t *d = json_object_get(root, dkey);
    if (!json_is_string(v) || !json_is_integer(t) || !json_is_integer(d) ||
        json_integer_value(t) < 0 || json_integer_value(d) < 0)
        return false;
    s->len = json_string_length(v);
    if (!(s->data = malloc(s->len + 1)))
        return false;
    memcpy(s->data, json_string_value(v), s->len);
    s->data[s->len] = '\0';
    s->total = (unsigned long long)json_integer_value(t);
    s->dropped = (unsigned long long)json_integer_value(d);
    return true;
}

/* result.json's "device" (absent: none). */
static enum kiln_rc take_device(json_t *root, struct sbnode_device *d, struct kiln_err *err)
{
    static const char *const keys[] = {
        "node",           "model",         "uuid",     "driver",   "bus_id",
        "sm_count",       "sm_clock_khz",  "cc_major", "cc_minor", "mem_clock_khz",
        "bus_width_bits", "copy_mb_per_s", NULL};
    static const char *const required[] = {"node", "model", "uuid", "driver", "bus_id", NULL};
    memset(d, 0, sizeof(*d));
    json_t *o = json_object_get(root, "device");
    if (!o)
        return KILN_OK;
    if (!json_is_object(o))
        return kiln_fail(err, KILN_E_REJECTED, "result.json: device is not an object");
    enum kiln_rc rc = json_strict_keys(o, "result.json device", keys, required, err);
    if (rc)
        return rc;
    if (!take_fixed(o, "node", d->node, sizeof(d->node)) ||
        !take_fixed(o, "model", d->model, sizeof(d->model)) ||
        !take_fixed(o, "uuid", d->uuid, sizeof(d->uuid)) ||
        !take_fixed(o, "driver", d->driver, sizeof(d->driver)) ||
        !take_fixed(o, "bus_id", d->bus_id, sizeof(d->bus_id)))
        return kiln_fail(err, KILN_E_REJECTED,
                         "result.json: device strings of the wrong type, too long or unprintable");
    int given = 0;
    for (int i = 0; i < NPROPS; i++) {
        json_t *v = json_object_get(o, prop_names[i]);
        if (!v)
            continue;
        given++;
        if (!json_is_integer(v) || json_integer_value(v) < prop_min[i] ||
            json_integer_value(v) > prop_max[i])
            return kiln_fail(err, KILN_E_REJECTED, "result.json: device %s out of range %lld..%lld",
                             prop_names[i], prop_min[i], prop_max[i]);
        *prop_field(&d->props, i) = (int)json_integer_value(v);
    }
    /* copy_mb_per_s came later (a measurement, 0 = unknown): records archived before it
     * carry the other six only and must still load. */
    bool has_copy = json_object_get(o, "copy_mb_per_s") != NULL;
    if (given != 0 && given != NPROPS && !(given == NPROPS - 1 && !has_copy))
        return kiln_fail(err, KILN_E_REJECTED,
                         "result.json: device properties must be all present or all absent");
    d->has_props = given >= NPROPS - 1;
    d->present = true;
    return KILN_OK;
}

enum kiln_rc sbresult_from_json(const char *text, size_t len, struct sandbox_result *r, char *where,
                                size_t where_cap, struct sbnode_device *dev, struct kiln_err *err)
{
    static const char *const keys[] = {
        "version",      "verdict",        "exit_code",    "signal",
        "syscall_nr",   "syscall_name",   "syscall_args", "policy",
        "limit",        "wall_s",         "cpu_s",        "tar_bytes",
        "tar_s",        "tar_truncated",  "memory_cap",   "where",
        "stdout",       "stderr",         "stdout_total", "stdout_dropped",
        "stderr_total", "stderr_dropped", "device",       NULL};
    static const char *const required[] = {
        "version",      "verdict",        "exit_code", "signal",        "syscall_nr",
        "syscall_name", "syscall_args",   "policy",    "limit",         "wall_s",
        "cpu_s",        "tar_bytes",      "tar_s",     "tar_truncated", "memory_cap",
        "where",        "stdout",         "stderr",    "stdout_total",  "stdout_dropped",
        "stderr_total", "stderr_dropped", NULL};
    static const struct json_strict_rules rules = {.max_bytes = SBRESULT_MAX_BYTES, .max_depth = 2};
    memset(dev, 0, sizeof(*dev));
    memset(r, 0, sizeof(*r));
    json_t *root;
    enum kiln_rc rc = json_strict_parse("result.json", text, len, &rules, &root, err);
    if (rc)
        return rc;
    if ((rc = json_strict_keys(root, "result.json", keys, required, err)) ||
        (rc = take_device(root, dev, err)))
        goto out;
    json_int_t verdict = json_integer_value(json_object_get(root, "verdict"));
    json_t *tb = json_object_get(root, "tar_bytes");
    bool ok = json_integer_value(json_object_get(root, "version")) == 1 && verdict >= 0 &&
              verdict <= SANDBOX_LIMIT && json_is_integer(json_object_get(root, "exit_code")) &&
              json_is_integer(json_object_get(root, "signal")) &&
              json_is_integer(json_object_get(root, "syscall_nr")) && json_is_integer(tb) &&
              json_integer_value(tb) >= 0 && json_is_number(json_object_get(root, "wall_s")) &&
              json_is_number(json_object_get(root, "cpu_s")) &&
              json_is_number(json_object_get(root, "tar_s")) &&
              json_is_boolean(json_object_get(root, "tar_truncated")) &&
              take_fixed(root, "syscall_name", r->syscall_name, sizeof(r->syscall_name)) &&
              take_fixed(root, "syscall_args", r->syscall_args, sizeof(r->syscall_args)) &&
              take_fixed(root, "policy", r->policy, sizeof(r->policy)) &&
              take_fixed(root, "limit", r->limit, sizeof(r->limit)) &&
              take_fixed(root, "memory_cap", r->memory_cap, sizeof(r->memory_cap)) &&
              take_fixed(root, "where", where, where_cap) &&
              take_stream(root, "stdout", "stdout_total", "stdout_dropped", &r->out) &&
              take_stream(root, "stderr", "stderr_total", "stderr_dropped", &r->err);
    if (!ok) {
        sandbox_result_free(r);
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "result.json: wrong types, values out of range or strings too long");
        goto out;
    }
    r->verdict = (enum sandbox_verdict)verdict;
    r->exit_code = (int)json_integer_value(json_object_get(root, "exit_code"));
    r->signal = (int)json_integer_value(json_object_get(root, "signal"));
    r->syscall_nr = (int)json_integer_value(json_object_get(root, "syscall_nr"));
    r->wall_s = json_number_value(json_object_get(root, "wall_s"));
    r->cpu_s = json_number_value(json_object_get(root, "cpu_s"));
    r->tar_s = json_number_value(json_object_get(root, "tar_s"));
    r->tar_bytes = (unsigned long long)json_integer_value(tb);
    r->tar_truncated = json_is_true(json_object_get(root, "tar_truncated"));
out:
    json_decref(root);
    return rc;
}
