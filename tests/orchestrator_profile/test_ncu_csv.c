/* test_ncu_csv.c - the parser of ncu's CSV output, on samples written the
 * way `ncu --csv --print-units base --print-metric-name name --metrics ...`
 * prints them (details page, one row per launch and metric), and on
 * hostile variations of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ncu_csv.h"
#include "profile.h"

#define HDR15                                                                                      \
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","            \
    "\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric "         \
    "Name\",\"Metric Unit\",\"Metric Value\"\n"

/* One row of the 15-column layout (ncu 2023+). */
#define ROW(id, kernel, metric, unit, value)                                                       \
    "\"" id "\",\"41\",\"kiln-harness\",\"sandbox\",\"" kernel "\",\"1\",\"7\",\"(256, 1, "        \
    "1)\",\"(1048576, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"" metric           \
    "\",\"" unit "\",\"" value "\"\n"

#define LAUNCH(id, dur, dram)                                                                      \
    ROW(id, "saxpy", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", dram)              \
    ROW(id, "saxpy", "gpu__time_duration.sum", "nsecond", dur)                                     \
    ROW(id, "saxpy", "l1tex__t_sector_hit_rate.pct", "%", "0")                                     \
    ROW(id, "saxpy", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "sector", "0")               \
    ROW(id, "saxpy", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", "sector", "0")               \
    ROW(id, "saxpy", "launch__registers_per_thread", "register/thread", "16")                      \
    ROW(id, "saxpy", "lts__t_sector_hit_rate.pct", "%", "33.41")                                   \
    ROW(id, "saxpy", "sm__maximum_warps_per_active_cycle_pct", "%", "100")                         \
    ROW(id, "saxpy", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "11.07")             \
    ROW(id, "saxpy", "sm__warps_active.avg.pct_of_peak_sustained_active", "%", "84.93")

static const char full[] =
    "==PROF== Connected to process 41 (/in/kiln-harness)\n"
    "==PROF== Profiling \"saxpy\" - 0: 0%....50%....100% - 9 passes\n"
    "==PROF== Profiling \"saxpy\" - 1: 0%....50%....100% - 9 passes\n"
    "==PROF== Disconnected from process 41\n" HDR15 LAUNCH("0", "241,856", "91.52")
        LAUNCH("1", "242,112", "91.60");

static struct ncu_report rep;

static enum kiln_rc parse(const char *text, struct kiln_err *err)
{
    kiln_err_clear(err);
    return ncu_csv_parse(text, strlen(text), &rep, err);
}

static void expect_reject(const char *text, enum kiln_rc want, const char *fragment)
{
    struct kiln_err err;
    enum kiln_rc rc = parse(text, &err);
    if (rc != want || !strstr(err.msg, fragment))
        fail_msg("rc %d (want %d), message '%s' (want '%s')", rc, want, err.msg, fragment);
    assert_int_equal(rep.nkernels, 0);
}

static void test_full_sample(void **state)
{
    (void)state;
    struct kiln_err err;
    assert_int_equal(parse(full, &err), KILN_OK);
    assert_true(rep.header);
    assert_false(rep.counters_refused);
    assert_int_equal(rep.nkernels, 1);
    assert_int_equal(rep.rows, 20);
    const struct ncu_kernel *k = ncu_report_find(&rep, "saxpy");
    assert_non_null(k);
    assert_int_equal(k->launches, 2);
    for (int m = 0; m < NCU_METRIC_COUNT; m++)
        assert_true(k->have[m]);
    assert_float_equal(k->value[NCU_DURATION], 241984.0, 1e-6); /* median of two */
    assert_float_equal(k->value[NCU_DRAM_PCT], 91.56, 1e-9);
    assert_float_equal(k->value[NCU_SM_PCT], 11.07, 1e-9);
    assert_float_equal(k->value[NCU_OCCUPANCY], 84.93, 1e-9);
    assert_float_equal(k->value[NCU_OCCUPANCY_THEORY], 100, 1e-9);
    assert_float_equal(k->value[NCU_REGISTERS], 16, 0);
    assert_float_equal(k->value[NCU_L2_HIT], 33.41, 1e-9);
    assert_float_equal(k->value[NCU_LOCAL_LD], 0, 0);
    assert_string_equal(ncu_metric_unit(NCU_DURATION), "ns");
    assert_null(ncu_report_find(&rep, "kiln_fingerprint"));
    /* Every metric kiln asks for is in the --metrics argument. */
    for (int m = 0; m < NCU_METRIC_COUNT; m++)
        assert_non_null(strstr(ncu_metrics_arg(), ncu_metric_name((enum ncu_metric)m)));

    char text[PROFILE_SUMMARY_MAX];
    profile_summarize(&rep, "big", 2, text, sizeof(text));
    assert_non_null(strstr(text, "case big (2 profiled launches"));
    assert_non_null(strstr(text, "\n- saxpy: 241.98 us; DRAM throughput 91.6%"));
    assert_non_null(strstr(text, "; 16 registers/thread"));
    assert_non_null(strstr(text, "local memory (spills) 0 load + 0 store sectors"));
}

