/*
 * nvrtc_compile.c - compiles one .cu file to a cubin with NVRTC in-process,
 * REPS times, and prints each compile's time: bench/compile's NVRTC side.
 *
 * usage: nvrtc_compile [-n REPS] [-o OUT.cubin] [-a sm_90] FILE.cu [-DNAME=VALUE...]
 *
 * Each rep is nvrtcCreateProgram + nvrtcCompileProgram (-arch=sm_90, the
 * -D flags, --ptxas-options=-v as kiln asks nvcc) + nvrtcGetCUBIN +
 * nvrtcDestroyProgram. Rep 1 also pays NVRTC's lazy start-up (loading its
 * builtins library), so the script reports it apart from the rest. Prints
 * "rep I WALL_MS CPU_MS" per rep (CPU: the whole process, all threads) and
 * "cubin BYTES" once; exit 1 when a compile fails (its log on stderr).
 */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_OPTS 80

static double now_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            char *nb = cap < (64u << 20) ? realloc(buf, cap *= 2) : NULL;
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static int compile_once(const char *src, const char *name, const char **opts, int nopts,
                        size_t *cubin_len, const char *out)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "nvrtcCreateProgram: %s\n", nvrtcGetErrorString(r));
        return 1;
    }
    r = nvrtcCompileProgram(prog, nopts, opts);
    if (r != NVRTC_SUCCESS) {
        size_t n = 0;
        if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
            char *log = malloc(n);
            if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
                fprintf(stderr, "%s\n", log);
            free(log);
        }
        fprintf(stderr, "nvrtcCompileProgram: %s\n", nvrtcGetErrorString(r));
        nvrtcDestroyProgram(&prog);
        return 1;
    }
    int rc = 0;
    char *cubin = NULL;
    if (nvrtcGetCUBINSize(prog, cubin_len) != NVRTC_SUCCESS || *cubin_len == 0 ||
        !(cubin = malloc(*cubin_len)) || nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS) {
        fprintf(stderr, "nvrtcGetCUBIN failed (is -arch a real sm_XX?)\n");
        rc = 1;
    } else if (out) {
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(cubin, 1, *cubin_len, f) != *cubin_len) {
            fprintf(stderr, "writing %s failed\n", out);
            rc = 1;
        }
        if (f)
            fclose(f);
    }
    free(cubin);
    nvrtcDestroyProgram(&prog);
    return rc;
}

int main(int argc, char **argv)
{
    int reps = 1, i = 1;
    const char *out = NULL, *arch = "sm_90";
    for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] != 'D'; i += 2) {
        if (!strcmp(argv[i], "-n"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-o"))
            out = argv[i + 1];
        else if (!strcmp(argv[i], "-a"))
            arch = argv[i + 1];
        else
            break;
    }
    if (i >= argc || reps < 1 || reps > 10000 || argc - i > MAX_OPTS - 2) {
        fprintf(stderr, "usage: nvrtc_compile [-n REPS] [-o OUT.cubin] [-a sm_90] FILE.cu "
                        "[-DNAME=VALUE...]\n");
        return 2;
    }
    char *src = read_all(argv[i]);
    if (!src) {
        fprintf(stderr, "cannot read %s\n", argv[i]);
        return 2;
    }
    char archopt[64];
    snprintf(archopt, sizeof(archopt), "-arch=%s", arch);
    const char *opts[MAX_OPTS];
    int nopts = 0;
    opts[nopts++] = archopt;
    opts[nopts++] = "--ptxas-options=-v";
    for (int k = i + 1; k < argc; k++)
        opts[nopts++] = argv[k];
    size_t cubin_len = 0;
    for (int rep = 1; rep <= reps; rep++) {
        double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
        if (compile_once(src, "candidate.cu", opts, nopts, &cubin_len, out)) {
            free(src);
            return 1;
        }
        printf("rep %d %.3f %.3f\n", rep, now_ms(CLOCK_MONOTONIC) - t0,
               now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0);
    }
    printf("cubin %zu\n", cubin_len);
    free(src);
    return 0;
}
