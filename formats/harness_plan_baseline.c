/*
 * harness_plan_baseline.c - baseline plans (HARNESS.md section 7): the
 * harness times a vendor operation (a device-to-device copy, cuBLAS SGEMM,
 * a cuBLASLt bf16 GEMM) per case instead of a candidate. Same strictness as the candidate plan:
 * unknown keys and candidate-only keys are refused, every number is
 * range-checked, every case's buffers are capped.
 */
#include "harness_plan_baseline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const baseline_names[] = {NULL, "memcpy", "cublas_sgemm", "cublaslt_bf16"};

const char *harness_baseline_name(enum harness_baseline b)
{
    return b == HBL_MEMCPY || harness_baseline_is_gemm(b) ? baseline_names[b] : NULL;
}

bool harness_baseline_is_gemm(enum harness_baseline b)
{
    return b == HBL_CUBLAS_SGEMM || b == HBL_CUBLASLT_BF16;
}

/* a * b, or UINT64_MAX when it overflows. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t harness_baseline_case_bytes(enum harness_baseline b, const int64_t v[3])
{
    for (int i = 0; i < (harness_baseline_is_gemm(b) ? 3 : 1); i++)
        if (v[i] < 0)
            return UINT64_MAX;
    if (b == HBL_MEMCPY)
        return add_sat((uint64_t)v[0], (uint64_t)v[0] & 1); /* 2 * ceil(bytes / 2) */
    if (!harness_baseline_is_gemm(b))
        return UINT64_MAX;
    uint64_t m = (uint64_t)v[0], n = (uint64_t)v[1], k = (uint64_t)v[2];
    uint64_t elems = add_sat(add_sat(mul_sat(m, k), mul_sat(k, n)), mul_sat(m, n));
    return mul_sat(elems, b == HBL_CUBLAS_SGEMM ? 4 : 2);
}

enum kiln_rc harness_plan_validate_baseline(const struct harness_plan *p, struct kiln_err *err)
{
    const char *kind = harness_baseline_name(p->baseline);
    if (!kind)
        return kiln_fail(err, KILN_E_REJECTED, "plan: unknown baseline");
    if (p->ncases < 1 || p->ncases > HARNESS_PLAN_MAX_CASES)
        return kiln_fail(err, KILN_E_REJECTED, "plan: cases must have 1 .. %d entries",
                         HARNESS_PLAN_MAX_CASES);
    for (int i = 0; i < p->ncases; i++) {
        const struct harness_case *c = &p->cases[i];
        if (!harness_plan_name_ok(c->name))
            return kiln_fail(err, KILN_E_REJECTED, "case name \"%.40s\" is not [a-z0-9_]{1,32}",
                             c->name);
        for (int j = 0; j < i; j++)
            if (strcmp(c->name, p->cases[j].name) == 0)
                return kiln_fail(err, KILN_E_REJECTED, "plan: case %s listed twice", c->name);
        if (!c->timed || c->nsets != 0)
            return kiln_fail(err, KILN_E_REJECTED,
                             "plan: baseline case %s must be timed and have no input sets",
                             c->name);
        if (p->baseline == HBL_MEMCPY && c->baseline[0] < 1)
            return kiln_fail(err, KILN_E_REJECTED, "plan: case %s: memcpy bytes must be >= 1",
                             c->name);
        for (int d = 0; harness_baseline_is_gemm(p->baseline) && d < 3; d++)
            if (c->baseline[d] < 1 || c->baseline[d] > INT32_MAX)
                return kiln_fail(err, KILN_E_REJECTED,
                                 "plan: case %s: %s m, n and k must be 1 .. 2^31-1", c->name, kind);
        uint64_t bytes = harness_baseline_case_bytes(p->baseline, c->baseline);
        if (bytes > HARNESS_PLAN_MAX_CASE_BYTES)
            return kiln_fail(err, KILN_E_LIMIT,
                             "plan: case %s: the %s baseline needs %llu bytes of buffers (at "
                             "most 4 GiB)",
                             c->name, kind, (unsigned long long)bytes);
    }
    return KILN_OK;
}

