/*
 * sandbox.c - sandbox_run(): the process tree and the set-up timeline; this
 * file is the parent's side (pipes, fork, cgroup, reading the pipes, the
 * verdict). The spec becomes a plan in sandbox_plan.c; setup, init and the
 * program are in sandbox_child.c, the filesystem init builds in
 * sandbox_fs.c; what they share is in sandbox_impl.h.
 *
 *   kiln (caller, trusted)        creates the cgroup (v2: moves setup and
 *    |                            init into it); reads status/stdout/stderr/tar
 *    `- setup   (host PID ns)     v1: joins the cgroup itself, so init is
 *        |                        born in it; drops to an unprivileged uid; new
 *        |                        user/mount/net/ipc/uts namespaces
 *        `- init (PID 1)          a cgroup namespace (once in the cgroup);
 *            |                    mounts, pivot_root; reaps orphans; names
 *            |                    refused syscalls; enforces the timeout;
 *            |                    packs /out into the tar pipe
 *            `- program           rlimits, caps, no_new_privs, seccomp, exec
 *
 * Every child step that fails sends {step, errno} on the status pipe and
 * _exits: the program never runs half-confined. The parent only reads pipes.
 */
#include "sandbox.h"

#include "fdio.h"
#include "interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "fsutil.h"
#include "image.h"
#include "sandbox_impl.h"

#define GRACE_MS       30000        /* backstop beyond the timeout: packing /out */
#define TAR_SLACK      (16LL << 20) /* headers on top of the data cap */
#define TAR_PIPE_BYTES (1 << 20)    /* the tar pipe's capacity, and the parent's reads */

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

/* The parent's side of one run, from the pipes to the verdict; each phase
 * of sandbox_run() below takes what it needs from here. */
struct run {
    const struct sandbox_spec *spec;
    struct sandbox_result *res;
    struct plan *pl;
    enum kiln_rc rc; /* the first failure while the pipes are read */
    int st_p[2], out_p[2], err_p[2], tar_p[2], go_p[2];
    struct capture cout, cerr;
    pid_t setup;
    long long t0, deadline;
    int killed, wst;
    int stopped; /* killed on the user's stop (interrupt.h): KILN_E_CANCELLED */
    struct msg failed, done, ref;
    /* A failed attach is reported only when the child sent no failure of
     * its own: a child that died early (ESRCH) explains why, and its
     * message names the real problem. */
    struct kiln_err attach_err;
    /* The tar stream: where it goes, how much may come, how it is copied. */
    int tar_fd, tar_write_failed, tar_splice;
    long long tar_cap, tar_first;
    char *tbuf;
    size_t tcap;
    char buf[65536];
};

static void run_init(struct run *r, const struct sandbox_spec *spec, struct sandbox_result *res)
{
    memset(r, 0, sizeof(*r));
    kiln_err_clear(&r->attach_err);
    r->spec = spec;
    r->res = res;
    int *fds[] = {r->st_p, r->out_p, r->err_p, r->tar_p, r->go_p};
    for (size_t i = 0; i < 5; i++)
        fds[i][0] = fds[i][1] = -1;
}

/* The plan, the host uid, the capture buffers and the four pipes. */
static enum kiln_rc run_prepare(struct run *r, struct kiln_err *err)
{
    struct plan *pl = r->pl;
    pl->spec = r->spec;
    pl->slot.lock_fd = -1;
    enum kiln_rc rc = sb_prepare(pl, r->spec, err);
    if (rc != KILN_OK)
        return rc;
    snprintf(r->res->policy, sizeof(r->res->policy), "%s", pl->pol.name);
    /* As root, a host uid no other process has (uidslot.h); held until the
     * whole tree is reaped. */
    if (geteuid() == 0 && (rc = uidslot_take(&pl->slot, err)) != KILN_OK)
        return rc;
    if (capture_init(&r->cout, pl->lim.output_bytes) ||
        capture_init(&r->cerr, pl->lim.output_bytes))
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    if (pipe2(r->st_p, O_CLOEXEC) || pipe2(r->out_p, O_CLOEXEC) || pipe2(r->err_p, O_CLOEXEC) ||
        pipe2(r->tar_p, O_CLOEXEC))
        return kiln_fail_errno(err, KILN_E_IO, "sandbox: creating pipes");
    /* A roomier tar pipe (best effort: the default is 64 KiB) lets /out
     * stream in big pieces, with fewer wake-ups on both sides. */
    (void)fcntl(r->tar_p[1], F_SETPIPE_SZ, TAR_PIPE_BYTES);
    return KILN_OK;
}

