/* cgroup.c - per-sandbox cgroup: v2, else v1 (hybrid hosts), else none. */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static int write_str(const char *dir, const char *file, const char *val)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof(p), "%s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, val, strlen(val));
    int e = n < 0 ? -errno : 0;
    close(fd);
    return e;
}

static long long read_key(const char *dir, const char *file, const char *key)
{
    char p[PATH_MAX + 64], buf[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, file);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    size_t kl = strlen(key);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, key, kl) && l[kl] == ' ')
            return atoll(l + kl + 1);
    return -1;
}

/* This process's path in hierarchy `ctrl` ("" for v2) from /proc/self/cgroup. */
static int own_path(const char *ctrl, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return 0;
    char line[PATH_MAX + 64];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        line[strcspn(c2 + 1, "\n") + (size_t)(c2 + 1 - line)] = '\0';
        const char *ctrls = c1 + 1;
        if (*ctrl ? (strstr(ctrls, ctrl) != NULL) : (*ctrls == '\0' && !strncmp(line, "0", 1))) {
            snprintf(out, cap, "%s", c2 + 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

static void unique_name(char *out, size_t cap)
{
    unsigned int r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (unsigned)time(NULL);
    snprintf(out, cap, "kiln-sandbox-%d-%08x", (int)getpid(), r);
}

/* Removes the cgroups under `parent` that a kiln killed with SIGKILL left
 * behind (it never reached its cleanup): named for a kiln PID that no
 * longer exists. rmdir only succeeds on an empty cgroup, so one whose
 * processes still run (or whose PID was reused) is left alone. */
static void sweep_stale(const char *parent)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int pid = 0, n = 0;
        unsigned r = 0;
        if (sscanf(e->d_name, "kiln-sandbox-%d-%8x%n", &pid, &r, &n) != 2 || e->d_name[n] ||
            pid <= 0 || pid == (int)getpid())
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof(p), "%s/%s", parent, e->d_name) < (int)sizeof(p))
            (void)rmdir(p);
    }
    closedir(d);
}

/* Makes parent/name with memory.max and pids.max set; 1 on success. */
static int make_v2(struct sandbox_cgroup *cg, const char *parent, const char *name, long long mem,
                   long long pids)
{
    char val[64];
    sweep_stale(parent);
    (void)write_str(parent, "cgroup.subtree_control", "+memory +pids");
    snprintf(cg->mem_dir, sizeof(cg->mem_dir), "%s/%s", parent, name);
    if (mkdir(cg->mem_dir, 0755) < 0) {
        cg->mem_dir[0] = '\0';
        return 0;
    }
    snprintf(val, sizeof(val), "%lld", mem);
    int ok_mem = write_str(cg->mem_dir, "memory.max", val) == 0;
    (void)write_str(cg->mem_dir, "memory.swap.max", "0");
    snprintf(val, sizeof(val), "%lld", pids);
    int ok_pids = write_str(cg->mem_dir, "pids.max", val) == 0;
    if (!ok_mem || !ok_pids) {
        rmdir(cg->mem_dir);
        cg->mem_dir[0] = '\0';
        return 0;
    }
    snprintf(cg->pids_dir, sizeof(cg->pids_dir), "%s", cg->mem_dir);
    return 1;
}

