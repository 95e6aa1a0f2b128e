/*
 * The CUDA harness end to end on the GPU (label gpu): every candidate in
 * tests/evaluator_adversarial/NAME.cu is compiled with nvcc -cubin -arch=sm_90, run by
 * kiln-harness-cuda on the saxpy plan, and must produce exactly the outcome
 * its "// kiln-expect:" line states (and "// kiln-expect-noreload:" with
 * module reloading off). Exits 77 when there is no GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devlimits.h"
#include "gpuinfo.h"
#include "gpupeak.h"
#include "harness_fixture.h"

static const char *const candidates[] = {
    "saxpy_good",      "partial_output",   "replay_previous",     "stash_first",
    "stash_keyed",     "skip_after_first", "out_of_bounds_write", "phase_detect",
    "overwrite_input", "uninit_read",      "half_precision",      "hardcoded_sizes",
    "illegal_address", "too_many_threads", "too_much_smem",       "infinite_loop",
    "stash_slack",     "heap_stash",       "printf_flood",        "input_restore",
};

/* The harness's per-case watchdog in these runs: well under the 20 s alarm. */
#define CASE_TIMEOUT_MS 5000

struct expect {
    char reload[96];
    char noreload[96];
    bool has_dims;
    uint32_t block[3];
    uint32_t smem;
};

static void read_expect(const char *src_path, struct expect *e)
{
    memset(e, 0, sizeof(*e));
    FILE *fp = fopen(src_path, "r");
    assert_non_null(fp);
    char line[512];
    while (fgets(line, sizeof(line), fp)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "// kiln-expect: ", 16) == 0)
            snprintf(e->reload, sizeof(e->reload), "%s", line + 16);
        else if (strncmp(line, "// kiln-expect-noreload: ", 25) == 0)
            snprintf(e->noreload, sizeof(e->noreload), "%s", line + 25);
        else if (sscanf(line, "// kiln-test-dims: block %u %u %u smem %u", &e->block[0],
                        &e->block[1], &e->block[2], &e->smem) == 4)
            e->has_dims = true;
    }
    fclose(fp);
    if (!e->reload[0])
        fail_msg("%s has no // kiln-expect: line", src_path);
}

/* Scans every output of every set: poisoned elements, NaNs, worst error. */
static void scan_outputs(struct fx *f, const struct harness_plan *p, int *poisoned, int *nans,
                         double *max_rel)
{
    *poisoned = *nans = 0;
    *max_rel = 0;
    for (int ci = 0; ci < p->ncases; ci++) {
        const struct harness_case *c = &p->cases[ci];
        for (int s = 0; s < c->nsets; s++) {
            struct tensor t = {0};
            if (fx_output(f, c->name, c->sets[s], "out", &t) != 0)
                continue;
            const float *o = t.data;
            for (size_t i = 0; i < t.count; i++) {
                uint32_t bits;
                memcpy(&bits, &o[i], 4);
                if (bits == 0xFFFFFFFFu) {
                    (*poisoned)++;
                    continue;
                }
                if (isnan(o[i])) {
                    (*nans)++;
                    continue;
                }
                double want = 2.5 * (double)fx_input(c->name, c->sets[s], 'x', (long long)i) +
                              (double)fx_input(c->name, c->sets[s], 'y', (long long)i);
                double rel = fabs((double)o[i] - want) / (fabs(want) + 1e-3);
                if (rel > *max_rel)
                    *max_rel = rel;
            }
            tensor_free(&t);
        }
    }
}

static json_t *failure_of_first_failed(json_t *status)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "cases"), i, c)
    {
        json_t *f = json_object_get(c, "failure");
        if (f && strcmp(json_string_value(json_object_get(c, "status")), "failed") == 0)
            return f;
    }
    return NULL;
}

/* Every candidate runs even after a mismatch, so one GPU session shows all
 * of them; the test fails at the end if any expectation was not met. */
static int mismatches;
#define MISMATCH(...)                                                                              \
    do {                                                                                           \
        print_message("MISMATCH: " __VA_ARGS__);                                                   \
        print_message("\n");                                                                       \
        mismatches++;                                                                              \
    } while (0)

