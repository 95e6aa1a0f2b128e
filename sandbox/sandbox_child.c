/*
 * sandbox_child.c - the sandbox's processes: setup, init and the program
 * (the tree is drawn in sandbox.c). Every function here runs after fork; a
 * step that fails sends {step, errno} on the status pipe (STEP) and
 * _exits. The filesystem init builds is in sandbox_fs.c.
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
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

#include "image.h"
#include "outpack.h"
#include "sandbox_impl.h"

#define SANDBOX_UID 1000 /* the id inside; mapped to the caller's, or to the slot's for root */

static void send_msg(int fd, const struct msg *m)
{
    ssize_t n;
    do
        n = write(fd, m, sizeof(*m));
    while (n < 0 && errno == EINTR);
}

/* Reports a failed set-up step and ends this process. */
void sb_die_step(const struct plan *pl, const char *step, int e)
{
    struct msg m = {.type = MSG_FAILED, .err = e};
    snprintf(m.text, sizeof(m.text), "%s", step);
    send_msg(pl->status_w, &m);
    _exit(SB_EXIT_STEP_FAILED);
}

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

/* Hands the seccomp listener to init over the socket (SCM_RIGHTS). The
 * message holds a reference of its own: the listener outlives this
 * process's copy (closed at exec), so there is no need to wait for init. */
