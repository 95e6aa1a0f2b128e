/*
 * doctor.h - checks of what this host lets kiln do. doctor_collect() runs
 * every check in doctor.c's table and returns the findings as values the
 * CLI prints (or a future service returns as JSON).
 */
#ifndef KILN_DOCTOR_H
#define KILN_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

enum doctor_state { DOCTOR_OK, DOCTOR_DEGRADED, DOCTOR_MISSING };

#define DOCTOR_MAX_ITEMS 48

struct doctor_item {
    char name[32]; /* "user namespaces" */
    enum doctor_state state;
    char detail[512];   /* what was found */
    char fix[256];      /* how to fix it; "" when OK */
    char disables[128]; /* what kiln cannot do while this is not OK */
    /* What this host's job needs: kiln doctor exits 1 when such an item is
     * not OK. Not needed: what kiln works without (no GPU on a cpu-only
     * host, the profiler, NVRTC, torch, the docs index, cgroup v2 where v1
     * or rlimits stand in). */
    bool needed;
};

struct doctor_report {
    struct doctor_item items[DOCTOR_MAX_ITEMS];
    size_t n;
};

/* Runs every check. Fails only when a check could not run at all. */
enum kiln_rc doctor_collect(struct doctor_report *r, struct kiln_err *err) KILN_NODISCARD;

const char *doctor_state_name(enum doctor_state s);

/* kiln doctor's exit status for `r`: 0 when every needed item is OK (a
 * cpu-only host whose cpu backend works passes), 1 otherwise. */
int doctor_exit_status(const struct doctor_report *r);

#endif
