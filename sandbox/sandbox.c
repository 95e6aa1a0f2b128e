/*
 * sandbox.c - sandbox_run(): the process tree and the set-up timeline.
 *
 *   kiln (caller, trusted)        reads status/stdout/stderr/tar pipes
 *    `- setup   (host PID ns)     cgroup; drops to an unprivileged uid; new
 *        |                        user/mount/net/ipc/uts/cgroup namespaces
 *        `- init (PID 1)          mounts, pivot_root; reaps orphans; names
 *            |                    refused syscalls; enforces the timeout;
 *            |                    packs /out into the tar pipe
 *            `- program           rlimits, caps, no_new_privs, seccomp, exec
 *
 * Every child step that fails sends {step, errno} on the status pipe and
 * _exits: the program never runs half-confined. The parent only reads pipes.
 */
#include "sandbox.h"

#include "fdio.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "image.h"
#include "outpack.h"
#include "policy.h"

#define SANDBOX_MAX_INPUTS 64
#define SANDBOX_MAX_DEVS   8
#define SANDBOX_UID        1000 /* the id inside; mapped to the caller's, or nobody for root */
#define NOBODY_ID          65534
#define GRACE_MS           30000        /* backstop beyond the timeout: packing /out */
#define STAGE_ROOT         "/tmp/root"  /* where the new root is built */
#define TAR_SLACK          (16LL << 20) /* headers on top of the data cap */
#define TAR_PIPE_BYTES     (1 << 20)    /* the tar pipe's capacity, and the parent's reads */

enum msg_type { MSG_FAILED = 1, MSG_SKIPPED, MSG_REFUSED, MSG_DONE, MSG_INIT_PID };

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
    int status_w, out_w, err_w, tar_w;
    int go_r, go_w; /* socketpair: the parent says init is in the cgroup: '1' */
    pid_t kiln_pid;
};

/* ---- child side: every function here runs after fork ---- */

static void send_msg(int fd, const struct msg *m)
{
    ssize_t n;
    do
        n = write(fd, m, sizeof(*m));
    while (n < 0 && errno == EINTR);
}

/* Reports a failed set-up step and ends this process. */
static void die_step(const struct plan *pl, const char *step, int e)
{
    struct msg m = {.type = MSG_FAILED, .err = e};
    snprintf(m.text, sizeof(m.text), "%s", step);
    send_msg(pl->status_w, &m);
    _exit(126);
}

#define STEP(pl, cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            int e_ = errno;                                                                        \
            char s_[256];                                                                          \
            snprintf(s_, sizeof(s_), __VA_ARGS__);                                                 \
            die_step((pl), s_, e_);                                                                \
        }                                                                                          \
    } while (0)

static int write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, s, strlen(s));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int mkdirs(const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s", rel);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* Creates the mount point `rel` (relative to the new root) like `src` (file
 * or directory) and bind-mounts src there with `attrs`. */
static void bind_path(const struct plan *pl, const char *src, const char *rel,
                      unsigned long long attrs, const char *what)
{
    struct stat st;
    STEP(pl, stat(src, &st) == 0, "stat %s", what);
    if (S_ISDIR(st.st_mode)) {
        STEP(pl, mkdirs(rel) == 0, "create mount point for %s", what);
    } else {
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", rel);
        char *sl = strrchr(parent, '/');
        if (sl) {
            *sl = '\0';
            STEP(pl, mkdirs(parent) == 0, "create mount point for %s", what);
        }
        int f = open(rel, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        STEP(pl, f >= 0 || errno == EEXIST || errno == EROFS, "create mount point for %s", what);
        if (f >= 0)
            close(f);
    }
    STEP(pl, mount(src, rel, NULL, MS_BIND | MS_REC, NULL) == 0, "bind mount %s", what);
    struct mount_attr ma = {.attr_set = attrs};
    STEP(pl, mount_setattr(AT_FDCWD, rel, AT_RECURSIVE, &ma, sizeof(ma)) == 0,
         "make %s read-only, nosuid, nodev", what);
}

/* Big files in /out and /tmp (a harness's outputs: gigabytes) are written
 * and packed several times faster in huge pages (measured: 1 GiB written
 * 0.56 -> 0.09 s, read 0.21 -> 0.06 s). "huge=within_size" is refused
 * (EINVAL) by kernels without transparent huge pages: then plain pages. */
static void mount_tmpfs(const struct plan *pl, const char *rel, long long size, const char *mode,
                        unsigned long flags, bool huge, const char *what)
{
    char opts[160];
    STEP(pl, mkdirs(rel) == 0, "create %s", what);
    snprintf(opts, sizeof(opts), "size=%lld,nr_inodes=16384,mode=%s,huge=within_size", size, mode);
    if (huge && mount("tmpfs", rel, "tmpfs", flags, opts) == 0)
        return;
    STEP(pl, !huge || errno == EINVAL, "mount %s (tmpfs %s)", what, opts);
    snprintf(opts, sizeof(opts), "size=%lld,nr_inodes=16384,mode=%s", size, mode);
    STEP(pl, mount("tmpfs", rel, "tmpfs", flags, opts) == 0, "mount %s (tmpfs %s)", what, opts);
}

static void loopback_up(const struct plan *pl)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    STEP(pl, s >= 0, "open a socket to bring up loopback");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    STEP(pl, ioctl(s, SIOCGIFFLAGS, &ifr) == 0, "read loopback flags");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    STEP(pl, ioctl(s, SIOCSIFFLAGS, &ifr) == 0, "bring up loopback");
    close(s);
}

/* The filesystem, built in a tmpfs mounted on /tmp of the private mount
 * namespace, then made the root by pivot_root. */
