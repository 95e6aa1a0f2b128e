/*
 * tuner_findings.h - `kiln optimize --proposer llm --tuner-run RUN_DIR`: what
 * an earlier tuner run of the same workload found, for the llm proposer's
 * prompt, so a model starts where the tuner stopped.
 *
 * The run directory may come from anyone: it is read as untrusted input.
 * Files are read beneath it (no link followed, beneath.h via runrec.h),
 * each under its own size cap, and parsed only by the tuner_findings_parse_*
 * functions below (json_strict.h; fuzz target fuzz_findings). Nothing the
 * record says reaches the prompt as text: the prompt block is kiln's own,
 * made of range-checked numbers, with tunable, kernel and case names taken
 * from this run's workload (a name in the record that the workload does
 * not declare is refused).
 *
 * Files read (results/README.md): run.json (workload, backend, proposer),
 * history.json (the passing tuner configurations and their times),
 * summary.json (the best; optional: an interrupted run has none),
 * candidates/NNN/verdict.json (the tunable values of the fastest
 * configurations and of the best), the best's profile.json (optional:
 * --profile), best.cu|c (optional). Their SHA-256 digests are recorded in
 * the new run's run.json ("tuner_run"), and `kiln resume` refuses a file
 * that changed since, so the prompt it rebuilds is the same.
 */
#ifndef KILN_TUNER_FINDINGS_H
#define KILN_TUNER_FINDINGS_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "ncu_csv.h"

struct workload;

#define FINDINGS_TOP         5  /* configurations listed, the fastest first */
#define FINDINGS_MAX_CONFIG  64 /* tunables of one configuration (OPT_MAX_CONFIG) */
#define FINDINGS_NAME_MAX    32
#define FINDINGS_RUN_MAX     (1u << 20)  /* run.json */
#define FINDINGS_HISTORY_MAX (64u << 20) /* history.json */
#define FINDINGS_SUMMARY_MAX (64u << 20) /* summary.json */
#define FINDINGS_PROFILE_MAX (1u << 20)  /* profile.json */
#define FINDINGS_SOURCE_MAX  (1u << 20)  /* best.cu|c */
#define FINDINGS_HISTORY_LEN 1000        /* entries: kiln's budget cap (OPT_MAX_ITER) */
#define FINDINGS_VALUE_MAX   (INT64_C(1) << 40)
#define FINDINGS_MS_MAX      1e9

/* run.json's identity of the earlier run: plain names, checked. */
struct findings_run {
    char workload[65];
    char backend[8];
    char proposer[8];
};

/* One passing tuner configuration. */
struct findings_config {
    char candidate[8]; /* "003": digits only */
    double geomean_ms; /* finite, in (0, FINDINGS_MS_MAX) */
    size_t n;
    char names[FINDINGS_MAX_CONFIG][FINDINGS_NAME_MAX + 1]; /* C identifiers */
    int64_t values[FINDINGS_MAX_CONFIG];                    /* |v| <= FINDINGS_VALUE_MAX */
};

/* What a profile.json with status "ok" says (the other statuses: *ok false). */
struct findings_profile {
    bool ok;
    char case_name[65]; /* a plain name */
    int launches;
    struct ncu_report report; /* kernel names C identifiers, values range-checked */
};

/* The parsers: one per document, each on the document's bytes. Messages
 * start with `what` (the file's name). */
enum kiln_rc tuner_findings_parse_run(const char *what, const void *buf, size_t len,
                                      struct findings_run *out,
                                      struct kiln_err *err) KILN_NODISCARD;

/* The passing entries of proposer "tune" with a time: how many (*passed)
 * and the FINDINGS_TOP fastest (candidate and time only), ties in order. */
enum kiln_rc tuner_findings_parse_history(const char *what, const void *buf, size_t len,
                                          struct findings_config top[FINDINGS_TOP], size_t *ntop,
                                          size_t *passed, struct kiln_err *err) KILN_NODISCARD;

/* summary.json's best: "start", a candidate's digits, or "" (null). */
enum kiln_rc tuner_findings_parse_summary(const char *what, const void *buf, size_t len,
                                          char best[8], struct kiln_err *err) KILN_NODISCARD;

/* A verdict.json's "config" (tunable values) into c->names/values/n. */
enum kiln_rc tuner_findings_parse_config(const char *what, const void *buf, size_t len,
                                         struct findings_config *c,
                                         struct kiln_err *err) KILN_NODISCARD;

enum kiln_rc tuner_findings_parse_profile(const char *what, const void *buf, size_t len,
                                          struct findings_profile *out,
                                          struct kiln_err *err) KILN_NODISCARD;

struct tuner_findings {
    char best[8];      /* summary.json's best ("start", digits, "") */
    char *best_source; /* best.cu|c when the best is a candidate; NULL otherwise */
    size_t best_len;
    char *text;     /* the prompt block (kiln's text); owned */
    json_t *record; /* run.json's "tuner_run": {path, files: {rel: sha256}} */
};

/* Reads run `dir` for a run of workload `wl` (its starting kernel names the
 * tunables and kernels, its cases the profiled case) on backend `b`. A run
 * of another workload or backend, or not of the tuner, is KILN_E_USAGE
 * naming both. `expect`: NULL for a new run; resume passes the recorded
 * "files" object, and a file whose digest differs (or one read now that was
 * not then) is KILN_E_REJECTED. */
enum kiln_rc tuner_findings_load(const char *dir, const struct workload *wl, enum kiln_backend b,
                                 const json_t *expect, struct tuner_findings *out,
                                 struct kiln_err *err) KILN_NODISCARD;

void tuner_findings_free(struct tuner_findings *f);

#endif
