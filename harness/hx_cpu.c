/*
 * hx_cpu.c - the CPU backend: "device memory" is host memory, the module is
 * /in/candidate.so (the candidate plus kiln's trampoline, see
 * cpu_trampoline.h), reloaded with dlclose/dlopen, and a run is timed with
 * CLOCK_MONOTONIC around the trampoline calls.
 *
 * The candidate runs in the harness's own address space, so this backend's
 * isolation is weaker than the GPU's (HARNESS.md section 6 says exactly
 * what it does and does not catch); the sandbox around the process is what
 * contains it.
 *
 * The crash handler is the one piece of process-wide state in the harness:
 * a signal handler cannot be handed a context, so open() stores what it
 * needs in the file-static `crash` below.
 */
#include "hx.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hx_bf16.h"
#include "hx_fp.h"

typedef void (*hx_launch_fn)(void *const *args);

#define HX_MAX_ALLOCS 8

struct hx_backend {
    const struct harness_plan *plan;
    struct hx_where *where;
    char module_path[4096];
    void *handle;
    hx_launch_fn fn[HARNESS_PLAN_MAX_LAUNCH];
    unsigned char *flush_buf;
    size_t flush_bytes;
    unsigned char flush_byte;
    void *altstack;
    struct {
        void *p;
        size_t len; /* the mapping: the request rounded up to pages */
    } allocs[HX_MAX_ALLOCS];
};

static struct {
    const struct harness_plan *plan;
    const struct hx_where *where;
    int log_fd;
} crash;

/* ---- async-signal-safe formatting for the crash handler ---- */

static size_t put_str(char *buf, size_t len, size_t cap, const char *s)
{
    while (s && *s && len + 1 < cap)
        buf[len++] = *s++;
    return len;
}

static size_t put_num(char *buf, size_t len, size_t cap, unsigned long long v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v && n < (int)sizeof(tmp));
    while (n > 0 && len + 1 < cap)
        buf[len++] = tmp[--n];
    return len;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SIGABRT:
        return "SIGABRT";
    case SIGTRAP:
        return "SIGTRAP";
    case SIGSYS:
        return "SIGSYS";
    default:
        return "a fatal signal";
    }
}

static void crash_handler(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    char b[512];
    size_t n = 0;
    const struct hx_where *w = crash.where;
    n = put_str(b, n, sizeof(b), "candidate crashed: ");
    n = put_str(b, n, sizeof(b), signal_name(sig));
    if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) {
        n = put_str(b, n, sizeof(b), " at address 0x");
        n = put_num(b, n, sizeof(b), (unsigned long long)(uintptr_t)si->si_addr, 16);
    }
    if (w && w->case_name) {
        n = put_str(b, n, sizeof(b), " in case ");
        n = put_str(b, n, sizeof(b), w->case_name);
        n = put_str(b, n, sizeof(b), " set ");
        n = put_str(b, n, sizeof(b), w->set_name);
        n = put_str(b, n, sizeof(b), ", ");
        n = put_str(b, n, sizeof(b), w->phase);
        n = put_str(b, n, sizeof(b), " run ");
        n = put_num(b, n, sizeof(b), (unsigned long long)w->run, 10);
        if (w->launch >= 0 && crash.plan && w->launch < crash.plan->nlaunches) {
            n = put_str(b, n, sizeof(b), ", launch ");
            n = put_num(b, n, sizeof(b), (unsigned long long)w->launch, 10);
            n = put_str(b, n, sizeof(b), " (");
            n = put_str(b, n, sizeof(b), crash.plan->launches[w->launch].kernel);
            n = put_str(b, n, sizeof(b), ")");
        } else {
            n = put_str(b, n, sizeof(b), ", outside the candidate's code (harness bug?)");
        }
    }
    b[n++] = '\n';
    if (crash.log_fd >= 0) {
        ssize_t r = write(crash.log_fd, b, n);
        (void)r;
    }
    ssize_t r = write(STDERR_FILENO, b, n);
    (void)r;
    /* Die of the same signal, so the parent sees how the process ended. */
    signal(sig, SIG_DFL);
    raise(sig);
}

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};

