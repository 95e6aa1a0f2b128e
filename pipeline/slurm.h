/*
 * slurm.h - run the pipeline's GPU step as a Slurm job (`--executor slurm`).
 *
 * The trusted parent stays where the user ran kiln. For each harness run it
 * makes a job directory under the spool (a directory the nodes share),
 * places the step's inputs and spec.json there, and submits one job
 * (`sbatch --parsable`, `--gres=gpu:1` when the step has a GPU) that runs
 * the node's kiln: `kiln sandbox-exec JOBDIR`, the same sandbox_run() with
 * the same policies and images as a local run. The node writes result.json
 * and stream.tar; the parent reads them as hostile data and hands the
 * stream to sbexec, which ingests it exactly as a local sandbox's.
 *
 * Status comes from squeue/scontrol, polled with backoff (never a blocking
 * `--wait`). A job that ends without a result because its node failed, it
 * was preempted or it was killed is reported and resubmitted once; a job
 * sbatch refuses, one that hits its time limit, and a second failure are
 * named in the error. When *cancel becomes non-zero (the CLI's SIGINT or
 * SIGTERM handler) the job is scancel'led and the step fails with
 * KILN_E_CANCELLED.
 *
 * Batches (sbexec_submit/sbexec_collect): steps submitted before the first
 * collect go to Slurm as ONE job array (`sbatch --array=0-(K-1)%LIMIT`);
 * task i runs `kiln sandbox-exec SPOOL/<batch>/i`, a link to its step's
 * job directory. All the runner's tasks are polled with one squeue call per
 * round (backoff 0.1 s to 2 s); a task squeue no longer lists is looked up
 * with sacct where accounting exists, else decided by its result.json. A
 * lost task is resubmitted once on its own, as a plain job; a cancel
 * scancels every array and job still out.
 */
#ifndef KILN_SLURM_H
#define KILN_SLURM_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>

#include "error.h"
#include "sbexec.h"

struct slurm_config {
    const char *spool;                   /* shared directory; required */
    const char *partition, *account;     /* NULL: the cluster's defaults */
    const char *gres;                    /* NULL: "gpu:1" for steps with a GPU, none otherwise */
    const char *node_kiln;               /* kiln on the nodes; NULL: this kiln's own path */
    const char *job_name;                /* one name per kiln run; NULL: "kiln" */
    const volatile sig_atomic_t *cancel; /* NULL: never cancelled */
    bool quiet;                          /* no progress lines on stderr */
    unsigned array_limit;                /* array tasks running at once; 0: 8 */
};

struct slurm_task; /* slurm_array.c: one submitted step of a batch */

struct slurm_runner {
    struct sbexec_runner runner; /* what sbexec_step.runner points at */
    struct slurm_config cfg;
    char kiln[PATH_MAX];
    char spool[PATH_MAX];
    unsigned seq;
    struct slurm_task *tasks; /* the batch tickets; NULL when none is out */
    size_t n_tasks;
};

/* Checks that sbatch answers and the spool is a writable directory, and
 * fills `s` (which must outlive every step that uses s->runner). */
enum kiln_rc slurm_runner_init(struct slurm_runner *s, const struct slurm_config *cfg,
                               struct kiln_err *err) KILN_NODISCARD;

/* The node's side (`kiln sandbox-exec JOBDIR`): runs JOBDIR/spec.json with
 * sandbox_run(), its tar stream into JOBDIR/stream.tar, then writes
 * JOBDIR/result.json (atomically: its presence means the run finished),
 * with the allocated GPU's names and properties (sbspec.h's device) when
 * the step had one. */
enum kiln_rc slurm_node_exec(const char *jobdir, struct kiln_err *err) KILN_NODISCARD;

/* Cancels every pending and running job of this user named `name`
 * (scancel --me --name): for one that owns the name alone (the service,
 * holding its database's lock) to end the jobs a predecessor killed with
 * SIGKILL could not cancel. */
enum kiln_rc slurm_cancel_named(const char *name, struct kiln_err *err) KILN_NODISCARD;

/* One Slurm job state word ("COMPLETED", "NODE_FAIL") sorted for kiln. */
enum slurm_end {
    SLURM_END_RUNNING = 0, /* not finished */
    SLURM_END_DONE,        /* COMPLETED, FAILED, ...: look for result.json */
    SLURM_END_LOST,        /* NODE_FAIL, PREEMPTED, BOOT_FAIL, ...: resubmit once */
    SLURM_END_TIMEOUT,     /* TIMEOUT, DEADLINE */
    SLURM_END_CANCELLED,   /* CANCELLED */
};
enum slurm_end slurm_state_end(const char *state);

#endif
