/*
 * eval_output.h - the `--json` document of `kiln eval` (format in
 * evaluator/VERDICT.md, "kiln eval --json"); its per-case rows and the
 * `--csv` / `--markdown` tables come from one schema (eval_rows.h).
 */
#ifndef KILN_EVAL_OUTPUT_H
#define KILN_EVAL_OUTPUT_H

#include <jansson.h>
#include <stdio.h>

#include "backend.h"
#include "digest.h"
#include "error.h"
#include "verdict.h"
#include "workload.h"

/* The `--json` document's format version (bumped when a key changes). */
#define EVAL_DOC_VERSION 2

/* Where the candidate ran: "cpu", or one GPU as the driver names it. */
struct eval_device {
    enum kiln_backend backend;
    int index;       /* GPU index; -1 on the cpu backend */
    char model[128]; /* "" when unknown */
    char uuid[64];   /* "" when unknown */
    char driver[64]; /* "" when unknown */
    char text[300];  /* one line: "cpu", "NVIDIA H200 (GPU-..., driver 580.1)" */
};

/* Fills `d` for `backend` and GPU `gpu`. Never fails: what the driver does
 * not say stays "" and reads "unknown" in `text`. */
void eval_device_describe(enum kiln_backend backend, int gpu, struct eval_device *d);

/* The "device" object: {"backend", "index", "model", "uuid", "driver"},
 * null for what is unknown (every GPU field on the cpu backend). */
json_t *eval_device_json(const struct eval_device *d);

/* What the document says about its inputs. */
struct eval_doc_info {
    const char *workload_source; /* as given: a built-in name or a directory */
    const struct workload *wl;
    const char *candidate_path; /* as given */
    const char *candidate_sha256;
    const struct eval_device *device;
};

/* The verdict `v` in eval's document format (version EVAL_DOC_VERSION):
 * summary.json's names for the same quantities (geomean_ms,
 * speedup_vs_reference, speedup_vs_baseline, fraction_of_floor, case_ms,
 * reference_ms), null where unknown, plus "kiln", "device", "workload" and
 * "candidate". The caller adds the session's keys (stage, baseline...). */
enum kiln_rc eval_doc_json(const struct verdict *v, const struct eval_doc_info *info, json_t **out,
                           struct kiln_err *err) KILN_NODISCARD;

#endif