static enum kiln_rc install_crash_handler(struct hx_backend *b, int log_fd, struct kiln_err *err)
{
    /* An alternate stack, so a stack overflow in the candidate is reported
     * too. */
    size_t sz = 64 * 1024;
    b->altstack = malloc(sz);
    if (!b->altstack)
        return kiln_fail(err, KILN_E_NOMEM, "cpu: out of memory for the signal stack");
    stack_t ss = {.ss_sp = b->altstack, .ss_size = sz, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0)
        return kiln_fail_errno(err, KILN_E_INTERNAL, "cpu: sigaltstack");
    crash.plan = b->plan;
    crash.where = b->where;
    crash.log_fd = log_fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = crash_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
        if (sigaction(crash_signals[i], &sa, NULL) != 0)
            return kiln_fail_errno(err, KILN_E_INTERNAL, "cpu: sigaction");
    return KILN_OK;
}

static void cpu_close(struct hx_backend *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
        signal(crash_signals[i], SIG_DFL);
    if (b->altstack) {
        stack_t ss = {.ss_flags = SS_DISABLE};
        sigaltstack(&ss, NULL);
    }
    crash.where = NULL;
    crash.plan = NULL;
    if (b->handle)
        dlclose(b->handle);
    free(b->flush_buf);
    free(b->altstack);
    free(b);
}

/* The last-level cache size to flush twice over, 32 MiB when unknown. */
static size_t flush_size(void)
{
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    size_t llc = l3 > 0 ? (size_t)l3 : l2 > 0 ? (size_t)l2 : (size_t)16 << 20;
    size_t n = 2 * llc;
    return n > ((size_t)512 << 20) ? (size_t)512 << 20 : n;
}

static enum kiln_rc cpu_open(struct hx_backend **out, const struct harness_plan *plan,
                             const char *module_path, struct hx_where *where, int log_fd,
                             struct kiln_err *err)
{
    *out = NULL;
    struct hx_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return kiln_fail(err, KILN_E_NOMEM, "cpu: out of memory");
    b->plan = plan;
    b->where = where;
    if (module_path && strlen(module_path) >= sizeof(b->module_path)) {
        free(b);
        return kiln_fail(err, KILN_E_LIMIT, "cpu: module path too long");
    }
    /* No module in baseline mode: nothing to check. */
    if (module_path && access(module_path, R_OK) != 0) {
        free(b);
        return kiln_fail_errno(err, KILN_E_IO, "cpu: candidate module %s", module_path);
    }
    if (module_path)
        strcpy(b->module_path, module_path);
    if (plan->l2_flush) {
        b->flush_bytes = flush_size();
        b->flush_buf = malloc(b->flush_bytes);
        if (!b->flush_buf) {
            free(b);
            return kiln_fail(err, KILN_E_NOMEM, "cpu: out of memory for the cache flush buffer");
        }
    }
    enum kiln_rc rc = install_crash_handler(b, log_fd, err);
    if (rc != KILN_OK) {
        cpu_close(b);
        return rc;
    }
    *out = b;
    return KILN_OK;
}

static const char *cpu_device_name(struct hx_backend *b)
{
    (void)b;
    return "cpu";
}

/* Whole pages of their own, like CUDA's whole 2 MiB pages: the tail past
 * the request up to the page's end is reachable without a fault, and the
 * core poisons and checks it (cpu_alloc_size). */
static enum kiln_rc cpu_alloc(struct hx_backend *b, uint64_t bytes, hx_addr *out,
                              struct kiln_err *err)
{
    int slot = -1;
    for (int i = 0; i < HX_MAX_ALLOCS && slot < 0; i++)
        if (!b->allocs[i].p)
            slot = i;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (slot < 0)
        return kiln_fail(err, KILN_E_INTERNAL, "cpu: more than %d live allocations", HX_MAX_ALLOCS);
    if (bytes == 0 || bytes > SIZE_MAX - page)
        return kiln_fail(err, KILN_E_NOMEM, "cpu: cannot allocate %llu bytes",
                         (unsigned long long)bytes);
    size_t len = ((size_t)bytes + page - 1) / page * page;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return kiln_fail_errno(err, KILN_E_NOMEM, "cpu: cannot allocate %llu bytes",
                               (unsigned long long)bytes);
    b->allocs[slot].p = p;
    b->allocs[slot].len = len;
    *out = (hx_addr)(uintptr_t)p;
    return KILN_OK;
}

static uint64_t cpu_alloc_size(struct hx_backend *b, hx_addr a, uint64_t requested)
{
    for (int i = 0; i < HX_MAX_ALLOCS; i++)
        if (b->allocs[i].p == (void *)(uintptr_t)a && b->allocs[i].len > requested)
            return b->allocs[i].len;
    return requested;
}

