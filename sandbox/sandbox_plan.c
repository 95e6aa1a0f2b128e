/*
 * sandbox_plan.c - sandbox_run()'s first step, in the parent before any
 * pipe or fork: the spec checked and resolved into a plan (the policy
 * compiled to BPF, the limits, the image, the inputs' real paths, the
 * device nodes, the environment).
 */
#include "sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image.h"
#include "policy.h"
#include "sandbox_impl.h"

static void apply_limits(struct sandbox_limits *out, const struct sandbox_limits *spec,
                         const struct sandbox_limits *def)
{
    const long long *s = (const long long *)spec, *d = (const long long *)def;
    long long *o = (long long *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(long long); i++)
        o[i] = s[i] > 0 ? s[i] : d[i];
}

static enum kiln_rc add_dev(struct plan *pl, const char *name, struct kiln_err *err)
{
    if (!*name || strlen(name) >= sizeof(pl->dev_names[0]) || strchr(name, '/') || name[0] == '.')
        return kiln_fail(err, KILN_E_USAGE,
                         "sandbox: device '%s' must be a name under /dev, like nvidia0", name);
    if (pl->n_devs == SANDBOX_MAX_DEVS)
        return kiln_fail(err, KILN_E_LIMIT, "sandbox: more than %d device nodes", SANDBOX_MAX_DEVS);
    char path[64];
    snprintf(path, sizeof(path), "/dev/%s", name);
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "device %s is missing on this host (is its driver loaded?)", path);
    snprintf(pl->dev_names[pl->n_devs++], sizeof(pl->dev_names[0]), "%s", name);
    return KILN_OK;
}

/* Names that hold credentials: the LLM's API key and anything like it. The
 * environment is built from scratch (image + caller), so only a caller or
 * an image could put one there; both are refused. */
static int env_is_secret(const char *entry)
{
    char name[256];
    size_t l = strcspn(entry, "=");
    if (l >= sizeof(name))
        l = sizeof(name) - 1;
    for (size_t i = 0; i < l; i++)
        name[i] = (char)(entry[i] >= 'a' && entry[i] <= 'z' ? entry[i] - 32 : entry[i]);
    name[l] = '\0';
    return (l >= 8 && !strcmp(name + l - 8, "_API_KEY")) || !strcmp(name, "API_KEY") ||
           strstr(name, "TOKEN") != NULL || strstr(name, "SECRET") != NULL ||
           strstr(name, "PASSWORD") != NULL;
}

/* The spec's own sanity: a program, a policy, and not too many inputs. */
static enum kiln_rc check_spec(const struct sandbox_spec *spec, struct kiln_err *err)
{
    if (!spec->argv || !spec->argv[0] || !spec->argv[0][0])
        return kiln_fail(err, KILN_E_USAGE, "sandbox: no program to run");
    if (!spec->policy)
        return kiln_fail(err, KILN_E_USAGE, "sandbox: no policy named");
    if (spec->n_inputs > SANDBOX_MAX_INPUTS)
        return kiln_fail(err, KILN_E_LIMIT, "sandbox: more than %d inputs", SANDBOX_MAX_INPUTS);
    return KILN_OK;
}

/* The set-up mounts a scratch tmpfs on the host's /tmp (the new root is
 * built there), which hides what was below it: say so now, not as a
 * puzzling ENOENT from inside. (Inputs under /tmp are held open first.) */
static enum kiln_rc check_binds_outside_tmp(const struct plan *pl, struct kiln_err *err)
{
    for (size_t i = 0; i < pl->img->n_binds; i++) {
        const char *b = pl->img->binds[i].path;
        if (!pl->img->binds[i].link[0] && (!strcmp(b, "/tmp") || !strncmp(b, "/tmp/", 5)))
            return kiln_fail(err, KILN_E_UNSUPPORTED,
                             "image %s: cannot bind %s: the sandbox's set-up hides the host's "
                             "/tmp; move it (a python3 venv, a toolkit) out of /tmp",
                             pl->img->name, b);
    }
    return KILN_OK;
}

/* Input i: a unique one-component name, and a host path resolved into
 * pl->in_src[i] that is a regular file or a directory. */