static int try_v2(struct sandbox_cgroup *cg, const char *name, long long mem, long long pids)
{
    struct statfs sf;
    char own[PATH_MAX], parent[PATH_MAX];
    if (statfs("/sys/fs/cgroup", &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC ||
        !own_path("", own, sizeof(own)))
        return 0;
    /* A child of kiln's own (delegated) cgroup; when that one holds
     * processes, controllers cannot be enabled below it (no internal
     * processes), so as root fall back to a kiln subtree of the root. */
    snprintf(parent, sizeof(parent), "/sys/fs/cgroup%s", strcmp(own, "/") ? own : "");
    if (!make_v2(cg, parent, name, mem, pids)) {
        if (geteuid() != 0 || !strcmp(own, "/"))
            return 0;
        (void)write_str("/sys/fs/cgroup", "cgroup.subtree_control", "+memory +pids");
        if (mkdir("/sys/fs/cgroup/kiln-sandboxes", 0755) < 0 && errno != EEXIST)
            return 0;
        if (!make_v2(cg, "/sys/fs/cgroup/kiln-sandboxes", name, mem, pids))
            return 0;
    }
    cg->version = 2;
    snprintf(cg->desc, sizeof(cg->desc), "cgroup v2 memory.max %lld MiB, pids.max %lld", mem >> 20,
             pids);
    return 1;
}

static int make_v1(const char *ctrl, const char *name, char *dir, size_t cap)
{
    char own[PATH_MAX];
    if (!own_path(ctrl, own, sizeof(own)))
        return 0;
    char parent[PATH_MAX + 64];
    snprintf(parent, sizeof(parent), "/sys/fs/cgroup/%s%s", ctrl, strcmp(own, "/") ? own : "");
    sweep_stale(parent);
    snprintf(dir, cap, "%s/%s", parent, name);
    if (mkdir(dir, 0755) < 0) {
        dir[0] = '\0';
        return 0;
    }
    return 1;
}

static void try_v1(struct sandbox_cgroup *cg, const char *name, long long mem, long long pids)
{
    char val[64];
    if (make_v1("memory", name, cg->mem_dir, sizeof(cg->mem_dir))) {
        snprintf(val, sizeof(val), "%lld", mem);
        if (write_str(cg->mem_dir, "memory.limit_in_bytes", val) != 0) {
            rmdir(cg->mem_dir);
            cg->mem_dir[0] = '\0';
        } else {
            /* Swap must not let the cap be exceeded. */
            (void)write_str(cg->mem_dir, "memory.memsw.limit_in_bytes", val);
        }
    }
    if (make_v1("pids", name, cg->pids_dir, sizeof(cg->pids_dir))) {
        snprintf(val, sizeof(val), "%lld", pids);
        if (write_str(cg->pids_dir, "pids.max", val) != 0) {
            rmdir(cg->pids_dir);
            cg->pids_dir[0] = '\0';
        }
    }
    if (cg->mem_dir[0] || cg->pids_dir[0])
        cg->version = 1;
}

void cgroup_create(struct sandbox_cgroup *cg, long long memory_bytes, long long pids)
{
    memset(cg, 0, sizeof(*cg));
    char name[64];
    unique_name(name, sizeof(name));
    if (try_v2(cg, name, memory_bytes, pids))
        return;
    try_v1(cg, name, memory_bytes, pids);
    if (cg->mem_dir[0])
        snprintf(cg->desc, sizeof(cg->desc), "cgroup v1 memory.limit_in_bytes %lld MiB%s",
                 memory_bytes >> 20, cg->pids_dir[0] ? ", pids.max" : ", RLIMIT_NPROC");
    else
        snprintf(cg->desc, sizeof(cg->desc),
                 "none: no writable cgroup, memory NOT capped (delegate a cgroup to kiln)");
}

enum kiln_rc cgroup_attach(const struct sandbox_cgroup *cg, pid_t pid, struct kiln_err *err)
{
    char val[32];
    snprintf(val, sizeof(val), "%d", (int)pid);
    const char *dirs[2] = {cg->mem_dir, cg->pids_dir};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i][0] || (i == 1 && !strcmp(dirs[0], dirs[1])))
            continue;
        int e = write_str(dirs[i], "cgroup.procs", val);
        if (e == -ESRCH)
            return kiln_fail(err, KILN_E_NOTFOUND, "moving pid %d into cgroup %s: it has exited",
                             (int)pid, dirs[i]);
        if (e)
            return kiln_fail(err, KILN_E_SANDBOX,
                             "moving pid %d into cgroup %s: writing cgroup.procs: %s (kiln must "
                             "be able to write the cgroups it creates: run it as root or in a "
                             "delegated cgroup, systemd-run --user -p Delegate=yes)",
                             (int)pid, dirs[i], strerror(-e));
    }
    return KILN_OK;
}

bool cgroup_can_join_self(const struct sandbox_cgroup *cg)
{
    return cg->version == 1;
}

int cgroup_join_self(const struct sandbox_cgroup *cg)
{
    if (cg->version != 1)
        return -EOPNOTSUPP;
    const char *dirs[2] = {cg->mem_dir, cg->pids_dir};
    for (int i = 0; i < 2; i++) {
        if (!dirs[i][0])
            continue;
        int e = write_str(dirs[i], "tasks", "0");
        if (e)
            return e;
    }
    return 0;
}

void cgroup_events(const struct sandbox_cgroup *cg, int *oom_killed, int *pids_hit)
{
    *oom_killed = 0;
    *pids_hit = 0;
    if (cg->version == 2) {
        *oom_killed = read_key(cg->mem_dir, "memory.events", "oom_kill") > 0;
        *pids_hit = read_key(cg->pids_dir, "pids.events", "max") > 0;
    } else if (cg->version == 1) {
        if (cg->mem_dir[0])
            *oom_killed = read_key(cg->mem_dir, "memory.oom_control", "oom_kill") > 0;
        if (cg->pids_dir[0])
            *pids_hit = read_key(cg->pids_dir, "pids.events", "max") > 0;
    }
}

static void remove_dir(const char *dir)
{
    /* The last processes may still be exiting: retry briefly. */
    for (int i = 0; i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void cgroup_destroy(struct sandbox_cgroup *cg)
{
    if (cg->mem_dir[0])
        remove_dir(cg->mem_dir);
    if (cg->pids_dir[0] && strcmp(cg->pids_dir, cg->mem_dir))
        remove_dir(cg->pids_dir);
    memset(cg, 0, sizeof(*cg));
}