/* The cgroup, and the socket on which init waits to be moved into it; the
 * caller destroys the cgroup, whether this fails or not. */
static enum kiln_rc run_create_cgroup(struct run *r, struct kiln_err *err)
{
    struct plan *pl = r->pl;
    /* One more pid than the limit: setup joins the cgroup too (below). */
    cgroup_create(&pl->cg, pl->lim.memory_bytes, pl->lim.pids + 1);
    /* Under v1 setup moves itself in before it forks init, which inherits
     * the cgroup: no grace period, no hand-over. Else the parent attaches
     * setup and init, and init waits on this socket until it is in. */
    pl->cg_self_join = cgroup_can_join_self(&pl->cg);
    if (!pl->cg_self_join && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, r->go_p))
        return kiln_fail_errno(err, KILN_E_IO, "sandbox: creating pipes");
    if (!pl->cg.mem_dir[0] && !pl->pol.allow_gpu)
        snprintf(r->res->memory_cap, sizeof(r->res->memory_cap),
                 "RLIMIT_DATA %lld MiB only (weaker: no writable cgroup)",
                 pl->lim.memory_bytes >> 20);
    else
        snprintf(r->res->memory_cap, sizeof(r->res->memory_cap), "%s", pl->cg.desc);
    return KILN_OK;
}

/* Forks setup, which never returns here, and closes the child's ends. */
static enum kiln_rc run_fork_setup(struct run *r, struct kiln_err *err)
{
    struct plan *pl = r->pl;
    pl->status_w = r->st_p[1];
    pl->out_w = r->out_p[1];
    pl->err_w = r->err_p[1];
    pl->tar_w = r->tar_p[1];
    pl->go_r = r->go_p[0];
    pl->go_w = r->go_p[1];
    pl->kiln_pid = getpid();
    r->t0 = sb_now_us();
    r->setup = fork();
    if (r->setup < 0)
        return kiln_fail_errno(err, KILN_E_SANDBOX, "sandbox: fork");
    if (r->setup == 0) {
        close(r->st_p[0]);
        close(r->out_p[0]);
        close(r->err_p[0]);
        close(r->tar_p[0]);
        sb_run_setup(pl);
        _exit(SB_EXIT_LOST);
    }
    close_fd(&r->st_p[1]);
    close_fd(&r->out_p[1]);
    close_fd(&r->err_p[1]);
    close_fd(&r->tar_p[1]);
    close_fd(&r->go_p[0]);
    return KILN_OK;
}

/* Moving a process into a cgroup waits out an RCU grace period (ms): start
 * with setup now, overlapping its namespaces and init's mounts. init, if
 * forked before this lands, is moved when it reports (fast: right after a
 * move, no new grace period). The program is forked only after both. */
static void run_attach_setup(struct run *r)
{
    /* A setup that has exited already says why itself. */
    if (!r->pl->cg_self_join &&
        cgroup_attach(&r->pl->cg, r->setup, &r->attach_err) == KILN_E_NOTFOUND)
        kiln_err_clear(&r->attach_err);
}

/* init reported its pid: move it into the cgroup and let it go on. */
static void run_release_init(struct run *r, pid_t init, struct kiln_err *err)
{
    bool moved = cgroup_attach(&r->pl->cg, init, &r->attach_err) == KILN_OK;
    /* A socket, so a dead init is EPIPE, never a SIGPIPE that kills the
     * caller; its own failure report says why. */
    if (send(r->go_p[1], moved ? "1" : "0", 1, MSG_NOSIGNAL) != 1 && errno != EPIPE &&
        r->rc == KILN_OK)
        r->rc = kiln_fail_errno(err, KILN_E_IO, "sandbox: releasing init");
    close_fd(&r->go_p[1]);
}

/* One message from the status pipe; EOF closes it. */
static void pump_status(struct run *r, struct kiln_err *err)
{
    struct msg m;
    ssize_t n = read(r->st_p[0], &m, sizeof(m));
    if (n <= 0) {
        close_fd(&r->st_p[0]);
        return;
    }
    if (n != sizeof(m))
        return;
    m.text[sizeof(m.text) - 1] = '\0';
    if (m.type == MSG_FAILED && !r->failed.type)
        r->failed = m;
    else if (m.type == MSG_DONE)
        r->done = m;
    else if (m.type == MSG_REFUSED && !r->ref.type)
        r->ref = m;
    else if (m.type == MSG_SKIPPED && append_skipped(r->res, m.text) != KILN_OK)
        r->rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
    else if (m.type == MSG_INIT_PID && r->go_p[1] >= 0)
        run_release_init(r, (pid_t)m.a, err);
}

