/* ncu_csv.c - Nsight Compute's CSV output, parsed as hostile text (ncu_csv.h). */
#include "ncu_csv.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OTHER_LINES 10000 /* lines that are neither CSV nor ncu messages */

enum unit_class { UC_TIME, UC_PCT, UC_REGS, UC_SECTORS };

static const struct {
    const char *name;
    enum unit_class uc;
} metrics[NCU_METRIC_COUNT] = {
    [NCU_DURATION] = {"gpu__time_duration.sum", UC_TIME},
    [NCU_DRAM_PCT] = {"dram__throughput.avg.pct_of_peak_sustained_elapsed", UC_PCT},
    [NCU_SM_PCT] = {"sm__throughput.avg.pct_of_peak_sustained_elapsed", UC_PCT},
    [NCU_OCCUPANCY] = {"sm__warps_active.avg.pct_of_peak_sustained_active", UC_PCT},
    [NCU_OCCUPANCY_THEORY] = {"sm__maximum_warps_per_active_cycle_pct", UC_PCT},
    [NCU_REGISTERS] = {"launch__registers_per_thread", UC_REGS},
    [NCU_L1_HIT] = {"l1tex__t_sector_hit_rate.pct", UC_PCT},
    [NCU_L2_HIT] = {"lts__t_sector_hit_rate.pct", UC_PCT},
    [NCU_LOCAL_LD] = {"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", UC_SECTORS},
    [NCU_LOCAL_ST] = {"l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", UC_SECTORS},
};

const char *ncu_metric_name(enum ncu_metric m)
{
    return m < NCU_METRIC_COUNT ? metrics[m].name : "?";
}

const char *ncu_metric_unit(enum ncu_metric m)
{
    if (m >= NCU_METRIC_COUNT)
        return "?";
    switch (metrics[m].uc) {
    case UC_TIME:
        return "ns";
    case UC_PCT:
        return "%";
    case UC_REGS:
        return "registers";
    case UC_SECTORS:
        return "sectors";
    }
    return "?";
}

const char *ncu_metrics_arg(void)
{
    return "gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,"
           "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
           "sm__warps_active.avg.pct_of_peak_sustained_active,"
           "sm__maximum_warps_per_active_cycle_pct,launch__registers_per_thread,"
           "l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,"
           "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,"
           "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum";
}

/* Samples collected while parsing, reduced to medians at the end. */
struct acc {
    double s[NCU_CSV_MAX_KERNELS][NCU_METRIC_COUNT][NCU_CSV_MAX_LAUNCHES];
    int n[NCU_CSV_MAX_KERNELS][NCU_METRIC_COUNT];
    long long last_id[NCU_CSV_MAX_KERNELS][NCU_METRIC_COUNT]; /* -1: none yet */
    long long kernel_id[NCU_CSV_MAX_KERNELS];                 /* last launch ID seen */
};

struct cursor {
    const char *p, *end;
    int line; /* 1-based line of p */
};

/* Reads one quoted CSV record at c->p into `scratch` (NUL-separated
 * fields); fields[i] point into it. */
static enum kiln_rc read_record(struct cursor *c, char *scratch, char **fields, int *nf,
                                struct kiln_err *err)
{
    int start_line = c->line;
    char *w = scratch;
    *nf = 0;
    for (;;) {
        if (c->p >= c->end || *c->p != '"')
            return kiln_fail(err, KILN_E_PARSE, "line %d: field %d is not quoted", start_line,
                             *nf + 1);
        if (*nf == NCU_CSV_MAX_COLS)
            return kiln_fail(err, KILN_E_LIMIT, "line %d: more than %d columns", start_line,
                             NCU_CSV_MAX_COLS);
        fields[(*nf)++] = w;
        char *fstart = w;
        c->p++;
        for (;;) {
            if (c->p >= c->end)
                return kiln_fail(err, KILN_E_PARSE, "line %d: unterminated quoted field",
                                 start_line);
            char ch = *c->p++;
            if (ch == '"') {
                if (c->p < c->end && *c->p == '"') {
                    c->p++;
                } else {
                    break;
                }
            } else if (ch == '\n') {
                c->line++;
            }
            if ((size_t)(w - fstart) >= NCU_CSV_MAX_FIELD)
                return kiln_fail(err, KILN_E_LIMIT, "line %d: a field longer than %d bytes",
                                 start_line, NCU_CSV_MAX_FIELD);
            *w++ = ch;
        }
        *w++ = '\0';
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '\r')
            c->p++;
        if (c->p >= c->end || *c->p == '\n') {
            if (c->p < c->end) {
                c->p++;
                c->line++;
            }
            return KILN_OK;
        }
        return kiln_fail(err, KILN_E_PARSE, "line %d: unexpected character after field %d",
                         start_line, *nf);
    }
}

