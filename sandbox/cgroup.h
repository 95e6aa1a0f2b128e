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

/* Moves process `pid` into the cgroup(s); 0 or -errno (0 without any). */
int cgroup_attach(const struct sandbox_cgroup *cg, pid_t pid);

/* After the run: did the memory cap OOM-kill, did fork hit pids.max? */
void cgroup_events(const struct sandbox_cgroup *cg, int *oom_killed, int *pids_hit);

void cgroup_destroy(struct sandbox_cgroup *cg);

#endif
