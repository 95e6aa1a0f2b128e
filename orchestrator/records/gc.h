/*
 * gc.h - `kiln gc`: removes old runs from a results directory, whole or
 * only their work/ scratch (inputs, baselines, candidates in flight).
 *
 * Only directories named run-NNN (NNN: digits) are considered; anything
 * else in the results directory is never touched, a run-NNN that is a
 * symbolic link is skipped, and nothing is followed through a link while
 * a run is measured or removed (links inside are removed as links). A run
 * whose lock (runrec.h, work/lock) is held by kiln optimize or kiln resume
 * is in progress and always kept.
 */
#ifndef KILN_GC_H
#define KILN_GC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct gc_options {
    const char *results_dir; /* default "results" */
    int keep_last;           /* keep the N highest-numbered runs; -1: no such rule */
    double older_than_days;  /* remove only runs last modified this long ago; <0: no rule */
    bool inputs_only;        /* remove work/ only, keep the record */
    bool dry_run;            /* say what would go, remove nothing */
    int64_t now;             /* the time ages are measured from (seconds since the epoch) */
};

/* Applies the rules (a run goes when it matches every rule given; at least
 * one is required) and returns what was done in *report (a new reference):
 * {"results", "dry_run", "inputs_only", "removed": [{"run", "what": "run"|"work",
 * "bytes"}], "kept": [{"run", "reason"}], "skipped": [{"name", "reason"}],
 * "bytes_freed"}. A failure while removing stops there; *report still
 * says what went before it. */
enum kiln_rc gc_run(const struct gc_options *o, json_t **report,
                    struct kiln_err *err) KILN_NODISCARD;

#endif
