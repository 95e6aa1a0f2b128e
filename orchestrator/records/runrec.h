/*
 * runrec.h - a run record: the directory results/run-NNN/ that makes a run
 * auditable and resumable. NNN is allocated with mkdir(2), which is atomic,
 * so concurrent runs never share a directory. Every file is written
 * atomically (fsutil), so `kill -9` leaves each file old or new, never torn.
 *
 * Lifecycle: runrec_create (new run) or runrec_open (resume) -> writes ->
 * runrec_close.
 */
#ifndef KILN_RUNREC_H
#define KILN_RUNREC_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "compile.h"
#include "error.h"
#include "gpuarch.h"

struct runrec {
    char dir[PATH_MAX]; /* results/run-NNN */
    int number;         /* NNN */
};

/* The format versions of the records kiln writes (results/README.md). A
 * record without "version" was written before they had one: read as 1. */
#define RUNREC_RUN_VERSION         1 /* run.json */
#define RUNREC_ENVIRONMENT_VERSION 1 /* environment.json */
#define RUNREC_HISTORY_VERSION     1 /* each history.json entry */

/* KILN_OK when `doc` (the record `what`, for the message) has no
 * "version" or an integer 1..newest; KILN_E_UNSUPPORTED ("use a newer
 * kiln") when it is newer; KILN_E_PARSE when it is not such a number. */
enum kiln_rc runrec_check_version(const json_t *doc, const char *what, int newest,
                                  struct kiln_err *err) KILN_NODISCARD;

/* runrec_check_version of run.json, of every history.json entry and, when
 * `env` is not NULL, of environment.json. */
enum kiln_rc runrec_check_versions(const json_t *run, const json_t *history, const json_t *env,
                                   struct kiln_err *err) KILN_NODISCARD;

/* The highest run number: beyond it (a directory run-2147483647, say) a new
 * run is refused, naming the directory, rather than wrapping around. */
#define RUNREC_MAX_RUN 999999999

/* Creates `results_dir` if needed and a fresh run-NNN inside it, numbered
 * after the highest existing run-NNN (KILN_E_USAGE past RUNREC_MAX_RUN). */
enum kiln_rc runrec_create(const char *results_dir, struct runrec *rr,
                           struct kiln_err *err) KILN_NODISCARD;

/* Opens an existing run directory (for resume and report). */
enum kiln_rc runrec_open(const char *run_dir, struct runrec *rr,
                         struct kiln_err *err) KILN_NODISCARD;

/* Writes `rel` (its subdirectories created as needed) atomically. Every
 * read and write under a run goes through beneath.h: a symlink anywhere in
 * the run (a forged `candidates/007 -> /home/you`) is refused, never
 * followed. */
enum kiln_rc runrec_write(const struct runrec *rr, const char *rel, const void *data, size_t len,
                          struct kiln_err *err) KILN_NODISCARD;

/* As runrec_write for a JSON document (indented, keys in insertion order). */
enum kiln_rc runrec_write_json(const struct runrec *rr, const char *rel, const json_t *doc,
                               struct kiln_err *err) KILN_NODISCARD;

/* Reads `rel` as JSON (capped at `max` bytes); KILN_E_NOTFOUND if absent. */
enum kiln_rc runrec_read_json(const struct runrec *rr, const char *rel, size_t max, json_t **out,
                              struct kiln_err *err) KILN_NODISCARD;

/* Reads `rel` (at most `max` bytes, NUL-terminated; free()). */
enum kiln_rc runrec_read(const struct runrec *rr, const char *rel, size_t max, char **out,
                         size_t *len, struct kiln_err *err) KILN_NODISCARD;

/* The full path of directory `rel`, created if absent and checked to be a
 * real directory beneath the run with no link on the way or anywhere
 * inside it (beneath_check_tree), for callers that
 * hand the path on (the session's work/, the workload copy). */
