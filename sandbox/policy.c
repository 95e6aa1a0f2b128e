/* policy.c - JSON seccomp policies compiled to BPF with libseccomp. */
#include "json_strict.h"
#include "policy.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <linux/filter.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "datadoc.h"
#include "fsutil.h"
#include "policy_disk.h"

#define POLICY_MAX_RULES 1024
#define POLICY_MAX_ARGS  6

static int texts_add(struct policy_texts *t, const char *name, const char *text, size_t len)
{
    if (!t)
        return 0;
    size_t nl = strlen(name) + 1, add = nl + sizeof(unsigned long long) + len;
    char *b = realloc(t->buf, t->len + add);
    if (!b)
        return -1;
    unsigned long long l = len;
    memcpy(b + t->len, name, nl);
    memcpy(b + t->len + nl, &l, sizeof(l));
    memcpy(b + t->len + nl + sizeof(l), text, len);
    t->buf = b;
    t->len += add;
    return 0;
}

static enum kiln_rc load_json_texts(const char *data_dir, const char *name, char *path, size_t cap,
                                    json_t **out, struct policy_texts *texts, struct kiln_err *err)
{
    static const char *const keys[] = {"summary", "fragment", "include",  "gpu",
                                       "dev_shm", "limits",   "syscalls", NULL};
    static const struct datadoc_kind policy = {"policy", "policies", POLICY_MAX_BYTES, keys};
    char *text = NULL;
    size_t len = 0;
    enum kiln_rc rc =
        datadoc_load(&policy, data_dir, name, path, cap, out, texts ? &text : NULL, &len, err);
    if (rc == KILN_OK && texts_add(texts, name, text, len) < 0) {
        json_decref(*out);
        *out = NULL;
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
    }
    free(text);
    return rc;
}

static enum kiln_rc parse_u64(const json_t *v, unsigned long long *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (unsigned long long)json_integer_value(v);
        return KILN_OK;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end = NULL;
        errno = 0;
        *out = strtoull(s, &end, 0);
        if (*s && !errno && end && !*end)
            return KILN_OK;
    }
    return KILN_E_PARSE;
}

static const struct {
    const char *key;
    size_t off;
    long long scale;
} limit_keys[] = {
    {"timeout_ms", offsetof(struct sandbox_limits, timeout_ms), 1},
    {"cpu_s", offsetof(struct sandbox_limits, cpu_s), 1},
    {"memory_mb", offsetof(struct sandbox_limits, memory_bytes), 1 << 20},
    {"pids", offsetof(struct sandbox_limits, pids), 1},
    {"fsize_mb", offsetof(struct sandbox_limits, fsize_bytes), 1 << 20},
    {"nofile", offsetof(struct sandbox_limits, nofile), 1},
    {"tmp_mb", offsetof(struct sandbox_limits, tmp_bytes), 1 << 20},
    {"out_mb", offsetof(struct sandbox_limits, out_bytes), 1 << 20},
    {"tar_mb", offsetof(struct sandbox_limits, tar_bytes), 1 << 20},
    {"output_kb", offsetof(struct sandbox_limits, output_bytes), 1 << 10},
};

static enum kiln_rc parse_limits(const char *path, json_t *lim, struct sandbox_limits *l,
                                 struct kiln_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(lim, key, v)
    {
        size_t i;
        for (i = 0; i < sizeof(limit_keys) / sizeof(limit_keys[0]); i++)
            if (!strcmp(key, limit_keys[i].key))
                break;
        if (i == sizeof(limit_keys) / sizeof(limit_keys[0]))
            return kiln_fail(err, KILN_E_PARSE, "%s: unknown limit '%s'", path, key);
        if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
            json_integer_value(v) > (1LL << 40))
            return kiln_fail(err, KILN_E_PARSE, "%s: limit '%s' must be a positive integer", path,
                             key);
        *(long long *)((char *)l + limit_keys[i].off) = json_integer_value(v) * limit_keys[i].scale;
    }
    for (size_t i = 0; i < sizeof(limit_keys) / sizeof(limit_keys[0]); i++)
        if (*(long long *)((char *)l + limit_keys[i].off) <= 0)
            return kiln_fail(err, KILN_E_PARSE, "%s: limit '%s' has no default: add it", path,
                             limit_keys[i].key);
    return KILN_OK;
}