static void build_root(struct plan *pl)
{
    const unsigned long long ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    STEP(pl, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0,
         "make the mount namespace private");
    if (!pl->in_staged) {
        /* Inputs may live under /tmp, which the scratch tmpfs hides: hold
         * them by descriptor (same mount namespace) and bind from those. */
        for (size_t i = 0; i < pl->spec->n_inputs; i++) {
            int fd = open(pl->in_src[i], O_PATH | O_CLOEXEC);
            STEP(pl, fd >= 0, "open input %s", pl->in_src[i]);
            snprintf(pl->in_src[i], sizeof(pl->in_src[i]), "/proc/self/fd/%d", fd);
        }
        STEP(pl, mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") == 0,
             "mount a scratch tmpfs on /tmp");
        STEP(pl, mkdir(STAGE_ROOT, 0755) == 0, "create " STAGE_ROOT);
    }
    STEP(pl, mount("tmpfs", STAGE_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") == 0,
         "mount the new root tmpfs");
    STEP(pl, chdir(STAGE_ROOT) == 0, "enter the new root");
    const struct sandbox_image *im = pl->img;
    for (size_t i = 0; i < im->n_binds; i++) {
        const char *rel = im->binds[i].path + 1;
        if (im->binds[i].link[0]) {
            char parent[PATH_MAX];
            snprintf(parent, sizeof(parent), "%s", rel);
            char *sl = strrchr(parent, '/');
            if (sl) {
                *sl = '\0';
                STEP(pl, mkdirs(parent) == 0, "create %s", im->binds[i].path);
            }
            STEP(pl, symlink(im->binds[i].link, rel) == 0 || errno == EEXIST,
                 "create symlink %s -> %s", im->binds[i].path, im->binds[i].link);
            continue;
        }
        bind_path(pl, im->binds[i].path, rel, ro, im->binds[i].path);
    }
    /* /dev: only the listed nodes, bound from the host (mknod is not
     * allowed in a user namespace); the tmpfs itself ends read-only. */
    mount_tmpfs(pl, "dev", 65536, "0755", MS_NOSUID | MS_NOEXEC, false, "/dev");
    for (size_t i = 0; i < pl->n_devs; i++) {
        char rel[64], src[64];
        snprintf(rel, sizeof(rel), "dev/%s", pl->dev_names[i]);
        snprintf(src, sizeof(src), "/%s", rel);
        bind_path(pl, src, rel, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, rel);
    }
    STEP(pl, symlink("/proc/self/fd", "dev/fd") == 0, "create /dev/fd");
    STEP(pl, symlink("/proc/self/fd/0", "dev/stdin") == 0, "create /dev/stdin");
    STEP(pl, symlink("/proc/self/fd/1", "dev/stdout") == 0, "create /dev/stdout");
    STEP(pl, symlink("/proc/self/fd/2", "dev/stderr") == 0, "create /dev/stderr");
    /* POSIX shared memory and named semaphores (shm_open, sem_open) of
     * programs that need them (ncu: policy "dev_shm") land in the size-capped
     * /tmp the program can already write: no new writable place. */
    if (pl->pol.dev_shm)
        STEP(pl, symlink("/tmp", "dev/shm") == 0, "create /dev/shm -> /tmp");
    struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY};
    STEP(pl, mount_setattr(AT_FDCWD, "dev", 0, &ma, sizeof(ma)) == 0, "make /dev read-only");

    /* A fresh /proc: this PID namespace only (CUDA needs it, see notes). */
    STEP(pl, mkdirs("proc") == 0, "create /proc");
    STEP(pl, mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0,
         "mount a fresh /proc");
    mount_tmpfs(pl, "tmp", pl->lim.tmp_bytes, "1777", MS_NOSUID | MS_NODEV, true, "/tmp");
    mount_tmpfs(pl, "out", pl->lim.out_bytes, "0755", MS_NOSUID | MS_NODEV, true, "/out");
    mount_tmpfs(pl, "in", 65536, "0755", MS_NOSUID | MS_NODEV, false, "/in");
    for (size_t i = 0; i < pl->spec->n_inputs; i++) {
        char rel[PATH_MAX];
        snprintf(rel, sizeof(rel), "in/%s", pl->spec->inputs[i].name);
        bind_path(pl, pl->in_src[i], rel, ro, rel);
    }
    ma.attr_set = ro;
    STEP(pl, mount_setattr(AT_FDCWD, "in", 0, &ma, sizeof(ma)) == 0, "make /in read-only");

    /* pivot_root(".", ".") stacks the old root on the new one; detaching
     * it leaves no path back to the host's tree. */
    STEP(pl, syscall(SYS_pivot_root, ".", ".") == 0, "pivot_root into the new root");
    STEP(pl, umount2(".", MNT_DETACH) == 0, "detach the old root");
    STEP(pl, chdir("/") == 0, "chdir to the new root");
    STEP(pl, mount_setattr(AT_FDCWD, "/", 0, &ma, sizeof(ma)) == 0, "make / read-only");
    STEP(pl, sethostname("kiln", 4) == 0, "set the hostname");
    loopback_up(pl);
}

static void set_limit(const struct plan *pl, int res, long long soft, long long hard,
                      const char *name)
{
    struct rlimit rl = {.rlim_cur = (rlim_t)soft, .rlim_max = (rlim_t)hard};
    STEP(pl, setrlimit(res, &rl) == 0, "set %s to %lld", name, soft);
}

static void drop_caps(const struct plan *pl)
{
    for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
        STEP(pl, cap_drop_bound(c) == 0 || errno == EINVAL,
             "drop capability %d from the bounding set", (int)c);
    STEP(pl, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == 0,
         "clear ambient capabilities");
    cap_t none = cap_init();
    STEP(pl, none != NULL, "allocate an empty capability set");
    STEP(pl, cap_set_proc(none) == 0, "drop all capabilities");
    cap_free(none);
}

/* Exec argv[0], looked up in the sandbox env's PATH when it has no '/'. */
static void exec_program(const struct plan *pl)
{
    char *const *argv = pl->spec->argv;
    if (strchr(argv[0], '/')) {
        execve(argv[0], argv, pl->envp);
        STEP(pl, 0, "exec %s", argv[0]);
    }
    const char *path = "/usr/bin:/bin";
    for (char **e = pl->envp; *e; e++)
        if (!strncmp(*e, "PATH=", 5))
            path = *e + 5;
    const char *searched = path;
    int saved = ENOENT;
    while (*path) {
        size_t l = strcspn(path, ":");
        char full[PATH_MAX];
        snprintf(full, sizeof(full), "%.*s/%s", (int)l, path, argv[0]);
        execve(full, argv, pl->envp);
        if (errno != ENOENT && errno != ENOTDIR)
            saved = errno;
        path += l + (path[l] == ':');
    }
    errno = saved;
    STEP(pl, 0, "exec %s (searched PATH=%s)", argv[0], searched);
}

