#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsutil.h"
#include "sbexec.h"
#include "digest.h"
#include "gpuarch.h"
#include "strbuf.h"

void compile_parse_ptxas(const char *text, struct compile_result *res)
{
    struct compile_kernel_usage *k = NULL;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)(len < 511 ? len : 511), p);
        const char *s;
        if ((s = strstr(line, "Compiling entry function '")) ||
            (s = strstr(line, "Function properties for "))) {
            const char *name = strchr(s, '\'') ? strchr(s, '\'') + 1 : s + 24;
            char n[64];
            snprintf(n, sizeof(n), "%.*s", (int)strcspn(name, "'\n"), name);
            k = NULL;
            for (size_t i = 0; i < res->nkernels; i++)
                if (strcmp(res->kernels[i].name, n) == 0)
                    k = &res->kernels[i];
            if (!k && res->nkernels < COMPILE_MAX_KERNELS) {
                k = &res->kernels[res->nkernels++];
                memset(k, 0, sizeof(*k));
                snprintf(k->name, sizeof(k->name), "%s", n);
            }
        } else if (k && (s = strstr(line, "bytes stack frame"))) {
            /* nvcc indents the line; NVRTC's log prefixes it "ptxas   .". */
            const char *q = line;
            while (*q && (*q < '0' || *q > '9'))
                q++;
            sscanf(q, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                   &k->stack_bytes, &k->spill_stores, &k->spill_loads);
        } else if (k && (s = strstr(line, "Used "))) {
            sscanf(s, "Used %d registers", &k->registers);
            const char *sm = strstr(s, "bytes smem");
            if (sm) {
                const char *q = sm;
                while (q > s && q[-1] == ' ')
                    q--;
                while (q > s && q[-1] >= '0' && q[-1] <= '9')
                    q--;
                k->smem_bytes = atoi(q);
            }
        }
        p = nl ? nl + 1 : NULL;
    }
}

bool compile_tool_from_name(const char *name, enum compile_tool *out)
{
    if (name && strcmp(name, "nvcc") == 0)
        *out = COMPILE_NVCC;
    else if (name && strcmp(name, "nvrtc") == 0)
        *out = COMPILE_NVRTC;
    else
        return false;
    return true;
}

const char *compile_tool_name(enum compile_tool t)
{
    return t == COMPILE_NVRTC ? "nvrtc" : "nvcc";
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum kiln_rc compile_sandboxed(const struct compile_request *req, struct compile_result *res,
                                      struct kiln_err *err);

void compile_request_hash(const struct compile_request *req, char hex[65])
{
    char def[GPUARCH_NAME_MAX], target[GPUARCH_NAME_MAX];
    struct sha256_ctx c;
    sha256_init(&c);
    /* Each field with its length first, so no two requests hash alike; the
     * compiler's target, not the recorded one (sm_90 compiles as sm_90a). */
    char head[96];
    int n =
        snprintf(head, sizeof(head), "kiln-compile-1 %d %s %zu%s", (int)req->backend,
                 gpuarch_compile_target(gpuarch_or_default(req->arch, def), target), req->ndefines,
                 req->backend == KILN_BACKEND_CUDA && req->tool == COMPILE_NVRTC ? " nvrtc" : "");
    sha256_update(&c, head, (size_t)n + 1);
    const char *parts[COMPILE_MAX_DEFINES + 2];
    size_t np = 0, lens[COMPILE_MAX_DEFINES + 2];
    for (size_t i = 0; i < req->ndefines && i < COMPILE_MAX_DEFINES; i++, np++)
        lens[np] = strlen(parts[np] = req->defines[i]);
    parts[np] = req->source;
    lens[np++] = req->len;
    parts[np] = req->trampoline ? req->trampoline : "";
    lens[np] = strlen(parts[np]);
    np++;
    for (size_t i = 0; i < np; i++) {
        uint64_t l = lens[i];
        sha256_update(&c, &l, sizeof(l));
        sha256_update(&c, parts[i], lens[i]);
    }
    uint8_t d[SHA256_DIGEST_LEN];
    sha256_final(&c, d);
    sha256_hex(d, hex);
}

/* The compiler's command line before the -D flags (argv needs room for
 * 11): the one definition of what a candidate is compiled with, which
 * compile_flags_describe reports. */
static size_t compiler_head(bool cuda, bool nvrtc, const char *arch, const char **argv)
{
    static const char *const nvrtc_head[] = {"/in/kiln-nvrtc", "ARCH", "-o", "/out/candidate.cubin",
                                             "/in/candidate.cu"};
    static const char *const nvcc_head[] = {"nvcc",
                                            "-cubin",
                                            "ARCH",
                                            "-O3",
                                            "-Xptxas",
                                            "-v",
                                            "-o",
                                            "/out/candidate.cubin",
                                            "/in/candidate.cu"};
    static const char *const cc_head[] = {"cc",
                                          "-std=c11",
                                          "-O2",
                                          "-fPIC",
                                          "-shared",
                                          "-Wall",
                                          "-o",
                                          "/out/candidate.so",
                                          "/in/candidate.c",
                                          "/in/trampoline.c",
                                          "-lm"};
    const char *const *h = nvrtc ? nvrtc_head : cuda ? nvcc_head : cc_head;
    size_t k = nvrtc  ? sizeof(nvrtc_head) / sizeof(*nvrtc_head)
               : cuda ? sizeof(nvcc_head) / sizeof(*nvcc_head)
                      : sizeof(cc_head) / sizeof(*cc_head);
    for (size_t i = 0; i < k; i++)
        argv[i] = strcmp(h[i], "ARCH") ? h[i] : arch;
    return k;
}

void compile_flags_describe(enum kiln_backend backend, enum compile_tool tool, const char *arch,
                            char *out, size_t cap)
{
    char a[48], def[GPUARCH_NAME_MAX], target[GPUARCH_NAME_MAX];
    snprintf(a, sizeof(a), "-arch=%s",
             gpuarch_compile_target(gpuarch_or_default(arch, def), target));
    bool cuda = backend == KILN_BACKEND_CUDA;
    const char *argv[16];
    size_t n = compiler_head(cuda, cuda && tool == COMPILE_NVRTC, a, argv), len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++) {
        /* The sandbox's paths and the output option say nothing of the code. */
        if (!strcmp(argv[i], "-o") || !strncmp(argv[i], "/out/", 5) ||
            (i > 0 && !strncmp(argv[i], "/in/", 4)))
            continue;
        const char *w = !strcmp(argv[i], "/in/kiln-nvrtc") ? "nvrtc" : argv[i];
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? " " : "", w);
    }
}

