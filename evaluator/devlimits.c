/* devlimits.c - see devlimits.h. */
#include "devlimits.h"

#include <stdio.h>
#include <string.h>

#include "gpuarch.h"
#include "gpupeak.h"

/* CUDA's table: shared memory per block with opt-in and per SM, resident
 * threads per SM. Every architecture has 64 Ki registers per block and per
 * SM, 1024 threads per block, blocks of 1024 x 1024 x 64 and grids of
 * (2^31 - 1) x 65535 x 65535. sm_88 has no published row: it takes sm_86's
 * (the smaller of its neighbours'); sm_103 and sm_110 take sm_100's. */
static const struct arch_row {
    int cc;
    int64_t smem_optin, smem_per_sm, threads_per_sm;
} rows[] = {
    {75, 65536, 65536, 1024},    {80, 166912, 167936, 2048},  {86, 101376, 102400, 1536},
    {87, 166912, 167936, 2048},  {88, 101376, 102400, 1536},  {89, 101376, 102400, 1536},
    {90, 232448, 233472, 2048},  {100, 232448, 233472, 2048}, {103, 232448, 233472, 2048},
    {110, 232448, 233472, 2048}, {120, 101376, 102400, 1536}, {121, 101376, 102400, 1536},
};

bool devlimits_for_arch(int cc, struct device_limits *out)
{
    const struct arch_row *r = &rows[0];
    bool found = false;
    for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++)
        if (rows[i].cc == cc) {
            r = &rows[i];
            found = true;
        }
    *out = (struct device_limits){.cc = cc,
                                  .queried = false,
                                  .max_threads_per_block = 1024,
                                  .max_block_dim = {1024, 1024, 64},
                                  .max_grid = {2147483647, 65535, 65535},
                                  .max_smem_optin = r->smem_optin,
                                  .max_smem_per_sm = r->smem_per_sm,
                                  .max_regs_per_block = 65536,
                                  .max_regs_per_sm = 65536,
                                  .max_threads_per_sm = r->threads_per_sm};
    return found;
}

/* Each limit within what any GPU could plausibly report. */
static bool plausible(const struct device_limits *l)
{
    const int64_t v[] = {l->max_threads_per_block, l->max_block_dim[0], l->max_block_dim[1],
                         l->max_block_dim[2],      l->max_grid[0],      l->max_grid[1],
                         l->max_grid[2],           l->max_smem_optin,   l->max_smem_per_sm,
                         l->max_regs_per_block,    l->max_regs_per_sm,  l->max_threads_per_sm};
    const int64_t hi[] = {1 << 16,   1 << 16, 1 << 16, 1 << 16, INT32_MAX, INT32_MAX,
                          INT32_MAX, 1 << 24, 1 << 24, 1 << 24, 1 << 24,   1 << 20};
    for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
        if (v[i] < 1 || v[i] > hi[i])
            return false;
    return true;
}

static enum kiln_rc parse_limits(const char *text, struct device_limits *l, struct kiln_err *err)
{
    long long v[12];
    int n = -1;
    size_t len = strnlen(text, DEVLIMITS_LINE_MAX + 1);
    if (len > DEVLIMITS_LINE_MAX ||
        sscanf(text,
               "limits threads_per_block=%lld block=%lld,%lld,%lld grid=%lld,%lld,%lld "
               "smem_optin=%lld smem_per_sm=%lld regs_per_block=%lld regs_per_sm=%lld "
               "threads_per_sm=%lld%n",
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11],
               &n) != 12 ||
        n < 0 || strcmp(text + n, "\n") != 0)
        return kiln_fail(err, KILN_E_PARSE,
                         "device limits: expected one line \"limits threads_per_block=N "
                         "block=X,Y,Z grid=X,Y,Z smem_optin=N smem_per_sm=N regs_per_block=N "
                         "regs_per_sm=N threads_per_sm=N\", got \"%.80s\"",
                         text);
    char again[DEVLIMITS_LINE_MAX + 2];
    snprintf(again, sizeof(again), DEVLIMITS_FORMAT, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
             v[8], v[9], v[10], v[11]);
    if (strcmp(again, text) != 0)
        return kiln_fail(err, KILN_E_PARSE, "device limits: not in canonical form: \"%.80s\"",
                         text);
    l->max_threads_per_block = v[0];
    for (int d = 0; d < 3; d++) {
        l->max_block_dim[d] = v[1 + d];
        l->max_grid[d] = v[4 + d];
    }
    l->max_smem_optin = v[7];
    l->max_smem_per_sm = v[8];
    l->max_regs_per_block = v[9];
    l->max_regs_per_sm = v[10];
    l->max_threads_per_sm = v[11];
    if (!plausible(l))
        return kiln_fail(err, KILN_E_PARSE, "device limits: a value out of range: \"%.80s\"", text);
    return KILN_OK;
}

