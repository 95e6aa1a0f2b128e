/*
 * hx_baseline.h - baseline mode of the harness (HARNESS.md section 7): per
 * case, the vendor operation of a baseline plan (a device-to-device copy,
 * cuBLAS SGEMM) timed exactly like a candidate: the same warmups, iteration
 * rule, cache flush before every run, timer and timings.json entry. The
 * core (hx_core.c) hands each case of a baseline plan to hx_baseline_case().
 */
#ifndef KILN_HX_BASELINE_H
#define KILN_HX_BASELINE_H

#include <jansson.h>
#include <stdbool.h>

#include "hx.h"

/* What the core lends one baseline case; everything stays the core's. */
struct hx_bl {
    const struct hx_ops *ops;
    struct hx_backend *be;
    const struct harness_plan *plan;
    struct hx_where *where;
    int log_fd;
    double t0_ms;     /* the log's time origin */
    json_t *timings;  /* timings.json "cases": one entry appended per timed case */
    json_t *status;   /* status.json "cases": one entry appended per case */
    bool *broken;     /* in/out: the device is unusable, later cases are skipped */
    bool *any_failed; /* out: set when this case failed */
};

/* Times case `c` of the baseline plan and records it. KILN_OK also when the
 * baseline failed or is unavailable (status.json says so, kind
 * "unavailable" with the reason); an error is the harness's own. */
enum kiln_rc hx_baseline_case(struct hx_bl *x, const struct harness_case *c,
                              struct kiln_err *err) KILN_NODISCARD;

#endif