static int send_listener(int sock, int lfd)
{
    char byte = 'l';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &lfd, sizeof(int));
    return sendmsg(sock, &mh, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int recv_listener(int sock)
{
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    do
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&mh) : NULL;
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* The program: its last steps, in the order that keeps each one possible.
 * fds: 3 status, 4 the socket that carries the seccomp listener to init. */
static void run_program(struct plan *pl, int lsock, int stdin_fd)
{
    STEP(pl, setsid() >= 0, "start a new session");
    int in = stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
    STEP(pl, in >= 0, "open /dev/null for stdin");
    int hi[5] = {in, pl->out_w, pl->err_w, pl->status_w, lsock};
    for (int i = 0; i < 5; i++) {
        hi[i] = fcntl(hi[i], F_DUPFD_CLOEXEC, 64);
        STEP(pl, hi[i] >= 0, "move descriptors");
    }
    for (int i = 0; i < 5; i++)
        STEP(pl, dup3(hi[i], i, i >= 3 ? O_CLOEXEC : 0) == i, "set up descriptor %d", i);
    pl->status_w = 3;
    STEP(pl, close_range(5, ~0U, 0) == 0, "close inherited descriptors");

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
     * syscall (sendmsg is allowed by every policy: policy.c checks). */
    struct sock_fprog prog = {.len = (unsigned short)pl->pol.bpf_len,
                              .filter = (struct sock_filter *)pl->pol.bpf};
    int lfd =
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    STEP(pl, lfd >= 0, "install the seccomp filter of policy %s", pl->pol.name);
    STEP(pl, send_listener(4, lfd) == 0, "hand the seccomp listener to init");
    close(lfd);
    close(4);
    exec_program(pl);
}

long long sb_now_us(void)
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
static int supervise(struct plan *pl, pid_t prog, int sfd, int lsock, int *timed_out)
{
    int status = 0, done = 0;
    long long start = sb_now_us();
    long long deadline = start + pl->lim.timeout_ms * 1000;
    /* Nothing from the socket: the program failed a step before its filter
     * (it reported why) and runs nothing untrusted. */
    int lfd = recv_listener(lsock);
    close(lsock);
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
        long long left = deadline - sb_now_us();
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
    pl->lim.timeout_ms = sb_now_us() - start; /* reused as the measured time (us) */
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
    sb_build_root(pl);
    if (pl->go_r >= 0) { /* else init was forked in the cgroup (setup joined it) */
        char go = 0;
        STEP(pl, read(pl->go_r, &go, 1) == 1 && go == '1',
             "wait for kiln to move init into the sandbox's cgroup");
        close(pl->go_r);
    }
    /* The cgroup namespace is rooted at the sandbox's own cgroup. */
    STEP(pl, unshare(CLONE_NEWCGROUP) == 0, "create a cgroup namespace");
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    STEP(pl, sigprocmask(SIG_BLOCK, &chld, NULL) == 0, "block SIGCHLD");
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    STEP(pl, sfd >= 0, "create init's signalfd");
    int lsock[2];
    STEP(pl, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, lsock) == 0,
         "create the seccomp listener's socket");
    int stdin_fd = pl->spec->stdin_fd;
    pid_t prog = fork();
    STEP(pl, prog >= 0, "fork the program");
    if (prog == 0) {
        sigprocmask(SIG_UNBLOCK, &chld, NULL);
        close(lsock[0]);
        run_program(pl, lsock[1], stdin_fd);
        _exit(SB_EXIT_EXEC_FAILED);
    }
    close(lsock[1]);
    close(pl->out_w);
    close(pl->err_w);
    int timed_out = 0;
    int status = supervise(pl, prog, sfd, lsock[0], &timed_out);
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

/* This copy of kiln's memory still holds kiln's environment (the LLM's API
 * key among it) where /proc/<pid>/environ shows it: blank it before
 * anything of the sandbox exists. The program's own environment is built
 * from scratch (the plan), copied first in case a caller's entry pointed
 * into kiln's. The arguments stay: kiln takes no secret on its command
 * line, and the spec points into them. */
static void blank_inherited_env(struct plan *pl)
{
    for (char **e = pl->envp; *e; e++) {
        *e = strdup(*e);
        STEP(pl, *e != NULL, "copy the sandbox's environment");
    }
    char buf[4096];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    STEP(pl, fd >= 0, "open /proc/self/stat");
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    STEP(pl, n > 0, "read /proc/self/stat");
    buf[n] = '\0';
    /* Fields 50 and 51 (env_start, env_end), counted after the command
     * name, which may hold spaces and parentheses. */
    char *p = strrchr(buf, ')');
    STEP(pl, p != NULL, "parse /proc/self/stat");
    unsigned long long v[52] = {0};
    int field = 2;
    for (char *save = NULL, *t = strtok_r(p + 1, " \n", &save); t && field < 51;
         t = strtok_r(NULL, " \n", &save))
        v[++field] = strtoull(t, NULL, 10);
    errno = EINVAL;
    STEP(pl, field == 51 && v[51] >= v[50] && v[50] > 0, "parse /proc/self/stat");
    memset((void *)(uintptr_t)v[50], 0, (size_t)(v[51] - v[50]));
    static char *const empty[] = {NULL};
    environ = (char **)empty;
}

/* The first steps of the first child: a parent-death signal, kiln's
 * environment blanked, and kiln still there. */
static void start_setup(struct plan *pl)
{
    STEP(pl, prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "set the parent-death signal");
    blank_inherited_env(pl);
    STEP(pl, getppid() == pl->kiln_pid, "start (kiln exited)");
    if (pl->go_w >= 0)
        close(pl->go_w);
}

/* First, while still the caller's uid: everything forked from here on
 * (init, the program) starts inside the cgroup. */
static void join_cgroup(struct plan *pl)
{
    int e = cgroup_join_self(&pl->cg);
    errno = -e;
    STEP(pl, e == 0, "join the sandbox's cgroup %s",
         pl->cg.mem_dir[0] ? pl->cg.mem_dir : pl->cg.pids_dir);
}

/* Binds input i, opened as in_fd, at /tmp/in<i> of the staging tmpfs, and
 * points pl->in_src[i] there. */
static void stage_input(struct plan *pl, size_t i, int in_fd)
{
    char st[64], src[64];
    snprintf(st, sizeof(st), "/tmp/in%zu", i);
    snprintf(src, sizeof(src), "/proc/self/fd/%d", in_fd);
    struct stat sb;
    STEP(pl, fstat(in_fd, &sb) == 0, "stat input %s", pl->in_src[i]);
    if (S_ISDIR(sb.st_mode))
        STEP(pl, mkdir(st, 0755) == 0, "stage input %s", pl->in_src[i]);
    else
        STEP(pl, mknod(st, S_IFREG | 0644, 0) == 0, "stage input %s", pl->in_src[i]);
    STEP(pl, mount(src, st, NULL, MS_BIND | MS_REC, NULL) == 0, "bind input %s", pl->in_src[i]);
    close(in_fd);
    snprintf(pl->in_src[i], sizeof(pl->in_src[i]), "%s", st);
}

/* Running as root: bind the inputs, which the sandbox's uid may not be able to
 * reach, into a staging tmpfs of a private mount namespace first;
 * the sandbox's own mount namespace copies it. */
static void stage_inputs(struct plan *pl)
{
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
    STEP(pl, mkdir(STAGE_ROOT, 0755) == 0 && chown(STAGE_ROOT, pl->slot.uid, pl->slot.uid) == 0,
         "create " STAGE_ROOT);
    for (size_t i = 0; i < pl->spec->n_inputs; i++)
        stage_input(pl, i, in_fds[i]);
    pl->in_staged = 1;
}

/* Running as root: become the sandbox's own uid before anything else, so
 * no host uid 0 (or group 0) ever reaches the sandbox, and no other
 * process shares its uid (uidslot.h). */
static void become_slot_uid(struct plan *pl)
{
    uid_t id = pl->slot.uid;
    STEP(pl, id != (uid_t)-1 && id != 0, "pick the sandbox's uid");
    STEP(pl, setgroups(0, NULL) == 0, "drop supplementary groups");
    STEP(pl, setresgid(id, id, id) == 0, "switch to gid %u", (unsigned)id);
    STEP(pl, setresuid(id, id, id) == 0, "switch to uid %u", (unsigned)id);
    /* A change of effective uid clears the parent-death signal: set it
     * again, or a kill -9 of kiln leaves this sandbox running with no
     * one to enforce its timeout. */
    STEP(pl, prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, "set the parent-death signal again");
    STEP(pl, getppid() == pl->kiln_pid, "start (kiln exited)");
    /* Dumpable only while it writes its own id maps (/proc/self files of
     * a non-dumpable process belong to host root); enter_namespaces clears
     * it. */
    STEP(pl, prctl(PR_SET_DUMPABLE, 1) == 0, "mark the set-up process dumpable");
}

/* The user namespace (mapping SANDBOX_UID to the current uid and gid) with
 * mount, net, IPC and UTS, then no longer dumpable, then the PID namespace
 * that init, forked next, is the first process of. */
static void enter_namespaces(struct plan *pl)
{
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
    /* From here setup and init are not dumpable: no process of the same
     * uid (the program included) may ptrace them, open their /proc/<pid>/
     * environ, mem or ns/ (nsenter), whatever the uid. */
    STEP(pl, prctl(PR_SET_DUMPABLE, 0) == 0, "mark the sandbox's init not dumpable");
    STEP(pl, unshare(CLONE_NEWPID) == 0, "create a PID namespace");
}

/* Setup's last part, once init is forked: hand init's pid over when kiln
 * must move it into the cgroup, close setup's copies of the pipes, and
 * exit with init's status. */
static void wait_for_init(struct plan *pl, pid_t init)
{
    /* Without the self-join (v2), the parent moves init into the cgroup
     * while init builds the root: an attach waits out an RCU grace period. */
    if (!pl->cg_self_join) {
        struct msg m = {.type = MSG_INIT_PID, .a = init};
        send_msg(pl->status_w, &m);
        close(pl->go_r);
    }
    close(pl->out_w);
    close(pl->err_w);
    close(pl->tar_w);
    int st;
    while (waitpid(init, &st, 0) < 0)
        if (errno != EINTR)
            _exit(SB_EXIT_LOST);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : SB_EXIT_LOST);
}

/* The first child: still in the host's PID namespace. The steps run in
 * this order, each a security property of the next (see each step). */
void sb_run_setup(struct plan *pl)
{
    start_setup(pl);
    if (pl->cg_self_join)
        join_cgroup(pl);
    if (geteuid() == 0 && pl->spec->n_inputs > 0)
        stage_inputs(pl);
    if (geteuid() == 0)
        become_slot_uid(pl);
    enter_namespaces(pl);
    pid_t init = fork();
    STEP(pl, init >= 0, "fork the sandbox's init");
    if (init == 0)
        run_init(pl);
    wait_for_init(pl, init);
}