/* "copy mb_per_s=N\n", canonical, and nothing after it. */
static enum kiln_rc parse_copy(const char *text, int *mb_per_s, struct kiln_err *err)
{
    int n = -1, v = -1;
    char again[64];
    if (strnlen(text, 64) >= 64 || sscanf(text, "copy mb_per_s=%d%n", &v, &n) != 1 || n < 0)
        return kiln_fail(err, KILN_E_PARSE,
                         "device probe: expected \"copy mb_per_s=N\" as the third line, got "
                         "\"%.80s\"",
                         text);
    snprintf(again, sizeof(again), DEVCOPY_FORMAT, v);
    if (strcmp(again, text) != 0 || v < 0 || v > 100000000)
        return kiln_fail(err, KILN_E_PARSE,
                         "device probe: copy line not canonical or out of range: \"%.80s\"", text);
    *mb_per_s = v;
    return KILN_OK;
}

enum kiln_rc devprobe_parse(const char *text, struct gpu_props *props, struct device_limits *lim,
                            struct kiln_err *err)
{
    memset(lim, 0, sizeof(*lim));
    const char *nl = strchr(text, '\n');
    char first[264];
    if (!nl || (size_t)(nl - text) + 2 > sizeof(first))
        return kiln_fail(err, KILN_E_PARSE,
                         "device probe: expected two lines (properties, limits), got \"%.80s\"",
                         text);
    memcpy(first, text, (size_t)(nl - text) + 1);
    first[nl - text + 1] = '\0';
    enum kiln_rc rc = gpupeak_parse_props(first, props, err);
    const char *copy = strchr(nl + 1, '\n');
    if (rc == KILN_OK && !copy)
        rc = kiln_fail(err, KILN_E_PARSE,
                       "device probe: expected three lines (properties, limits, copy), got "
                       "\"%.80s\"",
                       text);
    if (rc == KILN_OK) {
        char second[DEVLIMITS_LINE_MAX + 2];
        size_t len = (size_t)(copy - nl);
        if (len + 1 > sizeof(second))
            return kiln_fail(err, KILN_E_PARSE, "device limits: line too long");
        memcpy(second, nl + 1, len);
        second[len] = '\0';
        rc = parse_limits(second, lim, err);
    }
    if (rc == KILN_OK)
        rc = parse_copy(copy + 1, &props->copy_mb_per_s, err);
    if (rc != KILN_OK)
        return rc;
    lim->cc = props->cc_major * 10 + props->cc_minor;
    lim->queried = true;
    return KILN_OK;
}

static const char *const var_names[DEVLIMITS_NVARS] = {
    "DEVICE_CC",          "DEVICE_SMEM_OPTIN",    "DEVICE_SMEM_PER_SM", "DEVICE_REGS_PER_BLOCK",
    "DEVICE_REGS_PER_SM", "DEVICE_THREADS_PER_SM"};

void devlimits_vars(const struct device_limits *l, struct expr_var vars[DEVLIMITS_NVARS])
{
    const int64_t v[DEVLIMITS_NVARS] = {l->cc,
                                        l->max_smem_optin,
                                        l->max_smem_per_sm,
                                        l->max_regs_per_block,
                                        l->max_regs_per_sm,
                                        l->max_threads_per_sm};
    for (int i = 0; i < DEVLIMITS_NVARS; i++)
        vars[i] = (struct expr_var){var_names[i], v[i]};
}

void devlimits_describe(const struct device_limits *l, char *out, size_t cap)
{
    char a[GPUARCH_NAME_MAX];
    gpuarch_name(l->cc, a);
    snprintf(out, cap, "%s, %s", a,
             l->queried ? "queried from the GPU" : "from CUDA's table (no GPU queried)");
}
