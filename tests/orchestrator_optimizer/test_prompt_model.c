/* What the LLM prompt tells the model about the run: only the cases of the
 * run's backend, the hardware the candidates run on (hwdesc.h), and, in
 * the history, replies refused before compiling and duplicates under their
 * own statuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "gpupeak.h"
#include "hwdesc.h"
#include "proposer.h"
#include "workload.h"

static struct workload *load_saxpy(void)
{
    const char *src = getenv("KILN_SOURCE_DIR");
    char wdir[1024];
    snprintf(wdir, sizeof(wdir), "%s/workloads/saxpy", src ? src : ".");
    struct workload *wl = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(workload_load(wdir, &wl, &err), KILN_OK);
    return wl;
}

static void cpu_prompt_has_its_cases_hardware_and_statuses(void **state)
{
    (void)state;
    struct workload *wl = load_saxpy();
    static struct opt_attempt hist[3];
    memset(hist, 0, sizeof(hist));
    const enum verdict_status st3[] = {VERDICT_PASS, VERDICT_REPLY_REFUSED, VERDICT_DUPLICATE};
    const char *why[] = {"", "the reply was rejected: not JSON",
                         "duplicate of 001: the same source (SHA-256 0123456789abcdef), not "
                         "evaluated again; 001 was pass"};
    for (int i = 0; i < 3; i++) {
        snprintf(hist[i].id, sizeof(hist[i].id), "%03d", i + 1);
        hist[i].status = st3[i];
        snprintf(hist[i].reason, sizeof(hist[i].reason), "%s", why[i]);
    }
    struct opt_state st = {.wl = wl,
                           .backend = KILN_BACKEND_CPU,
                           .start_source = wl->files[WL_FILE_KERNEL_C].data,
                           .start_len = wl->files[WL_FILE_KERNEL_C].len,
                           .history = hist,
                           .nhistory = 3,
                           .iteration = 4,
                           .max_iterations = 5,
                           .hardware = "Test CPU 9000 (2 cores online)"};
    char *p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_non_null(strstr(p, "\nHardware: Test CPU 9000 (2 cores online).\n"));
    assert_non_null(strstr(p, "- cpu_4m (performance, scored):"));
    assert_non_null(strstr(p, "- n31 (correctness only):"));
    /* saxpy's big and big_odd run on cuda only: never listed to a cpu run. */
    assert_null(strstr(p, "- big ("));
    assert_null(strstr(p, "- big_odd ("));
    assert_non_null(strstr(p, "- 002: reply_refused: the reply was rejected: not JSON\n"));
    assert_non_null(strstr(p, "- 003: duplicate: duplicate of 001: the same source"));
    free(p);

    /* The cuda run lists its own cases and not the cpu ones. */
    st.backend = KILN_BACKEND_CUDA;
    st.hardware = NULL;
    p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_non_null(strstr(p, "- big ("));
    assert_null(strstr(p, "- cpu_4m ("));
    assert_null(strstr(p, "Hardware:"));
    free(p);
    workload_free(wl);
}

static void hardware_lines(void **state)
{
    (void)state;
    char line[384], tmp[4096], path[4200];
    struct kiln_err e;
    kiln_err_clear(&e);
    /* An H200 as its driver describes it: 2 x 3201 MHz x 6144 bits. */
    struct gpu_props h200 = {.sm_count = 132,
                             .sm_clock_khz = 1980000,
                             .cc_major = 9,
                             .cc_minor = 0,
                             .mem_clock_khz = 3201000,
                             .bus_width_bits = 6144};
    hwdesc_gpu_format("NVIDIA H200", &h200, line, sizeof(line));
    assert_string_equal(
        line, "NVIDIA H200, 132 SMs, compute capability 9.0, 4.92 TB/s peak DRAM bandwidth");
    hwdesc_gpu_format("NVIDIA H200", NULL, line, sizeof(line));
    assert_string_equal(line, "NVIDIA H200");

    assert_int_equal(fs_make_tempdir("hwdesc", tmp, sizeof(tmp), &e), KILN_OK);
    snprintf(path, sizeof(path), "%s/cpuinfo", tmp);
    const char *info = "processor\t: 0\nvendor_id\t: GenuineIntel\n"
                       "model name\t: Intel(R) Xeon(R)  \x1b[31mGold\r\n"
                       "processor\t: 1\nmodel name\t: other\n";
    assert_int_equal(fs_write_atomic(path, info, strlen(info), &e), KILN_OK);
    hwdesc_cpu(path, 16, line, sizeof(line));
    /* Control bytes become spaces (collapsed): nothing reaches the prompt raw. */
    assert_string_equal(line, "Intel(R) Xeon(R) [31mGold (16 cores online)");
    snprintf(path, sizeof(path), "%s/absent", tmp);
    hwdesc_cpu(path, 2, line, sizeof(line));
    assert_string_equal(line, "a CPU (2 cores online)");
    assert_int_equal(fs_remove_tree(tmp, &e), KILN_OK);
}

/* No starting kernel (issue 29): the prompt quotes reference.py instead of
 * a "current best" kernel until a candidate passed. */
static void prompt_without_start_quotes_the_reference(void **state)
{
    (void)state;
    struct workload *wl = load_saxpy();
    struct opt_state st = {
        .wl = wl, .backend = KILN_BACKEND_CPU, .iteration = 1, .max_iterations = 3};
    char *p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_non_null(strstr(p, "There is no starting kernel: write the first one"));
    assert_non_null(strstr(p, wl->files[WL_FILE_REFERENCE].data));
    assert_null(strstr(p, "Current best"));
    assert_null(strstr(p, "The starting kernel:"));
    free(p);
    /* Once a candidate passed, it is the current best as usual. */
    static struct opt_attempt best;
    memset(&best, 0, sizeof(best));
    snprintf(best.id, sizeof(best.id), "001");
    best.status = VERDICT_PASS;
    best.source = "void saxpy(void) {}";
    best.len = strlen(best.source);
    st.best = &best;
    p = proposer_build_prompt(&st);
    assert_non_null(p);
    assert_non_null(strstr(p, "Current best (candidate 001):\n```\nvoid saxpy(void) {}"));
    assert_null(strstr(p, "There is no starting kernel"));
    free(p);
    workload_free(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_prompt_has_its_cases_hardware_and_statuses),
        cmocka_unit_test(hardware_lines),
        cmocka_unit_test(prompt_without_start_quotes_the_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
