/*
 * hx_cublaslt.c - the cuBLASLt bf16 GEMM baseline (hx_cublaslt.h). The few
 * entry points, enums and the heuristic result's layout are declared here
 * from cublasLt.h's documented C ABI (enums are ints, descriptors opaque
 * pointers, a cudaStream_t is a CUstream) rather than included, so nothing
 * links against cuBLASLt.
 */
#include "hx_cublaslt.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cublasLt.h, library_types.h and cublas_api.h (CUDA 11 to 13). */
#define LT_COMPUTE_32F        68 /* CUBLAS_COMPUTE_32F: float32 accumulation */
#define LT_R_32F              0  /* CUDA_R_32F */
#define LT_R_16BF             14 /* CUDA_R_16BF */
#define LT_PREF_MAX_WORKSPACE 1  /* CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES */

/* cublasLtMatmulHeuristicResult_t: the algorithm (64 opaque bytes), its
 * workspace, its status, waves, reserved. */
struct lt_heuristic {
    uint64_t algo[8];
    size_t workspace;
    int state;
    float waves;
    int reserved[4];
};

typedef int (*lt_create_fn)(void **handle);
typedef int (*lt_destroy_fn)(void *handle);
typedef size_t (*lt_version_fn)(void);
typedef int (*lt_desc_create_fn)(void **desc, int compute, int scale);
typedef int (*lt_destroy_obj_fn)(void *obj);
typedef int (*lt_layout_create_fn)(void **layout, int type, uint64_t rows, uint64_t cols,
                                   int64_t ld);
typedef int (*lt_pref_create_fn)(void **pref);
typedef int (*lt_pref_set_fn)(void *pref, int attr, const void *buf, size_t size);
typedef int (*lt_heuristic_fn)(void *handle, void *desc, void *a, void *b, void *c, void *d,
                               void *pref, int requested, struct lt_heuristic *results,
                               int *returned);
typedef int (*lt_matmul_fn)(void *handle, void *desc, const void *alpha, const void *A, void *adesc,
                            const void *B, void *bdesc, const void *beta, const void *C,
                            void *cdesc, void *D, void *ddesc, const void *algo, void *workspace,
                            size_t workspace_size, CUstream stream);

struct hx_cublaslt {
    void *lib, *handle;
    CUdeviceptr workspace;
    lt_destroy_fn destroy;
    lt_desc_create_fn desc_create;
    lt_destroy_obj_fn desc_destroy, layout_destroy, pref_destroy;
    lt_layout_create_fn layout_create;
    lt_pref_create_fn pref_create;
    lt_pref_set_fn pref_set;
    lt_heuristic_fn heuristic;
    lt_matmul_fn matmul;
    /* The prepared shape and its objects (NULL when none). */
    int64_t m, n, k;
    void *desc, *adesc, *bdesc, *cdesc;
    struct lt_heuristic best;
};

/* dlsym into a function pointer (POSIX guarantees the conversion; memcpy
 * keeps ISO C quiet), noting a missing symbol. */
#define LT_SYM(lib, fn, name, missing)                                                             \
    do {                                                                                           \
        void *f_ = dlsym((lib), (name));                                                           \
        (missing) = (missing) || !f_;                                                              \
        memcpy(&(fn), &f_, sizeof(f_));                                                            \
    } while (0)

static void drop_shape(struct hx_cublaslt *lt)
{
    void **objs[] = {&lt->adesc, &lt->bdesc, &lt->cdesc};
    for (size_t i = 0; i < 3; i++)
        if (*objs[i])
            lt->layout_destroy(*objs[i]);
    if (lt->desc)
        lt->desc_destroy(lt->desc);
    lt->desc = lt->adesc = lt->bdesc = lt->cdesc = NULL;
    lt->m = lt->n = lt->k = 0;
}

void hx_cublaslt_unload(struct hx_cublaslt *lt)
{
    if (!lt)
        return;
    if (lt->handle) {
        drop_shape(lt);
        lt->destroy(lt->handle);
    }
    if (lt->workspace)
        cuMemFree(lt->workspace);
    if (lt->lib)
        dlclose(lt->lib);
    free(lt);
}

static void *open_library(char *why, size_t cap)
{
    const int majors[] = {CUDA_VERSION / 1000, 13, 12, 11};
    char name[32], tried[160] = "", first[240] = "?";
    for (size_t i = 0; i < sizeof(majors) / sizeof(majors[0]); i++) {
        if (i > 0 && majors[i] == majors[0])
            continue;
        snprintf(name, sizeof(name), "libcublasLt.so.%d", majors[i]);
        void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (lib)
            return lib;
        const char *e = dlerror(); /* gone after the next dlopen: copied */
        if (i == 0 && e)
            snprintf(first, sizeof(first), "%s", e);
        size_t n = strlen(tried);
        snprintf(tried + n, sizeof(tried) - n, "%s%s", n ? ", " : "", name);
    }
    snprintf(why, cap,
             "cannot load cuBLASLt (tried %s): %.200s; the gpu-run image must expose the CUDA "
             "toolkit's lib64 directory (LD_LIBRARY_PATH)",
             tried, first);
    return NULL;
}