/* The program: its last steps, in the order that keeps each one possible.
 * fds: 3 status, 4 listener number to init, 5 ack from init. */
static void run_program(struct plan *pl, int fdnum_w, int ack_r, int stdin_fd)
{
    STEP(pl, setsid() >= 0, "start a new session");
    int in = stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
    STEP(pl, in >= 0, "open /dev/null for stdin");
    int hi[6] = {in, pl->out_w, pl->err_w, pl->status_w, fdnum_w, ack_r};
    for (int i = 0; i < 6; i++) {
        hi[i] = fcntl(hi[i], F_DUPFD_CLOEXEC, 64);
        STEP(pl, hi[i] >= 0, "move descriptors");
    }
    for (int i = 0; i < 6; i++)
        STEP(pl, dup3(hi[i], i, i >= 3 ? O_CLOEXEC : 0) == i, "set up descriptor %d", i);
    pl->status_w = 3;
    STEP(pl, close_range(6, ~0U, 0) == 0, "close inherited descriptors");

    const struct sandbox_limits *l = &pl->lim;
    set_limit(pl, RLIMIT_CPU, l->cpu_s, l->cpu_s + 1, "RLIMIT_CPU");
    set_limit(pl, RLIMIT_FSIZE, l->fsize_bytes, l->fsize_bytes, "RLIMIT_FSIZE");
    set_limit(pl, RLIMIT_NOFILE, l->nofile, l->nofile, "RLIMIT_NOFILE");
    set_limit(pl, RLIMIT_CORE, 0, 0, "RLIMIT_CORE");
    if (!pl->cg.pids_dir[0]) /* fallback: counted per uid in this user namespace */
        set_limit(pl, RLIMIT_NPROC, l->pids, l->pids, "RLIMIT_NPROC");
    /* Weaker memory fallback without a cgroup: RLIMIT_DATA counts writable
     * private mappings only (never RLIMIT_AS); not under a GPU policy, whose
     * driver mappings it could break. */
    if (!pl->cg.mem_dir[0] && !pl->pol.allow_gpu)
        set_limit(pl, RLIMIT_DATA, l->memory_bytes, l->memory_bytes, "RLIMIT_DATA");
    const char *cwd = pl->spec->cwd ? pl->spec->cwd : pl->img->cwd;
    STEP(pl, chdir(cwd) == 0, "chdir to %s", cwd);

    drop_caps(pl);
    STEP(pl, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "set no_new_privs");
    /* Last: the filter. Its listener goes to init, which names any refused
     * syscall; we wait for init to hold it before exec. */
    struct sock_fprog prog = {.len = (unsigned short)pl->pol.bpf_len,
                              .filter = (struct sock_filter *)pl->pol.bpf};
    int lfd =
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    STEP(pl, lfd >= 0, "install the seccomp filter of policy %s", pl->pol.name);
    STEP(pl, write(4, &lfd, sizeof(lfd)) == sizeof(lfd), "hand the seccomp listener to init");
    char ack;
    STEP(pl, read(5, &ack, 1) == 1, "wait for init to take the seccomp listener");
    exec_program(pl);
}

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void report_skip(void *ctx, const char *path, const char *why)
{
    const struct plan *pl = ctx;
    struct msg m = {.type = MSG_SKIPPED};
    snprintf(m.text, sizeof(m.text), "%s: %s", path, why);
    send_msg(pl->status_w, &m);
}

/* Waits for the program; names a refused syscall; enforces the timeout.
 * Returns the program's wait status. */
static int supervise(struct plan *pl, pid_t prog, int sfd, int fdnum_r, int ack_w, int *timed_out)
{
    int lfd = -1, num = -1, status = 0, done = 0;
    long long start = now_us();
    long long deadline = start + pl->lim.timeout_ms * 1000;
    if (read(fdnum_r, &num, sizeof(num)) == sizeof(num)) {
        int pfd = (int)syscall(SYS_pidfd_open, prog, 0);
        lfd = pfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pfd, num, 0) : -1;
        if (lfd < 0) {
            kill(prog, SIGKILL);
            STEP(pl, 0, "take the seccomp listener from the program");
        }
        close(pfd);
        STEP(pl, write(ack_w, "k", 1) == 1, "release the program");
    }
    close(fdnum_r);
    close(ack_w);
    struct seccomp_notif_sizes sizes = {0};
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
        sizes.seccomp_notif = sizeof(struct seccomp_notif);
    size_t nsz = sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif
                                                                    : sizeof(struct seccomp_notif);
    char nbuf[1024];
    if (nsz > sizeof(nbuf))
        nsz = sizeof(nbuf);
    int refused = 0;
    while (!done) {
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {lfd, POLLIN, 0}};
        long long left = deadline - now_us();
        int tmo = *timed_out || refused ? -1 : (int)(left > 0 ? (left + 999) / 1000 : 0);
        int n = poll(p, lfd >= 0 ? 2 : 1, tmo);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) {
            *timed_out = 1;
            kill(-1, SIGKILL);
            continue;
        }
        if (lfd >= 0 && (p[1].revents & POLLIN)) {
            memset(nbuf, 0, sizeof(nbuf));
            if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, nbuf) == 0 && !refused) {
                const struct seccomp_notif *sn = (const struct seccomp_notif *)nbuf;
                struct msg m = {.type = MSG_REFUSED, .a = sn->data.nr, .b = sn->data.arch};
                /* The first arguments say which prctl option or ioctl request
                 * it was: what a policy author needs to know. */
                snprintf(m.text, sizeof(m.text), "0x%llx, 0x%llx, 0x%llx",
                         (unsigned long long)sn->data.args[0], (unsigned long long)sn->data.args[1],
                         (unsigned long long)sn->data.args[2]);
                send_msg(pl->status_w, &m);
                refused = 1;
                kill(-1, SIGKILL);
            }
        } else if (lfd >= 0 && (p[1].revents & (POLLHUP | POLLERR))) {
            close(lfd);
            lfd = -1;
        }
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) < 0 && errno != EAGAIN)
                break;
            pid_t w;
            int st;
            while ((w = waitpid(-1, &st, WNOHANG)) > 0)
                if (w == prog) {
                    status = st;
                    done = 1;
                }
            if (w < 0 && errno == ECHILD)
                done = 1;
        }
    }
    pl->lim.timeout_ms = now_us() - start; /* reused as the measured time (us) */
    if (lfd >= 0)
        close(lfd);
    /* Orphans die with the program: nothing outlives the run. */
    kill(-1, SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
    return status;
}

