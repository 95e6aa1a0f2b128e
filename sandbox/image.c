/* image.c - JSON images: read-only host paths, env and cwd of a sandbox. */
#include "json_strict.h"
#include "image.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datadoc.h"
#include "fsutil.h"
#include "sandbox.h"

static void note_skipped(struct sandbox_image *im, const char *what, const char *why)
{
    size_t l = strlen(im->skipped);
    snprintf(im->skipped + l, sizeof(im->skipped) - l, "%s%s (%s)", l ? "; " : "", what, why);
}

/* Is `path` already visible through an earlier bind (same or below it)? */
static int covered(const struct sandbox_image *im, const char *path)
{
    for (size_t i = 0; i < im->n_binds; i++) {
        const char *b = im->binds[i].path;
        size_t l = strlen(b);
        if (im->binds[i].link[0])
            continue;
        if (!strncmp(path, b, l) && (path[l] == '\0' || path[l] == '/' || l == 1))
            return 1;
    }
    return 0;
}

static enum kiln_rc add_path(struct sandbox_image *im, const char *path, int optional,
                             struct kiln_err *err)
{
    if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") ||
        (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/..")) || !strcmp(path, "/"))
        return kiln_fail(err, KILN_E_PARSE,
                         "image %s: bind '%s' must be an absolute path without . or .. and "
                         "not /",
                         im->name, path);
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (optional && (errno == ENOENT || errno == ENOTDIR)) {
            note_skipped(im, path, "absent");
            return KILN_OK;
        }
        return kiln_fail_errno(err, KILN_E_NOTFOUND, "image %s: required path %s", im->name, path);
    }
    if (covered(im, path))
        return KILN_OK;
    if (im->n_binds == IMAGE_MAX_BINDS)
        return kiln_fail(err, KILN_E_LIMIT, "image %s: more than %d binds", im->name,
                         IMAGE_MAX_BINDS);
    struct image_bind *b = &im->binds[im->n_binds];
    memset(b, 0, sizeof(*b));
    snprintf(b->path, sizeof(b->path), "%s", path);
    if (S_ISLNK(st.st_mode)) {
        /* /bin -> usr/bin on merged-/usr hosts: recreate the link inside. */
        ssize_t n = readlink(path, b->link, sizeof(b->link) - 1);
        if (n <= 0)
            return kiln_fail_errno(err, KILN_E_IO, "image %s: readlink %s", im->name, path);
        b->link[n] = '\0';
    } else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        return kiln_fail(err, KILN_E_PARSE, "image %s: %s is neither a file nor a directory",
                         im->name, path);
    }
    im->n_binds++;
    return KILN_OK;
}

