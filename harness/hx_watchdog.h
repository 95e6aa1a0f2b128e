/*
 * hx_watchdog.h - the harness's per-case time limit (HARNESS.md section 3).
 * A thread watches the case in progress; when its deadline passes (a hung
 * kernel, a printf flood, a CPU candidate in an endless loop) it writes the
 * documents the core prepared when the case began, with the case failed as
 * `timeout` (naming its phase, set and run) and the rest `skipped`, and ends
 * the process with status 0 ("the documents were written"). A kernel that
 * never returns cannot be stopped any other way; the process's end is what
 * takes it off the GPU. The sandbox's own, longer limit stays the backstop.
 *
 * Second piece of process-wide behaviour besides the CPU crash handler:
 * it ends the process, so it lives only in the harness program.
 */
#ifndef KILN_HX_WATCHDOG_H
#define KILN_HX_WATCHDOG_H

#include "error.h"

struct hx_watchdog;

/* Starts the thread, disarmed. Documents go to `out_dir`; the log line to
 * `log_fd` with timestamps from `t0_ms` (hx_now_ms's clock). */
enum kiln_rc hx_watchdog_start(struct hx_watchdog **out, const char *out_dir, int log_fd,
                               double t0_ms, struct kiln_err *err) KILN_NODISCARD;

/*
 * Arms it for case `case_name` until `deadline_ms` (hx_now_ms's clock),
 * `limit_ms` being the limit it enforces (for the message). `timings` and
 * `status` are the two documents to write if it fires (the watchdog takes
 * ownership of the malloc'd texts, also on failure); in `status`, the
 * strings "@PHASE@", "@SET@", "@WHERE@" and the number 987654321987 are
 * replaced by the phase, the set, a description of where, and the run.
 */
enum kiln_rc hx_watchdog_arm(struct hx_watchdog *w, const char *case_name, double deadline_ms,
                             double limit_ms, char *timings, char *status,
                             struct kiln_err *err) KILN_NODISCARD;

/* Where the case is now: phase and set are strings that outlive the
 * watchdog (the plan's names, literals). Cheap: atomic stores. */
void hx_watchdog_where(struct hx_watchdog *w, const char *phase, const char *set, int run);

/* Disarms (the case finished in time). */
void hx_watchdog_disarm(struct hx_watchdog *w);

/* Stops and joins the thread, frees everything; NULL is fine. */
void hx_watchdog_stop(struct hx_watchdog *w);

#define HX_WATCHDOG_RUN_MARK 987654321987LL

#endif