/* Checks one rule's shape so policy_compile() only meets valid rules. */
static enum kiln_rc check_rule(const char *path, size_t idx, json_t *r, struct kiln_err *err)
{
    const char *name = json_string_value(json_object_get(r, "name"));
    const char *reason = json_string_value(json_object_get(r, "reason"));
    static const char *const rkeys[] = {"name", "reason", "args", "errno", NULL};
    static const char *const akeys[] = {"arg", "op", "value", "mask", NULL};
    if (!json_is_object(r) || !name || !reason || !*reason)
        return kiln_fail(err, KILN_E_PARSE,
                         "%s: syscalls[%zu] needs a \"name\" and a one-line \"reason\"", path, idx);
    char where[4200];
    snprintf(where, sizeof(where), "%s: syscalls[%zu] (%s)", path, idx, name);
    if (json_strict_keys(r, where, rkeys, NULL, err) != KILN_OK)
        return err->rc;
    if (seccomp_syscall_resolve_name(name) == __NR_SCMP_ERROR)
        return kiln_fail(err, KILN_E_PARSE, "%s: syscalls[%zu]: unknown syscall '%s'", path, idx,
                         name);
    json_t *args = json_object_get(r, "args");
    if (args && (!json_is_array(args) || json_array_size(args) > POLICY_MAX_ARGS))
        return kiln_fail(err, KILN_E_PARSE, "%s: %s: \"args\" must be an array of at most 6", path,
                         name);
    size_t i;
    json_t *a;
    json_array_foreach(args, i, a)
    {
        json_t *ix = json_object_get(a, "arg");
        const char *op = json_string_value(json_object_get(a, "op"));
        unsigned long long u;
        if (json_is_object(a) && json_strict_keys(a, where, akeys, NULL, err) != KILN_OK)
            return err->rc;
        if (!json_is_integer(ix) || json_integer_value(ix) < 0 || json_integer_value(ix) > 5 ||
            !op || parse_u64(json_object_get(a, "value"), &u) != KILN_OK)
            return kiln_fail(err, KILN_E_PARSE,
                             "%s: %s: args[%zu] needs \"arg\" 0-5, \"op\" and \"value\"", path,
                             name, i);
        if (strcmp(op, "eq") && strcmp(op, "ne") && strcmp(op, "masked_eq") && strcmp(op, "lt") &&
            strcmp(op, "le") && strcmp(op, "gt") && strcmp(op, "ge"))
            return kiln_fail(err, KILN_E_PARSE, "%s: %s: unknown op '%s'", path, name, op);
        if (!strcmp(op, "masked_eq") && parse_u64(json_object_get(a, "mask"), &u) != KILN_OK)
            return kiln_fail(err, KILN_E_PARSE, "%s: %s: masked_eq needs a \"mask\"", path, name);
    }
    const char *en = json_string_value(json_object_get(r, "errno"));
    if (json_object_get(r, "errno") && (!en || (strcmp(en, "ENOSYS") && strcmp(en, "EPERM"))))
        return kiln_fail(err, KILN_E_PARSE, "%s: %s: \"errno\" must be ENOSYS or EPERM", path,
                         name);
    return KILN_OK;
}

static enum kiln_rc add_rules(const char *path, json_t *doc, json_t *rules, struct kiln_err *err)
{
    json_t *sc = json_object_get(doc, "syscalls");
    if (!json_is_array(sc))
        return kiln_fail(err, KILN_E_PARSE, "%s: \"syscalls\" must be an array", path);
    size_t i;
    json_t *r;
    json_array_foreach(sc, i, r)
    {
        if (check_rule(path, i, r, err) != KILN_OK)
            return err->rc;
        if (json_array_size(rules) >= POLICY_MAX_RULES)
            return kiln_fail(err, KILN_E_LIMIT, "%s: more than %d rules", path, POLICY_MAX_RULES);
        json_array_append(rules, r);
    }
    return KILN_OK;
}