static void run_init(struct plan *pl)
{
    STEP(pl, prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "set init's parent-death signal");
    build_root(pl);
    char go = 0;
    STEP(pl, read(pl->go_r, &go, 1) == 1 && go == '1',
         "wait for kiln to move init into the sandbox's cgroup");
    close(pl->go_r);
    /* The cgroup namespace is rooted at the sandbox's own cgroup. */
    STEP(pl, unshare(CLONE_NEWCGROUP) == 0, "create a cgroup namespace");
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    STEP(pl, sigprocmask(SIG_BLOCK, &chld, NULL) == 0, "block SIGCHLD");
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    STEP(pl, sfd >= 0, "create init's signalfd");
    int fdnum[2], ack[2];
    STEP(pl, pipe2(fdnum, O_CLOEXEC) == 0 && pipe2(ack, O_CLOEXEC) == 0, "create init's pipes");
    int stdin_fd = pl->spec->stdin_fd;
    pid_t prog = fork();
    STEP(pl, prog >= 0, "fork the program");
    if (prog == 0) {
        sigprocmask(SIG_UNBLOCK, &chld, NULL);
        run_program(pl, fdnum[1], ack[0], stdin_fd);
        _exit(127);
    }
    close(fdnum[1]);
    close(ack[0]);
    close(pl->out_w);
    close(pl->err_w);
    int timed_out = 0;
    int status = supervise(pl, prog, sfd, fdnum[0], ack[1], &timed_out);
    long long us = pl->lim.timeout_ms;

    struct kiln_err e;
    kiln_err_clear(&e);
    int outfd = open("/out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (outfd < 0 ||
        outpack_write(outfd, pl->tar_w, pl->lim.tar_bytes, report_skip, pl, &e) != KILN_OK) {
        struct msg m = {.type = MSG_SKIPPED};
        snprintf(m.text, sizeof(m.text), "/out: packing failed: %s",
                 outfd < 0 ? strerror(errno) : e.msg);
        send_msg(pl->status_w, &m);
    }
    close(pl->tar_w);
    struct msg m = {.type = MSG_DONE, .a = status, .b = timed_out, .c = us};
    send_msg(pl->status_w, &m);
    _exit(0);
}

/* The first child: still in the host's PID namespace. */
static void run_setup(struct plan *pl)
{
    STEP(pl, prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "set the parent-death signal");
    STEP(pl, getppid() == pl->kiln_pid, "start (kiln exited)");
    close(pl->go_w);
    if (geteuid() == 0 && pl->spec->n_inputs > 0) {
        /* Running as root: bind the inputs, which nobody may not be able to
         * reach, into a staging tmpfs of a private mount namespace first;
         * the sandbox's own mount namespace copies it. */
        STEP(pl, unshare(CLONE_NEWNS) == 0, "create the staging mount namespace");
        STEP(pl, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0,
             "make the staging mount namespace private");
        /* Opened before the tmpfs hides them (inputs may live under /tmp). */
        int in_fds[SANDBOX_MAX_INPUTS];
        for (size_t i = 0; i < pl->spec->n_inputs; i++) {
            in_fds[i] = open(pl->in_src[i], O_PATH | O_CLOEXEC);
            STEP(pl, in_fds[i] >= 0, "open input %s", pl->in_src[i]);
        }
        STEP(pl, mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") == 0,
             "mount the staging tmpfs");
        STEP(pl, mkdir(STAGE_ROOT, 0755) == 0 && chown(STAGE_ROOT, NOBODY_ID, NOBODY_ID) == 0,
             "create " STAGE_ROOT);
        for (size_t i = 0; i < pl->spec->n_inputs; i++) {
            char st[64], src[64];
            snprintf(st, sizeof(st), "/tmp/in%zu", i);
            snprintf(src, sizeof(src), "/proc/self/fd/%d", in_fds[i]);
            struct stat sb;
            STEP(pl, fstat(in_fds[i], &sb) == 0, "stat input %s", pl->in_src[i]);
            if (S_ISDIR(sb.st_mode))
                STEP(pl, mkdir(st, 0755) == 0, "stage input %s", pl->in_src[i]);
            else
                STEP(pl, mknod(st, S_IFREG | 0644, 0) == 0, "stage input %s", pl->in_src[i]);
            STEP(pl, mount(src, st, NULL, MS_BIND | MS_REC, NULL) == 0, "bind input %s",
                 pl->in_src[i]);
            close(in_fds[i]);
            snprintf(pl->in_src[i], sizeof(pl->in_src[i]), "%s", st);
        }
        pl->in_staged = 1;
    }
    if (geteuid() == 0) {
        /* Become nobody before anything else, so no host uid 0 (or group 0)
         * ever reaches the sandbox. */
        STEP(pl, setgroups(0, NULL) == 0, "drop supplementary groups");
        STEP(pl, setresgid(NOBODY_ID, NOBODY_ID, NOBODY_ID) == 0, "switch to gid %d", NOBODY_ID);
        STEP(pl, setresuid(NOBODY_ID, NOBODY_ID, NOBODY_ID) == 0, "switch to uid %d", NOBODY_ID);
        /* A change of effective uid clears the parent-death signal: set it
         * again, or a kill -9 of kiln leaves this sandbox running with no
         * one to enforce its timeout. */
        STEP(pl, prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "set the parent-death signal again");
        STEP(pl, getppid() == pl->kiln_pid, "start (kiln exited)");
        /* Lets init take the seccomp listener from the program (pidfd_getfd
         * checks dumpability); only kiln code runs until the exec. */
        STEP(pl, prctl(PR_SET_DUMPABLE, 1) == 0, "mark the set-up process dumpable");
    }
    uid_t uid = geteuid();
    gid_t gid = getegid();
    STEP(pl, unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0,
         "create user, mount, net, IPC and UTS namespaces");
    char map[64];
    STEP(pl, write_file("/proc/self/setgroups", "deny") == 0, "deny setgroups");
    snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_UID, (unsigned)uid);
    STEP(pl, write_file("/proc/self/uid_map", map) == 0, "write uid_map '%d %u 1'", SANDBOX_UID,
         (unsigned)uid);
    snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_UID, (unsigned)gid);
    STEP(pl, write_file("/proc/self/gid_map", map) == 0, "write gid_map '%d %u 1'", SANDBOX_UID,
         (unsigned)gid);
    STEP(pl, unshare(CLONE_NEWPID) == 0, "create a PID namespace");
    pid_t init = fork();
    STEP(pl, init >= 0, "fork the sandbox's init");
    if (init == 0)
        run_init(pl);
    /* The parent moves init into the cgroup while init builds the root:
     * a cgroup attach waits out an RCU grace period, so overlap it. */
    struct msg m = {.type = MSG_INIT_PID, .a = init};
    send_msg(pl->status_w, &m);
    close(pl->go_r);
    close(pl->out_w);
    close(pl->err_w);
    close(pl->tar_w);
    int st;
    while (waitpid(init, &st, 0) < 0)
        if (errno != EINTR)
            _exit(125);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 125);
}