enum kiln_rc runrec_dir(const struct runrec *rr, const char *rel, char *out, size_t cap,
                        struct kiln_err *err) KILN_NODISCARD;

/* The run's lock: work/lock, flock'ed exclusively by kiln optimize and
 * kiln resume for as long as they work on the run (released when *fd is
 * closed or the process ends, kill -9 included), so kiln gc and a second
 * resume can tell a live run. KILN_E_USAGE when another process holds it. */
#define RUNREC_LOCK "work/lock"
enum kiln_rc runrec_lock(const struct runrec *rr, int *fd, struct kiln_err *err) KILN_NODISCARD;

/* For kiln gc: takes the lock of run directory `dir` (a path of the
 * caller's) exclusively without waiting and returns its descriptor (close
 * it to release), so no kiln resume starts on the run meanwhile. -1 with
 * *in_progress true: another process holds it (the run is live) or flock
 * failed (treated the same); -1 with
 * *in_progress false: no lock file (a run of an older kiln, or one whose
 * work/ is gone) or a link where it should be (never followed). */
int runrec_lock_dir(const char *dir, bool *in_progress);

/* Full path of `rel` inside the run (not checked on disk). */
enum kiln_rc runrec_path(const struct runrec *rr, const char *rel, char *out, size_t cap,
                         struct kiln_err *err) KILN_NODISCARD;

/* What run.json says about timing and compiling, for readers of a run
 * (resume, replay). `timed_runs` holds the counts in effect (0 warmups is
 * none: EVAL_NO_WARMUPS); runs older than it have only the top-level
 * `warmups`/`iterations`, where 0 meant the default, passed on as such. */
void runrec_timed_runs(const json_t *run, int *warmups, int *iterations);
/* run.json's timing rule (timed_runs.rule): *adaptive false for "fixed"
 * and for runs recorded before the rule was; target and budget 0 then. */
void runrec_timing_rule(const json_t *run, bool *adaptive, double *target_rse, double *budget_ms);

/* What a recorded run compiled its candidates for: run.json's target when it
 * names an architecture (base/gpuarch.h), sm_90 for a cuda run older than
 * targets (kiln compiled only for it then), "" for cpu. */
void runrec_target_arch(const json_t *run, char out[GPUARCH_NAME_MAX]);

/* run.json's `compiler`: "nvcc" or "nvrtc" (the cuda backend's), "cc" (a
 * cpu run's: *tool is then the cuda default, which cpu runs ignore), absent
 * in older runs (nvcc). False for anything else. */
bool runrec_compiler(const json_t *run, enum compile_tool *tool);

#endif

/* The run's MANIFEST (manifest.h): every file of the record except work/
 * (scratch and caches kiln re-checks itself). */

/* Once a run has a MANIFEST, every runrec_write announces itself there
 * first (manifest_announce), so the MANIFEST follows the record with one
 * small write per file and a crash at any point leaves a record that
 * verifies. */

/* Creates (or rebuilds) MANIFEST from a full scan of the record, announcing
 * `rel`, then writes `rel` as runrec_write_json does. For run.json: the
 * files before it (workload/, given/) are in the first MANIFEST. */
enum kiln_rc runrec_commit_json(const struct runrec *rr, const char *rel, const json_t *doc,
                                struct kiln_err *err) KILN_NODISCARD;

/* Verifies the record against its MANIFEST before anything in it is
 * trusted. Tolerated (and counted in *in_flight when not NULL): leftovers
 * of interrupted atomic writes, and the files kiln writes for a candidate
 * whose number is above `finished` (it was in flight and is redone).
 * KILN_E_REJECTED names every changed, missing, extra or renamed file;
 * KILN_E_NOTFOUND when there is no MANIFEST. */
enum kiln_rc runrec_manifest_check(const struct runrec *rr, size_t finished, size_t *in_flight,
                                   struct kiln_err *err) KILN_NODISCARD;
