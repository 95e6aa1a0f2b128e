/* image.c - JSON images: read-only host paths, env and cwd of a sandbox. */
#include "json_strict.h"
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "pyfind.h"
#include "sandbox.h"

static int valid_name(const char *s)
{
    if (!*s || strlen(s) > 31)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
            return 0;
    return 1;
}

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

/* Finds the CUDA toolkit root: $CUDA_HOME, then /usr/local/cuda. */
static int find_cuda(char *out, size_t cap)
{
    const char *cands[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
        char nvcc[PATH_MAX], real[PATH_MAX];
        if (!cands[i] || !*cands[i])
            continue;
        snprintf(nvcc, sizeof(nvcc), "%s/bin/nvcc", cands[i]);
        if (access(nvcc, X_OK) == 0 && realpath(cands[i], real)) {
            snprintf(out, cap, "%s", real);
            return 1;
        }
    }
    return 0;
}

static int find_nvidia_libs(char *out, size_t cap)
{
    const char *dirs[] = {"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                          "/usr/lib/aarch64-linux-gnu", "/usr/lib"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char lib[PATH_MAX];
        snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dirs[i]);
        if (access(lib, R_OK) == 0) {
            snprintf(out, cap, "%s", dirs[i]);
            return 1;
        }
    }
    return 0;
}

/* Nsight Compute's install directory holds the `ncu` launcher and target/. */
static int ncu_root(const char *dir)
{
    char exe[PATH_MAX + 8], target[PATH_MAX + 8];
    struct stat st;
    snprintf(exe, sizeof(exe), "%s/ncu", dir);
    snprintf(target, sizeof(target), "%s/target", dir);
    return access(exe, X_OK) == 0 && stat(target, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The newest `prefix`* directory under `dir` that is an ncu install. */
static int newest_ncu(const char *dir, const char *prefix, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix)) && strlen(e->d_name) < sizeof(best) &&
            (!best[0] || strverscmp(e->d_name, best) > 0)) {
            char full[PATH_MAX + 256];
            snprintf(full, sizeof(full), "%s/%s", dir, e->d_name);
            if (ncu_root(full))
                snprintf(best, sizeof(best), "%s", e->d_name);
        }
    closedir(d);
    if (!best[0])
        return 0;
    char full[PATH_MAX + 256], real[PATH_MAX];
    snprintf(full, sizeof(full), "%s/%s", dir, best);
    if (!realpath(full, real) || strlen(real) >= cap)
        return 0;
    snprintf(out, cap, "%s", real);
    return 1;
}

/* From an ncu executable (or its directory) to its install root: the file's
 * own directory, or, for the CUDA toolkit's bin/ncu wrapper, the newest
 * ../nsight-compute-* beside it. */
static int ncu_from(const char *path, char *root, size_t cap)
{
    char real[PATH_MAX], dir[PATH_MAX];
    struct stat st;
    if (!path || !*path || !realpath(path, real) || stat(real, &st) < 0)
        return 0;
    snprintf(dir, sizeof(dir), "%s", real);
    if (!S_ISDIR(st.st_mode)) {
        char *sl = strrchr(dir, '/');
        if (!sl)
            return 0;
        *sl = '\0';
    }
    if (ncu_root(dir) && strlen(dir) < cap) {
        snprintf(root, cap, "%s", dir);
        return 1;
    }
    char up[PATH_MAX + 4];
    snprintf(up, sizeof(up), "%s/..", dir);
    return newest_ncu(up, "nsight-compute-", root, cap);
}

int sandbox_find_ncu(char *root, size_t cap)
{
    const char *env = getenv("KILN_NCU");
    if (env && *env)
        return ncu_from(env, root, cap); /* an explicit choice is not second-guessed */
    const char *path = getenv("PATH");
    char buf[8192];
    snprintf(buf, sizeof(buf), "%s", path ? path : "");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char exe[PATH_MAX + 8];
        snprintf(exe, sizeof(exe), "%s/ncu", d);
        if (d[0] == '/' && access(exe, X_OK) == 0 && ncu_from(exe, root, cap))
            return 1;
    }
    char cuda[PATH_MAX];
    if (find_cuda(cuda, sizeof(cuda)) && newest_ncu(cuda, "nsight-compute-", root, cap))
        return 1;
    return newest_ncu("/opt/nvidia/nsight-compute", "", root, cap);
}

static enum kiln_rc resolve_python(struct pyfind *py, int *have, struct kiln_err *err)
{
    if (*have)
        return *have > 0 ? KILN_OK : KILN_E_NOTFOUND;
    struct kiln_err e2;
    kiln_err_clear(&e2);
    if (pyfind_numpy(py, &e2) != KILN_OK) {
        *have = -1;
        return kiln_fail(err, KILN_E_NOTFOUND, "no python3 with numpy: %s", e2.msg);
    }
    *have = 1;
    return KILN_OK;
}

