/* The script sandbox's limits (inputs_script_limits, workloads/README.md
 * "Script limits"): a reference's wall time scales with its case's
 * cost.flops, so sgemm's tall_a (8192x2048x4096: 137 GFLOP, a float64
 * matrix product of minutes on a loaded CPU) is not cut at 122 s as it was
 * (issue 35 item 13); RLIMIT_CPU never binds before the wall clock; the
 * memory of a reference counts its inputs, and a workload's
 * scripts.memory_per_byte (a KernelBench import's float64 convolutions)
 * raises it. Pure arithmetic on synthetic workloads: no sandbox runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>

#include "inputs.h"
#include "sandbox.h"
#include "workload.h"

#define SGEMM(SCRIPTS)                                                                             \
    "{\"name\": \"mm\", \"description\": \"C = A B\", \"sizes\": [\"m\", \"n\", \"k\"],"           \
    " \"signature\": [{\"name\": \"A\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\":"  \
    " [\"m\", \"k\"], \"role\": \"in\"}, {\"name\": \"B\", \"kind\": \"tensor\", \"dtype\":"       \
    " \"float32\", \"shape\": [\"k\", \"n\"], \"role\": \"in\"}, {\"name\": \"C\", \"kind\":"      \
    " \"tensor\", \"dtype\": \"float32\", \"shape\": [\"m\", \"n\"], \"role\": \"out\"}],"         \
    " \"cases\": [{\"name\": \"one\", \"kind\": \"correctness\", \"sizes\": {\"m\": 1, \"n\": 1,"  \
    " \"k\": 1}}, {\"name\": \"tall_a\", \"kind\": \"performance\", \"sizes\": {\"m\": 8192,"      \
    " \"n\": 2048, \"k\": 4096}}], \"held_out\": [{\"name\": \"held\", \"sizes\": {\"m\": 3,"      \
    " \"n\": 5, \"k\": 7}}], \"tolerance\": {}, \"cost\": {\"bytes\": \"4*(m*k + k*n + m*n)\","    \
    " \"flops\": \"2*m*n*k\"}, \"backends\": [\"cpu\"]" SCRIPTS "}"

static struct workload *load(const char *json)
{
    struct workload *w = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (workload_parse_json(json, strlen(json), NULL, &w, &e) != KILN_OK)
        fail_msg("%s", e.msg);
    return w;
}

static void reference_time_scales_with_flops(void **state)
{
    (void)state;
    struct workload *w = load(SGEMM(""));
    const struct wl_case *tall = workload_case_by_name(w, "tall_a"), *one = w->cases;
    long long in = 4ll * (8192 * 4096 + 4096 * 2048), out = 4ll * 8192 * 2048;
    struct sandbox_limits l = {0};
    inputs_script_limits(w, tall, in + out, true, 0, &l);
    /* 137 GFLOP at 0.5 GFLOP/s: more than four minutes beyond the base. */
    assert_true(l.timeout_ms > 120000 + 270000);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(l.cpu_s >= l.timeout_ms / 1000 * (cpus > 0 ? cpus : 1));
    /* Memory: the inputs it reads count as much as the output it writes. */
    assert_true(l.memory_bytes >= 4 * (in + out));
    /* inputs.py does no arithmetic: the base time only. */
    inputs_script_limits(w, tall, in, false, 0, &l);
    assert_true(l.timeout_ms < 150000);
    /* A tiny case keeps the base. */
    inputs_script_limits(w, one, 12, true, 0, &l);
    assert_true(l.timeout_ms >= 120000 && l.timeout_ms < 121000);
    /* --timeout replaces the computed wall time; CPU time follows it. */
    inputs_script_limits(w, tall, in + out, true, 30000, &l);
    assert_int_equal(l.timeout_ms, 30000);
    assert_true(l.cpu_s >= 30);
    workload_free(w);
}

static void declared_memory_per_byte(void **state)
{
    (void)state;
    struct workload *w = load(SGEMM(", \"scripts\": {\"memory_per_byte\": 12}"));
    assert_int_equal(w->script_memory_per_byte, 12);
    const struct wl_case *tall = workload_case_by_name(w, "tall_a");
    struct sandbox_limits l = {0};
    inputs_script_limits(w, tall, 1000, true, 0, &l);
    long long phys = (long long)sysconf(_SC_PHYS_PAGES) / 4 * 3 * sysconf(_SC_PAGESIZE);
    long long want = 12 * (long long)tall->bytes;
    assert_int_equal(l.memory_bytes, (want < phys ? want : phys) + WL_SCRIPT_MEMORY_BASE);
    /* Never more than 3/4 of the host's memory, whatever is declared. */
    struct workload *big = load(SGEMM(", \"scripts\": {\"memory_per_byte\": 1024}"));
    inputs_script_limits(big, workload_case_by_name(big, "tall_a"), 1000, true, 0, &l);
    assert_true(l.memory_bytes <= phys + WL_SCRIPT_MEMORY_BASE);
    workload_free(big);
    /* inputs.py holds what it writes, whatever the reference needs. */
    inputs_script_limits(w, tall, 1000, false, 0, &l);
    assert_int_equal(l.memory_bytes, 4000 + WL_SCRIPT_MEMORY_BASE);
    workload_free(w);
    /* The key is checked like every other. */
    struct workload *bad = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    const char *json = SGEMM(", \"scripts\": {\"memory_per_byte\": 0}");
    assert_int_equal(workload_parse_json(json, strlen(json), NULL, &bad, &e), KILN_E_PARSE);
    assert_non_null(strstr(e.msg, "scripts.memory_per_byte: 0 is not in 1..1024"));
    kiln_err_clear(&e);
    json = SGEMM(", \"scripts\": {\"memory\": 3}");
    assert_int_equal(workload_parse_json(json, strlen(json), NULL, &bad, &e), KILN_E_PARSE);
    assert_non_null(strstr(e.msg, "unknown key \"memory\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_time_scales_with_flops),
        cmocka_unit_test(declared_memory_per_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
