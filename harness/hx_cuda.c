/*
 * hx_cuda.c - the CUDA backend, on the driver API only (libcuda.so.1 from
 * the driver; no cudart). Every CU call's result is checked; errors carry
 * CUDA's own name for them (cuGetErrorName).
 *
 * State the candidate could reach is the device memory of this context.
 * Kiln keeps its trusted state (samples, fingerprints, verdicts) in
 * ordinary pageable host memory: nothing is pinned-and-mapped or managed.
 * All work goes to one non-blocking stream, so the candidate's launches,
 * the fingerprint kernels and the copies are strictly ordered.
 *
 * Baseline mode (HARNESS.md section 7) runs no candidate: it times
 * cuMemcpyDtoDAsync, cuBLAS SGEMM from a libcublas.so.<major>, or a
 * cuBLASLt bf16 GEMM (hx_cublaslt.h), the libraries opened with dlopen, so
 * the harness never links cuBLAS and starts without it.
 */
#include "hx.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cubin.h"
#include "hx_cublaslt.h"
#include "hx_fp.h"
#include "kiln_helpers_fatbin.h"

#define HX_MAX_IMAGE     (64u << 20) /* candidate.cubin */
#define HX_FP_THREADS    256
#define HX_STATIC_SMEM   49152 /* dynamic shared memory without opt-in */
#define HX_FP_MAX_REGION (HARNESS_PLAN_MAX_ARGS * (HARNESS_PLAN_MAX_SETS + 2) + 4)
/* Device printf's FIFO: a flood from every thread fills it and the rest is
 * dropped by the device, so each synchronisation prints at most this. */
#define HX_PRINTF_FIFO (1u << 20)
/* cuMemAlloc hands out whole pages of this size at least (H100/H200:
 * 2 MiB); requests are rounded up to it so no allocation of kiln's shares
 * a page with another, and the rounded tail is kiln's to poison and check. */
#define HX_MIN_GRANULARITY ((size_t)2 << 20)
#define HX_MAX_ALLOCS      8

struct hx_backend {
    const struct harness_plan *plan;
    struct hx_where *where;
    int log_fd;
    CUdevice dev;
    CUcontext ctx;
    bool ctx_retained;
    CUstream stream;
    CUevent ev0, ev1;
    CUmodule helpers;
    CUfunction fp_fn;
    CUfunction spin_fn;  /* kiln_spin: keeps the device busy before a timed run */
    CUfunction flush_fn; /* kiln_l2_flush: reads the flush buffer */
    CUmodule mod;
    CUfunction fn[HARNESS_PLAN_MAX_LAUNCH];
    void *image;
    CUdeviceptr flush_buf;
    size_t flush_bytes;
    CUdeviceptr fp_dev;
    unsigned long long fp_host[HX_FP_MAX_REGION];
    int sm_count;
    char name[256];
    size_t image_len;
    char refusal[512]; /* why candidate.cubin is refused, "" if it is not */
    size_t granularity;
    struct {
        CUdeviceptr p;
        size_t usable;
    } allocs[HX_MAX_ALLOCS];
    struct hx_cublas *cublas; /* baseline mode, cublas_sgemm: loaded once */
    struct hx_cublaslt *lt;   /* baseline mode, cublaslt_bf16: loaded once */
};

static const char *cu_name(CUresult r)
{
    const char *n = NULL;
    if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n)
        return "CUDA_ERROR_UNKNOWN";
    return n;
}

static enum kiln_rc cu_fail(CUresult r, const char *what, struct kiln_err *err)
{
    const char *desc = NULL;
    if (cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        desc = "no description";
    return kiln_fail(err, KILN_E_CUDA, "%s: %s (%s)", what, cu_name(r), desc);
}

#define CU_TRY(call, what)                                                                         \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS)                                                                    \
            return cu_fail(r_, what, err);                                                         \
    } while (0)

static void hx_log(struct hx_backend *b, const char *msg)
{
    if (b->log_fd >= 0) {
        ssize_t w = write(b->log_fd, msg, strlen(msg));
        (void)w;
    }
}

static enum kiln_rc read_image(const char *path, void **out, size_t *out_len, struct kiln_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "cuda: candidate module %s", path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        st.st_size > (off_t)HX_MAX_IMAGE) {
        close(fd);
        return kiln_fail(err, KILN_E_REJECTED, "cuda: %s is not a regular file of 1 .. %u bytes",
                         path, HX_MAX_IMAGE);
    }
    size_t len = (size_t)st.st_size, done = 0;
    char *buf = malloc(len + 1);
    if (!buf) {
        close(fd);
        return kiln_fail(err, KILN_E_NOMEM, "cuda: out of memory reading %s", path);
    }
    while (done < len) {
        ssize_t n = read(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(buf);
            close(fd);
            return kiln_fail_errno(err, KILN_E_IO, "cuda: reading %s", path);
        }
        done += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return KILN_OK;
}

static void cublas_unload(struct hx_cublas *cb);

