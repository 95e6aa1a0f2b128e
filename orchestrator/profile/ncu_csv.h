/*
 * ncu_csv.h - the one parser of Nsight Compute's CSV output: what
 * `ncu --csv --print-units base --print-metric-name name --metrics ...`
 * prints on the details page, one row per profiled kernel launch and
 * metric, between ncu's own `==PROF==` / `==WARNING==` / `==ERROR==` lines:
 *
 *   ==PROF== Connected to process 12 (/in/kiln-harness)
 *   "ID","Process ID","Process Name","Host Name","Kernel Name",...,
 *     "Section Name","Metric Name","Metric Unit","Metric Value"
 *   "0","12","kiln-harness","h","saxpy",...,"Command line profiler metrics",
 *     "gpu__time_duration.sum","nsecond","241,856"
 *
 * The text comes out of the profile sandbox, so it is hostile: at most
 * NCU_CSV_MAX_BYTES, no NUL bytes, quoted fields of at most
 * NCU_CSV_MAX_FIELD bytes, every data row exactly as wide as the header,
 * columns found by name (ncu versions add columns), kernel names reduced
 * to C identifiers, numbers checked ("1,234.5" thousands separators,
 * "n/a" = not measured), units checked against what each metric can be
 * (ns/us/ms/s, %, registers, sectors) and converted to one unit, values
 * range-checked. Metrics kiln did not ask for are ignored. Per kernel the
 * report keeps the median of each metric over the profiled launches.
 *
 * An `==ERROR==` line is kept (printable ASCII, capped) and
 * ERR_NVGPUCTRPERM (performance counters refused to this user) is flagged,
 * so the caller can tell "not allowed here" from "failed".
 */
#ifndef KILN_NCU_CSV_H
#define KILN_NCU_CSV_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define NCU_CSV_MAX_BYTES    (4u << 20) /* the whole output */
#define NCU_CSV_MAX_FIELD    4096       /* bytes of one field */
#define NCU_CSV_MAX_COLS     64
#define NCU_CSV_MAX_ROWS     20000 /* data rows */
#define NCU_CSV_MAX_KERNELS  16    /* distinct kernels (a plan has at most 16 launches) */
#define NCU_CSV_MAX_LAUNCHES 64    /* launches per kernel kept for the median */
#define NCU_CSV_NAME_MAX     65    /* kernel name bytes with the NUL */

/* The metrics kiln asks for (ncu_metric_name gives ncu's name). */
enum ncu_metric {
    NCU_DURATION = 0,         /* gpu__time_duration.sum, ns */
    NCU_DRAM_PCT = 1,         /* DRAM throughput, % of peak */
    NCU_SM_PCT = 2,           /* SM throughput, % of peak */
    NCU_OCCUPANCY = 3,        /* achieved occupancy, % */
    NCU_OCCUPANCY_THEORY = 4, /* theoretical occupancy, % */
    NCU_REGISTERS = 5,        /* registers per thread */
    NCU_L1_HIT = 6,           /* L1/tex sector hit rate, % */
    NCU_L2_HIT = 7,           /* L2 sector hit rate, % */
    NCU_LOCAL_LD = 8,         /* local-memory load sectors (spills, local arrays) */
    NCU_LOCAL_ST = 9,         /* local-memory store sectors */
    NCU_METRIC_COUNT = 10,
};

/* ncu's name of metric m ("gpu__time_duration.sum"). */
const char *ncu_metric_name(enum ncu_metric m);
/* The unit values are converted to: "ns", "%", "registers", "sectors". */
const char *ncu_metric_unit(enum ncu_metric m);
/* The --metrics argument: every metric above, comma-separated. */
const char *ncu_metrics_arg(void);

struct ncu_kernel {
    char name[NCU_CSV_NAME_MAX];
    int launches;                   /* profiled launches seen */
    bool have[NCU_METRIC_COUNT];    /* measured in at least one launch */
    double value[NCU_METRIC_COUNT]; /* median over launches, in ncu_metric_unit */
};

struct ncu_report {
    struct ncu_kernel kernels[NCU_CSV_MAX_KERNELS];
    size_t nkernels;
    size_t rows;           /* data rows read (kiln's metrics and others) */
    bool header;           /* a CSV header was seen */
    bool counters_refused; /* ERR_NVGPUCTRPERM */
    char error[256];       /* the first ==ERROR== line, sanitized; "" if none */
};

/*
 * Parses `len` bytes of ncu output into *out (zeroed first). KILN_OK when
 * the text is well-formed: with a header and any number of rows, or with
 * no header but an ==ERROR== line (read out->error, out->counters_refused).
 * KILN_E_LIMIT past a cap, KILN_E_PARSE for anything malformed; the
 * message names the line.
 */
enum kiln_rc ncu_csv_parse(const char *buf, size_t len, struct ncu_report *out,
                           struct kiln_err *err) KILN_NODISCARD;

/* The kernel named `name`, or NULL. */
const struct ncu_kernel *ncu_report_find(const struct ncu_report *r, const char *name);

#endif
