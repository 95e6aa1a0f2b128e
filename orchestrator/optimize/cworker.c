/* cworker.c - compile worker processes (cworker.h). */
#include "cworker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Worker exit statuses. */
enum {
    CW_DONE = 0,     /* a result is in the scratch directory, or nothing to compile */
    CW_FAILED = 1,   /* kiln could not compile it (the parent will say why) */
    CW_ORPHANED = 2, /* kiln was gone before the worker started */
};

static void worker_main(struct eval_session *s, pid_t parent, const char *name, const char *src,
                        size_t len, const int64_t *tunables)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(CW_ORPHANED);
    struct eval_outcome o;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = eval_session_compile(s, name, src, len, tunables, &o, &err);
    /* _exit, not exit: the parent's stdio buffers and atexit handlers are
     * its own; the worker leaves through the file it wrote. */
    _exit(rc == KILN_OK ? CW_DONE : CW_FAILED);
}

enum kiln_rc cworker_start(struct eval_session *s, const char *name, const char *src, size_t len,
                           const int64_t *tunables, struct cworker *w, struct kiln_err *err)
{
    memset(w, 0, sizeof(*w));
    snprintf(w->name, sizeof(w->name), "%s", name);
    pid_t parent = getpid();
    /* Nothing buffered may be written twice (the worker never flushes, but
     * a crash handler might). */
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return kiln_fail_errno(err, KILN_E_CHILD, "starting a compile worker for candidate %s",
                               name);
    if (pid == 0)
        worker_main(s, parent, name, src, len, tunables);
    w->pid = pid;
    return KILN_OK;
}

enum kiln_rc cworker_wait(struct cworker *w, bool *left_result, char *why, size_t cap,
                          struct kiln_err *err)
{
    *left_result = false;
    if (cap)
        why[0] = '\0';
    if (w->pid <= 0)
        return kiln_fail(err, KILN_E_INTERNAL, "waiting for a compile worker never started");
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0) {
        if (errno != EINTR) {
            w->pid = 0;
            return kiln_fail_errno(err, KILN_E_CHILD, "waiting for the compile worker of %s",
                                   w->name);
        }
    }
    w->pid = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == CW_DONE)
        *left_result = true;
    else if (WIFEXITED(st))
        snprintf(why, cap, "exit %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(why, cap, "signal %d", WTERMSIG(st));
    return KILN_OK;
}

void cworker_kill(struct cworker *w)
{
    if (w->pid <= 0)
        return;
    kill(w->pid, SIGKILL);
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    w->pid = 0;
}