static enum kiln_rc parse_case(json_t *e, enum harness_baseline b, struct harness_case *c,
                               struct kiln_err *err)
{
    static const char *const dims[] = {"m", "n", "k"};
    const char *key;
    json_t *v;
    if (!json_is_object(e))
        return kiln_fail(err, KILN_E_PARSE, "plan: each case must be an object");
    json_t *name = json_object_get(e, "name");
    if (!json_is_string(name) || json_string_length(name) >= HARNESS_PLAN_CASE_MAX ||
        strlen(json_string_value(name)) != json_string_length(name))
        return kiln_fail(err, KILN_E_PARSE, "plan: case: \"name\" must be a short string");
    memcpy(c->name, json_string_value(name), json_string_length(name) + 1);
    size_t want = b == HBL_MEMCPY ? 2 : 4;
    json_object_foreach(e, key, v)
    {
        int slot = -1;
        if (strcmp(key, "name") == 0)
            continue;
        if (b == HBL_MEMCPY && strcmp(key, "bytes") == 0)
            slot = 0;
        for (int d = 0; harness_baseline_is_gemm(b) && d < 3; d++)
            if (strcmp(key, dims[d]) == 0)
                slot = d;
        if (slot < 0)
            return kiln_fail(err, KILN_E_PARSE, "plan: case %s: unknown key \"%.64s\" for %s",
                             c->name, key, harness_baseline_name(b));
        if (!json_is_integer(v))
            return kiln_fail(err, KILN_E_PARSE, "plan: case %s: \"%s\" must be an integer", c->name,
                             key);
        c->baseline[slot] = json_integer_value(v);
    }
    if (json_object_size(e) != want)
        return kiln_fail(err, KILN_E_PARSE, "plan: case %s: %s needs %s", c->name,
                         harness_baseline_name(b),
                         b == HBL_MEMCPY ? "\"bytes\"" : "\"m\", \"n\" and \"k\"");
    c->timed = true;
    return KILN_OK;
}

enum kiln_rc harness_plan_parse_baseline(json_t *root, struct harness_plan *p, struct kiln_err *err)
{
    static const char *const candidate_only[] = {"signature", "launches", "reload", "guard_bytes",
                                                 NULL};
    for (const char *const *k = candidate_only; *k; k++)
        if (json_object_get(root, *k))
            return kiln_fail(err, KILN_E_PARSE, "plan: \"%s\" has no place in a baseline plan", *k);
    json_t *kind = json_object_get(root, "baseline");
    const char *name = json_string_value(kind);
    if (name && strcmp(name, "memcpy") == 0)
        p->baseline = HBL_MEMCPY;
    else if (name && strcmp(name, "cublas_sgemm") == 0)
        p->baseline = HBL_CUBLAS_SGEMM;
    else if (name && strcmp(name, "cublaslt_bf16") == 0)
        p->baseline = HBL_CUBLASLT_BF16;
    else
        return kiln_fail(err, KILN_E_REJECTED,
                         "plan: \"baseline\" must be \"memcpy\", "
                         "\"cublas_sgemm\" or \"cublaslt_bf16\"");
    json_t *cases = json_object_get(root, "cases");
    if (!json_is_array(cases) || json_array_size(cases) < 1 ||
        json_array_size(cases) > HARNESS_PLAN_MAX_CASES)
        return kiln_fail(err, KILN_E_PARSE, "plan: \"cases\" must be an array of 1 .. %d",
                         HARNESS_PLAN_MAX_CASES);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        struct harness_case *c;
        enum kiln_rc rc;
        if ((rc = harness_plan_add_case(p, &c, err)) ||
            (rc = parse_case(json_array_get(cases, i), p->baseline, c, err)))
            return rc;
    }
    return harness_plan_validate(p, err);
}

enum kiln_rc harness_plan_write_baseline(const struct harness_plan *p, char **out,
                                         struct kiln_err *err)
{
    *out = NULL;
    json_t *root = json_pack("{s:i,s:s,s:i,s:i,s:b,s:s}", "kiln_plan", HARNESS_PLAN_VERSION,
                             "backend", p->backend == HB_CUDA ? "cuda" : "cpu", "warmups",
                             p->warmups, "iterations", p->iterations, "l2_flush", p->l2_flush,
                             "baseline", harness_baseline_name(p->baseline));
    json_t *cases = json_array();
    bool ok = root && cases;
    if (ok && p->adaptive)
        ok =
            json_object_set_new(root, "adaptive",
                                json_pack("{s:f,s:f,s:i}", "target_rse", p->target_rse, "budget_ms",
                                          p->budget_ms, "max_iterations", p->max_iterations)) == 0;
    if (ok)
        ok = json_object_set_new(root, "case_timeout_ms", json_integer(p->case_timeout_ms)) == 0;
    if (ok && p->deadline_ms > 0)
        ok = json_object_set_new(root, "deadline_ms", json_integer(p->deadline_ms)) == 0;
    for (int i = 0; ok && i < p->ncases; i++) {
        const struct harness_case *c = &p->cases[i];
        json_t *e =
            p->baseline == HBL_MEMCPY
                ? json_pack("{s:s,s:I}", "name", c->name, "bytes", (json_int_t)c->baseline[0])
                : json_pack("{s:s,s:I,s:I,s:I}", "name", c->name, "m", (json_int_t)c->baseline[0],
                            "n", (json_int_t)c->baseline[1], "k", (json_int_t)c->baseline[2]);
        ok = e && json_array_append_new(cases, e) == 0;
    }
    if (ok) {
        ok = json_object_set_new(root, "cases", cases) == 0;
        cases = NULL;
    }
    if (ok)
        *out = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(cases);
    json_decref(root);
    if (!*out)
        return kiln_fail(err, KILN_E_NOMEM, "plan: out of memory writing the baseline plan");
    return KILN_OK;
}
