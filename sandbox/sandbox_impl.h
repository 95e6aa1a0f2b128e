/*
 * sandbox_impl.h - what the files of sandbox_run() share. NOT part of the
 * contract: sandbox.h is the whole contract, and only the sandbox's own
 * files below include this header.
 *
 *   sandbox.c        the parent: pipes, fork, cgroup attach, reading the
 *                    status/stdout/stderr/tar pipes, the verdict
 *   sandbox_plan.c   the spec checked and resolved into a plan, before any fork
 *   sandbox_child.c  setup, init and the program: all that runs after fork
 *                    but the filesystem
 *   sandbox_fs.c     the filesystem init builds: binds, /dev, /proc, /tmp,
 *                    /out, /in, pivot_root; then hostname and loopback
 */
#ifndef KILN_SANDBOX_IMPL_H
#define KILN_SANDBOX_IMPL_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#include "cgroup.h"
#include "policy.h"
#include "sandbox.h"
#include "uidslot.h"

#define SANDBOX_MAX_INPUTS 64
#define SANDBOX_MAX_DEVS   8
#define STAGE_ROOT         "/tmp/root" /* where the new root is built */

struct sandbox_image;

enum msg_type { MSG_FAILED = 1, MSG_SKIPPED, MSG_REFUSED, MSG_DONE, MSG_INIT_PID };

/* How the sandbox's own processes end when they cannot go on. The parent
 * learns the cause from the status pipe (MSG_FAILED names the step); these
 * statuses only keep the three cases apart, in the shell's convention. */
enum sb_exit {
    SB_EXIT_LOST = 125,        /* setup or init lost its child or could not wait for it */
    SB_EXIT_STEP_FAILED = 126, /* a set-up step failed (sb_die_step) */
    SB_EXIT_EXEC_FAILED = 127, /* the program could not be executed */
};

/* One record on the status pipe; smaller than PIPE_BUF, so writes are atomic. */
struct msg {
    int type;
    int err;           /* MSG_FAILED: errno */
    long long a, b, c; /* MSG_DONE: wait status, timed out, microseconds;
                          MSG_REFUSED: nr, arch */
    char text[256];    /* step, skipped path and reason; MSG_REFUSED: arguments */
};

struct plan {
    const struct sandbox_spec *spec;
    struct sandbox_limits lim;
    struct sandbox_policy pol;
    struct sandbox_image *img;
    char in_src[SANDBOX_MAX_INPUTS][PATH_MAX]; /* absolute; staged copies when root */
    int in_staged;
    char dev_names[SANDBOX_MAX_DEVS][32];
    size_t n_devs;
    char **envp;
    struct sandbox_cgroup cg;
    struct uid_slot slot; /* kiln as root: the sandbox's own host uid/gid */
    int status_w, out_w, err_w, tar_w;
    int cg_self_join; /* setup joins the cgroup itself (v1: cgroup_join_self) */
    int go_r, go_w;   /* else a socketpair: the parent says init is in the cgroup: '1' */
    pid_t kiln_pid;
};

/* ---- child side (sandbox_child.c, sandbox_fs.c): runs after fork ---- */

/* Reports a failed set-up step and ends this process. */
void sb_die_step(const struct plan *pl, const char *step, int e);

#define STEP(pl, cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            int e_ = errno;                                                                        \
            char s_[256];                                                                          \
            snprintf(s_, sizeof(s_), __VA_ARGS__);                                                 \
            sb_die_step((pl), s_, e_);                                                             \
        }                                                                                          \
    } while (0)

/* sandbox_fs.c: the new root, entered by pivot_root. */
void sb_build_root(struct plan *pl);

/* sandbox_child.c: the first child (setup); never returns. */
void sb_run_setup(struct plan *pl);

/* sandbox_child.c: CLOCK_MONOTONIC in microseconds (both sides). */
long long sb_now_us(void);

/* ---- parent side (sandbox_plan.c) ---- */

/* Checks spec and fills pl (pl->spec already set); sb_plan_free() after,
 * also after a failure. */
enum kiln_rc sb_prepare(struct plan *pl, const struct sandbox_spec *spec, struct kiln_err *err);
void sb_plan_free(struct plan *pl);

#endif