static void cuda_close(struct hx_backend *b)
{
    if (!b)
        return;
    cublas_unload(b->cublas);
    hx_cublaslt_unload(b->lt);
    /* Best effort: after a sticky error these fail, and the process ends. */
    if (b->ctx_retained) {
        if (b->mod)
            cuModuleUnload(b->mod);
        if (b->helpers)
            cuModuleUnload(b->helpers);
        if (b->flush_buf)
            cuMemFree(b->flush_buf);
        if (b->fp_dev)
            cuMemFree(b->fp_dev);
        if (b->ev0)
            cuEventDestroy(b->ev0);
        if (b->ev1)
            cuEventDestroy(b->ev1);
        if (b->stream)
            cuStreamDestroy(b->stream);
        cuDevicePrimaryCtxRelease(b->dev);
    }
    free(b->image);
    free(b);
}

static enum kiln_rc cuda_setup(struct hx_backend *b, const char *module_path, struct kiln_err *err)
{
    enum kiln_rc rc;
    int l2 = 0;
    CU_TRY(cuInit(0), "cuInit");
    /* The sandbox exposes exactly one GPU: ordinal 0. */
    CU_TRY(cuDeviceGet(&b->dev, 0), "cuDeviceGet");
    CU_TRY(cuDeviceGetName(b->name, sizeof(b->name) - 1, b->dev), "cuDeviceGetName");
    CU_TRY(cuDevicePrimaryCtxRetain(&b->ctx, b->dev), "cuDevicePrimaryCtxRetain");
    b->ctx_retained = true;
    CU_TRY(cuCtxSetCurrent(b->ctx), "cuCtxSetCurrent");
    /* The device-side malloc heap survives module reloads: a stash there
     * would outlive the fresh module. Shrink it to nothing before any
     * module is loaded; if the driver refuses 0, log it (HARNESS.md). */
    CUresult r = cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 0);
    size_t heap = 0, fifo = 0;
    char msg[200];
    if (r == CUDA_SUCCESS)
        r = cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE);
    snprintf(msg, sizeof(msg),
             "device malloc heap limit: %zu bytes (%s; not relied on: cubins importing "
             "malloc/free are refused)\n",
             heap, r == CUDA_SUCCESS ? "read back" : cu_name(r));
    hx_log(b, msg);
    /* A printf flood from every thread: a small FIFO bounds what each
     * synchronisation writes (the device drops the overflow). */
    r = cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, HX_PRINTF_FIFO);
    if (r == CUDA_SUCCESS)
        r = cuCtxGetLimit(&fifo, CU_LIMIT_PRINTF_FIFO_SIZE);
    if (r != CUDA_SUCCESS)
        return cu_fail(r, "cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 MiB)", err);
    snprintf(msg, sizeof(msg), "device printf FIFO: %zu bytes\n", fifo);
    hx_log(b, msg);
    /* The allocation granularity, so every allocation is whole pages. */
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = b->dev}};
    size_t gran = 0;
    if (cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) !=
            CUDA_SUCCESS ||
        gran < HX_MIN_GRANULARITY)
        gran = HX_MIN_GRANULARITY;
    b->granularity = gran;
    CU_TRY(cuDeviceGetAttribute(&b->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, b->dev),
           "cuDeviceGetAttribute(SM count)");
    CU_TRY(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, b->dev),
           "cuDeviceGetAttribute(L2 size)");
    CU_TRY(cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    CU_TRY(cuEventCreate(&b->ev0, CU_EVENT_DEFAULT), "cuEventCreate");
    CU_TRY(cuEventCreate(&b->ev1, CU_EVENT_DEFAULT), "cuEventCreate");
    CU_TRY(cuModuleLoadData(&b->helpers, kiln_helpers_fatbin), "loading kiln's helper kernels");
    CU_TRY(cuModuleGetFunction(&b->fp_fn, b->helpers, "kiln_fingerprint"),
           "cuModuleGetFunction(kiln_fingerprint)");
    CU_TRY(cuModuleGetFunction(&b->spin_fn, b->helpers, "kiln_spin"),
           "cuModuleGetFunction(kiln_spin)");
    CU_TRY(cuMemAlloc(&b->fp_dev, sizeof(b->fp_host)), "cuMemAlloc(fingerprints)");
    CU_TRY(cuModuleGetFunction(&b->flush_fn, b->helpers, "kiln_l2_flush"),
           "cuModuleGetFunction(kiln_l2_flush)");
    if (b->plan->l2_flush) {
        /* Reading twice the L2 evicts everything the last run left there. */
        b->flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : 64 << 20);
        CU_TRY(cuMemAlloc(&b->flush_buf, b->flush_bytes), "cuMemAlloc(L2 flush buffer)");
        CU_TRY(cuMemsetD8(b->flush_buf, 0, b->flush_bytes), "cuMemsetD8(L2 flush buffer)");
    }
    if (module_path && (rc = read_image(module_path, &b->image, &b->image_len, err)) != KILN_OK)
        return rc;
    if (module_path) {
        /* The parent checked it already (pipeline/evaluate.c); the harness
         * checks again because it is the one that loads it. */
        struct kiln_err cerr;
        kiln_err_clear(&cerr);
        if (cubin_check_heap(b->image, b->image_len, &cerr) != KILN_OK)
            snprintf(b->refusal, sizeof(b->refusal), "candidate.cubin refused: %s", cerr.msg);
    }
    return KILN_OK;
}