/* ---- parent side ---- */

struct capture {
    char *head, *ring;
    size_t head_cap, head_len, ring_cap, ring_pos;
    unsigned long long total;
};

static int capture_init(struct capture *c, long long cap)
{
    memset(c, 0, sizeof(*c));
    c->head_cap = (size_t)(cap / 2);
    c->ring_cap = (size_t)(cap - cap / 2);
    c->head = malloc(c->head_cap + 1);
    c->ring = malloc(c->ring_cap + 1);
    return c->head && c->ring ? 0 : -1;
}

static void capture_feed(struct capture *c, const char *buf, size_t n)
{
    c->total += n;
    size_t h = c->head_cap - c->head_len < n ? c->head_cap - c->head_len : n;
    memcpy(c->head + c->head_len, buf, h);
    c->head_len += h;
    buf += h;
    n -= h;
    if (n > c->ring_cap) {
        buf += n - c->ring_cap;
        n = c->ring_cap;
    }
    while (n) { /* at most two copies: up to the ring's end, then from its start */
        size_t at = c->ring_pos % c->ring_cap;
        size_t k = c->ring_cap - at < n ? c->ring_cap - at : n;
        memcpy(c->ring + at, buf, k);
        c->ring_pos += k;
        buf += k;
        n -= k;
    }
}

static int capture_finish(struct capture *c, struct sandbox_stream *s)
{
    size_t tail = c->ring_pos < c->ring_cap ? c->ring_pos : c->ring_cap;
    s->total = c->total;
    s->dropped = c->total - c->head_len - tail;
    char marker[96] = "";
    if (s->dropped)
        snprintf(marker, sizeof(marker), "\n[kiln: %llu bytes dropped]\n", s->dropped);
    size_t ml = strlen(marker);
    s->data = malloc(c->head_len + ml + tail + 1);
    if (!s->data)
        return -1;
    memcpy(s->data, c->head, c->head_len);
    memcpy(s->data + c->head_len, marker, ml);
    size_t start = c->ring_pos - tail;
    for (size_t i = 0; i < tail; i++)
        s->data[c->head_len + ml + i] = c->ring[(start + i) % c->ring_cap];
    s->len = c->head_len + ml + tail;
    s->data[s->len] = '\0';
    return 0;
}

static void capture_free(struct capture *c)
{
    free(c->head);
    free(c->ring);
}

static void apply_limits(struct sandbox_limits *out, const struct sandbox_limits *spec,
                         const struct sandbox_limits *def)
{
    const long long *s = (const long long *)spec, *d = (const long long *)def;
    long long *o = (long long *)out;
    for (size_t i = 0; i < sizeof(*out) / sizeof(long long); i++)
        o[i] = s[i] > 0 ? s[i] : d[i];
}

static enum kiln_rc add_dev(struct plan *pl, const char *name, struct kiln_err *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/dev/%s", name);
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
        return kiln_fail(err, KILN_E_NOTFOUND, "device %s is missing on this host%s", path,
                         strncmp(name, "nvidia", 6) ? "" : " (is the NVIDIA driver loaded?)");
    snprintf(pl->dev_names[pl->n_devs++], sizeof(pl->dev_names[0]), "%s", name);
    return KILN_OK;
}