/* A number as ncu prints it: [+-]digits with optional "," thousands
 * separators (groups of exactly 3), optional fraction and exponent. */
static bool parse_number(const char *s, double *out)
{
    while (*s == ' ')
        s++;
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ')
        n--;
    if (n == 0 || n > 64)
        return false;
    char buf[72];
    size_t k = 0, i = 0;
    if (s[i] == '+' || s[i] == '-')
        buf[k++] = s[i++];
    int digits = 0, since_comma = -1;
    for (; i < n && (isdigit((unsigned char)s[i]) || s[i] == ','); i++) {
        if (s[i] == ',') {
            if (!digits || (since_comma >= 0 && since_comma != 3))
                return false;
            since_comma = 0;
            continue;
        }
        buf[k++] = s[i];
        digits++;
        if (since_comma >= 0)
            since_comma++;
    }
    if (!digits || (since_comma >= 0 && since_comma != 3))
        return false;
    if (i < n && s[i] == '.') {
        buf[k++] = s[i++];
        if (i == n || !isdigit((unsigned char)s[i]))
            return false;
        while (i < n && isdigit((unsigned char)s[i]))
            buf[k++] = s[i++];
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        buf[k++] = s[i++];
        if (i < n && (s[i] == '+' || s[i] == '-'))
            buf[k++] = s[i++];
        int e = 0;
        while (i < n && isdigit((unsigned char)s[i]) && e < 3)
            buf[k++] = s[i++], e++;
        if (!e)
            return false;
    }
    if (i != n)
        return false;
    buf[k] = '\0';
    char *endp;
    double v = strtod(buf, &endp);
    if (*endp || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool is_na(const char *v)
{
    while (*v == ' ')
        v++;
    return !*v || !strcmp(v, "n/a") || !strcmp(v, "N/A");
}

/* Converts value v in `unit` to the metric's unit; false if the unit does
 * not fit the metric or the value is out of range. */
static bool convert(enum unit_class uc, const char *unit, double v, double *out)
{
    static const struct {
        const char *u;
        double f;
    } times[] = {{"nsecond", 1},   {"ns", 1},   {"usecond", 1e3}, {"us", 1e3},
                 {"msecond", 1e6}, {"ms", 1e6}, {"second", 1e9},  {"s", 1e9}},
      sectors[] = {{"sector", 1}, {"", 1}, {"Ksector", 1e3}, {"Msector", 1e6}, {"Gsector", 1e9}};
    switch (uc) {
    case UC_TIME:
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
            if (!strcmp(unit, times[i].u)) {
                *out = v * times[i].f;
                return *out > 0 && *out <= 1e13;
            }
        return false;
    case UC_PCT:
        *out = v;
        return !strcmp(unit, "%") && v >= 0 && v <= 110;
    case UC_REGS:
        *out = v;
        return (!strcmp(unit, "register/thread") || !strcmp(unit, "registers") ||
                !strcmp(unit, "register") || !*unit) &&
               v >= 0 && v <= 1024 && v == floor(v);
    case UC_SECTORS:
        for (size_t i = 0; i < sizeof(sectors) / sizeof(sectors[0]); i++)
            if (!strcmp(unit, sectors[i].u)) {
                *out = v * sectors[i].f;
                return *out >= 0 && *out <= 1e18;
            }
        return false;
    }
    return false;
}

/* "saxpy", "void saxpy(int, float*)" -> "saxpy"; false unless the result
 * is a C identifier that fits. */
static bool kernel_name(const char *in, char *out, size_t cap)
{
    if (!strncmp(in, "void ", 5))
        in += 5;
    size_t n = strcspn(in, "(");
    while (n && in[n - 1] == ' ')
        n--;
    if (n == 0 || n >= cap || !(isalpha((unsigned char)in[0]) || in[0] == '_'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)in[i]) || in[i] == '_'))
            return false;
    memcpy(out, in, n);
    out[n] = '\0';
    return true;
}

