/*
 * kiln_nvrtc.c - kiln-nvrtc, the compiler `kiln ... --compiler nvrtc` runs
 * in the `nvrtc` sandbox instead of nvcc: one candidate .cu to a cubin with
 * NVRTC, in one process (no driver, no cicc/ptxas processes, no temporary
 * files), several times faster than nvcc for a small kernel (bench/compile).
 *
 * usage: kiln-nvrtc -arch=sm_XX -o OUT.cubin SOURCE.cu [-DNAME=VALUE...]
 *
 * The options match what pipeline/compile.c gives nvcc: the arch, the
 * -D flags, ptxas -v (resource usage, parsed by kiln), and the toolkit's
 * include directory (nvcc searches it too). The compile log goes to stderr
 * as nvcc's diagnostics would; exit 0 with OUT written, 1 when the source
 * does not compile, 2 on a usage or I/O error. It is kiln's own trusted
 * code, but it runs sandboxed: the source it compiles is not.
 */

#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_SOURCE (4u << 20)
#define MAX_OPTS   80

#ifndef KILN_CUDA_INCLUDE
#define KILN_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

/*
 * NVRTC 13.0 dlopens libcuda.so.1 for its compile cache ("[nvrtc cache]";
 * CUDA_CACHE_DISABLE does not stop it) and calls cuInit, which on a host
 * with the driver tries mknodat and ioctls on /dev/nvidia*: the nvrtc policy
 * kills the compile for them (seen on the H200 machine). A compiler needs no
 * driver, and a cubin must not depend on which driver the host has, so
 * kiln-nvrtc defines dlopen itself (the executable's definition wins for
 * libnvrtc) and answers "not found" for libcuda, as on a host without one.
 */
void *dlopen(const char *file, int mode)
{
    if (file && strstr(file, "libcuda.so"))
        return NULL;
    void *(*real)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    return real ? real(file, mode) : NULL;
}

static char *read_source(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(MAX_SOURCE + 1);
    size_t n = buf ? fread(buf, 1, MAX_SOURCE + 1, f) : 0;
    int bad = !buf || ferror(f) || n > MAX_SOURCE || memchr(buf, '\0', n);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static int write_all(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int bad = fwrite(data, 1, len, f) != len;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

static void print_log(nvrtcProgram prog)
{
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1)
        return;
    char *log = malloc(n);
    if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
        fprintf(stderr, "%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
    free(log);
}

int main(int argc, char **argv)
{
    if (argc < 5 || strncmp(argv[1], "-arch=sm_", 9) != 0 || strcmp(argv[2], "-o") != 0 ||
        argc - 5 > MAX_OPTS - 4) {
        fprintf(stderr, "usage: kiln-nvrtc -arch=sm_XX -o OUT.cubin SOURCE.cu [-DNAME=VALUE...]\n");
        return 2;
    }
    const char *out = argv[3], *path = argv[4];
    char *src = read_source(path);
    if (!src) {
        fprintf(stderr, "kiln-nvrtc: cannot read %s (missing, over %u bytes, or holding NUL)\n",
                path, MAX_SOURCE);
        return 2;
    }
    const char *opts[MAX_OPTS];
    int n = 0;
    opts[n++] = argv[1];
    opts[n++] = "--ptxas-options=-v";
    struct stat st;
    char inc[512];
    if (stat(KILN_CUDA_INCLUDE, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(inc, sizeof(inc), "--include-path=%s", KILN_CUDA_INCLUDE);
        opts[n++] = inc;
    }
    for (int i = 5; i < argc; i++) {
        if (strncmp(argv[i], "-D", 2) != 0) {
            fprintf(stderr, "kiln-nvrtc: only -D options may follow the source, got '%s'\n",
                    argv[i]);
            free(src);
            return 2;
        }
        opts[n++] = argv[i];
    }
    const char *base = strrchr(path, '/');
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src, base ? base + 1 : path, 0, NULL, NULL);
    free(src);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "kiln-nvrtc: nvrtcCreateProgram: %s\n", nvrtcGetErrorString(r));
        return 2;
    }
    r = nvrtcCompileProgram(prog, n, opts);
    print_log(prog);
    int rc = 0;
    size_t len = 0;
    char *cubin = NULL;
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "kiln-nvrtc: error: compilation failed (%s)\n", nvrtcGetErrorString(r));
        rc = 1;
    } else if (nvrtcGetCUBINSize(prog, &len) != NVRTC_SUCCESS || len == 0 ||
               !(cubin = malloc(len)) || nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS) {
        fprintf(stderr, "kiln-nvrtc: error: no cubin (is %s a real architecture?)\n", argv[1]);
        rc = 2;
    } else if (write_all(out, cubin, len) != 0) {
        fprintf(stderr, "kiln-nvrtc: error: cannot write %s\n", out);
        rc = 2;
    }
    free(cubin);
    nvrtcDestroyProgram(&prog);
    return rc;
}