static enum kiln_rc add_placeholder(struct sandbox_image *im, const char *ph, int optional,
                                    struct pyfind *py, int *have_py, struct kiln_err *err)
{
    char dir[PATH_MAX];
    if (!strcmp(ph, "@python_prefix@")) {
        struct kiln_err e2;
        kiln_err_clear(&e2);
        if (resolve_python(py, have_py, &e2) != KILN_OK) {
            if (!optional)
                return kiln_fail(err, e2.rc, "image %s: %s", im->name, e2.msg);
            note_skipped(im, ph, "no python3 with numpy found");
            return KILN_OK;
        }
        const char *ps[] = {py->prefix, py->base_prefix};
        for (size_t i = 0; i < 2; i++) {
            char real[PATH_MAX];
            if (!realpath(ps[i], real))
                return kiln_fail_errno(err, KILN_E_NOTFOUND, "image %s: python prefix %s", im->name,
                                       ps[i]);
            if (add_path(im, real, 0, err) != KILN_OK)
                return err->rc;
            /* A venv's prefix may be reached through a symlink: keep that
             * spelling working too. */
            if (strcmp(real, ps[i]) && !covered(im, ps[i]) &&
                add_path(im, ps[i], 0, err) != KILN_OK)
                return err->rc;
        }
        return KILN_OK;
    }
    int found;
    if (!strcmp(ph, "@cuda@"))
        found = find_cuda(dir, sizeof(dir));
    else if (!strcmp(ph, "@nvidia_libs@"))
        found = find_nvidia_libs(dir, sizeof(dir));
    else if (!strcmp(ph, "@ncu@"))
        found = sandbox_find_ncu(dir, sizeof(dir));
    else
        return kiln_fail(err, KILN_E_PARSE,
                         "image %s: unknown placeholder %s (known: @python_prefix@, @cuda@, "
                         "@nvidia_libs@, @ncu@)",
                         im->name, ph);
    if (!found) {
        if (!optional)
            return kiln_fail(err, KILN_E_NOTFOUND, "image %s: %s not found on this host", im->name,
                             ph);
        note_skipped(im, ph, "not found on this host");
        return KILN_OK;
    }
    return add_path(im, dir, optional, err);
}

static enum kiln_rc add_env(struct sandbox_image *im, const char *k, const char *v,
                            struct pyfind *py, int *have_py, struct kiln_err *err)
{
    if (!*k || strchr(k, '='))
        return kiln_fail(err, KILN_E_PARSE, "image %s: bad env name '%s'", im->name, k);
    if (im->n_env == IMAGE_MAX_ENV)
        return kiln_fail(err, KILN_E_LIMIT, "image %s: more than %d env entries", im->name,
                         IMAGE_MAX_ENV);
    char val[8192];
    const char *at = strstr(v, "@python_bin@");
    if (at) {
        char bin[PATH_MAX] = "/usr/bin";
        struct kiln_err e2;
        kiln_err_clear(&e2);
        if (resolve_python(py, have_py, &e2) == KILN_OK) {
            snprintf(bin, sizeof(bin), "%s", py->path);
            char *slash = strrchr(bin, '/');
            if (slash && slash != bin)
                *slash = '\0';
        }
        snprintf(val, sizeof(val), "%.*s%s%s", (int)(at - v), v, bin, at + 12);
    } else {
        snprintf(val, sizeof(val), "%s", v);
    }
    /* @cuda@ in a value (LD_LIBRARY_PATH of gpu-run, so the harness can
     * dlopen cuBLAS from the toolkit the image binds): the toolkit found on
     * this host, /usr/local/cuda when there is none. */
    char *cu = strstr(val, "@cuda@");
    if (cu) {
        char dir[PATH_MAX] = "/usr/local/cuda", rest[8192];
        (void)find_cuda(dir, sizeof(dir));
        snprintf(rest, sizeof(rest), "%s", cu + 6);
        snprintf(cu, sizeof(val) - (size_t)(cu - val), "%s%s", dir, rest);
    }
    size_t n = strlen(k) + strlen(val) + 2;
    char *s = malloc(n);
    if (!s)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    snprintf(s, n, "%s=%s", k, val);
    im->env[im->n_env++] = s;
    im->env[im->n_env] = NULL;
    return KILN_OK;
}

enum kiln_rc image_load(const char *data_dir, const char *name, struct sandbox_image *im,
                        struct kiln_err *err)
{
    memset(im, 0, sizeof(*im));
    if (!valid_name(name))
        return kiln_fail(err, KILN_E_USAGE,
                         "image name '%s' is invalid: use lowercase letters, digits and '-'", name);
    snprintf(im->name, sizeof(im->name), "%s", name);
    char path[4096];
    snprintf(path, sizeof(path), "%s/images/%s.json", data_dir, name);
    char *text = NULL;
    size_t len = 0;
    if (fs_read_file(path, IMAGE_MAX_BYTES, &text, &len, err) != KILN_OK) {
        kiln_err_prefix(err, "image %s (ls %s/images for the known ones)", name, data_dir);
        return err->rc;
    }
    const struct json_strict_rules rules = {.max_bytes = IMAGE_MAX_BYTES};
    json_t *doc;
    enum kiln_rc jrc = json_strict_parse(path, text, len, &rules, &doc, err);
    free(text);
    if (jrc)
        return jrc;
    static const char *const keys[] = {"summary", "binds", "env", "cwd", NULL};
    if ((jrc = json_strict_keys(doc, path, keys, NULL, err)) != KILN_OK) {
        json_decref(doc);
        return jrc;
    }
    struct pyfind *py = calloc(1, sizeof(*py));
    int have_py = 0;
    json_t *binds = json_object_get(doc, "binds");
    json_t *env = json_object_get(doc, "env");
    const char *cwd = json_string_value(json_object_get(doc, "cwd"));
    if (!py) {
        kiln_fail(err, KILN_E_NOMEM, "out of memory");
        goto fail;
    }
    if (!json_is_array(binds) || !json_is_object(env) || !cwd || cwd[0] != '/' ||
        strlen(cwd) >= sizeof(im->cwd)) {
        kiln_fail(err, KILN_E_PARSE,
                  "%s: needs \"binds\" (array), \"env\" (object) and \"cwd\" (absolute path)",
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
        enum kiln_rc rc = p[0] == '@' ? add_placeholder(im, p, optional, py, &have_py, err)
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
        if (add_env(im, k, json_string_value(v), py, &have_py, err) != KILN_OK)
            goto fail;
    }
    free(py);
    json_decref(doc);
    return KILN_OK;
fail:
    free(py);
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
