/* hostvars.c - placeholder values and GPU device nodes for sandboxed steps. */
#include "hostvars.h"

#include <stdio.h>
#include <string.h>

#include "gpuinfo.h"
#include "hostpaths.h"
#include "pyfind.h"
#include "sandbox.h"

static int uses(const char *names, const char *name)
{
    size_t l = strlen(name);
    for (const char *p = names; (p = strstr(p, name)) != NULL; p += l)
        if ((p == names || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
            return 1;
    return 0;
}

static void put(struct hostvars *hv, const char *name, const char *value)
{
    if (hv->n_vars == HOSTVARS_MAX)
        return;
    char *s = hv->store[hv->n_vars];
    snprintf(s, sizeof(hv->store[0]), "%s=%s", name, value);
    hv->vars[hv->n_vars++] = s;
    hv->vars[hv->n_vars] = NULL;
}

enum kiln_rc hostvars_for_image(const char *data_dir, const char *image, struct hostvars *hv,
                                struct kiln_err *err)
{
    hv->n_vars = 0;
    hv->vars[0] = NULL;
    char names[512], dir[PATH_MAX];
    struct kiln_err e1;
    kiln_err_clear(&e1);
    /* An image that cannot be read needs nothing from here: sandbox_run()
     * reports it, in its own order (the policy first). */
    if (sandbox_image_placeholders(data_dir, image, names, sizeof(names), &e1) != KILN_OK)
        return KILN_OK;
    if (uses(names, "python_prefix") || uses(names, "python_base_prefix") ||
        uses(names, "python_bin")) {
        struct pyfind py;
        struct kiln_err e2;
        kiln_err_clear(&e2);
        if (pyfind_numpy(&py, &e2) != KILN_OK)
            return kiln_fail(err, e2.rc, "image %s needs python3 with numpy: %s", image, e2.msg);
        put(hv, "python_prefix", py.prefix);
        put(hv, "python_base_prefix", py.base_prefix);
        snprintf(dir, sizeof(dir), "%s", py.path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
            *slash = '\0';
        put(hv, "python_bin", dir);
    }
    if (uses(names, "cuda") && hostpaths_cuda(dir, sizeof(dir)))
        put(hv, "cuda", dir);
    if (uses(names, "nvidia_libs") && hostpaths_nvidia_libs(dir, sizeof(dir)))
        put(hv, "nvidia_libs", dir);
    if (uses(names, "ncu") && hostpaths_ncu(dir, sizeof(dir)))
        put(hv, "ncu", dir);
    return KILN_OK;
}

enum kiln_rc hostvars_gpu(int gpu, struct hostvars *hv, struct kiln_err *err)
{
    hv->devices[0] = NULL;
    if (gpu < 0)
        return KILN_OK;
    struct gpuinfo gpus[GPUINFO_MAX];
    size_t n = 0;
    if (gpuinfo_list("/proc", gpus, &n, err) != KILN_OK)
        return err->rc;
    if ((size_t)gpu >= n)
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "sandbox: GPU %d does not exist (this host has %zu; see kiln doctor)", gpu,
                         n);
    snprintf(hv->dev_store[0], sizeof(hv->dev_store[0]), "nvidia%d", gpus[gpu].minor);
    snprintf(hv->dev_store[1], sizeof(hv->dev_store[1]), "nvidiactl");
    snprintf(hv->dev_store[2], sizeof(hv->dev_store[2]), "nvidia-uvm");
    for (int i = 0; i < 3; i++)
        hv->devices[i] = hv->dev_store[i];
    hv->devices[3] = NULL;
    return KILN_OK;
}