static enum kiln_rc cuda_open(struct hx_backend **out, const struct harness_plan *plan,
                              const char *module_path, struct hx_where *where, int log_fd,
                              struct kiln_err *err)
{
    *out = NULL;
    struct hx_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return kiln_fail(err, KILN_E_NOMEM, "cuda: out of memory");
    b->plan = plan;
    b->where = where;
    b->log_fd = log_fd;
    enum kiln_rc rc = cuda_setup(b, module_path, err);
    if (rc != KILN_OK) {
        cuda_close(b);
        return rc;
    }
    *out = b;
    return KILN_OK;
}

static const char *cuda_device_name(struct hx_backend *b)
{
    return b->name;
}

/*
 * Whole pages: the request rounded up to the allocation granularity, and
 * the usable size recorded as the larger of that and what the driver says
 * the allocation spans (cuMemGetAddressRange), so cuda_alloc_size reports
 * every byte a kernel could reach past the request without a fault.
 */
static enum kiln_rc cuda_alloc(struct hx_backend *b, uint64_t bytes, hx_addr *out,
                               struct kiln_err *err)
{
    int slot = -1;
    for (int i = 0; i < HX_MAX_ALLOCS && slot < 0; i++)
        if (!b->allocs[i].p)
            slot = i;
    if (slot < 0)
        return kiln_fail(err, KILN_E_INTERNAL, "cuda: more than %d live allocations",
                         HX_MAX_ALLOCS);
    size_t g = b->granularity ? b->granularity : HX_MIN_GRANULARITY;
    if (bytes == 0 || bytes > SIZE_MAX - g)
        return kiln_fail(err, KILN_E_INTERNAL, "cuda: allocation of %llu bytes",
                         (unsigned long long)bytes);
    size_t want = ((size_t)bytes + g - 1) / g * g;
    CUdeviceptr p = 0, base = 0;
    size_t span = 0;
    CUresult r = cuMemAlloc(&p, want);
    if (r != CUDA_SUCCESS) {
        char what[64];
        snprintf(what, sizeof(what), "cuMemAlloc(%zu bytes)", want);
        return cu_fail(r, what, err);
    }
    if (cuMemGetAddressRange(&base, &span, p) == CUDA_SUCCESS && base == p && span > want)
        want = span;
    b->allocs[slot].p = p;
    b->allocs[slot].usable = want;
    *out = (hx_addr)p;
    return KILN_OK;
}

static uint64_t cuda_alloc_size(struct hx_backend *b, hx_addr a, uint64_t requested)
{
    for (int i = 0; i < HX_MAX_ALLOCS; i++)
        if (b->allocs[i].p == (CUdeviceptr)a && b->allocs[i].usable > requested)
            return b->allocs[i].usable;
    return requested;
}

static void cuda_release(struct hx_backend *b, hx_addr a)
{
    for (int i = 0; i < HX_MAX_ALLOCS; i++)
        if (b->allocs[i].p == (CUdeviceptr)a)
            b->allocs[i].p = 0;
    cuMemFree((CUdeviceptr)a);
}

static enum kiln_rc cuda_upload(struct hx_backend *b, hx_addr dst, const void *src, uint64_t n,
                                struct kiln_err *err)
{
    CU_TRY(cuMemcpyHtoDAsync((CUdeviceptr)dst, src, (size_t)n, b->stream), "cuMemcpyHtoDAsync");
    CU_TRY(cuStreamSynchronize(b->stream), "cuStreamSynchronize(upload)");
    return KILN_OK;
}

static enum kiln_rc cuda_download(struct hx_backend *b, void *dst, hx_addr src, uint64_t n,
                                  struct kiln_err *err)
{
    CU_TRY(cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, (size_t)n, b->stream), "cuMemcpyDtoHAsync");
    CU_TRY(cuStreamSynchronize(b->stream), "cuStreamSynchronize(download)");
    return KILN_OK;
}

static enum kiln_rc cuda_copy(struct hx_backend *b, hx_addr dst, hx_addr src, uint64_t n,
                              struct kiln_err *err)
{
    CU_TRY(cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, (size_t)n, b->stream),
           "cuMemcpyDtoDAsync(restore inputs)");
    return KILN_OK;
}

static enum kiln_rc cuda_fill(struct hx_backend *b, hx_addr dst, uint8_t byte, uint64_t n,
                              struct kiln_err *err)
{
    CU_TRY(cuMemsetD8Async((CUdeviceptr)dst, byte, (size_t)n, b->stream), "cuMemsetD8Async");
    return KILN_OK;
}

