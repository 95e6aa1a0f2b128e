/*
 * cgroup.h - a throwaway cgroup per sandbox for the memory and pids caps.
 *
 * cgroup v2 (memory.max, pids.max) when kiln can create a child of its own
 * cgroup with those controllers; else cgroup v1 memory and pids hierarchies
 * when writable (hybrid hosts); else nothing, and `desc` says so: the caller
 * falls back to RLIMIT_NPROC for pids and reports memory as uncapped.
 * cgroup_create() never fails the run for lack of cgroups; cgroup_destroy()
 * removes what it created.
 */
#ifndef KILN_SANDBOX_CGROUP_H
#define KILN_SANDBOX_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

struct sandbox_cgroup {
    char mem_dir[PATH_MAX];  /* "" when memory is not capped by a cgroup */
    char pids_dir[PATH_MAX]; /* "" when pids are not capped by a cgroup (same as
                                mem_dir under v2) */
    int version;             /* 2, 1, or 0 for none */
    char desc[96];           /* "cgroup v2 memory.max 512 MiB", "none: ..." */
};

void cgroup_create(struct sandbox_cgroup *cg, long long memory_bytes, long long pids);

/* The parent moves process `pid` into the cgroup(s) (nothing to do without
 * any). Waits out an RCU grace period unless another move just did (ms).
 * KILN_E_NOTFOUND when `pid` has exited (its own report says why), else
 * KILN_E_SANDBOX naming the cgroup, the reason and the fix. */
enum kiln_rc cgroup_attach(const struct sandbox_cgroup *cg, pid_t pid, struct kiln_err *err);

/* Under v1 (cgroup_can_join_self() true): moves the calling process, which
 * must be single-threaded (a child right after fork), into the cgroup(s)
 * by writing "0" to `tasks`. A move of the caller's own thread skips the
 * global threadgroup lock, so it is not the RCU grace period of
 * cgroup_attach() (measured 0.02 ms against 8-40 ms). 0 or -errno, not
 * kiln_rc: it runs in the forked child (setup), where only
 * async-signal-safe calls belong and a failed step is reported as an errno
 * through the status pipe (base/error.h, "Which convention where"). */
int cgroup_join_self(const struct sandbox_cgroup *cg);

/* Whether cgroup_join_self() applies: v1. Under v2 a thread may not leave
 * its domain, so the parent attaches with cgroup_attach(). */
bool cgroup_can_join_self(const struct sandbox_cgroup *cg);

/* After the run: did the memory cap OOM-kill, did fork hit pids.max? */
void cgroup_events(const struct sandbox_cgroup *cg, int *oom_killed, int *pids_hit);

void cgroup_destroy(struct sandbox_cgroup *cg);

#endif
