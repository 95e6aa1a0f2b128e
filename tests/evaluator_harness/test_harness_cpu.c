/*
 * The CPU harness end to end: each test compiles a small C candidate with
 * kiln's trampoline, lays out inputs like /in, runs kiln-harness-cpu and
 * asserts exactly what it reported and wrote.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cpu_trampoline.h"
#include "harness_fixture.h"

#define SAXPY_HEAD "void saxpy(long long n, float a, const float *x, const float *y, float *out)\n"

static const char *good_src = SAXPY_HEAD "{ for (long long i = 0; i < n; i++) out[i] = a * x[i] + "
                                         "y[i]; }\n";

static const char *harness_path(void)
{
    return getenv("KILN_HARNESS_CPU");
}

/* Compiles `src` with the plan's trampoline into in/candidate.so. */
static void build_candidate(struct fx *f, const struct harness_plan *p, const char *src,
                            const char *extra, bool with_trampoline)
{
    char path[512], cmd[2048];
    char *tramp = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(cpu_trampoline_source(p, &tramp, &err), KILN_OK);
    snprintf(path, sizeof(path), "%s/cand.c", f->root);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(src, fp);
    fclose(fp);
    snprintf(path, sizeof(path), "%s/tramp.c", f->root);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(tramp, fp);
    fclose(fp);
    free(tramp);
    snprintf(cmd, sizeof(cmd), "cc -O2 -shared -fPIC %s -o %s/candidate.so %s/cand.c %s",
             extra ? extra : "", f->in, f->root, with_trampoline ? "" : "-DNO_TRAMPOLINE");
    if (with_trampoline)
        snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " %s/tramp.c", f->root);
    assert_int_equal(system(cmd), 0);
}

struct env {
    struct fx f;
    struct harness_plan p;
};

static int setup(void **state)
{
    if (!harness_path()) {
        fprintf(stderr, "KILN_HARNESS_CPU is not set (run through ctest)\n");
        return -1;
    }
    struct env *e = calloc(1, sizeof(*e));
    if (!e || fx_init(&e->f) != 0)
        return -1;
    fx_saxpy_plan(&e->p, HB_CPU);
    e->p.l2_flush = false; /* fast; the good-candidate test turns it on */
    if (fx_write_inputs(&e->f, &e->p) != 0)
        return -1;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    fx_cleanup(&e->f);
    harness_plan_free(&e->p);
    free(e);
    return 0;
}

/* Runs the harness and expects it to finish normally with exit 0. */
static json_t *run_ok(struct env *e)
{
    int st = fx_run(&e->f, harness_path(), &e->p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "harness status 0x%x\n", st);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    json_t *status = fx_json(&e->f, "status.json");
    assert_non_null(status);
    return status;
}

static void assert_case(json_t *status, const char *name, const char *want_status,
                        const char *want_kind)
{
    json_t *c = fx_case_status(status, name);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "status")), want_status);
    json_t *f = json_object_get(c, "failure");
    if (want_kind) {
        assert_non_null(f);
        assert_string_equal(json_string_value(json_object_get(f, "kind")), want_kind);
    } else {
        assert_null(f);
    }
}

static void check_saxpy_output(struct env *e, const char *case_name, const char *set, long long n,
                               long long written)
{
    struct tensor t = {0};
    assert_int_equal(fx_output(&e->f, case_name, set, "out", &t), 0);
    assert_int_equal(t.dtype, DT_FLOAT32);
    assert_int_equal(t.ndim, 1);
    assert_int_equal(t.shape[0], n);
    const float *o = t.data;
    for (long long i = 0; i < n; i++) {
        if (i < written) {
            float want = 2.5f * fx_input(case_name, set, 'x', i) + fx_input(case_name, set, 'y', i);
            assert_true(o[i] == want);
        } else {
            const unsigned char *b = (const unsigned char *)&o[i];
            assert_int_equal(b[0] & b[1] & b[2] & b[3], 0xFF);
        }
    }
    tensor_free(&t);
}