static enum kiln_rc cuda_fingerprint(struct hx_backend *b, const struct hx_region *r, int n,
                                     uint64_t seed, uint64_t *out, struct kiln_err *err)
{
    if (n < 0 || n > HX_FP_MAX_REGION)
        return kiln_fail(err, KILN_E_INTERNAL, "cuda: %d regions to fingerprint", n);
    if (n == 0)
        return KILN_OK;
    CU_TRY(cuMemsetD8Async(b->fp_dev, 0, sizeof(unsigned long long) * (size_t)n, b->stream),
           "cuMemsetD8Async(fingerprints)");
    for (int i = 0; i < n; i++) {
        if (r[i].bytes == 0)
            continue;
        uint64_t pairs = r[i].bytes / 16 + 1;
        uint64_t blocks = (pairs + HX_FP_THREADS - 1) / HX_FP_THREADS;
        uint64_t cap = (uint64_t)(b->sm_count > 0 ? b->sm_count : 1) * 8;
        if (blocks > cap)
            blocks = cap;
        CUdeviceptr p = (CUdeviceptr)r[i].addr;
        unsigned long long nbytes = r[i].bytes, s = seed;
        CUdeviceptr dst = b->fp_dev + sizeof(unsigned long long) * (size_t)i;
        void *params[] = {&p, &nbytes, &s, &dst};
        CU_TRY(cuLaunchKernel(b->fp_fn, (unsigned)blocks, 1, 1, HX_FP_THREADS, 1, 1, 0, b->stream,
                              params, NULL),
               "cuLaunchKernel(kiln_fingerprint)");
    }
    CU_TRY(
        cuMemcpyDtoHAsync(b->fp_host, b->fp_dev, sizeof(unsigned long long) * (size_t)n, b->stream),
        "cuMemcpyDtoHAsync(fingerprints)");
    CU_TRY(cuStreamSynchronize(b->stream), "cuStreamSynchronize(fingerprints)");
    for (int i = 0; i < n; i++)
        out[i] = hx_fp_finish(r[i].bytes ? b->fp_host[i] : 0, r[i].bytes, seed);
    return KILN_OK;
}

static enum kiln_rc cuda_reload(struct hx_backend *b, struct hx_fault *fault, struct kiln_err *err)
{
    if (b->refusal[0]) {
        fault->kind = FK_MODULE;
        return kiln_fail(err, KILN_E_REJECTED, "%s", b->refusal);
    }
    if (b->mod) {
        CUmodule m = b->mod;
        b->mod = NULL;
        CU_TRY(cuModuleUnload(m), "cuModuleUnload(candidate)");
    }
    /* A fresh image: every __device__ variable starts from its initializer. */
    CUresult r = cuModuleLoadData(&b->mod, b->image);
    if (r != CUDA_SUCCESS) {
        b->mod = NULL;
        fault->kind = FK_MODULE;
        snprintf(fault->cuda_error, sizeof(fault->cuda_error), "%s", cu_name(r));
        return kiln_fail(err, KILN_E_REJECTED, "cuModuleLoadData(candidate.cubin): %s", cu_name(r));
    }
    for (int l = 0; l < b->plan->nlaunches; l++) {
        r = cuModuleGetFunction(&b->fn[l], b->mod, b->plan->launches[l].kernel);
        if (r != CUDA_SUCCESS) {
            fault->kind = FK_MODULE;
            snprintf(fault->cuda_error, sizeof(fault->cuda_error), "%s", cu_name(r));
            return kiln_fail(err, KILN_E_REJECTED,
                             "kernel %s (launch %d) not in candidate.cubin: %s (is it extern "
                             "\"C\" __global__?)",
                             b->plan->launches[l].kernel, l, cu_name(r));
        }
    }
    return KILN_OK;
}

/* How long the hot mode's spin kernel keeps the device busy: well over the
 * few microseconds the host needs to enqueue the start event and the
 * launches behind it. */
#define HX_SPIN_NS 50000ULL

static enum kiln_rc cuda_prepare(struct hx_backend *b, bool flush, struct kiln_err *err)
{
    /* Lines a candidate marked persisting would survive a flush. The
     * restores queued before this must finish first. */
    CU_TRY(cuStreamSynchronize(b->stream), "cuStreamSynchronize(prepare)");
    CUresult r = cuCtxResetPersistingL2Cache();
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_SUPPORTED)
        return cu_fail(r, "cuCtxResetPersistingL2Cache", err);
    /* The device is left busy, not idle: with an idle device the start
     * event is stamped as soon as it is enqueued and the host's launch
     * latency (microseconds) lands in the sample. Queued behind the flush
     * (or a short spin), the start event is stamped when the device turns
     * to the candidate's first launch, already waiting in the stream. */
    if (flush && b->flush_buf) {
        /* The buffer is zero, so its XOR is never the key; were a candidate
         * to write it, the sink is the buffer itself: nothing else changes. */
        unsigned long long n16 = b->flush_bytes / 16, key = 1;
        CUdeviceptr buf = b->flush_buf, sink = b->flush_buf;
        void *params[] = {&buf, &n16, &key, &sink};
        CU_TRY(cuLaunchKernel(b->flush_fn, (unsigned)(b->sm_count > 0 ? 4 * b->sm_count : 512), 1,
                              1, 256, 1, 1, 0, b->stream, params, NULL),
               "cuLaunchKernel(kiln_l2_flush)");
    } else {
        unsigned long long ns = HX_SPIN_NS;
        void *params[] = {&ns};
        CU_TRY(cuLaunchKernel(b->spin_fn, 1, 1, 1, 1, 1, 1, 0, b->stream, params, NULL),
               "cuLaunchKernel(kiln_spin)");
    }
    return KILN_OK;
}