/* The policy's own settings: its name, gpu, dev_shm and limits. */
static enum kiln_rc read_settings(const char *path, const char *name, json_t *doc,
                                  struct sandbox_policy *p, struct kiln_err *err)
{
    if (json_is_true(json_object_get(doc, "fragment")))
        return kiln_fail(err, KILN_E_USAGE, "%s is a fragment for other policies, not a policy",
                         path);
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->allow_gpu = json_is_true(json_object_get(doc, "gpu"));
    p->dev_shm = json_is_true(json_object_get(doc, "dev_shm"));
    json_t *lim = json_object_get(doc, "limits");
    if (!json_is_object(lim))
        return kiln_fail(err, KILN_E_PARSE, "%s: \"limits\" must be an object", path);
    return parse_limits(path, lim, &p->limits, err);
}

/* include[i] of the policy at `path`: a fragment, whose rules join `rules`. */
static enum kiln_rc add_fragment(const char *data_dir, const char *path, size_t i, json_t *v,
                                 json_t *rules, struct policy_texts *texts, struct kiln_err *err)
{
    char ipath[4096];
    json_t *frag = NULL;
    const char *iname = json_string_value(v);
    if (!iname)
        return kiln_fail(err, KILN_E_PARSE, "%s: include[%zu] must be a string", path, i);
    if (load_json_texts(data_dir, iname, ipath, sizeof(ipath), &frag, texts, err) != KILN_OK)
        return err->rc;
    enum kiln_rc rc = KILN_OK;
    if (!json_is_true(json_object_get(frag, "fragment")))
        rc = kiln_fail(err, KILN_E_PARSE, "%s: included %s is not a fragment", path, ipath);
    if (rc == KILN_OK)
        rc = add_rules(ipath, frag, rules, err);
    json_decref(frag);
    return rc;
}

/* The fragments the policy includes, in order, before its own rules. */
static enum kiln_rc add_includes(const char *data_dir, const char *path, json_t *doc, json_t *rules,
                                 struct policy_texts *texts, struct kiln_err *err)
{
    json_t *inc = json_object_get(doc, "include");
    if (inc && (!json_is_array(inc) || json_array_size(inc) > POLICY_MAX_INCLUDES))
        return kiln_fail(err, KILN_E_PARSE, "%s: \"include\" must be an array of fragment names",
                         path);
    size_t i;
    json_t *v;
    json_array_foreach(inc, i, v)
    {
        if (add_fragment(data_dir, path, i, v, rules, texts, err) != KILN_OK)
            return err->rc;
    }
    return KILN_OK;
}

/* The program hands its seccomp listener to init after the filter is in
 * place (sendmsg, then close): a policy that refused either would leave
 * every refusal unreported. */
static enum kiln_rc check_listener_handoff(const char *path, json_t *rules, struct kiln_err *err)
{
    static const char *const needed[] = {"sendmsg", "close"};
    for (size_t n = 0; n < 2; n++) {
        int found = 0;
        size_t i;
        json_t *v;
        json_array_foreach(rules, i, v)
        {
            found |= !strcmp(json_string_value(json_object_get(v, "name")), needed[n]) &&
                     !json_object_get(v, "args") && !json_object_get(v, "errno");
        }
        if (!found)
            return kiln_fail(err, KILN_E_PARSE,
                             "%s: must allow %s without conditions (kiln passes the seccomp "
                             "listener to the sandbox's init with it): include \"base\" or add it",
                             path, needed[n]);
    }
    return KILN_OK;
}

/* Reads policy `name` and its fragments (their bytes into texts, when not
 * NULL) into p, rules in order: the fragments', then its own. */
static enum kiln_rc load_policy(const char *data_dir, const char *name, struct sandbox_policy *p,
                                struct policy_texts *texts, struct kiln_err *err)
{
    memset(p, 0, sizeof(*p));
    char path[4096];
    json_t *doc = NULL;
    json_t *rules = json_array();
    if (!rules)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    enum kiln_rc rc = load_json_texts(data_dir, name, path, sizeof(path), &doc, texts, err);
    if (rc == KILN_OK)
        rc = read_settings(path, name, doc, p, err);
    if (rc == KILN_OK)
        rc = add_includes(data_dir, path, doc, rules, texts, err);
    if (rc == KILN_OK)
        rc = add_rules(path, doc, rules, err);
    if (rc == KILN_OK)
        rc = check_listener_handoff(path, rules, err);
    json_decref(doc);
    if (rc != KILN_OK) {
        json_decref(rules);
        return err->rc;
    }
    p->rules = rules;
    return KILN_OK;
}

