/*
 * hx_baseline.c - baseline mode: time a vendor operation (a copy, cuBLAS
 * SGEMM, a cuBLASLt bf16 GEMM; on the cpu, memcpy and a C bf16 GEMM) per
 * case the way hx_core.c times a candidate (HARNESS.md section 7 says what
 * differs: no module, no input sets, no outputs, no fingerprints).
 */
#include "hx_baseline.h"
#include "hx_bf16.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BL_CHUNK_FLOATS (1u << 20) /* host staging for the random matrices */

/* The outcome of one case, for status.json and timings.json. */
struct bl_run {
    const struct harness_case *c;
    hx_addr buf[3];
    uint64_t bytes[3];
    int nbuf;
    double *samples;
    int nsamples;
    int warmups_done;
    bool failed;
    enum failure_kind kind;
    char cuda_error[64];
    const char *phase;
    int run;
    char detail[256];
};

static void bl_log(struct hx_bl *x, const char *fmt, ...) KILN_PRINTF(2, 3);

static void bl_log(struct hx_bl *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hx_log_vline(x->log_fd, x->t0_ms, fmt, ap);
    va_end(ap);
}

static void bl_fail(struct bl_run *r, const struct hx_fault *f, const char *phase, int run,
                    const char *detail)
{
    r->failed = true;
    r->kind = f && f->kind ? f->kind : FK_CUDA_ERROR;
    snprintf(r->cuda_error, sizeof(r->cuda_error), "%s", f ? f->cuda_error : "");
    r->phase = phase;
    r->run = run;
    snprintf(r->detail, sizeof(r->detail), "%s", detail);
}

/* Uniform floats in [-1, 1) from a fixed xorshift64* stream: the values
 * only have to be ordinary (no zeros, denormals or NaNs that would change
 * the arithmetic's speed), not secret. `elem` 4: float32; 2: bfloat16. */
static enum kiln_rc fill_random(struct hx_bl *x, hx_addr dst, uint64_t count, int elem,
                                uint64_t *state, struct kiln_err *err)
{
    unsigned char *chunk = malloc(sizeof(float) * BL_CHUNK_FLOATS);
    if (!chunk)
        return kiln_fail(err, KILN_E_NOMEM, "baseline: out of memory for the input staging");
    enum kiln_rc rc = KILN_OK;
    for (uint64_t done = 0; rc == KILN_OK && done < count;) {
        uint64_t n = count - done < BL_CHUNK_FLOATS ? count - done : BL_CHUNK_FLOATS;
        for (uint64_t i = 0; i < n; i++) {
            *state ^= *state >> 12;
            *state ^= *state << 25;
            *state ^= *state >> 27;
            uint64_t r = *state * 0x2545F4914F6CDD1DULL;
            float f = (float)((double)(r >> 40) * 0x1p-23 - 1.0);
            if (elem == 2) {
                uint16_t h = hx_bf16_from_float(f);
                memcpy(chunk + 2 * i, &h, 2);
            } else {
                memcpy(chunk + 4 * i, &f, 4);
            }
        }
        rc = x->ops->upload(x->be, dst + (uint64_t)elem * done, chunk, (uint64_t)elem * n, err);
        done += n;
    }
    free(chunk);
    return rc;
}

/* The case's buffers: memcpy {dst, src}; the matrix products {A, B, C},
 * float32 for cublas_sgemm, bfloat16 for cublaslt_bf16. */
static enum kiln_rc set_up(struct hx_bl *x, struct bl_run *r, struct kiln_err *err)
{
    const int64_t *v = r->c->baseline;
    int elem = x->plan->baseline == HBL_CUBLASLT_BF16 ? 2 : 4;
    enum kiln_rc rc;
    if (x->plan->baseline == HBL_MEMCPY) {
        r->nbuf = 2;
        r->bytes[0] = r->bytes[1] = (uint64_t)v[0] / 2 + (uint64_t)v[0] % 2;
    } else {
        uint64_t m = (uint64_t)v[0], n = (uint64_t)v[1], k = (uint64_t)v[2];
        r->nbuf = 3;
        r->bytes[0] = (uint64_t)elem * m * k;
        r->bytes[1] = (uint64_t)elem * k * n;
        r->bytes[2] = (uint64_t)elem * m * n;
    }
    for (int i = 0; i < r->nbuf; i++)
        if ((rc = x->ops->alloc(x->be, r->bytes[i], &r->buf[i], err)) != KILN_OK)
            return rc;
    if (x->plan->baseline == HBL_MEMCPY)
        return (rc = x->ops->fill(x->be, r->buf[0], 0, r->bytes[0], err))
                   ? rc
                   : x->ops->fill(x->be, r->buf[1], 0x5A, r->bytes[1], err);
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    if ((rc = fill_random(x, r->buf[0], r->bytes[0] / (uint64_t)elem, elem, &state, err)) ||
        (rc = fill_random(x, r->buf[1], r->bytes[1] / (uint64_t)elem, elem, &state, err)))
        return rc;
    return x->ops->fill(x->be, r->buf[2], 0, r->bytes[2], err);
}

/* Relative standard error of the mean of the samples so far. */
static double samples_rse(const double *s, int n)
{
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++)
        sum += s[i];
    if (n < 2 || sum <= 0)
        return INFINITY;
    double mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (s[i] - mean) * (s[i] - mean);
    return sqrt(sq / (n - 1)) / sqrt((double)n) / mean;
}

/* One run: outside the timed region prepare() (flush, or the hot mode's
 * spin), then the backend's timed execution. A failure is recorded in `r`. */