/* After a failed launch or sync: is the context still usable? Sticky
 * errors (illegal address, ...) make every later call fail the same way. */
static bool context_broken(struct hx_backend *b)
{
    return cuStreamSynchronize(b->stream) != CUDA_SUCCESS || cuCtxSynchronize() != CUDA_SUCCESS;
}

static enum kiln_rc launch_fault(struct hx_backend *b, struct hx_fault *fault, CUresult r,
                                 enum failure_kind kind, int l, struct kiln_err *err)
{
    fault->kind = kind;
    snprintf(fault->cuda_error, sizeof(fault->cuda_error), "%s", cu_name(r));
    fault->broken = context_broken(b);
    const char *desc = NULL;
    if (cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        desc = "no description";
    if (l >= 0)
        kiln_fail(err, fault->broken ? KILN_E_CUDA : KILN_E_REJECTED, "launch %d (%s): %s (%s)", l,
                  b->plan->launches[l].kernel, cu_name(r), desc);
    else
        kiln_fail(err, fault->broken ? KILN_E_CUDA : KILN_E_REJECTED,
                  "the candidate's kernels failed: %s (%s)", cu_name(r), desc);
    return err->rc;
}

static enum kiln_rc cuda_run(struct hx_backend *b, const struct harness_case *c, int first,
                             int count, void *const *const *params, double *ms,
                             struct hx_fault *fault, struct kiln_err *err)
{
    const struct harness_plan *p = b->plan;
    int end = first + count < p->nlaunches ? first + count : p->nlaunches;
    CUresult r;
    /* Opt-in shared memory above 48 KiB, outside the timed region. Reloading
     * resets function attributes, so this is done every run. A request over
     * the device's limit fails here with CUDA's error. */
    for (int l = first; l < end; l++) {
        if (c->dims[l].smem <= HX_STATIC_SMEM)
            continue;
        r = cuFuncSetAttribute(b->fn[l], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               (int)c->dims[l].smem);
        if (r != CUDA_SUCCESS)
            return launch_fault(b, fault, r, FK_LAUNCH_FAILED, l, err);
    }
    CU_TRY(cuEventRecord(b->ev0, b->stream), "cuEventRecord(start)");
    for (int l = first; l < end; l++) {
        const struct harness_dims *d = &c->dims[l];
        b->where->launch = l;
        r = cuLaunchKernel(b->fn[l], d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1],
                           d->block[2], d->smem, b->stream, (void **)params[l], NULL);
        if (r != CUDA_SUCCESS)
            return launch_fault(b, fault, r, FK_LAUNCH_FAILED, l, err);
    }
    b->where->launch = -1;
    CU_TRY(cuEventRecord(b->ev1, b->stream), "cuEventRecord(stop)");
    r = cuStreamSynchronize(b->stream);
    if (r != CUDA_SUCCESS)
        return launch_fault(b, fault, r, FK_CUDA_ERROR, -1, err);
    float elapsed = 0;
    CU_TRY(cuEventElapsedTime(&elapsed, b->ev0, b->ev1), "cuEventElapsedTime");
    *ms = elapsed > 0 ? (double)elapsed : 1e-6; /* VERDICT.md: samples are > 0 */
    return KILN_OK;
}

/* ---- baseline mode (HARNESS.md section 7) ---- */

/* The few cuBLAS entry points kiln uses, declared here rather than taken
 * from cublas_v2.h so that nothing links against cuBLAS: the ABI is the
 * documented C API (enums are ints, the handle an opaque pointer, a
 * cudaStream_t is a CUstream). */
typedef int (*cublas_create_fn)(void **handle);
typedef int (*cublas_destroy_fn)(void *handle);
typedef int (*cublas_set_stream_fn)(void *handle, CUstream stream);
typedef int (*cublas_set_math_mode_fn)(void *handle, int mode);
typedef int (*cublas_get_version_fn)(void *handle, int *version);
typedef int (*cublas_sgemm_fn)(void *handle, int transa, int transb, int m, int n, int k,
                               const float *alpha, const float *a, int lda, const float *b, int ldb,
                               const float *beta, float *c, int ldc);

#define HX_CUBLAS_OP_N         0
#define HX_CUBLAS_DEFAULT_MATH 0 /* float32 math: no TF32 tensor cores */