static void check_outcome(const char *name, const char *want, struct fx *f,
                          const struct harness_plan *p, int st)
{
    char kind[64] = "", cuda[64] = "";
    sscanf(want, "%63s %63s", kind, cuda);
    if (strcmp(kind, "timeout") == 0) {
        /* The harness's watchdog, not the alarm, ends it: documents
         * written, exit 0, the case named. */
        json_t *status = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? fx_json(f, "status.json") : NULL;
        json_t *fail = status ? json_object_get(fx_case_status(status, "small"), "failure") : NULL;
        const char *got = fail ? json_string_value(json_object_get(fail, "kind")) : NULL;
        if (!status)
            MISMATCH("%s: expected the watchdog to end the harness (exit 0), got status 0x%x", name,
                     st);
        else if (!got || strcmp(got, "timeout") != 0)
            MISMATCH("%s: expected case small to fail with timeout, got %s", name,
                     got ? got : "(none)");
        else if (!fx_log_contains(f, "case small: timeout"))
            MISMATCH("%s: the log does not say which case timed out", name);
        if (!fx_log_contains(f, "device printf FIFO: 1048576 bytes"))
            MISMATCH("%s: the log does not show the 1 MiB printf FIFO", name);
        json_decref(status);
        return;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        MISMATCH("%s: harness ended with status 0x%x", name, st);
        return;
    }
    json_t *status = fx_json(f, "status.json");
    if (!status) {
        MISMATCH("%s: no status.json", name);
        return;
    }
    json_t *failure = failure_of_first_failed(status);
    int poisoned, nans;
    double max_rel;
    scan_outputs(f, p, &poisoned, &nans, &max_rel);
    bool harness_ok = strcmp(json_string_value(json_object_get(status, "status")), "ok") == 0;
    if (strcmp(kind, "ok") == 0) {
        if (!harness_ok || poisoned || nans || max_rel > 1e-5)
            MISMATCH("%s: expected ok; status %s, %d poisoned, %d NaN, max rel %g", name,
                     json_string_value(json_object_get(status, "status")), poisoned, nans, max_rel);
    } else if (strcmp(kind, "poison") == 0) {
        if (!harness_ok || poisoned == 0)
            MISMATCH("%s: expected poison left in outputs, found %d", name, poisoned);
    } else if (strcmp(kind, "nan_output") == 0) {
        if (!harness_ok || nans == 0)
            MISMATCH("%s: expected NaN outputs, found %d", name, nans);
    } else if (strcmp(kind, "imprecise") == 0) {
        if (!harness_ok || poisoned || max_rel <= 1e-5)
            MISMATCH("%s: expected error beyond 1e-5, max rel %g", name, max_rel);
    } else {
        if (!failure) {
            MISMATCH("%s: expected failure %s, the harness reported none", name, want);
            json_decref(status);
            return;
        }
        const char *got = json_string_value(json_object_get(failure, "kind"));
        if (!got || strcmp(got, kind) != 0)
            MISMATCH("%s: expected failure %s, got %s (%s)", name, kind, got,
                     json_string_value(json_object_get(failure, "detail")));
        if (cuda[0]) {
            const char *gc = json_string_value(json_object_get(failure, "cuda_error"));
            if (!gc || strcmp(gc, cuda) != 0)
                MISMATCH("%s: expected %s, got %s", name, cuda, gc ? gc : "(none)");
        }
        if (strcmp(kind, "cuda_error") == 0) /* the context is gone: later cases skipped */
            assert_string_equal(
                json_string_value(json_object_get(fx_case_status(status, "perf"), "status")),
                "skipped");
    }
    json_decref(status);
}

static void run_candidate(const char *name, bool reload, const char *want, const struct expect *e)
{
    struct fx f;
    struct harness_plan p;
    char src[1024], cmd[4096];
    assert_int_equal(fx_init(&f), 0);
    fx_saxpy_plan(&p, HB_CUDA);
    p.reload = reload;
    p.case_timeout_ms = CASE_TIMEOUT_MS;
    if (e->has_dims)
        for (int ci = 0; ci < p.ncases; ci++) {
            struct harness_dims *d = &p.cases[ci].dims[0];
            uint32_t threads = e->block[0] * e->block[1] * e->block[2];
            uint64_t n = (uint64_t)p.cases[ci].value[0].i;
            d->grid[0] = (uint32_t)((n + threads - 1) / threads);
            memcpy(d->block, e->block, sizeof(d->block));
            d->smem = e->smem;
        }
    assert_int_equal(fx_write_inputs(&f, &p), 0);
    snprintf(src, sizeof(src), "%s/tests/evaluator_adversarial/%s.cu", getenv("KILN_SOURCE_DIR"),
             name);
    snprintf(cmd, sizeof(cmd), "%s -cubin -arch=sm_90 -o %s/candidate.cubin %s",
             getenv("KILN_NVCC"), f.in, src);
    assert_int_equal(system(cmd), 0);
    int st = fx_run_limited(&f, getenv("KILN_HARNESS_CUDA"), &p, 20);
    fprintf(stderr, "# %s (reload %s): expected %s\n", name, reload ? "on" : "off", want);
    check_outcome(name, want, &f, &p, st);
    harness_plan_free(&p);
    fx_cleanup(&f);
}

static void adversarial_candidates(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        char src[1024];
        struct expect e;
        snprintf(src, sizeof(src), "%s/tests/evaluator_adversarial/%s.cu",
                 getenv("KILN_SOURCE_DIR"), candidates[i]);
        read_expect(src, &e);
        run_candidate(candidates[i], true, e.reload, &e);
        if (e.noreload[0])
            run_candidate(candidates[i], false, e.noreload, &e);
    }
    assert_int_equal(mismatches, 0);
}