static enum kiln_rc run_once(struct hx_bl *x, struct bl_run *r, const char *phase, int run,
                             double *ms, struct kiln_err *err)
{
    struct hx_fault fault = {0};
    x->where->phase = phase;
    x->where->run = run;
    enum kiln_rc rc = x->ops->prepare(x->be, x->plan->l2_flush, err);
    if (rc == KILN_OK)
        rc = x->ops->baseline_run(x->be, x->plan->baseline, r->c, r->buf, ms, &fault, err);
    if (rc == KILN_E_REJECTED || rc == KILN_E_CUDA) {
        bl_fail(r, &fault, phase, run, err->msg);
        kiln_err_clear(err);
        if (fault.broken)
            *x->broken = true;
        return KILN_OK;
    }
    return rc;
}

/* Warmups, then measured runs with the candidate's stopping rule. */
static enum kiln_rc time_runs(struct hx_bl *x, struct bl_run *r, struct kiln_err *err)
{
    const struct harness_plan *p = x->plan;
    int maxn = p->adaptive ? p->max_iterations : p->iterations;
    enum kiln_rc rc;
    double ms;
    r->samples = malloc(sizeof(double) * (size_t)maxn);
    if (!r->samples)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory for %d samples", maxn);
    bl_log(x, "case %s: %d warmups", r->c->name, p->warmups);
    for (int w = 0; w < p->warmups; w++) {
        if ((rc = run_once(x, r, "warmup", w, &ms, err)) || r->failed)
            return rc;
        r->warmups_done++;
    }
    bl_log(x, "case %s: timing (%s, at most %d runs)", r->c->name,
           p->adaptive ? "adaptive" : "fixed", maxn);
    double start = hx_now_ms(), timed = 0;
    for (int i = 0; i < maxn; i++) {
        if ((rc = run_once(x, r, "timed", i, &ms, err)) || r->failed)
            return rc;
        r->samples[r->nsamples++] = ms;
        timed += ms;
        if (p->adaptive && i + 1 >= p->iterations &&
            (samples_rse(r->samples, r->nsamples) < p->target_rse ||
             hx_adaptive_spent(p, timed, hx_now_ms() - start)))
            break;
    }
    return KILN_OK;
}

static void record(struct hx_bl *x, const struct bl_run *r, const char *status)
{
    json_t *st = json_pack("{s:s,s:s}", "case", r->c->name, "status", status);
    if (st && r->failed) {
        json_t *f =
            json_pack("{s:s,s:s,s:s,s:i,s:s}", "kind", failure_kind_name(r->kind), "phase",
                      r->phase ? r->phase : "setup", "set", "", "run", r->run, "detail", r->detail);
        if (f && r->cuda_error[0])
            json_object_set_new(f, "cuda_error", json_string(r->cuda_error));
        json_object_set_new(st, "failure", f);
    }
    json_array_append_new(x->status, st);
    if (r->nsamples == 0)
        return;
    json_t *samples = json_array();
    for (int i = 0; samples && i < r->nsamples; i++)
        json_array_append_new(samples, json_real(r->samples[i]));
    /* One series per case, as input set 0; nothing the candidate-only
     * checks could fail, so fingerprint_ok is true. */
    json_array_append_new(x->timings,
                          json_pack("{s:s,s:i,s:o,s:b,s:i,s:b}", "case", r->c->name, "set", 0,
                                    "samples_ms", samples, "fingerprint_ok", 1, "warmup",
                                    r->warmups_done, "l2_flush", x->plan->l2_flush));
}

enum kiln_rc hx_baseline_case(struct hx_bl *x, const struct harness_case *c, struct kiln_err *err)
{
    struct bl_run r = {.c = c};
    const char *kind = harness_baseline_name(x->plan->baseline);
    x->where->case_name = c->name;
    x->where->set_name = "-";
    x->where->phase = "setup";
    x->where->run = 0;
    x->where->launch = -1;
    if (*x->broken) {
        snprintf(r.detail, sizeof(r.detail), "not run: the device failed in an earlier case");
        record(x, &r, "skipped");
        return KILN_OK;
    }
    if (x->plan->baseline == HBL_MEMCPY)
        bl_log(x, "case %s: baseline memcpy of %lld bytes read plus written", c->name,
               (long long)c->baseline[0]);
    else
        bl_log(x, "case %s: baseline %s m %lld n %lld k %lld", c->name, kind,
               (long long)c->baseline[0], (long long)c->baseline[1], (long long)c->baseline[2]);
    struct hx_fault fault = {0};
    enum kiln_rc rc = x->ops->baseline_open(x->be, x->plan->baseline, &fault, err);
    if (rc == KILN_E_REJECTED || rc == KILN_E_CUDA) {
        bl_fail(&r, &fault, "setup", 0, err->msg);
        kiln_err_clear(err);
        rc = KILN_OK;
    } else if (rc == KILN_OK && (rc = set_up(x, &r, err)) == KILN_OK) {
        rc = time_runs(x, &r, err);
    }
    if (rc != KILN_OK) {
        bl_log(x, "case %s: harness error: %s", c->name, err->msg);
    } else {
        if (r.failed)
            *x->any_failed = true;
        if (r.failed)
            bl_log(x, "case %s: FAILED: %s: %s", c->name, failure_kind_name(r.kind), r.detail);
        else
            bl_log(x, "case %s: ok", c->name);
        record(x, &r, r.failed ? "failed" : "ok");
    }
    for (int i = 0; i < r.nbuf && !*x->broken; i++)
        if (r.buf[i])
            x->ops->release(x->be, r.buf[i]);
    free(r.samples);
    return rc;
}