static void good_candidate_outputs_and_timings(void **state)
{
    struct env *e = *state;
    e->p.l2_flush = true;
    build_candidate(&e->f, &e->p, good_src, NULL, true);
    json_t *status = run_ok(e);
    assert_string_equal(json_string_value(json_object_get(status, "status")), "ok");
    assert_case(status, "small", "ok", NULL);
    assert_case(status, "perf", "ok", NULL);
    /* Where the harness's time went (HARNESS.md section 4): every phase,
     * in seconds, within the total. */
    json_t *ph = json_object_get(status, "phases_s");
    static const char *const phases[] = {"context",     "layout", "read",   "upload",
                                         "correctness", "timing", "outputs"};
    assert_int_equal(json_object_size(ph), 8);
    double sum = 0;
    for (size_t k = 0; k < sizeof(phases) / sizeof(phases[0]); k++) {
        json_t *v = json_object_get(ph, phases[k]);
        assert_true(json_is_real(v) && json_real_value(v) >= 0);
        sum += json_real_value(v);
    }
    assert_true(json_real_value(json_object_get(ph, "total")) >= sum);
    assert_true(json_real_value(json_object_get(ph, "timing")) > 0);
    json_decref(status);
    /* Each output written under its own name only (no temporary left). */
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/perf/s0", e->f.out);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    int entries = 0;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.') {
            assert_string_equal(de->d_name, "out.npy");
            entries++;
        }
    closedir(d);
    assert_int_equal(entries, 1);

    check_saxpy_output(e, "small", "s0", 1001, 1001);
    for (int s = 0; s < 3; s++) {
        char set[8];
        snprintf(set, sizeof(set), "s%d", s);
        check_saxpy_output(e, "perf", set, 4099, 4099);
    }

    /* timings.json: VERDICT.md's schema, one entry per timed set. */
    json_t *t = fx_json(&e->f, "timings.json");
    assert_non_null(t);
    assert_int_equal(json_integer_value(json_object_get(t, "version")), 1);
    json_t *cases = json_object_get(t, "cases");
    assert_int_equal(json_array_size(cases), 3);
    size_t total = 0, i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        assert_int_equal(json_object_size(c), 6);
        assert_string_equal(json_string_value(json_object_get(c, "case")), "perf");
        assert_int_equal(json_integer_value(json_object_get(c, "set")), (json_int_t)i);
        assert_true(json_is_true(json_object_get(c, "fingerprint_ok")));
        assert_true(json_is_true(json_object_get(c, "l2_flush")));
        assert_int_equal(json_integer_value(json_object_get(c, "warmup")), 4);
        json_t *samples = json_object_get(c, "samples_ms");
        /* Blocks of permutations: 30 runs over 3 sets is 10 each. */
        assert_int_equal(json_array_size(samples), 10);
        size_t j;
        json_t *v;
        json_array_foreach(samples, j, v)
        {
            assert_true(json_is_real(v));
            assert_true(json_real_value(v) > 0 && json_real_value(v) < 1000);
        }
        total += json_array_size(samples);
    }
    assert_int_equal(total, 30);
    json_decref(t);
    assert_true(fx_log_contains(&e->f, "done: every case ran"));
}

static void partial_output_leaves_poison(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p,
                    SAXPY_HEAD
                    "{ for (long long i = 0; i < n / 2; i++) out[i] = a * x[i] + y[i]; }\n",
                    NULL, true);
    json_t *status = run_ok(e);
    /* Deterministic, so the harness passes it; the poison is what the
     * parent's comparison reports as "output not written". */
    assert_case(status, "small", "ok", NULL);
    json_decref(status);
    check_saxpy_output(e, "small", "s0", 1001, 500);
    check_saxpy_output(e, "perf", "s2", 4099, 2049);
}

/* Returns the previous call's output: state in a static variable, with
 * module reloading off, so only the fingerprint check can catch it. */
static void stale_static_caught_by_fingerprint(void **state)
{
    struct env *e = *state;
    e->p.reload = false;
    build_candidate(&e->f, &e->p,
                    "#include <stdlib.h>\n#include <string.h>\n"
                    "static float *stash; static long long stash_n;\n" SAXPY_HEAD
                    "{ if (stash && stash_n == n) { float *t = malloc(sizeof(float) * n);\n"
                    "    for (long long i = 0; i < n; i++) t[i] = a * x[i] + y[i];\n"
                    "    memcpy(out, stash, sizeof(float) * n); free(stash); stash = t; return; }\n"
                    "  free(stash); stash = malloc(sizeof(float) * n); stash_n = n;\n"
                    "  for (long long i = 0; i < n; i++) out[i] = stash[i] = a * x[i] + y[i]; }\n",
                    NULL, true);
    /* The stash leaks by design: keep LeakSanitizer (sanitizer builds) from
     * failing the harness for the candidate's leak. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    json_t *status = run_ok(e);
    unsetenv("ASAN_OPTIONS");
    assert_string_equal(json_string_value(json_object_get(status, "status")), "failed");
    assert_case(status, "perf", "failed", "nondeterministic");
    json_t *f = json_object_get(fx_case_status(status, "perf"), "failure");
    assert_string_equal(json_string_value(json_object_get(f, "tensor")), "out");
    json_decref(status);
    /* The failing set is marked in timings.json when it has samples. */
    assert_true(fx_log_contains(&e->f, "differs from the verified output"));
}