/* A placeholder's name: "@cuda@" -> "cuda"; 0 when `s` is not one. */
static int placeholder_name(const char *s, char *name, size_t cap)
{
    size_t l = strlen(s);
    if (l < 3 || s[0] != '@' || s[l - 1] != '@' || l - 2 >= cap)
        return 0;
    for (size_t i = 1; i + 1 < l; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    memcpy(name, s + 1, l - 2);
    name[l - 2] = '\0';
    return 1;
}

/* The caller's value for `name` ("name=value" in vars), or NULL. */
static const char *var_value(char *const *vars, const char *name)
{
    size_t l = strlen(name);
    for (; vars && *vars; vars++)
        if (!strncmp(*vars, name, l) && (*vars)[l] == '=')
            return *vars + l + 1;
    return NULL;
}

static enum kiln_rc add_placeholder(struct sandbox_image *im, const char *ph, int optional,
                                    char *const *vars, struct kiln_err *err)
{
    char name[64];
    if (!placeholder_name(ph, name, sizeof(name)))
        return kiln_fail(err, KILN_E_PARSE,
                         "image %s: bind '%s' is neither an absolute path nor a placeholder "
                         "@name@ (lowercase letters, digits, '_')",
                         im->name, ph);
    const char *v = var_value(vars, name);
    if (!v || !*v) {
        if (!optional)
            return kiln_fail(err, KILN_E_NOTFOUND,
                             "image %s: %s not found on this host (the caller gave no value "
                             "for it; kiln doctor shows what each image resolves to)",
                             im->name, ph);
        note_skipped(im, ph, "not found on this host");
        return KILN_OK;
    }
    /* A value reached through a symlink (a venv's prefix, a toolkit's
     * /usr/local/cuda): bind the real directory, and keep the given
     * spelling working too. */
    char real[PATH_MAX];
    if (!realpath(v, real)) {
        if (optional && (errno == ENOENT || errno == ENOTDIR)) {
            note_skipped(im, v, "absent");
            return KILN_OK;
        }
        return kiln_fail_errno(err, KILN_E_NOTFOUND, "image %s: %s = %s", im->name, ph, v);
    }
    if (add_path(im, real, 0, err) != KILN_OK)
        return err->rc;
    if (strcmp(real, v) && !covered(im, v) && add_path(im, v, 0, err) != KILN_OK)
        return err->rc;
    return KILN_OK;
}

/* Replaces each @name@ in v: the caller's value, else the image's
 * "defaults"; an unknown one is an error naming it. */
static enum kiln_rc expand_value(struct sandbox_image *im, const char *key, const char *v,
                                 char *const *vars, json_t *defaults, char *out, size_t cap,
                                 struct kiln_err *err)
{
    size_t o = 0;
    while (*v) {
        const char *at = v[0] == '@' ? strchr(v + 1, '@') : NULL;
        char name[64];
        if (at && (size_t)(at - v) + 2 <= sizeof(name)) {
            char ph[66];
            snprintf(ph, sizeof(ph), "%.*s", (int)(at - v) + 1, v);
            if (placeholder_name(ph, name, sizeof(name))) {
                const char *val = var_value(vars, name);
                if (!val)
                    val = json_string_value(json_object_get(defaults, name));
                if (!val)
                    return kiln_fail(err, KILN_E_PARSE,
                                     "image %s: env %s uses %s, which the caller did not give "
                                     "and \"defaults\" does not hold",
                                     im->name, key, ph);
                size_t l = strlen(val);
                if (o + l >= cap)
                    return kiln_fail(err, KILN_E_LIMIT, "image %s: env %s is too long", im->name,
                                     key);
                memcpy(out + o, val, l);
                o += l;
                v = at + 1;
                continue;
            }
        }
        if (o + 1 >= cap)
            return kiln_fail(err, KILN_E_LIMIT, "image %s: env %s is too long", im->name, key);
        out[o++] = *v++;
    }
    out[o] = '\0';
    return KILN_OK;
}

static enum kiln_rc add_env(struct sandbox_image *im, const char *k, const char *v,
                            char *const *vars, json_t *defaults, struct kiln_err *err)
{
    if (!*k || strchr(k, '='))
        return kiln_fail(err, KILN_E_PARSE, "image %s: bad env name '%s'", im->name, k);
    if (im->n_env == IMAGE_MAX_ENV)
        return kiln_fail(err, KILN_E_LIMIT, "image %s: more than %d env entries", im->name,
                         IMAGE_MAX_ENV);
    char val[8192];
    if (expand_value(im, k, v, vars, defaults, val, sizeof(val), err) != KILN_OK)
        return err->rc;
    size_t n = strlen(k) + strlen(val) + 2;
    char *s = malloc(n);
    if (!s)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    snprintf(s, n, "%s=%s", k, val);
    im->env[im->n_env++] = s;
    im->env[im->n_env] = NULL;
    return KILN_OK;
}

/* Reads and parses <data_dir>/images/<name>.json into *doc. */
static enum kiln_rc load_doc(const char *data_dir, const char *name, char *path, size_t cap,
                             json_t **doc, struct kiln_err *err)
{
    static const char *const keys[] = {"summary", "binds", "env", "cwd", "defaults", NULL};
    static const struct datadoc_kind image = {"image", "images", IMAGE_MAX_BYTES, keys};
    return datadoc_load(&image, data_dir, name, path, cap, doc, NULL, NULL, err);
}

static void note_name(char *names, size_t cap, const char *name)
{
    size_t l = strlen(names), nl = strlen(name);
    /* Each name once. */
    for (const char *p = names; (p = strstr(p, name)) != NULL; p += nl)
        if ((p == names || p[-1] == ' ') && (p[nl] == ' ' || p[nl] == '\0'))
            return;
    snprintf(names + l, cap - l, "%s%s", l ? " " : "", name);
}

static void scan_placeholders(const char *s, char *names, size_t cap)
{
    for (const char *at = strchr(s, '@'); at; at = strchr(at + 1, '@')) {
        const char *end = strchr(at + 1, '@');
        char ph[66], name[64];
        if (!end || (size_t)(end - at) + 2 > sizeof(ph))
            continue;
        snprintf(ph, sizeof(ph), "%.*s", (int)(end - at) + 1, at);
        if (placeholder_name(ph, name, sizeof(name))) {
            note_name(names, cap, name);
            at = end;
        }
    }
}

enum kiln_rc image_placeholders(const char *data_dir, const char *name, char *names, size_t cap,
                                struct kiln_err *err)
{
    char path[4096];
    json_t *doc;
    names[0] = '\0';
    if (load_doc(data_dir, name, path, sizeof(path), &doc, err) != KILN_OK)
        return err->rc;
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(doc, "binds"), i, b)
    {
        const char *p = json_string_value(json_object_get(b, "path"));
        if (p)
            scan_placeholders(p, names, cap);
    }
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(doc, "env"), k, v)
    {
        if (json_is_string(v))
            scan_placeholders(json_string_value(v), names, cap);
    }
    json_decref(doc);
    return KILN_OK;
}