static void cpu_release(struct hx_backend *b, hx_addr a)
{
    for (int i = 0; i < HX_MAX_ALLOCS; i++)
        if (b->allocs[i].p && b->allocs[i].p == (void *)(uintptr_t)a) {
            munmap(b->allocs[i].p, b->allocs[i].len);
            b->allocs[i].p = NULL;
        }
}

static enum kiln_rc cpu_upload(struct hx_backend *b, hx_addr dst, const void *src, uint64_t n,
                               struct kiln_err *err)
{
    (void)b;
    (void)err;
    memcpy((void *)(uintptr_t)dst, src, (size_t)n);
    return KILN_OK;
}

static enum kiln_rc cpu_download(struct hx_backend *b, void *dst, hx_addr src, uint64_t n,
                                 struct kiln_err *err)
{
    (void)b;
    (void)err;
    memcpy(dst, (const void *)(uintptr_t)src, (size_t)n);
    return KILN_OK;
}

static enum kiln_rc cpu_copy(struct hx_backend *b, hx_addr dst, hx_addr src, uint64_t n,
                             struct kiln_err *err)
{
    (void)b;
    (void)err;
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)n);
    return KILN_OK;
}

static enum kiln_rc cpu_fill(struct hx_backend *b, hx_addr dst, uint8_t byte, uint64_t n,
                             struct kiln_err *err)
{
    (void)b;
    (void)err;
    memset((void *)(uintptr_t)dst, byte, (size_t)n);
    return KILN_OK;
}

static uint64_t fp_region(const unsigned char *p, uint64_t n, uint64_t seed)
{
    uint64_t sum = 0, nw = n / 8;
    for (uint64_t i = 0; i < nw; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8); /* little-endian host: word = bytes LE */
        sum += hx_fp_term(w, i, seed);
    }
    if (n % 8) {
        uint64_t w = 0;
        for (uint64_t j = 0; j < n % 8; j++)
            w |= (uint64_t)p[8 * nw + j] << (8 * j);
        sum += hx_fp_term(w, nw, seed);
    }
    return hx_fp_finish(sum, n, seed);
}

static enum kiln_rc cpu_fingerprint(struct hx_backend *b, const struct hx_region *r, int n,
                                    uint64_t seed, uint64_t *out, struct kiln_err *err)
{
    (void)b;
    (void)err;
    for (int i = 0; i < n; i++)
        out[i] = fp_region((const unsigned char *)(uintptr_t)r[i].addr, r[i].bytes, seed);
    return KILN_OK;
}

static enum kiln_rc cpu_reload(struct hx_backend *b, struct hx_fault *fault, struct kiln_err *err)
{
    if (b->handle) {
        dlclose(b->handle);
        b->handle = NULL;
        /* A library that stays resident (-z nodelete, a unique symbol)
         * would keep its static state across runs: refuse it. */
        void *h = dlopen(b->module_path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            fault->kind = FK_MODULE;
            return kiln_fail(err, KILN_E_REJECTED,
                             "candidate.so stays loaded after dlclose (nodelete or unique "
                             "symbols), so it could keep state between runs");
        }
    }
    b->handle = dlopen(b->module_path, RTLD_NOW | RTLD_LOCAL);
    if (!b->handle) {
        fault->kind = FK_MODULE;
        const char *why = dlerror();
        return kiln_fail(err, KILN_E_REJECTED, "dlopen candidate.so: %s", why ? why : "?");
    }
    for (int l = 0; l < b->plan->nlaunches; l++) {
        char sym[32];
        snprintf(sym, sizeof(sym), "kiln_launch_%d", l);
        void *f = dlsym(b->handle, sym);
        if (!f) {
            fault->kind = FK_MODULE;
            return kiln_fail(err, KILN_E_REJECTED,
                             "candidate.so has no %s (launch of %s): was it linked with kiln's "
                             "trampoline?",
                             sym, b->plan->launches[l].kernel);
        }
        /* POSIX guarantees object and function pointers convert. */
        memcpy(&b->fn[l], &f, sizeof(f));
    }
    return KILN_OK;
}

static enum kiln_rc cpu_prepare(struct hx_backend *b, bool flush, struct kiln_err *err)
{
    (void)err;
    if (flush && b->flush_buf) {
        /* Writing a buffer twice the last-level cache evicts the inputs;
         * the byte changes each time so no page is ever a no-op write. */
        b->flush_byte++;
        memset(b->flush_buf, b->flush_byte, b->flush_bytes);
        __asm__ __volatile__("" : : "r"(b->flush_buf) : "memory");
    }
    return KILN_OK;
}