/* The same replay, but the stash survives module reloads through the
 * environment (in-process state outside the module). */
static void stale_env_stash_caught_by_fingerprint(void **state)
{
    struct env *e = *state;
    build_candidate(
        &e->f, &e->p,
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n" SAXPY_HEAD
        "{ char *v = getenv(\"STASH\"); float *s = v ? (float *)strtoull(v, 0, 16) : 0;\n"
        "  long long sn = v ? strtoll(strchr(v, ':') + 1, 0, 10) : 0;\n"
        "  float *t = malloc(sizeof(float) * n);\n"
        "  for (long long i = 0; i < n; i++) t[i] = a * x[i] + y[i];\n"
        "  memcpy(out, s && sn == n ? s : t, sizeof(float) * n);\n"
        "  char buf[64]; snprintf(buf, sizeof buf, \"%llx:%lld\", (unsigned long long)t, n);\n"
        "  setenv(\"STASH\", buf, 1); }\n",
        NULL, true);
    /* The stash leaks by design: keep LeakSanitizer (sanitizer builds) from
     * failing the harness for the candidate's leak. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    json_t *status = run_ok(e);
    unsetenv("ASAN_OPTIONS");
    assert_case(status, "perf", "failed", "nondeterministic");
    json_decref(status);
}

/* Computes only on the first call after loading: module reloading makes
 * every call a first call, so it is honest and passes. */
static void reload_resets_static_state(void **state)
{
    struct env *e = *state;
    const char *src =
        "static int calls;\n" SAXPY_HEAD
        "{ if (calls++) return; for (long long i = 0; i < n; i++) out[i] = a * x[i] + "
        "y[i]; }\n";
    build_candidate(&e->f, &e->p, src, NULL, true);
    json_t *status = run_ok(e);
    assert_case(status, "small", "ok", NULL);
    assert_case(status, "perf", "ok", NULL);
    json_decref(status);

    /* Without reloading the skipped calls leave poison: caught. */
    e->p.reload = false;
    status = run_ok(e);
    assert_case(status, "small", "failed", "nondeterministic");
    json_decref(status);
}

static void overwriting_inputs_caught(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p,
                    SAXPY_HEAD "{ for (long long i = 0; i < n; i++) out[i] = a * x[i] + y[i];\n"
                               "  ((float *)x)[n / 2] = 0.0f; }\n",
                    NULL, true);
    json_t *status = run_ok(e);
    assert_case(status, "small", "failed", "overwrites_inputs");
    json_t *f = json_object_get(fx_case_status(status, "small"), "failure");
    assert_string_equal(json_string_value(json_object_get(f, "tensor")), "x");
    assert_string_equal(json_string_value(json_object_get(f, "phase")), "correctness");
    assert_string_equal(json_string_value(json_object_get(f, "set")), "s0");
    json_decref(status);
}

static void writing_past_the_end_caught_by_guard(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p,
                    SAXPY_HEAD "{ for (long long i = 0; i <= n + 2; i++) out[i] = a * x[i % n] + "
                               "y[i % n]; }\n",
                    NULL, true);
    json_t *status = run_ok(e);
    assert_case(status, "small", "failed", "out_of_bounds");
    assert_case(status, "perf", "failed", "out_of_bounds");
    json_decref(status);
}

static void writing_before_the_start_caught_by_guard(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p,
                    SAXPY_HEAD "{ for (long long i = 0; i < n; i++) out[i] = a * x[i] + y[i];\n"
                               "  out[-1] = 0.0f; }\n",
                    NULL, true);
    json_t *status = run_ok(e);
    assert_case(status, "small", "failed", "out_of_bounds");
    json_decref(status);
}

static void crash_leaves_a_diagnosable_log(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p,
                    SAXPY_HEAD "{ (void)a; (void)x; (void)y; (void)out;\n"
                               "  if (n > 0) *(volatile float *)16 = 1.0f; }\n",
                    NULL, true);
    int st = fx_run(&e->f, harness_path(), &e->p);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    assert_true(fx_log_contains(&e->f, "candidate crashed: SIGSEGV at address 0x10 in case small "
                                       "set s0, correctness run 0, launch 0 (saxpy)"));
    assert_null(fx_json(&e->f, "timings.json"));
}

static void resident_module_rejected(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p, good_src, "-Wl,-z,nodelete", true);
    json_t *status = run_ok(e);
    assert_case(status, "small", "failed", "module");
    json_t *f = json_object_get(fx_case_status(status, "small"), "failure");
    assert_non_null(strstr(json_string_value(json_object_get(f, "detail")), "stays loaded"));
    json_decref(status);
}

