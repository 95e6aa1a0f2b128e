/*
 * hstatus.h - the one parser of status.json, the harness's per-case outcome
 * (schema: harness/HARNESS.md section 4). Written inside the sandbox, so
 * untrusted: size-capped, strict keys and types, bounded strings.
 */
#ifndef KILN_HSTATUS_H
#define KILN_HSTATUS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "failure_kind.h"

#define HSTATUS_MAX_BYTES (1u << 20)
#define HSTATUS_MAX_CASES 256

struct hstatus_case {
    char name[64];
    char status[16]; /* ok, failed, skipped */
    bool failed;
    enum failure_kind kind; /* FK_NONE when none */
    char phase[16];
    char set[64];
    int run;
    char tensor[65];
    char cuda_error[64];
    char detail[256];
};

/* Where the harness's own time went (status.json "phases_s"), seconds.
 * Untrusted numbers: for the turnaround report only, never for a verdict. */
struct hstatus_phases {
    bool present; /* the document had "phases_s" */
    double context, layout, read, upload, correctness, timing, outputs, total;
};

#define HSTATUS_MAX_PHASE_S 1e6 /* a phase longer than this (11 days) is rejected */

struct hstatus {
    char backend[8];
    char device[128];
    bool l2_flush;
    bool failed;
    struct hstatus_case *cases; /* owned */
    size_t ncases;
    struct hstatus_phases phases;
};

enum kiln_rc hstatus_parse(const void *buf, size_t len, struct hstatus *out,
                           struct kiln_err *err) KILN_NODISCARD;

/* The entry for case `name`, or NULL. */
const struct hstatus_case *hstatus_find(const struct hstatus *s, const char *name);

void hstatus_free(struct hstatus *s);

#endif