struct hx_cublaslt *hx_cublaslt_load(char *why, size_t why_cap, char *note, size_t note_cap)
{
    struct hx_cublaslt *lt = calloc(1, sizeof(*lt));
    if (!lt) {
        snprintf(why, why_cap, "out of memory for cuBLASLt");
        return NULL;
    }
    if (!(lt->lib = open_library(why, why_cap))) {
        free(lt);
        return NULL;
    }
    bool missing = false;
    lt_create_fn create;
    lt_version_fn version;
    LT_SYM(lt->lib, create, "cublasLtCreate", missing);
    LT_SYM(lt->lib, lt->destroy, "cublasLtDestroy", missing);
    LT_SYM(lt->lib, version, "cublasLtGetVersion", missing);
    LT_SYM(lt->lib, lt->desc_create, "cublasLtMatmulDescCreate", missing);
    LT_SYM(lt->lib, lt->desc_destroy, "cublasLtMatmulDescDestroy", missing);
    LT_SYM(lt->lib, lt->layout_create, "cublasLtMatrixLayoutCreate", missing);
    LT_SYM(lt->lib, lt->layout_destroy, "cublasLtMatrixLayoutDestroy", missing);
    LT_SYM(lt->lib, lt->pref_create, "cublasLtMatmulPreferenceCreate", missing);
    LT_SYM(lt->lib, lt->pref_destroy, "cublasLtMatmulPreferenceDestroy", missing);
    LT_SYM(lt->lib, lt->pref_set, "cublasLtMatmulPreferenceSetAttribute", missing);
    LT_SYM(lt->lib, lt->heuristic, "cublasLtMatmulAlgoGetHeuristic", missing);
    LT_SYM(lt->lib, lt->matmul, "cublasLtMatmul", missing);
    int st = 0;
    CUresult r = CUDA_SUCCESS;
    if (missing)
        snprintf(why, why_cap, "a cuBLASLt entry point is missing");
    else if ((st = create(&lt->handle)) != 0)
        snprintf(why, why_cap, "cublasLtCreate failed (cublasStatus_t %d)", st);
    else if ((r = cuMemAlloc(&lt->workspace, HX_CUBLASLT_WORKSPACE)) != CUDA_SUCCESS)
        snprintf(why, why_cap, "cuMemAlloc of the %zu MiB workspace failed (CUresult %d)",
                 HX_CUBLASLT_WORKSPACE >> 20, (int)r);
    if (missing || st != 0 || r != CUDA_SUCCESS) {
        if (st != 0)
            lt->handle = NULL; /* nothing to destroy */
        hx_cublaslt_unload(lt);
        return NULL;
    }
    snprintf(note, note_cap,
             "baseline: cuBLASLt %zu loaded, bf16 in and out, CUBLAS_COMPUTE_32F, %zu MiB "
             "workspace\n",
             version(), HX_CUBLASLT_WORKSPACE >> 20);
    return lt;
}

/* Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T: cuBLASLt's
 * A is our B (n x k, ld n), its B our A (k x m, ld k), C n x m, ld n. */
static int make_shape(struct hx_cublaslt *lt, int64_t m, int64_t n, int64_t k, const char **step)
{
    int st;
    *step = "cublasLtMatmulDescCreate";
    if ((st = lt->desc_create(&lt->desc, LT_COMPUTE_32F, LT_R_32F)) != 0)
        return st;
    *step = "cublasLtMatrixLayoutCreate";
    if ((st = lt->layout_create(&lt->adesc, LT_R_16BF, (uint64_t)n, (uint64_t)k, n)) != 0 ||
        (st = lt->layout_create(&lt->bdesc, LT_R_16BF, (uint64_t)k, (uint64_t)m, k)) != 0 ||
        (st = lt->layout_create(&lt->cdesc, LT_R_16BF, (uint64_t)n, (uint64_t)m, n)) != 0)
        return st;
    void *pref = NULL;
    size_t ws = HX_CUBLASLT_WORKSPACE;
    int got = 0;
    *step = "cublasLtMatmulPreference";
    if ((st = lt->pref_create(&pref)) != 0)
        return st;
    if ((st = lt->pref_set(pref, LT_PREF_MAX_WORKSPACE, &ws, sizeof(ws))) == 0) {
        *step = "cublasLtMatmulAlgoGetHeuristic";
        st = lt->heuristic(lt->handle, lt->desc, lt->adesc, lt->bdesc, lt->cdesc, lt->cdesc, pref,
                           1, &lt->best, &got);
    }
    lt->pref_destroy(pref);
    if (st == 0 && (got < 1 || lt->best.state != 0))
        st = -1;
    return st;
}

int hx_cublaslt_prepare(struct hx_cublaslt *lt, int64_t m, int64_t n, int64_t k, const char **step)
{
    *step = "";
    if (lt->desc && lt->m == m && lt->n == n && lt->k == k)
        return 0;
    drop_shape(lt);
    int st = make_shape(lt, m, n, k, step);
    if (st != 0) {
        drop_shape(lt);
        return st;
    }
    lt->m = m, lt->n = n, lt->k = k;
    return 0;
}

int hx_cublaslt_run(struct hx_cublaslt *lt, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C,
                    CUstream stream)
{
    const float alpha = 1.0f, beta = 0.0f;
    if (!lt->desc)
        return -1;
    return lt->matmul(lt->handle, lt->desc, &alpha, (const void *)(uintptr_t)B, lt->adesc,
                      (const void *)(uintptr_t)A, lt->bdesc, &beta, (const void *)(uintptr_t)C,
                      lt->cdesc, (void *)(uintptr_t)C, lt->cdesc, lt->best.algo,
                      (void *)(uintptr_t)lt->workspace, HX_CUBLASLT_WORKSPACE, stream);
}