static void missing_trampoline_reported(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p, good_src, NULL, false);
    json_t *status = run_ok(e);
    assert_case(status, "small", "failed", "module");
    json_t *f = json_object_get(fx_case_status(status, "small"), "failure");
    assert_non_null(strstr(json_string_value(json_object_get(f, "detail")), "kiln_launch_0"));
    json_decref(status);
}

static void wrong_input_shape_is_a_harness_error(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p, good_src, NULL, true);
    e->p.cases[0].shape[2][0] = 1000; /* x no longer matches the file */
    int st = fx_run(&e->f, harness_path(), &e->p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_true(fx_log_contains(&e->f, "harness error"));
    assert_null(fx_json(&e->f, "timings.json"));
}

static void plan_for_other_backend_refused(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p, good_src, NULL, true);
    e->p.backend = HB_CUDA;
    int st = fx_run(&e->f, harness_path(), &e->p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    assert_true(fx_log_contains(&e->f, "another backend"));
}

static void adaptive_stops_within_bounds(void **state)
{
    struct env *e = *state;
    e->p.adaptive = true;
    e->p.iterations = 6;
    e->p.max_iterations = 60;
    e->p.target_rse = 0.5; /* loose: stops at the minimum */
    e->p.budget_ms = 10000;
    build_candidate(&e->f, &e->p, good_src, NULL, true);
    json_t *status = run_ok(e);
    assert_case(status, "perf", "ok", NULL);
    json_decref(status);
    json_t *t = fx_json(&e->f, "timings.json");
    size_t total = 0, i;
    json_t *c;
    json_array_foreach(json_object_get(t, "cases"), i, c) total +=
        json_array_size(json_object_get(c, "samples_ms"));
    assert_true(total >= 6 && total <= 60);
    json_decref(t);
}

/* Issue 13 item 3: the tail of an allocation up to the allocator's page is
 * reachable without a fault and survives runs and reloads. This candidate
 * stashes the first input value and a marker there (past `out`'s guard,
 * which ends the arena: guard_bytes is 65536); only the perf case has such
 * a tail (small's arena is a whole number of pages). */
static void stash_in_allocation_slack_caught(void **state)
{
    struct env *e = *state;
    build_candidate(&e->f, &e->p,
                    "#include <stdint.h>\n" SAXPY_HEAD
                    "{ for (long long i = 0; i < n; i++) out[i] = a * x[i] + y[i];\n"
                    "  unsigned char *end = (unsigned char *)out + ((n * 4 + 255) / 256 * 256) "
                    "+ 65536;\n"
                    "  if (((uintptr_t)end & 4095) != 0 && ((uintptr_t)end & 4095) < 4000) {\n"
                    "    float *stash = (float *)(void *)(end + 16);\n"
                    "    stash[0] = x[0]; stash[1] = 12345.0f; } }\n",
                    NULL, true);
    json_t *status = run_ok(e);
    assert_case(status, "small", "ok", NULL);
    assert_case(status, "perf", "failed", "allocation_slack");
    json_t *f = json_object_get(fx_case_status(status, "perf"), "failure");
    assert_non_null(strstr(json_string_value(json_object_get(f, "detail")), "allocation slack"));
    assert_string_equal(json_string_value(json_object_get(f, "phase")), "correctness");
    json_decref(status);
}

/* Issue 13 item 4: two launches, the first zeroes an input (keeping it in
 * a static), the second puts it back before the run ends. The check after
 * the run sees pristine inputs; the check between launches does not. */
static void input_restored_by_a_later_launch_caught(void **state)
{
    struct env *e = *state;
    struct harness_plan *p = &e->p;
    p->nlaunches = 2;
    p->launches[1] = p->launches[0];
    snprintf(p->launches[0].kernel, sizeof(p->launches[0].kernel), "scribble");
    p->launches[0].nargs = 2;
    p->launches[0].args[0] = 0; /* n */
    p->launches[0].args[1] = 2; /* x */
    assert_int_equal(fx_write_inputs(&e->f, p), 0);
    build_candidate(&e->f, p,
                    "static float saved;\n"
                    "void scribble(long long n, const float *x)\n"
                    "{ (void)n; saved = x[0]; ((float *)x)[0] = 0.0f; }\n" SAXPY_HEAD
                    "{ ((float *)x)[0] = saved;\n"
                    "  for (long long i = 0; i < n; i++) out[i] = a * x[i] + y[i]; }\n",
                    NULL, true);
    json_t *status = run_ok(e);
    assert_case(status, "small", "failed", "overwrites_inputs");
    json_t *f = json_object_get(fx_case_status(status, "small"), "failure");
    assert_string_equal(json_string_value(json_object_get(f, "tensor")), "x");
    assert_non_null(strstr(json_string_value(json_object_get(f, "detail")),
                           "during launch 0 (scribble), before launch 1 (saxpy)"));
    json_decref(status);
}