/* One read of the program's stdout or stderr into its capture. */
static void pump_output(struct run *r, int *fd, struct capture *c)
{
    ssize_t n = read(*fd, r->buf, sizeof(r->buf));
    if (n <= 0)
        close_fd(fd);
    else
        capture_feed(c, r->buf, (size_t)n);
}

/* Pipe to file inside the kernel, never past the cap: one copy fewer than
 * read + write. Returns 1 when the tar pipe is done with for this wake-up,
 * 0 when splice read nothing and the pipe's end is to be handled. */
static int pump_tar_splice(struct run *r, long long room)
{
    ssize_t n =
        splice(r->tar_p[0], NULL, r->tar_fd, NULL,
               (size_t)(room < (long long)r->tcap ? room : (long long)r->tcap), SPLICE_F_MOVE);
    if (n < 0 && errno == EINTR)
        return 1;
    if (n < 0 && errno == EINVAL) {
        r->tar_splice = 0; /* tar_fd cannot take it: read and write from now on */
        return 1;
    }
    if (n < 0) {
        r->tar_write_failed = errno ? errno : EIO;
        return 1;
    }
    if (n == 0)
        return 0;
    if (!r->tar_first)
        r->tar_first = sb_now_us();
    r->res->tar_bytes += (unsigned long long)n;
    return 1;
}

/* One piece of the tar stream: into tar_fd, counted, or past the cap. */
static void pump_tar(struct run *r)
{
    struct sandbox_result *res = r->res;
    ssize_t n = 0;
    long long room = r->tar_cap - (long long)res->tar_bytes;
    if (r->tar_splice && r->tar_fd >= 0 && !r->tar_write_failed && room > 0) {
        if (pump_tar_splice(r, room))
            return;
    } else {
        n = read(r->tar_p[0], r->tbuf, r->tcap);
    }
    if (n > 0 && !r->tar_first)
        r->tar_first = sb_now_us();
    if (n <= 0) {
        if (r->tar_first)
            res->tar_s = (double)(sb_now_us() - r->tar_first) / 1e6;
        close_fd(&r->tar_p[0]);
    } else if ((long long)(res->tar_bytes + (unsigned long long)n) > r->tar_cap) {
        res->tar_truncated = 1;
    } else if (r->tar_fd >= 0 && !r->tar_write_failed) {
        if (fd_write_all_errno(r->tar_fd, r->tbuf, (size_t)n) < 0)
            r->tar_write_failed = errno ? errno : EIO;
        else
            res->tar_bytes += (unsigned long long)n;
    } else {
        res->tar_bytes += (unsigned long long)n;
    }
}

/* Reads the four pipes until all are closed, or kills the tree once the
 * timeout and its grace period are over. */
static void run_pump(struct run *r, struct kiln_err *err)
{
    r->deadline = r->t0 + (r->pl->lim.timeout_ms + GRACE_MS) * 1000;
    r->tar_cap = r->pl->lim.tar_bytes + TAR_SLACK;
    r->tar_fd = r->spec->tar_fd;
    r->tar_splice = 1;
    /* The tar stream is read in pieces as big as the pipe; the buffer in
     * struct run will do when this allocation fails. */
    r->tbuf = malloc(TAR_PIPE_BYTES);
    r->tcap = r->tbuf ? TAR_PIPE_BYTES : sizeof(r->buf);
    if (!r->tbuf)
        r->tbuf = r->buf;
    while (r->st_p[0] >= 0 || r->out_p[0] >= 0 || r->err_p[0] >= 0 || r->tar_p[0] >= 0) {
        /* The user's stop (interrupt.h) is watched until it kills the tree. */
        struct pollfd p[5] = {{r->st_p[0], POLLIN, 0},
                              {r->out_p[0], POLLIN, 0},
                              {r->err_p[0], POLLIN, 0},
                              {r->tar_p[0], POLLIN, 0},
                              {r->killed ? -1 : interrupt_fd(), POLLIN, 0}};
        long long left = r->deadline - sb_now_us();
        if (left <= 0 && !r->killed) {
            kill(r->setup, SIGKILL); /* init follows through its parent-death signal */
            r->killed = 1;
        }
        int n = poll(p, 5, r->killed ? 1000 : (int)((left + 999) / 1000));
        if (n < 0 && errno != EINTR) {
            kill(r->setup, SIGKILL);
            r->killed = 1;
            break;
        }
        if (n == 0 && r->killed)
            break;
        if (p[4].revents && !r->killed) {
            kill(r->setup, SIGKILL);
            r->killed = r->stopped = 1;
        }
        if (p[0].revents)
            pump_status(r, err);
        if (p[1].revents)
            pump_output(r, &r->out_p[0], &r->cout);
        if (p[2].revents)
            pump_output(r, &r->err_p[0], &r->cerr);
        if (p[3].revents)
            pump_tar(r);
    }
    if (r->tbuf != r->buf)
        free(r->tbuf);
    r->tbuf = NULL;
}

