/* hostpaths.c - the CUDA toolkit, libcuda and Nsight Compute on this host
 * (moved here from the sandbox's image loader: the sandbox is told paths,
 * it does not look for them). */
#include "hostpaths.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Finds the CUDA toolkit root: $CUDA_HOME, then /usr/local/cuda. */
int hostpaths_cuda(char *out, size_t cap)
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

int hostpaths_nvidia_libs(char *out, size_t cap)
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

int hostpaths_ncu(char *root, size_t cap)
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
    if (hostpaths_cuda(cuda, sizeof(cuda)) && newest_ncu(cuda, "nsight-compute-", root, cap))
        return 1;
    return newest_ncu("/opt/nvidia/nsight-compute", "", root, cap);
}