struct hx_cublas {
    void *lib;
    void *handle;
    char soname[32];
    int version;
    cublas_destroy_fn destroy;
    cublas_sgemm_fn sgemm;
};

static void cublas_unload(struct hx_cublas *cb)
{
    if (!cb)
        return;
    if (cb->handle && cb->destroy)
        cb->destroy(cb->handle);
    if (cb->lib)
        dlclose(cb->lib);
    free(cb);
}

static enum kiln_rc unavailable(struct hx_fault *fault, struct kiln_err *err, const char *fmt, ...)
    KILN_PRINTF(3, 4);

static enum kiln_rc unavailable(struct hx_fault *fault, struct kiln_err *err, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    fault->kind = FK_UNAVAILABLE;
    return kiln_fail(err, KILN_E_REJECTED, "baseline unavailable: %s", why);
}

/* dlsym into a function pointer (POSIX guarantees the conversion; memcpy
 * keeps ISO C quiet), noting a missing symbol. */
#define HX_DLSYM(lib, fn, name, missing)                                                           \
    do {                                                                                           \
        void *f_ = dlsym((lib), (name));                                                           \
        (missing) = (missing) || !f_;                                                              \
        memcpy(&(fn), &f_, sizeof(f_));                                                            \
    } while (0)

/* dlopen's the cuBLAS of the toolkit kiln was built with, else another
 * major, then one handle on the harness's stream with float32 math. */
static enum kiln_rc cublas_load(struct hx_backend *b, struct hx_fault *fault, struct kiln_err *err)
{
    const int majors[] = {CUDA_VERSION / 1000, 13, 12, 11};
    char tried[160] = "", why[240] = "?";
    struct hx_cublas *cb = calloc(1, sizeof(*cb));
    if (!cb)
        return kiln_fail(err, KILN_E_NOMEM, "cuda: out of memory for cuBLAS");
    for (size_t i = 0; i < sizeof(majors) / sizeof(majors[0]) && !cb->lib; i++) {
        if (i > 0 && majors[i] == majors[0])
            continue;
        snprintf(cb->soname, sizeof(cb->soname), "libcublas.so.%d", majors[i]);
        cb->lib = dlopen(cb->soname, RTLD_NOW | RTLD_LOCAL);
        if (!cb->lib) {
            /* dlerror's text does not survive the next dlopen: copy it. */
            const char *e = dlerror();
            if (i == 0 && e)
                snprintf(why, sizeof(why), "%s", e);
            size_t n = strlen(tried);
            snprintf(tried + n, sizeof(tried) - n, "%s%s", n ? ", " : "", cb->soname);
        }
    }
    if (!cb->lib) {
        enum kiln_rc rc = unavailable(fault, err,
                                      "cannot load cuBLAS (tried %s): %.200s; the gpu-run image "
                                      "must expose the CUDA toolkit's lib64 directory "
                                      "(LD_LIBRARY_PATH)",
                                      tried, why);
        free(cb);
        return rc;
    }
    bool missing = false;
    cublas_create_fn create;
    cublas_set_stream_fn set_stream;
    cublas_set_math_mode_fn set_math;
    cublas_get_version_fn get_version;
    HX_DLSYM(cb->lib, create, "cublasCreate_v2", missing);
    HX_DLSYM(cb->lib, cb->destroy, "cublasDestroy_v2", missing);
    HX_DLSYM(cb->lib, set_stream, "cublasSetStream_v2", missing);
    HX_DLSYM(cb->lib, set_math, "cublasSetMathMode", missing);
    HX_DLSYM(cb->lib, get_version, "cublasGetVersion_v2", missing);
    HX_DLSYM(cb->lib, cb->sgemm, "cublasSgemm_v2", missing);
    int st = 0;
    const char *step = "";
    if (missing)
        step = "a cuBLAS entry point is missing";
    else if ((st = create(&cb->handle)) != 0)
        step = "cublasCreate failed";
    else if ((st = set_stream(cb->handle, b->stream)) != 0)
        step = "cublasSetStream failed";
    else if ((st = set_math(cb->handle, HX_CUBLAS_DEFAULT_MATH)) != 0)
        step = "cublasSetMathMode(CUBLAS_DEFAULT_MATH) failed";
    else if ((st = get_version(cb->handle, &cb->version)) != 0)
        step = "cublasGetVersion failed";
    if (step[0]) {
        enum kiln_rc rc =
            unavailable(fault, err, "%s: %s (cublasStatus_t %d)", cb->soname, step, st);
        cublas_unload(cb);
        return rc;
    }
    b->cublas = cb;
    char msg[128];
    snprintf(msg, sizeof(msg), "baseline: %s loaded, cuBLAS version %d, CUBLAS_DEFAULT_MATH\n",
             cb->soname, cb->version);
    hx_log(b, msg);
    return KILN_OK;
}

static enum kiln_rc cublaslt_load(struct hx_backend *b, struct hx_fault *fault,
                                  struct kiln_err *err)
{
    char why[400], note[160];
    if (!(b->lt = hx_cublaslt_load(why, sizeof(why), note, sizeof(note))))
        return unavailable(fault, err, "%s", why);
    hx_log(b, note);
    return KILN_OK;
}