static enum kiln_rc prepare(struct plan *pl, const struct sandbox_spec *spec, struct kiln_err *err)
{
    const char *dd = spec->data_dir ? spec->data_dir : sandbox_data_dir();
    if (!spec->argv || !spec->argv[0] || !spec->argv[0][0])
        return kiln_fail(err, KILN_E_USAGE, "sandbox: no program to run");
    if (!spec->policy)
        return kiln_fail(err, KILN_E_USAGE, "sandbox: no policy named");
    if (spec->n_inputs > SANDBOX_MAX_INPUTS)
        return kiln_fail(err, KILN_E_LIMIT, "sandbox: more than %d inputs", SANDBOX_MAX_INPUTS);
    if (policy_load(dd, spec->policy, &pl->pol, err) != KILN_OK ||
        policy_compile(&pl->pol, err) != KILN_OK)
        return err->rc;
    apply_limits(&pl->lim, &spec->limits, &pl->pol.limits);
    pl->img = malloc(sizeof(*pl->img));
    if (!pl->img)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    if (image_load(dd, spec->image ? spec->image : spec->policy, pl->img, err) != KILN_OK) {
        free(pl->img);
        pl->img = NULL;
        return err->rc;
    }
    for (size_t i = 0; i < spec->n_inputs; i++) {
        const char *n = spec->inputs[i].name;
        if (!n || !*n || strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, "..") || strlen(n) > 255)
            return kiln_fail(err, KILN_E_USAGE,
                             "sandbox: input name '%s' must be one path component",
                             n ? n : "(null)");
        for (size_t j = 0; j < i; j++)
            if (!strcmp(spec->inputs[j].name, n))
                return kiln_fail(err, KILN_E_USAGE, "sandbox: input /in/%s given twice", n);
        struct stat st;
        if (!spec->inputs[i].host_path || !realpath(spec->inputs[i].host_path, pl->in_src[i]))
            return kiln_fail_errno(err, KILN_E_NOTFOUND, "sandbox: input %s",
                                   spec->inputs[i].host_path ? spec->inputs[i].host_path
                                                             : "(null)");
        if (stat(pl->in_src[i], &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
            return kiln_fail(err, KILN_E_USAGE,
                             "sandbox: input %s must be a regular file or a directory",
                             pl->in_src[i]);
    }
    static const char *const basic[] = {"null", "zero", "full", "random", "urandom"};
    for (size_t i = 0; i < 5; i++)
        if (add_dev(pl, basic[i], err) != KILN_OK)
            return err->rc;
    if (spec->gpu >= 0) {
        if (!pl->pol.allow_gpu)
            return kiln_fail(err, KILN_E_USAGE,
                             "sandbox: policy %s grants no GPU: use the gpu-run policy",
                             pl->pol.name);
        struct gpuinfo gpus[GPUINFO_MAX];
        size_t n = 0;
        if (gpuinfo_list("/proc", gpus, &n, err) != KILN_OK)
            return err->rc;
        if ((size_t)spec->gpu >= n)
            return kiln_fail(err, KILN_E_NOTFOUND,
                             "sandbox: GPU %d does not exist (this host has %zu; see kiln "
                             "doctor)",
                             spec->gpu, n);
        char node[32];
        snprintf(node, sizeof(node), "nvidia%d", gpus[spec->gpu].minor);
        if (add_dev(pl, node, err) != KILN_OK || add_dev(pl, "nvidiactl", err) != KILN_OK ||
            add_dev(pl, "nvidia-uvm", err) != KILN_OK)
            return err->rc;
    }
    /* The environment from scratch: the image's, then the caller's. */
    size_t n_extra = 0;
    while (spec->env && spec->env[n_extra])
        n_extra++;
    pl->envp = calloc(pl->img->n_env + n_extra + 2, sizeof(char *));
    if (!pl->envp)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < pl->img->n_env; i++) {
        const char *eq = strchr(pl->img->env[i], '=');
        int overridden = 0;
        for (size_t j = 0; j < n_extra; j++)
            if (!strncmp(spec->env[j], pl->img->env[i], (size_t)(eq - pl->img->env[i]) + 1))
                overridden = 1;
        if (!overridden)
            pl->envp[k++] = pl->img->env[i];
    }
    for (size_t j = 0; j < n_extra; j++) {
        if (!strchr(spec->env[j], '=') || spec->env[j][0] == '=')
            return kiln_fail(err, KILN_E_USAGE, "sandbox: env entry '%s' is not NAME=VALUE",
                             spec->env[j]);
        pl->envp[k++] = spec->env[j];
    }
    if (spec->gpu >= 0)
        pl->envp[k++] = "CUDA_DEVICE_ORDER=PCI_BUS_ID";
    return KILN_OK;
}

