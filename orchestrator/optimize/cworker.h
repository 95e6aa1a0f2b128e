/*
 * cworker.h - compile workers for `kiln optimize --jobs N`. A worker is a
 * fork()ed child of kiln that runs one candidate's parse, plan and compile
 * stages (eval_session_compile, which starts the compile sandbox) and
 * leaves the result as files in the candidate's scratch directory; the
 * parent waits for it with waitpid and picks the result up with
 * eval_session_run_compiled (which compiles itself when the worker left no
 * valid result, so a dead worker costs time, never a wrong verdict).
 *
 * Processes, not threads: sandbox_run forks, and fork in a threaded process
 * is unsafe. A worker dies with kiln: it sets PR_SET_PDEATHSIG(SIGKILL) and
 * checks getppid() against the race where kiln died first; its sandbox
 * follows through the sandbox's own parent-death signals. Nothing a worker
 * does reaches the run record: only the parent writes there.
 *
 * Lifecycle: cworker_start -> cworker_wait, or cworker_kill on the way out.
 */
#ifndef KILN_CWORKER_H
#define KILN_CWORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "session.h"

struct cworker {
    pid_t pid; /* 0: none */
    char name[16];
};

/* Forks a worker compiling candidate `name` (src, tunables as for
 * eval_session_run). Everything it is given is copied by the fork. */
enum kiln_rc cworker_start(struct eval_session *s, const char *name, const char *src, size_t len,
                           const int64_t *tunables, struct cworker *w,
                           struct kiln_err *err) KILN_NODISCARD;

/* Waits for the worker to end. *left_result: it exited 0, having left a
 * compile result (or found the candidate eliminated before compiling);
 * otherwise `why` says how it ended ("exit 1", "signal 9"). */
enum kiln_rc cworker_wait(struct cworker *w, bool *left_result, char *why, size_t cap,
                          struct kiln_err *err) KILN_NODISCARD;

/* Kills (SIGKILL) and reaps the worker, if any. */
void cworker_kill(struct cworker *w);

#endif