/* Issue 13 item 15: a candidate that never returns on the perf case is
 * ended by the harness's per-case watchdog, which names the case, phase,
 * set and run; the documents are written and the exit status is 0. */
static void endless_candidate_times_out_naming_the_case(void **state)
{
    struct env *e = *state;
    e->p.case_timeout_ms = 1500;
    build_candidate(&e->f, &e->p,
                    "#include <stdio.h>\n" SAXPY_HEAD
                    "{ volatile long long spin = n; while (spin == 4099) fputs(\"\", stderr);\n"
                    "  for (long long i = 0; i < n; i++) out[i] = a * x[i] + y[i]; }\n",
                    NULL, true);
    int st = fx_run_limited(&e->f, harness_path(), &e->p, 30);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    json_t *status = fx_json(&e->f, "status.json");
    assert_non_null(status);
    assert_string_equal(json_string_value(json_object_get(status, "status")), "failed");
    assert_case(status, "small", "ok", NULL);
    assert_case(status, "perf", "failed", "timeout");
    json_t *f = json_object_get(fx_case_status(status, "perf"), "failure");
    assert_string_equal(json_string_value(json_object_get(f, "phase")), "correctness");
    assert_string_equal(json_string_value(json_object_get(f, "set")), "s0");
    assert_int_equal(json_integer_value(json_object_get(f, "run")), 0);
    const char *d = json_string_value(json_object_get(f, "detail"));
    assert_non_null(strstr(d, "timeout after 1500 ms (the harness's per-case limit): case perf"));
    assert_non_null(strstr(d, "correctness run 0 on set s0"));
    assert_true(fx_log_contains(&e->f, "case perf: timeout"));
    json_decref(status);
    /* The completed case's outputs are there. */
    struct tensor t = {0};
    assert_int_equal(fx_output(&e->f, "small", "s0", "out", &t), 0);
    tensor_free(&t);
}

/* The whole-run deadline bounds the last case by what is left of it. */
static void deadline_bounds_the_case_limit(void **state)
{
    struct env *e = *state;
    e->p.case_timeout_ms = 600000;
    e->p.deadline_ms = 1200;
    build_candidate(&e->f, &e->p,
                    "#include <stdio.h>\n" SAXPY_HEAD
                    "{ volatile long long spin = n; while (spin == 1001) fputs(\"\", stderr);\n"
                    "  for (long long i = 0; i < n; i++) out[i] = a * x[i] + y[i]; }\n",
                    NULL, true);
    int st = fx_run_limited(&e->f, harness_path(), &e->p, 30);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    json_t *status = fx_json(&e->f, "status.json");
    assert_non_null(status);
    assert_case(status, "small", "failed", "timeout");
    assert_case(status, "perf", "skipped", NULL);
    json_t *f = json_object_get(fx_case_status(status, "small"), "failure");
    assert_non_null(strstr(json_string_value(json_object_get(f, "detail")), "whole deadline"));
    json_decref(status);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(good_candidate_outputs_and_timings, setup, teardown),
        cmocka_unit_test_setup_teardown(partial_output_leaves_poison, setup, teardown),
        cmocka_unit_test_setup_teardown(stale_static_caught_by_fingerprint, setup, teardown),
        cmocka_unit_test_setup_teardown(stale_env_stash_caught_by_fingerprint, setup, teardown),
        cmocka_unit_test_setup_teardown(reload_resets_static_state, setup, teardown),
        cmocka_unit_test_setup_teardown(overwriting_inputs_caught, setup, teardown),
        cmocka_unit_test_setup_teardown(writing_past_the_end_caught_by_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(writing_before_the_start_caught_by_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(crash_leaves_a_diagnosable_log, setup, teardown),
        cmocka_unit_test_setup_teardown(resident_module_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_trampoline_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(wrong_input_shape_is_a_harness_error, setup, teardown),
        cmocka_unit_test_setup_teardown(plan_for_other_backend_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(adaptive_stops_within_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(stash_in_allocation_slack_caught, setup, teardown),
        cmocka_unit_test_setup_teardown(input_restored_by_a_later_launch_caught, setup, teardown),
        cmocka_unit_test_setup_teardown(endless_candidate_times_out_naming_the_case, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(deadline_bounds_the_case_limit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