static void plan_free(struct plan *pl)
{
    free(pl->envp);
    if (pl->img) {
        image_free(pl->img);
        free(pl->img);
    }
    policy_free(&pl->pol);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static enum kiln_rc append_skipped(struct sandbox_result *res, const char *line)
{
    size_t old = res->skipped ? strlen(res->skipped) : 0;
    if (old > 64 * 1024)
        return KILN_OK; /* the list itself is capped */
    char *s = realloc(res->skipped, old + strlen(line) + 2);
    if (!s)
        return KILN_E_NOMEM;
    memcpy(s + old, line, strlen(line));
    s[old + strlen(line)] = '\n';
    s[old + strlen(line) + 1] = '\0';
    res->skipped = s;
    return KILN_OK;
}

static void decide(struct sandbox_result *res, const struct msg *done, const struct msg *ref,
                   const struct plan *pl)
{
    int st = (int)done->a, oom = 0, pids_hit = 0;
    cgroup_events(&pl->cg, &oom, &pids_hit);
    res->wall_s = (double)done->c / 1e6;
    if (ref->type == MSG_REFUSED) {
        res->verdict = SANDBOX_REFUSED;
        res->syscall_nr = (int)ref->a;
        char *name = seccomp_syscall_resolve_num_arch((uint32_t)ref->b, (int)ref->a);
        snprintf(res->syscall_name, sizeof(res->syscall_name), "%s", name ? name : "unknown");
        free(name);
        snprintf(res->syscall_args, sizeof(res->syscall_args), "%.*s",
                 (int)strnlen(ref->text, sizeof(ref->text)), ref->text);
        return;
    }
    if (done->b) {
        res->verdict = SANDBOX_TIMEOUT;
        return;
    }
    if (WIFSIGNALED(st)) {
        res->signal = WTERMSIG(st);
        res->verdict = SANDBOX_LIMIT;
        if (oom)
            snprintf(res->limit, sizeof(res->limit), "memory");
        else if (res->signal == SIGXCPU)
            snprintf(res->limit, sizeof(res->limit), "cpu");
        else if (res->signal == SIGXFSZ)
            snprintf(res->limit, sizeof(res->limit), "fsize");
        else if (res->signal == SIGSYS) {
            res->verdict = SANDBOX_REFUSED; /* another ABI: killed by the filter */
            res->syscall_nr = -1;
            snprintf(res->syscall_name, sizeof(res->syscall_name), "non-native ABI");
        } else
            res->verdict = SANDBOX_SIGNALED;
        return;
    }
    res->exit_code = WEXITSTATUS(st);
    res->verdict = SANDBOX_EXITED;
    if (oom || pids_hit) {
        res->verdict = SANDBOX_LIMIT;
        snprintf(res->limit, sizeof(res->limit), "%s", oom ? "memory" : "pids");
    }
}

enum kiln_rc sandbox_run(const struct sandbox_spec *spec, struct sandbox_result *res,
                         struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    struct plan *pl = calloc(1, sizeof(*pl));
    if (!pl)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    pl->spec = spec;
    enum kiln_rc rc = prepare(pl, spec, err);
    int st_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1}, tar_p[2] = {-1, -1};
    int go_p[2] = {-1, -1};
    struct capture cout, cerr;
    memset(&cout, 0, sizeof(cout));
    memset(&cerr, 0, sizeof(cerr));
    if (rc != KILN_OK)
        goto out;
    snprintf(res->policy, sizeof(res->policy), "%s", pl->pol.name);
    if (capture_init(&cout, pl->lim.output_bytes) || capture_init(&cerr, pl->lim.output_bytes)) {
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
        goto out;
    }
    if (pipe2(st_p, O_CLOEXEC) || pipe2(out_p, O_CLOEXEC) || pipe2(err_p, O_CLOEXEC) ||
        pipe2(tar_p, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go_p)) {
        rc = kiln_fail_errno(err, KILN_E_IO, "sandbox: creating pipes");
        goto out;
    }
    /* A roomier tar pipe (best effort: the default is 64 KiB) lets /out
     * stream in big pieces, with fewer wake-ups on both sides. */
    (void)fcntl(tar_p[1], F_SETPIPE_SZ, TAR_PIPE_BYTES);
    cgroup_create(&pl->cg, pl->lim.memory_bytes, pl->lim.pids);
    if (!pl->cg.mem_dir[0] && !pl->pol.allow_gpu)
        snprintf(res->memory_cap, sizeof(res->memory_cap),
                 "RLIMIT_DATA %lld MiB only (weaker: no writable cgroup)",
                 pl->lim.memory_bytes >> 20);
    else
        snprintf(res->memory_cap, sizeof(res->memory_cap), "%s", pl->cg.desc);
    pl->status_w = st_p[1];
    pl->out_w = out_p[1];
    pl->err_w = err_p[1];
    pl->tar_w = tar_p[1];
    pl->go_r = go_p[0];
    pl->go_w = go_p[1];
    pl->kiln_pid = getpid();
    long long t0 = now_us();
    pid_t setup = fork();
    if (setup < 0) {
        rc = kiln_fail_errno(err, KILN_E_SANDBOX, "sandbox: fork");
        cgroup_destroy(&pl->cg);
        goto out;
    }
    if (setup == 0) {
        close(st_p[0]);
        close(out_p[0]);
        close(err_p[0]);
        close(tar_p[0]);
        run_setup(pl);
        _exit(125);
    }
    close_fd(&st_p[1]);
    close_fd(&out_p[1]);
    close_fd(&err_p[1]);
    close_fd(&tar_p[1]);
    close_fd(&go_p[0]);

    struct msg failed = {0}, done = {0}, ref = {0};
    long long deadline = t0 + (pl->lim.timeout_ms + GRACE_MS) * 1000;
    long long tar_cap = pl->lim.tar_bytes + TAR_SLACK;
    int tar_fd = spec->tar_fd, tar_write_failed = 0, killed = 0;
    long long tar_first = 0;
    int tar_splice = 1;
    char buf[65536];
    /* The tar stream is read in pieces as big as the pipe; the stack buffer
     * will do when this allocation fails. */
    char *tbuf = malloc(TAR_PIPE_BYTES);
    size_t tcap = tbuf ? TAR_PIPE_BYTES : sizeof(buf);
    if (!tbuf)
        tbuf = buf;
    while (st_p[0] >= 0 || out_p[0] >= 0 || err_p[0] >= 0 || tar_p[0] >= 0) {
        struct pollfd p[4] = {{st_p[0], POLLIN, 0},
                              {out_p[0], POLLIN, 0},
                              {err_p[0], POLLIN, 0},
                              {tar_p[0], POLLIN, 0}};
        long long left = deadline - now_us();
        if (left <= 0 && !killed) {
            kill(setup, SIGKILL); /* init follows through its parent-death signal */
            killed = 1;
        }
        int n = poll(p, 4, killed ? 1000 : (int)((left + 999) / 1000));
        if (n < 0 && errno != EINTR) {
            kill(setup, SIGKILL);
            killed = 1;
            break;
        }
        if (n == 0 && killed)
            break;
        if (p[0].revents) {
            struct msg m;
            ssize_t r = read(st_p[0], &m, sizeof(m));
            if (r <= 0) {
                close_fd(&st_p[0]);
            } else if (r == sizeof(m)) {
                m.text[sizeof(m.text) - 1] = '\0';
                if (m.type == MSG_FAILED && !failed.type)
                    failed = m;
                else if (m.type == MSG_DONE)
                    done = m;
                else if (m.type == MSG_REFUSED && !ref.type)
                    ref = m;
                else if (m.type == MSG_SKIPPED && append_skipped(res, m.text) != KILN_OK)
                    rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
                else if (m.type == MSG_INIT_PID && go_p[1] >= 0) {
                    int e = cgroup_attach(&pl->cg, (pid_t)m.a);
                    if (e && rc == KILN_OK) {
                        errno = -e;
                        rc = kiln_fail_errno(err, KILN_E_SANDBOX,
                                             "sandbox: moving init into cgroup %s failed",
                                             pl->cg.mem_dir[0] ? pl->cg.mem_dir : pl->cg.pids_dir);
                    }
                    /* A socket, so a dead init is EPIPE, never a SIGPIPE that
                     * kills the caller; its own failure report says why. */
                    if (send(go_p[1], e ? "0" : "1", 1, MSG_NOSIGNAL) != 1 && errno != EPIPE &&
                        rc == KILN_OK)
                        rc = kiln_fail_errno(err, KILN_E_IO, "sandbox: releasing init");
                    close_fd(&go_p[1]);
                }
            }
        }
        for (int i = 1; i < 3; i++) {
            int *fd = i == 1 ? &out_p[0] : &err_p[0];
            if (!p[i].revents)
                continue;
            ssize_t r = read(*fd, buf, sizeof(buf));
            if (r <= 0)
                close_fd(fd);
            else
                capture_feed(i == 1 ? &cout : &cerr, buf, (size_t)r);
        }
        if (p[3].revents) {
            ssize_t r;
            long long room = tar_cap - (long long)res->tar_bytes;
            if (tar_splice && tar_fd >= 0 && !tar_write_failed && room > 0) {
                /* Pipe to file inside the kernel, never past the cap: one
                 * copy fewer than read + write. */
                r = splice(tar_p[0], NULL, tar_fd, NULL,
                           (size_t)(room < (long long)tcap ? room : (long long)tcap),
                           SPLICE_F_MOVE);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r < 0 && errno == EINVAL) {
                    tar_splice = 0; /* tar_fd cannot take it: read and write from now on */
                    continue;
                }
                if (r < 0) {
                    tar_write_failed = errno ? errno : EIO;
                    continue;
                }
                if (r > 0) {
                    if (!tar_first)
                        tar_first = now_us();
                    res->tar_bytes += (unsigned long long)r;
                    continue;
                }
            } else {
                r = read(tar_p[0], tbuf, tcap);
            }
            if (r > 0 && !tar_first)
                tar_first = now_us();
            if (r <= 0) {
                if (tar_first)
                    res->tar_s = (double)(now_us() - tar_first) / 1e6;
                close_fd(&tar_p[0]);
            } else if ((long long)(res->tar_bytes + (unsigned long long)r) > tar_cap) {
                res->tar_truncated = 1;
            } else if (tar_fd >= 0 && !tar_write_failed) {
                if (fd_write_all(tar_fd, tbuf, (size_t)r) < 0)
                    tar_write_failed = errno ? errno : EIO;
                else
                    res->tar_bytes += (unsigned long long)r;
            } else {
                res->tar_bytes += (unsigned long long)r;
            }
        }
    }
    if (tbuf != buf)
        free(tbuf);
    int wst = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    while (wait4(setup, &wst, 0, &ru) < 0 && errno == EINTR)
        ;
    res->cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    if (rc == KILN_OK && failed.type) {
        errno = failed.err;
        rc = kiln_fail_errno(err, KILN_E_SANDBOX, "sandbox: %s failed", failed.text);
    } else if (rc == KILN_OK && !done.type) {
        rc = kiln_fail(err, KILN_E_SANDBOX,
                       "sandbox: init ended without a verdict (%s, status 0x%x)%s",
                       killed ? "killed after the timeout's grace period" : "crashed", wst,
                       killed ? "" : ": a bug in kiln, please report it");
    } else if (rc == KILN_OK) {
        decide(res, &done, &ref, pl);
        if (tar_write_failed) {
            errno = tar_write_failed;
            rc = kiln_fail_errno(err, KILN_E_IO, "sandbox: writing the tar stream");
        }
    }
    cgroup_destroy(&pl->cg);
    if (rc == KILN_OK && (capture_finish(&cout, &res->out) || capture_finish(&cerr, &res->err)))
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
out:
    capture_free(&cout);
    capture_free(&cerr);
    int *all[] = {&st_p[0],  &st_p[1],  &out_p[0], &out_p[1], &err_p[0],
                  &err_p[1], &tar_p[0], &tar_p[1], &go_p[0],  &go_p[1]};
    for (size_t i = 0; i < 10; i++)
        close_fd(all[i]);
    plan_free(pl);
    free(pl);
    if (rc != KILN_OK) {
        struct kiln_err keep = *err;
        sandbox_result_free(res);
        *err = keep;
    }
    return rc;
}

