/*
 * sbexec.h - one sandboxed step: run a command with sandbox_run(), then
 * ingest the tar stream it returned into a fresh directory with the strict
 * tar_ingest rules. Every stage that runs untrusted code (input scripts,
 * references, the compiler, the harness) goes through here, so the return
 * channel is always read the same careful way.
 */
#ifndef KILN_SBEXEC_H
#define KILN_SBEXEC_H

#include <stdbool.h>

#include "error.h"
#include "sandbox.h"
#include "tar_ingest.h"

struct sbexec_step {
    const char *what;         /* for messages: "inputs.py for case big" */
    struct sandbox_spec spec; /* tar_fd is set by sbexec_run */
    const struct tar_rules *rules;
    const char *out_dir; /* created; receives the accepted files */
};

struct sbexec_result {
    struct sandbox_result sb;
    char line[256];         /* sandbox_verdict_line */
    bool exited_ok;         /* exited with status 0 */
    struct tar_names files; /* what was accepted into out_dir */
};

/*
 * Runs the step. KILN_OK when the program ran and its tar stream was
 * accepted (whatever its exit status: see res->exited_ok); KILN_E_SANDBOX
 * when the sandbox could not be built; KILN_E_REJECTED when the tar stream
 * broke a rule (the message names the entry). Free res with
 * sbexec_result_free in every case.
 */
enum kiln_rc sbexec_run(const struct sbexec_step *step, struct sbexec_result *res,
                        struct kiln_err *err) KILN_NODISCARD;

void sbexec_result_free(struct sbexec_result *res);

/* "exit 1 in 0.2 s; stderr: <last lines>" for failure messages. */
void sbexec_describe(const struct sbexec_result *res, char *buf, size_t cap);

#endif