/* The 11-column layout of older ncu, CRLF line ends, scaled time units,
 * demangled names, "n/a", metrics kiln did not ask for, two kernels. */
static void test_variants(void **state)
{
    (void)state;
    static const char text[] =
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
        "\"Stream\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\r\n"
        "\"0\",\"7\",\"h\",\"x\",\"void partial(int, float const*, float*)\",\"1\",\"7\","
        "\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"usecond\","
        "\"1,234.5\"\r\n"
        "\"0\",\"7\",\"h\",\"x\",\"void partial(int, float const*, float*)\",\"1\",\"7\","
        "\"Command line profiler metrics\",\"dram__bytes.sum\",\"Mbyte\",\"2,000.00\"\r\n"
        "\"0\",\"7\",\"h\",\"x\",\"void partial(int, float const*, float*)\",\"1\",\"7\","
        "\"Command line profiler metrics\",\"lts__t_sector_hit_rate.pct\",\"%\",\"n/a\"\r\n"
        "\"1\",\"7\",\"h\",\"x\",\"finish\",\"1\",\"7\",\"Command line profiler metrics\","
        "\"gpu__time_duration.sum\",\"msecond\",\"1.5e-3\"\r\n"
        "\"1\",\"7\",\"h\",\"x\",\"finish\",\"1\",\"7\",\"Command line profiler metrics\","
        "\"l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum\",\"Ksector\",\"2\"\r\n"
        "==WARNING== some metrics were collected in several passes\r\n";
    struct kiln_err err;
    assert_int_equal(parse(text, &err), KILN_OK);
    assert_int_equal(rep.nkernels, 2);
    assert_int_equal(rep.rows, 5);
    const struct ncu_kernel *p = ncu_report_find(&rep, "partial");
    assert_non_null(p);
    assert_float_equal(p->value[NCU_DURATION], 1234500.0, 1e-6);
    assert_false(p->have[NCU_L2_HIT]); /* n/a */
    const struct ncu_kernel *f = ncu_report_find(&rep, "finish");
    assert_non_null(f);
    assert_float_equal(f->value[NCU_DURATION], 1500.0, 1e-6);
    assert_float_equal(f->value[NCU_LOCAL_ST], 2000.0, 1e-9);
    assert_false(f->have[NCU_LOCAL_LD]);
}

/* What ncu prints when the driver keeps the counters to administrators. */
static void test_counters_refused(void **state)
{
    (void)state;
    static const char text[] =
        "==PROF== Connected to process 12 (/in/kiln-harness)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0. For instructions on enabling permissions "
        "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
        "==PROF== Disconnected from process 12\n"
        "==WARNING== No kernels were profiled.\n";
    struct kiln_err err;
    assert_int_equal(parse(text, &err), KILN_OK);
    assert_true(rep.counters_refused);
    assert_false(rep.header);
    assert_int_equal(rep.nkernels, 0);
    assert_true(!strncmp(rep.error, "ERR_NVGPUCTRPERM - The user", 27));
    /* An error line with control characters is kept printable. */
    assert_int_equal(parse("==ERROR== bad\x1b[31m thing\n", &err), KILN_OK);
    assert_string_equal(rep.error, "bad?[31m thing");
    assert_false(rep.counters_refused);
}

static void test_empty_results(void **state)
{
    (void)state;
    struct kiln_err err;
    assert_int_equal(parse("==PROF== Disconnected\n" HDR15, &err), KILN_OK);
    assert_true(rep.header);
    assert_int_equal(rep.nkernels, 0);
    expect_reject("", KILN_E_PARSE, "no CSV header");
    expect_reject("==PROF== Connected to process 1\nsomething else\n", KILN_E_PARSE,
                  "no CSV header");
}

static void test_hostile_structure(void **state)
{
    (void)state;
    expect_reject(ROW("0", "saxpy", "gpu__time_duration.sum", "nsecond", "1") HDR15, KILN_E_PARSE,
                  "line 1: a data row before the header");
    expect_reject(HDR15 "\"0\",\"41\"\n", KILN_E_PARSE, "line 2: 2 fields, the header has 15");
    expect_reject(HDR15 "\"0\",41\n", KILN_E_PARSE, "line 2: field 2 is not quoted");
    expect_reject(HDR15 "\"0\",\"41\n", KILN_E_PARSE, "unterminated quoted field");
    expect_reject(HDR15 "\"0\"x,\"41\"\n", KILN_E_PARSE, "unexpected character after field 1");
    expect_reject("\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\"\n", KILN_E_PARSE,
                  "the header lacks one of");
    expect_reject("\"ID\",\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric "
                  "Value\"\n",
                  KILN_E_PARSE, "column \"ID\" twice");
    expect_reject(HDR15 "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric "
                        "Value\"\n",
                  KILN_E_PARSE, "line 2: a second, different header");
    char with_nul[] = HDR15 "x";
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(ncu_csv_parse(with_nul, sizeof(with_nul), &rep, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "NUL"));
    /* Size caps: the whole text, one field, the columns. */
    assert_int_equal(ncu_csv_parse(full, NCU_CSV_MAX_BYTES + 1u, &rep, &err), KILN_E_LIMIT);
    char *big = malloc(NCU_CSV_MAX_FIELD + 64);
    assert_non_null(big);
    big[0] = '"';
    memset(big + 1, 'a', NCU_CSV_MAX_FIELD + 1);
    strcpy(big + NCU_CSV_MAX_FIELD + 2, "\"\n");
    expect_reject(big, KILN_E_LIMIT, "a field longer than");
    free(big);
    char cols[NCU_CSV_MAX_COLS * 4 + 16] = "";
    for (int i = 0; i <= NCU_CSV_MAX_COLS; i++)
        strcat(cols, i ? ",\"x\"" : "\"ID\"");
    expect_reject(cols, KILN_E_LIMIT, "more than 64 columns");
}