enum kiln_rc compile_candidate(const struct compile_request *req, struct compile_result *res,
                               struct kiln_err *err)
{
    double started = wall_now();
    enum kiln_rc rc = compile_sandboxed(req, res, err);
    res->started = started;
    res->finished = wall_now();
    compile_request_hash(req, res->input_sha256);
    return rc;
}

/* Where the compile step works: the sources it is given, the folder it
 * writes to. */
struct compile_paths {
    char src_dir[PATH_MAX], out_dir[PATH_MAX], src[PATH_MAX], tramp[PATH_MAX];
};

/* A fresh out/, and the candidate (and for cpu the trampoline) in src/. */
static enum kiln_rc write_sources(const struct compile_request *req, bool cuda,
                                  struct compile_paths *p, struct kiln_err *err)
{
    enum kiln_rc rc;
    if ((rc = fs_join(p->src_dir, sizeof(p->src_dir), req->work_dir, "src", err)) ||
        (rc = fs_join(p->out_dir, sizeof(p->out_dir), req->work_dir, "out", err)) ||
        (rc = fs_remove_tree(p->out_dir, err)) || (rc = fs_mkdirs(p->src_dir, err)) ||
        (rc = fs_join(p->src, sizeof(p->src), p->src_dir, cuda ? "candidate.cu" : "candidate.c",
                      err)) ||
        (rc = fs_join(p->tramp, sizeof(p->tramp), p->src_dir, "trampoline.c", err)) ||
        (rc = fs_write_atomic(p->src, req->source, req->len, err)))
        return rc;
    if (!cuda && (!req->trampoline ||
                  (rc = fs_write_atomic(p->tramp, req->trampoline, strlen(req->trampoline), err))))
        return rc ? rc : kiln_fail(err, KILN_E_INTERNAL, "cpu compile without a trampoline");
    return KILN_OK;
}

/* The compiler's command line, NULL-terminated; argv points into arch. */
static enum kiln_rc compiler_argv(const struct compile_request *req, char *arch, size_t arch_cap,
                                  const char **argv, struct kiln_err *err)
{
    bool cuda = req->backend == KILN_BACKEND_CUDA;
    if (req->ndefines > COMPILE_MAX_DEFINES)
        return kiln_fail(err, KILN_E_LIMIT, "%zu defines, at most %d", req->ndefines,
                         COMPILE_MAX_DEFINES);
    char def[GPUARCH_NAME_MAX], target[GPUARCH_NAME_MAX];
    snprintf(arch, arch_cap, "-arch=%s",
             gpuarch_compile_target(gpuarch_or_default(req->arch, def), target));
    bool nvrtc = cuda && req->tool == COMPILE_NVRTC;
    if (nvrtc && !req->nvrtc)
        return kiln_fail(err, KILN_E_INTERNAL, "--compiler nvrtc without the kiln-nvrtc path");
    size_t n = compiler_head(cuda, nvrtc, arch, argv);
    for (size_t i = 0; i < req->ndefines; i++)
        argv[n++] = req->defines[i];
    argv[n] = NULL;
    return KILN_OK;
}