void sandbox_result_free(struct sandbox_result *res)
{
    free(res->out.data);
    free(res->err.data);
    free(res->skipped);
    memset(res, 0, sizeof(*res));
}

void sandbox_verdict_line(const struct sandbox_result *res, char *buf, size_t cap)
{
    switch (res->verdict) {
    case SANDBOX_EXITED:
        snprintf(buf, cap, "exit %d in %.3f s", res->exit_code, res->wall_s);
        return;
    case SANDBOX_SIGNALED:
        snprintf(buf, cap, "killed by signal %d (%s) in %.3f s", res->signal,
                 strsignal(res->signal), res->wall_s);
        return;
    case SANDBOX_REFUSED:
        snprintf(buf, cap, "refused syscall %s (%d) under policy %s%s%s%s", res->syscall_name,
                 res->syscall_nr, res->policy, *res->syscall_args ? " (arguments " : "",
                 res->syscall_args, *res->syscall_args ? ")" : "");
        return;
    case SANDBOX_TIMEOUT:
        snprintf(buf, cap, "timeout after %.3f s (everything in the sandbox was killed)",
                 res->wall_s);
        return;
    case SANDBOX_LIMIT:
        snprintf(buf, cap, "limit %s hit in %.3f s (%s)", res->limit, res->wall_s,
                 !strcmp(res->limit, "memory") ? res->memory_cap
                 : !strcmp(res->limit, "pids") ? "pids cap"
                 : !strcmp(res->limit, "cpu")  ? "RLIMIT_CPU"
                                               : "RLIMIT_FSIZE");
        return;
    }
    snprintf(buf, cap, "unknown verdict %d", (int)res->verdict);
}

const char *sandbox_data_dir(void)
{
    return fs_data_dir();
}

enum kiln_rc sandbox_image_describe(const char *data_dir, const char *name, char *buf, size_t cap,
                                    struct kiln_err *err)
{
    struct sandbox_image *im = malloc(sizeof(*im));
    if (!im)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    if (image_load(data_dir ? data_dir : sandbox_data_dir(), name, im, err) != KILN_OK) {
        free(im);
        return err->rc;
    }
    size_t l = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < im->n_binds && l < cap; i++) {
        int n = snprintf(buf + l, cap - l, "%s%s%s%s", i ? ", " : "", im->binds[i].path,
                         im->binds[i].link[0] ? " -> " : "", im->binds[i].link);
        l += n > 0 ? (size_t)n : 0;
    }
    if (im->skipped[0] && l < cap)
        snprintf(buf + l, cap - l, "; skipped: %s", im->skipped);
    image_free(im);
    free(im);
    return KILN_OK;
}
