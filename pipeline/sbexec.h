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
#include "sbspec.h"
#include "tar_ingest.h"

/*
 * Where a step runs. NULL in a step: sandbox_run() on this host. Otherwise
 * `run` must do what sandbox_run() does somewhere else (pipeline/slurm.h:
 * a Slurm job running the node's kiln) and hand back the same two things:
 * the result and /out's tar stream, written to tar_fd. `gpu` >= 0 asks for a
 * GPU (the remote host picks which). sbexec ingests that
 * stream exactly as a local one. `where` receives one line naming where it
 * ran ("slurm job 42 on node n1"); empty when there is nothing to say.
 * `dev` receives the remote host's GPU as it reported it (sbspec.h), or
 * is left with present false.
 */
struct sbexec_runner {
    const char *name; /* "slurm" */
    enum kiln_rc (*run)(void *ctx, const char *what, const struct sandbox_spec *spec, int gpu,
                        int tar_fd, struct sandbox_result *res, char *where, size_t where_cap,
                        struct sbnode_device *dev, struct kiln_err *err);
    void *ctx;
    /* Batches (optional; NULL where the runner has none). submit places
     * the step where the remote host reaches it and queues it under a
     * ticket; nothing waits. collect sends every queued step off at once
     * (slurm.h: one job array), waits for the ticket's and hands back what
     * run would. drop gives a ticket up, cancelling its job. Each ticket
     * is collected or dropped exactly once. */
    enum kiln_rc (*submit)(void *ctx, const char *what, const struct sandbox_spec *spec, int gpu,
                           long *ticket, struct kiln_err *err);
    enum kiln_rc (*collect)(void *ctx, long ticket, int tar_fd, struct sandbox_result *res,
                            char *where, size_t where_cap, struct sbnode_device *dev,
                            struct kiln_err *err);
    void (*drop)(void *ctx, long ticket);
};

struct sbexec_step {
    const struct sbexec_runner *runner; /* NULL: this host */
    const char *what;                   /* for messages: "inputs.py for case big" */
    struct sandbox_spec spec;           /* tar_fd is set by sbexec_run; so are vars and devices
                                           when left NULL (hostvars.h), on the host that runs it */
    int gpu;                            /* kiln GPU index to grant (gpuinfo.h order), -1 for none */
    const struct tar_rules *rules;
    const char *out_dir; /* created; receives the accepted files */
    /* Keep the (unnamed, private) stream file open in res->stream_fd, for
     * the files rules->in_stream leaves in it (res->files.spans): they
     * are read or mapped from there instead of being copied out. */
    bool keep_stream;
};

struct sbexec_result {
    struct sandbox_result sb;
    char line[256];         /* sandbox_verdict_line */
    bool exited_ok;         /* exited with status 0 */
    struct tar_names files; /* what was accepted into out_dir, and the spans left in the stream */
    bool has_stream;        /* stream_fd is open (step.keep_stream and the stream was accepted) */
    int stream_fd;          /* the stream file; nobody else can reach or write it */
    double sandbox_s;       /* sandbox_run: set-up, the program, the tar stream, tear-down */
    double ingest_s;        /* tar_ingest of the stream */
    char where[256];        /* the runner's line about where it ran; "" when local */
    struct sbnode_device device; /* the runner's host's GPU; present false when local */
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

/* Batches, where sbexec_can_batch(step->runner): sbexec_submit queues the
 * step on its runner; sbexec_collect is then sbexec_run for it (the same
 * result, the same ingest), waiting for that step alone; sbexec_drop gives
 * a submitted step up. Several steps submitted before the first collect
 * run at once. */
bool sbexec_can_batch(const struct sbexec_runner *r);
enum kiln_rc sbexec_submit(const struct sbexec_step *step, long *ticket,
                           struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc sbexec_collect(const struct sbexec_step *step, long ticket, struct sbexec_result *res,
                            struct kiln_err *err) KILN_NODISCARD;
void sbexec_drop(const struct sbexec_step *step, long ticket);

/* Frees what sbexec_run returned, closing the kept stream file. */
void sbexec_result_free(struct sbexec_result *res);

/* "exit 1 in 0.2 s; stderr: <last lines>" for failure messages. */
void sbexec_describe(const struct sbexec_result *res, char *buf, size_t cap);

#endif