/* Waits for setup, whose rusage counts the whole tree's CPU time. */
static void run_reap(struct run *r)
{
    struct rusage ru;
    memset(&ru, 0, sizeof(ru));
    while (wait4(r->setup, &r->wst, 0, &ru) < 0 && errno == EINTR)
        ;
    r->res->cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The run's outcome: a set-up failure, a lost init, or decide()'s verdict. */
static enum kiln_rc run_verdict(struct run *r, struct kiln_err *err)
{
    if (r->stopped)
        return kiln_fail(err, KILN_E_CANCELLED,
                         "sandbox: stopped on the user's request (SIGINT or SIGTERM)");
    if (r->rc != KILN_OK)
        return r->rc;
    if (r->failed.type) {
        errno = r->failed.err;
        return kiln_fail_errno(err, KILN_E_SANDBOX, "sandbox: %s failed", r->failed.text);
    }
    if (r->attach_err.rc != KILN_OK)
        return kiln_fail(err, KILN_E_SANDBOX, "sandbox: %s", r->attach_err.msg);
    if (!r->done.type)
        return kiln_fail(err, KILN_E_SANDBOX,
                         "sandbox: init ended without a verdict (%s, status 0x%x)%s",
                         r->killed ? "killed after the timeout's grace period" : "crashed", r->wst,
                         r->killed ? "" : ": a bug in kiln, please report it");
    decide(r->res, &r->done, &r->ref, r->pl);
    if (r->tar_write_failed) {
        errno = r->tar_write_failed;
        return kiln_fail_errno(err, KILN_E_IO, "sandbox: writing the tar stream");
    }
    return KILN_OK;
}

/* Frees and closes whatever the run still holds, in any phase. */
static void run_free(struct run *r)
{
    capture_free(&r->cout);
    capture_free(&r->cerr);
    int *all[] = {&r->st_p[0],  &r->st_p[1],  &r->out_p[0], &r->out_p[1], &r->err_p[0],
                  &r->err_p[1], &r->tar_p[0], &r->tar_p[1], &r->go_p[0],  &r->go_p[1]};
    for (size_t i = 0; i < 10; i++)
        close_fd(all[i]);
    sb_plan_free(r->pl);
    free(r->pl);
}

enum kiln_rc sandbox_run(const struct sandbox_spec *spec, struct sandbox_result *res,
                         struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    if (interrupt_raised()) /* the user asked to stop: nothing new starts */
        return kiln_fail(err, KILN_E_CANCELLED,
                         "sandbox: not started: stopping on the user's request");
    struct run r;
    run_init(&r, spec, res);
    r.pl = calloc(1, sizeof(*r.pl));
    if (!r.pl)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    enum kiln_rc rc = run_prepare(&r, err);
    if (rc == KILN_OK) {
        rc = run_create_cgroup(&r, err);
        if (rc == KILN_OK)
            rc = run_fork_setup(&r, err);
        if (rc == KILN_OK) {
            run_attach_setup(&r);
            run_pump(&r, err);
            run_reap(&r);
            rc = run_verdict(&r, err);
        }
        cgroup_destroy(&r.pl->cg);
    }
    if (rc == KILN_OK && (capture_finish(&r.cout, &res->out) || capture_finish(&r.cerr, &res->err)))
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
    run_free(&r);
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

enum kiln_rc sandbox_image_describe(const char *data_dir, const char *name, char *const *vars,
                                    char *buf, size_t cap, struct kiln_err *err)
{
    struct sandbox_image *im = malloc(sizeof(*im));
    if (!im)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    if (image_load(data_dir ? data_dir : sandbox_data_dir(), name, vars, im, err) != KILN_OK) {
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

enum kiln_rc sandbox_image_placeholders(const char *data_dir, const char *name, char *names,
                                        size_t cap, struct kiln_err *err)
{
    return image_placeholders(data_dir ? data_dir : sandbox_data_dir(), name, names, cap, err);
}