static double ts_ms(const struct timespec *t)
{
    return (double)t->tv_sec * 1e3 + (double)t->tv_nsec / 1e6;
}

static enum kiln_rc cpu_run(struct hx_backend *b, const struct harness_case *c, int first,
                            int count, void *const *const *params, double *ms,
                            struct hx_fault *fault, struct kiln_err *err)
{
    (void)c;
    (void)fault;
    (void)err;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int l = first; l < first + count && l < b->plan->nlaunches; l++) {
        b->where->launch = l;
        b->fn[l](params[l]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    b->where->launch = -1;
    *ms = ts_ms(&t1) - ts_ms(&t0);
    /* Samples must be positive (VERDICT.md); 1 ns is the clock's unit. */
    if (*ms < 1e-6)
        *ms = 1e-6;
    return KILN_OK;
}

/* ---- baseline mode (HARNESS.md section 7) ---- */

static enum kiln_rc cpu_baseline_open(struct hx_backend *b, enum harness_baseline kind,
                                      struct hx_fault *fault, struct kiln_err *err)
{
    (void)b;
    if (kind == HBL_MEMCPY || kind == HBL_CUBLASLT_BF16)
        return KILN_OK;
    fault->kind = FK_UNAVAILABLE;
    return kiln_fail(err, KILN_E_REJECTED,
                     "baseline unavailable: %s is not available on the cpu backend (only memcpy "
                     "and cublaslt_bf16's C reference are; cuBLAS needs the cuda backend)",
                     harness_baseline_name(kind) ? harness_baseline_name(kind) : "?");
}

/* memcpy of ceil(bytes / 2) bytes (the declared bytes are read plus
 * written), or for cublaslt_bf16 the plain C bf16 GEMM (hx_bf16.h) that
 * stands in for cuBLASLt. */
static enum kiln_rc cpu_baseline_run(struct hx_backend *b, enum harness_baseline kind,
                                     const struct harness_case *c, const hx_addr *buf, double *ms,
                                     struct hx_fault *fault, struct kiln_err *err)
{
    if (kind != HBL_MEMCPY && kind != HBL_CUBLASLT_BF16)
        return cpu_baseline_open(b, kind, fault, err);
    float *row = NULL;
    if (kind == HBL_CUBLASLT_BF16 && !(row = malloc(sizeof(float) * (size_t)c->baseline[1])))
        return kiln_fail(err, KILN_E_NOMEM, "baseline: out of memory for a row of %lld floats",
                         (long long)c->baseline[1]);
    size_t n = (size_t)((uint64_t)c->baseline[0] / 2 + (uint64_t)c->baseline[0] % 2);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (kind == HBL_MEMCPY)
        memcpy((void *)(uintptr_t)buf[0], (const void *)(uintptr_t)buf[1], n);
    else
        hx_bf16_gemm_ref(c->baseline[0], c->baseline[1], c->baseline[2],
                         (const uint16_t *)(uintptr_t)buf[0], (const uint16_t *)(uintptr_t)buf[1],
                         (uint16_t *)(uintptr_t)buf[2], row);
    __asm__ __volatile__("" : : "r"(buf[0]), "r"(buf[2]) : "memory");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(row);
    *ms = ts_ms(&t1) - ts_ms(&t0);
    if (*ms < 1e-6)
        *ms = 1e-6;
    return KILN_OK;
}

static void *cpu_host_ptr(struct hx_backend *b, hx_addr a)
{
    (void)b;
    return (void *)(uintptr_t)a;
}

const struct hx_ops hx_cpu_ops = {
    .name = "cpu",
    .module_file = "candidate.so",
    .open = cpu_open,
    .close = cpu_close,
    .device_name = cpu_device_name,
    .alloc = cpu_alloc,
    .alloc_size = cpu_alloc_size,
    .release = cpu_release,
    .upload = cpu_upload,
    .download = cpu_download,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .fingerprint = cpu_fingerprint,
    .reload = cpu_reload,
    .prepare = cpu_prepare,
    .run = cpu_run,
    .baseline_open = cpu_baseline_open,
    .baseline_run = cpu_baseline_run,
    .host_ptr = cpu_host_ptr,
};