/* An "==ERROR== ..." line: kept printable and short. */
static void note_message(struct ncu_report *r, const char *line, size_t n)
{
    if (n >= 9 && !strncmp(line, "==ERROR==", 9)) {
        for (size_t i = 0; i + 16 <= n; i++)
            if (!memcmp(line + i, "ERR_NVGPUCTRPERM", 16))
                r->counters_refused = true;
        if (!r->error[0]) {
            size_t k = 0;
            for (size_t i = 9; i < n && k + 1 < sizeof(r->error); i++) {
                unsigned char ch = (unsigned char)line[i];
                if (k == 0 && ch == ' ')
                    continue;
                r->error[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
            }
            r->error[k] = '\0';
        }
    }
}

struct columns {
    int ncols, id, kernel, metric, unit, value;
    char names[NCU_CSV_MAX_COLS][48]; /* the header, to compare repeats */
};

static enum kiln_rc take_header(struct columns *col, char **f, int nf, int line,
                                struct kiln_err *err)
{
    if (col->ncols) {
        bool same = nf == col->ncols;
        for (int i = 0; same && i < nf; i++)
            same = !strncmp(f[i], col->names[i], sizeof(col->names[i]) - 1);
        if (!same)
            return kiln_fail(err, KILN_E_PARSE, "line %d: a second, different header", line);
        return KILN_OK;
    }
    col->id = col->kernel = col->metric = col->unit = col->value = -1;
    for (int i = 0; i < nf; i++) {
        int *slot = !strcmp(f[i], "ID")             ? &col->id
                    : !strcmp(f[i], "Kernel Name")  ? &col->kernel
                    : !strcmp(f[i], "Metric Name")  ? &col->metric
                    : !strcmp(f[i], "Metric Unit")  ? &col->unit
                    : !strcmp(f[i], "Metric Value") ? &col->value
                                                    : NULL;
        if (slot && *slot >= 0)
            return kiln_fail(err, KILN_E_PARSE, "line %d: column \"%s\" twice", line, f[i]);
        if (slot)
            *slot = i;
        snprintf(col->names[i], sizeof(col->names[i]), "%s", f[i]);
    }
    if (col->id < 0 || col->kernel < 0 || col->metric < 0 || col->unit < 0 || col->value < 0)
        return kiln_fail(err, KILN_E_PARSE,
                         "line %d: the header lacks one of ID, Kernel Name, Metric Name, "
                         "Metric Unit, Metric Value (not ncu --csv details output?)",
                         line);
    col->ncols = nf;
    return KILN_OK;
}

static enum kiln_rc take_row(struct ncu_report *r, struct acc *a, const struct columns *col,
                             char **f, int nf, int line, struct kiln_err *err)
{
    if (!col->ncols)
        return kiln_fail(err, KILN_E_PARSE, "line %d: a data row before the header", line);
    if (nf != col->ncols)
        return kiln_fail(err, KILN_E_PARSE, "line %d: %d fields, the header has %d", line, nf,
                         col->ncols);
    if (++r->rows > NCU_CSV_MAX_ROWS)
        return kiln_fail(err, KILN_E_LIMIT, "more than %d data rows", NCU_CSV_MAX_ROWS);
    int m = -1;
    for (int i = 0; i < NCU_METRIC_COUNT; i++)
        if (!strcmp(f[col->metric], metrics[i].name))
            m = i;
    if (m < 0)
        return KILN_OK; /* a metric kiln did not ask for */
    double idv;
    if (!parse_number(f[col->id], &idv) || idv < 0 || idv > 1e9 || idv != floor(idv))
        return kiln_fail(err, KILN_E_PARSE, "line %d: ID \"%.32s\" is not a launch number", line,
                         f[col->id]);
    long long id = (long long)idv;
    char name[NCU_CSV_NAME_MAX];
    if (!kernel_name(f[col->kernel], name, sizeof(name)))
        return kiln_fail(err, KILN_E_PARSE, "line %d: kernel name \"%.64s\" is not a C identifier",
                         line, f[col->kernel]);
    size_t k = 0;
    while (k < r->nkernels && strcmp(r->kernels[k].name, name))
        k++;
    if (k == r->nkernels) {
        if (k == NCU_CSV_MAX_KERNELS)
            return kiln_fail(err, KILN_E_LIMIT, "line %d: more than %d kernels", line,
                             NCU_CSV_MAX_KERNELS);
        snprintf(r->kernels[k].name, sizeof(r->kernels[k].name), "%s", name);
        a->kernel_id[k] = -1;
        for (int i = 0; i < NCU_METRIC_COUNT; i++)
            a->last_id[k][i] = -1;
        r->nkernels++;
    }
    struct ncu_kernel *kr = &r->kernels[k];
    if (a->kernel_id[k] != id) {
        a->kernel_id[k] = id;
        kr->launches++;
    }
    if (a->last_id[k][m] == id)
        return kiln_fail(err, KILN_E_PARSE, "line %d: %s reported twice for launch %lld", line,
                         metrics[m].name, id);
    a->last_id[k][m] = id;
    if (is_na(f[col->value]))
        return KILN_OK;
    double v, conv;
    if (!parse_number(f[col->value], &v))
        return kiln_fail(err, KILN_E_PARSE, "line %d: %s value \"%.32s\" is not a number", line,
                         metrics[m].name, f[col->value]);
    if (!convert(metrics[m].uc, f[col->unit], v, &conv))
        return kiln_fail(err, KILN_E_PARSE,
                         "line %d: %s = %.32s \"%.16s\": wrong unit or out of range", line,
                         metrics[m].name, f[col->value], f[col->unit]);
    if (a->n[k][m] < NCU_CSV_MAX_LAUNCHES)
        a->s[k][m][a->n[k][m]++] = conv;
    return KILN_OK;
}

static int by_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static void medians(struct ncu_report *r, struct acc *a)
{
    for (size_t k = 0; k < r->nkernels; k++)
        for (int m = 0; m < NCU_METRIC_COUNT; m++) {
            int n = a->n[k][m];
            if (!n)
                continue;
            qsort(a->s[k][m], (size_t)n, sizeof(double), by_double);
            r->kernels[k].value[m] =
                n % 2 ? a->s[k][m][n / 2] : 0.5 * (a->s[k][m][n / 2 - 1] + a->s[k][m][n / 2]);
            r->kernels[k].have[m] = true;
        }
}

enum kiln_rc ncu_csv_parse(const char *buf, size_t len, struct ncu_report *out,
                           struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (len > NCU_CSV_MAX_BYTES)
        return kiln_fail(err, KILN_E_LIMIT, "ncu output of %zu bytes (at most %u)", len,
                         NCU_CSV_MAX_BYTES);
    if (memchr(buf, '\0', len))
        return kiln_fail(err, KILN_E_PARSE, "ncu output holds a NUL byte");
    struct acc *a = calloc(1, sizeof(*a));
    struct columns *col = calloc(1, sizeof(*col));
    char *scratch = malloc(len + 1);
    char **fields = calloc(NCU_CSV_MAX_COLS, sizeof(char *));
    enum kiln_rc rc = KILN_OK;
    if (!a || !col || !scratch || !fields) {
        rc = kiln_fail(err, KILN_E_NOMEM, "parsing ncu output");
        goto out;
    }
    struct cursor c = {buf, buf + len, 1};
    int other = 0;
    while (rc == KILN_OK && c.p < c.end) {
        const char *eol = memchr(c.p, '\n', (size_t)(c.end - c.p));
        size_t n = eol ? (size_t)(eol - c.p) : (size_t)(c.end - c.p);
        if (*c.p == '"') {
            int line = c.line, nf = 0;
            rc = read_record(&c, scratch, fields, &nf, err);
            if (rc == KILN_OK && !strcmp(fields[0], "ID"))
                rc = take_header(col, fields, nf, line, err);
            else if (rc == KILN_OK)
                rc = take_row(out, a, col, fields, nf, line, err);
            continue;
        }
        if (n >= 2 && c.p[0] == '=' && c.p[1] == '=')
            note_message(out, c.p, n);
        else if (n > 0 && !(n == 1 && c.p[0] == '\r') && ++other > MAX_OTHER_LINES)
            rc = kiln_fail(err, KILN_E_LIMIT, "more than %d lines that are not ncu's",
                           MAX_OTHER_LINES);
        c.p += n + (eol ? 1 : 0);
        c.line++;
    }
    out->header = col->ncols > 0;
    if (rc == KILN_OK && !out->header && !out->error[0])
        rc = kiln_fail(err, KILN_E_PARSE,
                       "no CSV header and no ==ERROR== line: ncu printed no results");
    if (rc == KILN_OK)
        medians(out, a);
out:
    if (rc != KILN_OK) {
        bool refused = out->counters_refused;
        memset(out, 0, sizeof(*out));
        out->counters_refused = refused;
    }
    free(a);
    free(col);
    free(scratch);
    free(fields);
    return rc;
}

const struct ncu_kernel *ncu_report_find(const struct ncu_report *r, const char *name)
{
    for (size_t k = 0; k < r->nkernels; k++)
        if (!strcmp(r->kernels[k].name, name))
            return &r->kernels[k];
    return NULL;
}