enum kiln_rc policy_load(const char *data_dir, const char *name, struct sandbox_policy *p,
                         struct kiln_err *err)
{
    return load_policy(data_dir, name, p, NULL, err);
}

static enum scmp_compare op_of(const char *op)
{
    if (!strcmp(op, "eq"))
        return SCMP_CMP_EQ;
    if (!strcmp(op, "ne"))
        return SCMP_CMP_NE;
    if (!strcmp(op, "lt"))
        return SCMP_CMP_LT;
    if (!strcmp(op, "le"))
        return SCMP_CMP_LE;
    if (!strcmp(op, "gt"))
        return SCMP_CMP_GT;
    if (!strcmp(op, "ge"))
        return SCMP_CMP_GE;
    return SCMP_CMP_MASKED_EQ;
}

static enum kiln_rc export_bpf(scmp_filter_ctx ctx, struct sandbox_policy *p, struct kiln_err *err)
{
    int fd = memfd_create("kiln-bpf", MFD_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "memfd_create for the seccomp program");
    int rc = seccomp_export_bpf(ctx, fd);
    off_t size = lseek(fd, 0, SEEK_CUR);
    if (rc < 0 || size <= 0 || size % sizeof(struct sock_filter) ||
        size > BPF_MAXINSNS * (off_t)sizeof(struct sock_filter)) {
        close(fd);
        return kiln_fail(err, KILN_E_SANDBOX,
                         "policy %s: libseccomp could not export the filter (%d, %lld bytes)",
                         p->name, rc, (long long)size);
    }
    p->bpf = malloc((size_t)size);
    if (!p->bpf) {
        close(fd);
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    }
    ssize_t got = pread(fd, p->bpf, (size_t)size, 0);
    close(fd);
    if (got != size)
        return kiln_fail(err, KILN_E_IO, "reading back the seccomp program failed");
    p->bpf_len = (size_t)size / sizeof(struct sock_filter);
    return KILN_OK;
}

enum kiln_rc policy_compile(struct sandbox_policy *p, struct kiln_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_NOTIFY);
    if (!ctx)
        return kiln_fail(err, KILN_E_SANDBOX,
                         "seccomp_init failed: libseccomp too old for user notification "
                         "(needs 2.5 and Linux 5.0)");
    /* A syscall made through another ABI (int 0x80, x32) kills outright. */
    seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    size_t i;
    json_t *r;
    json_array_foreach((json_t *)p->rules, i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        int nr = seccomp_syscall_resolve_name(name);
        const char *en = json_string_value(json_object_get(r, "errno"));
        uint32_t action = SCMP_ACT_ALLOW;
        if (en)
            action = SCMP_ACT_ERRNO(!strcmp(en, "ENOSYS") ? ENOSYS : EPERM);
        struct scmp_arg_cmp cmp[POLICY_MAX_ARGS];
        size_t n = 0, j;
        json_t *a;
        json_array_foreach(json_object_get(r, "args"), j, a)
        {
            unsigned long long value = 0, mask = 0;
            const char *op = json_string_value(json_object_get(a, "op"));
            (void)parse_u64(json_object_get(a, "value"), &value);
            cmp[n].arg = (unsigned)json_integer_value(json_object_get(a, "arg"));
            cmp[n].op = op_of(op);
            if (cmp[n].op == SCMP_CMP_MASKED_EQ) {
                (void)parse_u64(json_object_get(a, "mask"), &mask);
                cmp[n].datum_a = mask;
                cmp[n].datum_b = value;
            } else {
                cmp[n].datum_a = value;
                cmp[n].datum_b = 0;
            }
            n++;
        }
        int rc = seccomp_rule_add_array(ctx, action, nr, (unsigned)n, n ? cmp : NULL);
        if (rc < 0 && rc != -EEXIST) {
            seccomp_release(ctx);
            return kiln_fail(err, KILN_E_SANDBOX, "policy %s: rule for %s rejected: %s", p->name,
                             name, strerror(-rc));
        }
    }
    enum kiln_rc rc = export_bpf(ctx, p, err);
    seccomp_release(ctx);
    return rc;
}