static void test_hostile_values(void **state)
{
    (void)state;
#define ONE(metric, unit, value) HDR15 ROW("0", "saxpy", metric, unit, value)
    expect_reject(ONE("gpu__time_duration.sum", "nsecond", "1,23"), KILN_E_PARSE,
                  "is not a number");
    expect_reject(ONE("gpu__time_duration.sum", "nsecond", "12,3456"), KILN_E_PARSE,
                  "is not a number");
    expect_reject(ONE("gpu__time_duration.sum", "nsecond", ",123"), KILN_E_PARSE,
                  "is not a number");
    expect_reject(ONE("gpu__time_duration.sum", "nsecond", "1e999"), KILN_E_PARSE,
                  "is not a number");
    expect_reject(ONE("gpu__time_duration.sum", "nsecond", "0x10"), KILN_E_PARSE,
                  "is not a number");
    expect_reject(ONE("gpu__time_duration.sum", "nsecond", "nan"), KILN_E_PARSE, "is not a number");
    expect_reject(ONE("gpu__time_duration.sum", "%", "100"), KILN_E_PARSE,
                  "wrong unit or out of range");
    expect_reject(ONE("gpu__time_duration.sum", "nsecond", "-5"), KILN_E_PARSE,
                  "wrong unit or out of range");
    expect_reject(ONE("gpu__time_duration.sum", "second", "100000"), KILN_E_PARSE,
                  "wrong unit or out of range");
    expect_reject(ONE("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "500"),
                  KILN_E_PARSE, "wrong unit or out of range");
    expect_reject(ONE("launch__registers_per_thread", "register/thread", "16.5"), KILN_E_PARSE,
                  "wrong unit or out of range");
    expect_reject(HDR15 ROW("x1", "saxpy", "gpu__time_duration.sum", "nsecond", "1"), KILN_E_PARSE,
                  "is not a launch number");
    expect_reject(HDR15 ROW("0", "../../etc", "gpu__time_duration.sum", "nsecond", "1"),
                  KILN_E_PARSE, "is not a C identifier");
    expect_reject(HDR15 ROW("0", "saxpy", "gpu__time_duration.sum", "nsecond", "1")
                      ROW("0", "saxpy", "gpu__time_duration.sum", "nsecond", "2"),
                  KILN_E_PARSE, "reported twice for launch 0");
    /* More kernels than a plan can launch. */
    char *many = malloc(64 * 1024);
    assert_non_null(many);
    strcpy(many, HDR15);
    for (int i = 0; i <= NCU_CSV_MAX_KERNELS; i++) {
        char row[512];
        snprintf(row, sizeof(row), ROW("%d", "k%d", "gpu__time_duration.sum", "nsecond", "1"), i,
                 i);
        strcat(many, row);
    }
    expect_reject(many, KILN_E_LIMIT, "more than 16 kernels");
    free(many);
#undef ONE
}

/* A quoted field may hold doubled quotes, commas and newlines. */
static void test_quoting(void **state)
{
    (void)state;
    static const char text[] =
        HDR15 "\"0\",\"41\",\"kiln \"\"harness\"\"\",\"h,1\",\"saxpy\",\"1\",\"7\",\"(256, 1, 1)\","
              "\"(1, 1, 1)\",\"0\",\"9.0\",\"a\nb\",\"gpu__time_duration.sum\",\"nsecond\",\"5\"\n";
    struct kiln_err err;
    assert_int_equal(parse(text, &err), KILN_OK);
    assert_int_equal(rep.nkernels, 1);
    assert_float_equal(rep.kernels[0].value[NCU_DURATION], 5, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_sample),       cmocka_unit_test(test_variants),
        cmocka_unit_test(test_counters_refused),  cmocka_unit_test(test_empty_results),
        cmocka_unit_test(test_hostile_structure), cmocka_unit_test(test_hostile_values),
        cmocka_unit_test(test_quoting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