static enum kiln_rc cuda_baseline_open(struct hx_backend *b, enum harness_baseline kind,
                                       struct hx_fault *fault, struct kiln_err *err)
{
    if (kind == HBL_MEMCPY || (kind == HBL_CUBLAS_SGEMM && b->cublas) ||
        (kind == HBL_CUBLASLT_BF16 && b->lt))
        return KILN_OK;
    if (kind == HBL_CUBLAS_SGEMM)
        return cublas_load(b, fault, err);
    if (kind == HBL_CUBLASLT_BF16)
        return cublaslt_load(b, fault, err);
    return unavailable(fault, err, "unknown baseline %d", (int)kind);
}

static enum kiln_rc baseline_fault(struct hx_backend *b, struct hx_fault *fault, CUresult r,
                                   const char *what, struct kiln_err *err)
{
    fault->kind = FK_CUDA_ERROR;
    snprintf(fault->cuda_error, sizeof(fault->cuda_error), "%s", cu_name(r));
    fault->broken = context_broken(b);
    return kiln_fail(err, fault->broken ? KILN_E_CUDA : KILN_E_REJECTED, "%s: %s", what,
                     cu_name(r));
}

/* A library call's status: a failure of the baseline's own, the device
 * broken or not. */
static enum kiln_rc library_failed(struct hx_backend *b, struct hx_fault *fault, const char *what,
                                   int st, struct kiln_err *err)
{
    fault->kind = FK_LAUNCH_FAILED;
    fault->broken = context_broken(b);
    return kiln_fail(err, fault->broken ? KILN_E_CUDA : KILN_E_REJECTED,
                     "%s failed (cublasStatus_t %d)", what, st);
}

static enum kiln_rc cuda_baseline_run(struct hx_backend *b, enum harness_baseline kind,
                                      const struct harness_case *c, const hx_addr *buf, double *ms,
                                      struct hx_fault *fault, struct kiln_err *err)
{
    const int64_t *v = c->baseline;
    CUresult r;
    int st = 0;
    const char *what = kind == HBL_CUBLASLT_BF16 ? "cublasLtMatmul" : "cublasSgemm";
    if (kind == HBL_CUBLASLT_BF16 && b->lt &&
        (st = hx_cublaslt_prepare(b->lt, v[0], v[1], v[2], &what)))
        return st == -1 ? unavailable(fault, err,
                                      "cuBLASLt's heuristic has no algorithm for bf16 %lld x %lld "
                                      "x %lld with fp32 compute",
                                      (long long)v[0], (long long)v[1], (long long)v[2])
                        : library_failed(b, fault, what, st, err);
    CU_TRY(cuEventRecord(b->ev0, b->stream), "cuEventRecord(start)");
    if (kind == HBL_MEMCPY) {
        size_t n = (size_t)((uint64_t)v[0] / 2 + (uint64_t)v[0] % 2);
        r = cuMemcpyDtoDAsync((CUdeviceptr)buf[0], (CUdeviceptr)buf[1], n, b->stream);
        if (r != CUDA_SUCCESS)
            return baseline_fault(b, fault, r, "cuMemcpyDtoDAsync(baseline)", err);
    } else if (kind == HBL_CUBLAS_SGEMM && b->cublas) {
        /* Row-major C = A B is column-major C^T = B^T A^T: swap the
         * operands and pass n, m; leading dimensions are the row lengths. */
        int m = (int)v[0], n = (int)v[1], k = (int)v[2];
        const float alpha = 1.0f, beta = 0.0f;
        st = b->cublas->sgemm(b->cublas->handle, HX_CUBLAS_OP_N, HX_CUBLAS_OP_N, n, m, k, &alpha,
                              (const float *)(uintptr_t)buf[1], n, (const float *)(uintptr_t)buf[0],
                              k, &beta, (float *)(uintptr_t)buf[2], n);
    } else if (kind == HBL_CUBLASLT_BF16 && b->lt) {
        st = hx_cublaslt_run(b->lt, (CUdeviceptr)buf[0], (CUdeviceptr)buf[1], (CUdeviceptr)buf[2],
                             b->stream);
    } else {
        return unavailable(fault, err, "baseline %d is not open", (int)kind);
    }
    CU_TRY(cuEventRecord(b->ev1, b->stream), "cuEventRecord(stop)");
    r = cuStreamSynchronize(b->stream);
    if (st != 0)
        return library_failed(b, fault, what, st, err);
    if (r != CUDA_SUCCESS)
        return baseline_fault(b, fault, r, "the baseline failed at synchronization", err);
    float elapsed = 0;
    CU_TRY(cuEventElapsedTime(&elapsed, b->ev0, b->ev1), "cuEventElapsedTime");
    *ms = elapsed > 0 ? (double)elapsed : 1e-6; /* VERDICT.md: samples are > 0 */
    return KILN_OK;
}