/* The timing record of the honest kernel matches VERDICT.md's schema. */
static void timings_of_good_kernel(void **state)
{
    (void)state;
    struct fx f;
    struct harness_plan p;
    char cmd[4096];
    assert_int_equal(fx_init(&f), 0);
    fx_saxpy_plan(&p, HB_CUDA);
    assert_int_equal(fx_write_inputs(&f, &p), 0);
    snprintf(
        cmd, sizeof(cmd),
        "%s -cubin -arch=sm_90 -o %s/candidate.cubin %s/tests/evaluator_adversarial/saxpy_good.cu",
        getenv("KILN_NVCC"), f.in, getenv("KILN_SOURCE_DIR"));
    assert_int_equal(system(cmd), 0);
    int st = fx_run(&f, getenv("KILN_HARNESS_CUDA"), &p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    json_t *t = fx_json(&f, "timings.json");
    assert_non_null(t);
    json_t *cases = json_object_get(t, "cases");
    assert_int_equal(json_array_size(cases), 3);
    size_t total = 0, i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        assert_true(json_is_true(json_object_get(c, "fingerprint_ok")));
        assert_true(json_is_true(json_object_get(c, "l2_flush")));
        size_t j;
        json_t *v;
        json_array_foreach(json_object_get(c, "samples_ms"), j, v)
            assert_true(json_real_value(v) > 0 && json_real_value(v) < 100);
        total += json_array_size(json_object_get(c, "samples_ms"));
    }
    assert_int_equal(total, 30);
    json_decref(t);
    json_t *s = fx_json(&f, "status.json");
    assert_non_null(strstr(json_string_value(json_object_get(s, "device")), "NVIDIA"));
    json_decref(s);
    harness_plan_free(&p);
    fx_cleanup(&f);
}

/* Issue 13 item 5: the physics floor's inputs come from the device. The
 * probe's output parses with the parser sessions use (its first line the
 * peaks', since #30 a second line of launch limits), gives plausible peaks,
 * and on an H200 the flop ceiling is the dense TF32 peak (>= 494.7 TFLOP/s),
 * not 51, and the limits are the H200's own, marked as queried. */
static void device_props_give_the_floor(void **state)
{
    (void)state;
    struct gpuinfo g[GPUINFO_MAX];
    size_t ng = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(gpuinfo_list("/proc", g, &ng, &e), KILN_OK);
    assert_true(ng > 0);
    char cmd[1024], line[512] = "";
    snprintf(cmd, sizeof(cmd), "%s --device-props %s", getenv("KILN_HARNESS_CUDA"), g[0].bus_id);
    FILE *pp = popen(cmd, "r");
    assert_non_null(pp);
    size_t n = fread(line, 1, sizeof(line) - 1, pp);
    line[n] = '\0';
    assert_int_equal(pclose(pp), 0);
    fprintf(stderr, "# %s: %s", g[0].model, line);
    struct gpu_props props;
    struct gpu_peaks peaks;
    struct device_limits lim;
    assert_int_equal(devprobe_parse(line, &props, &lim, &e), KILN_OK);
    assert_true(lim.queried);
    assert_int_equal(lim.cc, props.cc_major * 10 + props.cc_minor);
    assert_true(lim.max_threads_per_block >= 1024 && lim.max_smem_optin >= 48 * 1024);
    assert_int_equal(gpupeak_compute(&props, &peaks, &e), KILN_OK);
    assert_true(peaks.bytes_per_s > 1e11);
    /* The measured copy: real, and below the nominal peak it is shown beside. */
    assert_true(props.copy_mb_per_s > 0);
    assert_true(props.copy_mb_per_s * 1e6 < peaks.bytes_per_s * 1.02);
    assert_true(peaks.flop_per_s > 1e12);
    if (strstr(g[0].model, "H200") || strstr(g[0].model, "H100")) {
        assert_int_equal(props.cc_major, 9);
        assert_true(peaks.flop_per_s >= 494.7e12);
        assert_true(peaks.bytes_per_s >= 3.3e12);
        const struct device_limits h200 = DEVICE_LIMITS_H200;
        assert_int_equal(lim.max_smem_optin, h200.max_smem_optin);
        assert_int_equal(lim.max_regs_per_sm, h200.max_regs_per_sm);
        assert_int_equal(lim.max_threads_per_sm, h200.max_threads_per_sm);
    }
}

int main(void)
{
    if (access("/dev/nvidiactl", F_OK) != 0) {
        printf("skipped: no NVIDIA GPU here (/dev/nvidiactl is absent)\n");
        return 77;
    }
    if (!getenv("KILN_HARNESS_CUDA") || !getenv("KILN_NVCC") || !getenv("KILN_SOURCE_DIR")) {
        fprintf(stderr, "run through ctest (KILN_HARNESS_CUDA, KILN_NVCC, KILN_SOURCE_DIR)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_props_give_the_floor),
        cmocka_unit_test(timings_of_good_kernel),
        cmocka_unit_test(adversarial_candidates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