static enum kiln_rc resolve_input(struct plan *pl, const struct sandbox_spec *spec, size_t i,
                                  struct kiln_err *err)
{
    const char *n = spec->inputs[i].name;
    if (!n || !*n || strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, "..") || strlen(n) > 255)
        return kiln_fail(err, KILN_E_USAGE, "sandbox: input name '%s' must be one path component",
                         n ? n : "(null)");
    for (size_t j = 0; j < i; j++)
        if (!strcmp(spec->inputs[j].name, n))
            return kiln_fail(err, KILN_E_USAGE, "sandbox: input /in/%s given twice", n);
    struct stat st;
    if (!spec->inputs[i].host_path || !realpath(spec->inputs[i].host_path, pl->in_src[i]))
        return kiln_fail_errno(err, KILN_E_NOTFOUND, "sandbox: input %s",
                               spec->inputs[i].host_path ? spec->inputs[i].host_path : "(null)");
    if (stat(pl->in_src[i], &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
        return kiln_fail(err, KILN_E_USAGE,
                         "sandbox: input %s must be a regular file or a directory", pl->in_src[i]);
    return KILN_OK;
}

/* The basic device nodes, then the caller's, which only a GPU policy grants. */
static enum kiln_rc add_devices(struct plan *pl, const struct sandbox_spec *spec,
                                struct kiln_err *err)
{
    static const char *const basic[] = {"null", "zero", "full", "random", "urandom"};
    for (size_t i = 0; i < 5; i++)
        if (add_dev(pl, basic[i], err) != KILN_OK)
            return err->rc;
    if (spec->devices && spec->devices[0] && !pl->pol.allow_gpu)
        return kiln_fail(err, KILN_E_USAGE,
                         "sandbox: policy %s grants no GPU or other device (it has no \"gpu\": "
                         "true): use the gpu-run policy",
                         pl->pol.name);
    for (size_t i = 0; spec->devices && spec->devices[i]; i++)
        if (add_dev(pl, spec->devices[i], err) != KILN_OK)
            return err->rc;
    return KILN_OK;
}

/* The environment from scratch: the image's, then the caller's; no entry
 * that looks like a secret. pl->envp points into both, owning only itself. */
static enum kiln_rc build_env(struct plan *pl, const struct sandbox_spec *spec,
                              struct kiln_err *err)
{
    size_t n_extra = 0;
    while (spec->env && spec->env[n_extra])
        n_extra++;
    pl->envp = calloc(pl->img->n_env + n_extra + 1, sizeof(char *));
    if (!pl->envp)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < pl->img->n_env; i++) {
        const char *eq = strchr(pl->img->env[i], '=');
        int overridden = 0;
        for (size_t j = 0; j < n_extra; j++)
            if (!strncmp(spec->env[j], pl->img->env[i], (size_t)(eq - pl->img->env[i]) + 1))
                overridden = 1;
        if (!overridden)
            pl->envp[k++] = pl->img->env[i];
    }
    for (size_t j = 0; j < n_extra; j++) {
        if (!strchr(spec->env[j], '=') || spec->env[j][0] == '=')
            return kiln_fail(err, KILN_E_USAGE, "sandbox: env entry '%s' is not NAME=VALUE",
                             spec->env[j]);
        pl->envp[k++] = spec->env[j];
    }
    for (size_t i = 0; i < k; i++)
        if (env_is_secret(pl->envp[i]))
            return kiln_fail(err, KILN_E_USAGE,
                             "sandbox: env %.*s looks like a secret (an API key or token): "
                             "kiln never hands one to untrusted code; leave it out",
                             (int)strcspn(pl->envp[i], "="), pl->envp[i]);
    return KILN_OK;
}

enum kiln_rc sb_prepare(struct plan *pl, const struct sandbox_spec *spec, struct kiln_err *err)
{
    const char *dd = spec->data_dir ? spec->data_dir : sandbox_data_dir();
    enum kiln_rc rc = check_spec(spec, err);
    if (rc != KILN_OK)
        return rc;
    if (policy_load_compiled(dd, spec->policy, &pl->pol, err) != KILN_OK)
        return err->rc;
    apply_limits(&pl->lim, &spec->limits, &pl->pol.limits);
    pl->img = malloc(sizeof(*pl->img));
    if (!pl->img)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    if (image_load(dd, spec->image ? spec->image : spec->policy, spec->vars, pl->img, err) !=
        KILN_OK) {
        free(pl->img);
        pl->img = NULL;
        return err->rc;
    }
    if ((rc = check_binds_outside_tmp(pl, err)) != KILN_OK)
        return rc;
    for (size_t i = 0; i < spec->n_inputs; i++)
        if ((rc = resolve_input(pl, spec, i, err)) != KILN_OK)
            return rc;
    if ((rc = add_devices(pl, spec, err)) || (rc = build_env(pl, spec, err)))
        return rc;
    return KILN_OK;
}

void sb_plan_free(struct plan *pl)
{
    uidslot_release(&pl->slot);
    free(pl->envp);
    if (pl->img) {
        image_free(pl->img);
        free(pl->img);
    }
    policy_free(&pl->pol);
}