enum kiln_rc image_load(const char *data_dir, const char *name, char *const *vars,
                        struct sandbox_image *im, struct kiln_err *err)
{
    memset(im, 0, sizeof(*im));
    char path[4096];
    json_t *doc;
    if (load_doc(data_dir, name, path, sizeof(path), &doc, err) != KILN_OK)
        return err->rc;
    snprintf(im->name, sizeof(im->name), "%s", name);
    json_t *binds = json_object_get(doc, "binds");
    json_t *env = json_object_get(doc, "env");
    json_t *defaults = json_object_get(doc, "defaults");
    const char *cwd = json_string_value(json_object_get(doc, "cwd"));
    if (!json_is_array(binds) || !json_is_object(env) || !cwd || cwd[0] != '/' ||
        strlen(cwd) >= sizeof(im->cwd) || (defaults && !json_is_object(defaults))) {
        kiln_fail(err, KILN_E_PARSE,
                  "%s: needs \"binds\" (array), \"env\" (object) and \"cwd\" (absolute path); "
                  "\"defaults\", when present, is an object",
                  path);
        goto fail;
    }
    snprintf(im->cwd, sizeof(im->cwd), "%s", cwd);
    size_t i;
    json_t *b;
    json_array_foreach(binds, i, b)
    {
        const char *p = json_string_value(json_object_get(b, "path"));
        int optional = json_is_true(json_object_get(b, "optional"));
        static const char *const bkeys[] = {"path", "optional", NULL};
        if (!p) {
            kiln_fail(err, KILN_E_PARSE, "%s: binds[%zu] needs a \"path\"", path, i);
            goto fail;
        }
        if (json_strict_keys(b, path, bkeys, NULL, err) != KILN_OK)
            goto fail;
        enum kiln_rc rc = p[0] == '@' ? add_placeholder(im, p, optional, vars, err)
                                      : add_path(im, p, optional, err);
        if (rc != KILN_OK)
            goto fail;
    }
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v)
    {
        if (!json_is_string(v)) {
            kiln_fail(err, KILN_E_PARSE, "%s: env %s must be a string", path, k);
            goto fail;
        }
        if (add_env(im, k, json_string_value(v), vars, defaults, err) != KILN_OK)
            goto fail;
    }
    json_decref(doc);
    return KILN_OK;
fail:
    json_decref(doc);
    image_free(im);
    return err->rc;
}

void image_free(struct sandbox_image *im)
{
    for (size_t i = 0; i < im->n_env; i++)
        free(im->env[i]);
    memset(im, 0, sizeof(*im));
}