/* ---- --device-props: the physics floor's inputs (base/gpupeak.h) and the
 * launch limits (evaluator/devlimits.h), one line each ---- */

/* The device's own copy bandwidth, bytes read plus written per second in
 * MB/s: the best of COPY_REPS device-to-device copies of COPY_BYTES (many
 * times any L2), after one untimed copy. It is reported beside the nominal
 * DRAM peak (issue #38: a memory-bound kernel at a memcpy's speed is done
 * even where the datasheet figure is out of reach); the physics floor never
 * uses it, since a floor must not sit below what a kernel can reach. 0 when
 * it cannot be measured (too little free memory, any CUDA error): the
 * caller then reports the nominal peak alone. */
#define COPY_BYTES ((size_t)1 << 30)
#define COPY_REPS  8
static int measured_copy_mb_per_s(CUdevice dev)
{
    CUcontext ctx = NULL;
    CUdeviceptr src = 0, dst = 0;
    CUevent e0 = NULL, e1 = NULL;
    size_t bytes = COPY_BYTES, free_b = 0, total_b = 0;
    float best = 0;
    CUresult r = cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS)
        r = cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS)
        r = cuMemGetInfo(&free_b, &total_b);
    while (r == CUDA_SUCCESS && bytes > free_b / 3 && bytes > ((size_t)64 << 20))
        bytes /= 2; /* a card with little free memory still gets a figure */
    if (r == CUDA_SUCCESS)
        r = cuMemAlloc(&src, bytes);
    if (r == CUDA_SUCCESS)
        r = cuMemAlloc(&dst, bytes);
    if (r == CUDA_SUCCESS)
        r = cuMemsetD8(src, 0x5a, bytes);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&e0, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = cuEventCreate(&e1, CU_EVENT_DEFAULT);
    for (int i = 0; r == CUDA_SUCCESS && i <= COPY_REPS; i++) {
        float ms = 0;
        r = cuEventRecord(e0, NULL);
        if (r == CUDA_SUCCESS)
            r = cuMemcpyDtoD(dst, src, bytes);
        if (r == CUDA_SUCCESS)
            r = cuEventRecord(e1, NULL);
        if (r == CUDA_SUCCESS)
            r = cuEventSynchronize(e1);
        if (r == CUDA_SUCCESS)
            r = cuEventElapsedTime(&ms, e0, e1);
        if (r == CUDA_SUCCESS && i > 0 && ms > 0 && (best == 0 || ms < best))
            best = ms;
    }
    if (r != CUDA_SUCCESS)
        fprintf(stderr, "kiln-harness-cuda: copy bandwidth not measured: %s\n", cu_name(r));
    if (e0)
        (void)cuEventDestroy(e0);
    if (e1)
        (void)cuEventDestroy(e1);
    if (src)
        (void)cuMemFree(src);
    if (dst)
        (void)cuMemFree(dst);
    if (ctx)
        (void)cuDevicePrimaryCtxRelease(dev);
    if (r != CUDA_SUCCESS || best <= 0)
        return 0;
    double mb = 2.0 * (double)bytes / ((double)best * 1e-3) / 1e6;
    return mb < 2e9 ? (int)mb : 0;
}

int hx_cuda_device_props(const char *bus_id)
{
    static const CUdevice_attribute attr[] = {
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
        /* the limits, in DEVLIMITS_FORMAT's order */
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR};
    enum { N = sizeof(attr) / sizeof(*attr) };
    int v[N];
    CUdevice dev;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetByPCIBusId(&dev, bus_id);
    for (int i = 0; r == CUDA_SUCCESS && i < N; i++)
        r = cuDeviceGetAttribute(&v[i], attr[i], dev);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "kiln-harness-cuda: device %s: %s\n", bus_id, cu_name(r));
        return 1;
    }
    printf("sm_count=%d sm_clock_khz=%d cc=%d.%d mem_clock_khz=%d bus_width_bits=%d\n", v[0], v[1],
           v[2], v[3], v[4], v[5]);
    printf("limits threads_per_block=%d block=%d,%d,%d grid=%d,%d,%d smem_optin=%d "
           "smem_per_sm=%d regs_per_block=%d regs_per_sm=%d threads_per_sm=%d\n",
           v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17]);
    printf("copy mb_per_s=%d\n", measured_copy_mb_per_s(dev));
    return fflush(stdout) == 0 ? 0 : 1;
}

const struct hx_ops hx_cuda_ops = {
    .name = "cuda",
    .module_file = "candidate.cubin",
    .open = cuda_open,
    .close = cuda_close,
    .device_name = cuda_device_name,
    .alloc = cuda_alloc,
    .alloc_size = cuda_alloc_size,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .copy = cuda_copy,
    .fill = cuda_fill,
    .fingerprint = cuda_fingerprint,
    .reload = cuda_reload,
    .prepare = cuda_prepare,
    .run = cuda_run,
    .baseline_open = cuda_baseline_open,
    .baseline_run = cuda_baseline_run,
};