void policy_free(struct sandbox_policy *p)
{
    json_decref((json_t *)p->rules);
    free(p->bpf);
    memset(p, 0, sizeof(*p));
}

/* Compiling a policy with libseccomp takes milliseconds and every sandbox
 * needs one: the finished program is remembered per process, keyed on the
 * exact bytes it was built from (the policy file and its fragments, re-read
 * and compared on every call) and the data directory, and across processes
 * in a record of the same (policy_disk.h). An edited policy is recompiled
 * on its next use. A memo, not state: a hit gives the same BPF and limits
 * a fresh compile would. */
#define POLICY_MEMO_SLOTS 8

struct policy_memo {
    char key[PATH_MAX + 40]; /* data_dir + '\0' + name */
    struct policy_texts texts;
    struct sandbox_policy pol; /* rules NULL; bpf owned */
    unsigned long long used;
};

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct policy_memo memo[POLICY_MEMO_SLOTS];
static unsigned long long memo_clock;

static enum kiln_rc copy_policy(struct sandbox_policy *dst, const struct sandbox_policy *src,
                                struct kiln_err *err)
{
    *dst = *src;
    dst->rules = NULL;
    dst->bpf = malloc(src->bpf_len * sizeof(struct sock_filter));
    if (!dst->bpf) {
        memset(dst, 0, sizeof(*dst));
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    }
    memcpy(dst->bpf, src->bpf, src->bpf_len * sizeof(struct sock_filter));
    return KILN_OK;
}

enum kiln_rc policy_load_compiled(const char *data_dir, const char *name, struct sandbox_policy *p,
                                  struct kiln_err *err)
{
    char key[sizeof(memo[0].key)];
    size_t dl = strlen(data_dir), nl = strlen(name);
    memset(p, 0, sizeof(*p));
    if (dl + nl + 2 > sizeof(key))
        return kiln_fail(err, KILN_E_USAGE, "data directory path too long: %s", data_dir);
    memcpy(key, data_dir, dl + 1);
    memcpy(key + dl + 1, name, nl + 1);
    pthread_mutex_lock(&memo_lock);
    for (size_t i = 0; i < POLICY_MEMO_SLOTS; i++) {
        struct policy_memo *m = &memo[i];
        if (m->texts.buf && !memcmp(m->key, key, dl + nl + 2) &&
            policy_texts_match_files(data_dir, &m->texts)) {
            m->used = ++memo_clock;
            enum kiln_rc rc = copy_policy(p, &m->pol, err);
            pthread_mutex_unlock(&memo_lock);
            return rc;
        }
    }
    pthread_mutex_unlock(&memo_lock);
    struct policy_texts texts = {NULL, 0};
    if (!policy_disk_found(data_dir, name, p, &texts)) {
        if (load_policy(data_dir, name, p, &texts, err) != KILN_OK ||
            policy_compile(p, err) != KILN_OK) {
            free(texts.buf);
            return err->rc;
        }
        json_decref((json_t *)p->rules); /* as a memo hit: the program is what counts */
        p->rules = NULL;
        policy_disk_store(&texts, p);
    }
    pthread_mutex_lock(&memo_lock);
    struct policy_memo *slot = &memo[0];
    for (size_t i = 0; i < POLICY_MEMO_SLOTS; i++) {
        if (!memcmp(memo[i].key, key, dl + nl + 2) || !memo[i].texts.buf) {
            slot = &memo[i];
            break;
        }
        if (memo[i].used < slot->used)
            slot = &memo[i];
    }
    struct kiln_err e;
    kiln_err_clear(&e);
    struct sandbox_policy copy;
    if (copy_policy(&copy, p, &e) == KILN_OK) {
        free(slot->texts.buf);
        policy_free(&slot->pol);
        memcpy(slot->key, key, dl + nl + 2);
        slot->texts = texts;
        slot->pol = copy;
        slot->used = ++memo_clock;
        texts.buf = NULL;
    }
    pthread_mutex_unlock(&memo_lock);
    free(texts.buf);
    return KILN_OK;
}