/* Runs the compiler in the sandbox; out/ may take back only the artifact. */
static enum kiln_rc run_compiler(const struct compile_request *req, const struct compile_paths *p,
                                 const char **argv, const char *artifact, struct sbexec_result *sr,
                                 struct kiln_err *err)
{
    bool cuda = req->backend == KILN_BACKEND_CUDA;
    bool nvrtc = cuda && req->tool == COMPILE_NVRTC;
    const char *patterns[] = {artifact};
    struct tar_rules rules = {.patterns = patterns,
                              .n_patterns = 1,
                              .max_file_bytes = 64u << 20,
                              .max_total_bytes = 64u << 20,
                              .max_files = 1};
    struct sandbox_input in[] = {
        {p->src, cuda ? "candidate.cu" : "candidate.c"},
        {nvrtc ? req->nvrtc : p->tramp, nvrtc ? "kiln-nvrtc" : "trampoline.c"}};
    struct sbexec_step step = {.what = "the compiler", .rules = &rules, .out_dir = p->out_dir};
    step.spec.policy = nvrtc ? "nvrtc" : "compile";
    step.spec.image = "compile";
    step.spec.inputs = in;
    step.spec.n_inputs = cuda && !nvrtc ? 1 : 2;
    step.gpu = -1;
    step.spec.argv = (char *const *)argv;
    step.spec.stdin_fd = -1;
    step.spec.limits.timeout_ms = req->timeout_ms;
    return sbexec_run(&step, sr, err);
}

/* What the compiler said, in its order, and whether it made the artifact. */
static enum kiln_rc take_diagnostics(const struct compile_request *req,
                                     const struct sbexec_result *sr, struct compile_result *res,
                                     struct kiln_err *err)
{
    struct strbuf all;
    strbuf_init(&all);
    strbuf_puts(&all, sr->sb.err.data ? sr->sb.err.data : "");
    strbuf_puts(&all, sr->sb.out.data ? sr->sb.out.data : "");
    if (all.data)
        compile_parse_ptxas(all.data, res);
    char *ordered = compile_cap_diagnostics(all.data ? all.data : "");
    res->diagnostics =
        ordered ? compile_diagnostics_for_user(ordered, req->backend, req->source_name) : NULL;
    free(ordered);
    strbuf_free(&all);
    res->seconds = sr->sb.wall_s;
    res->ok = sr->exited_ok && sr->files.n == 1;
    if (!res->diagnostics)
        return kiln_fail(err, KILN_E_NOMEM, "compiler diagnostics");
    if (!sr->exited_ok && sr->sb.verdict != SANDBOX_EXITED) {
        /* Killed (timeout, limit, refused syscall): say so first. */
        char *d = malloc(strlen(res->diagnostics) + 300);
        if (d) {
            sprintf(d, "compiler stopped: %s\n%s", sr->line, res->diagnostics);
            free(res->diagnostics);
            res->diagnostics = d;
        }
    }
    return KILN_OK;
}

static enum kiln_rc compile_sandboxed(const struct compile_request *req, struct compile_result *res,
                                      struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    bool cuda = req->backend == KILN_BACKEND_CUDA;
    struct compile_paths p;
    char arch[48];
    const char *argv[24 + COMPILE_MAX_DEFINES];
    enum kiln_rc rc;
    if ((rc = write_sources(req, cuda, &p, err)) ||
        (rc = compiler_argv(req, arch, sizeof(arch), argv, err)))
        return rc;
    const char *artifact = cuda ? "candidate.cubin" : "candidate.so";
    struct sbexec_result sr;
    rc = run_compiler(req, &p, argv, artifact, &sr, err);
    if (rc == KILN_OK)
        rc = take_diagnostics(req, &sr, res, err);
    if (rc == KILN_OK && res->ok)
        rc = fs_join(res->artifact, sizeof(res->artifact), p.out_dir, artifact, err);
    sbexec_result_free(&sr);
    if (rc != KILN_OK)
        compile_result_free(res);
    return rc;
}

void compile_result_free(struct compile_result *res)
{
    free(res->diagnostics);
    res->diagnostics = NULL;
}
