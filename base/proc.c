#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

enum kiln_rc proc_capture(char *const argv[], char *out, size_t cap, int timeout_ms,
                          int *exit_status, struct kiln_err *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "pipe for %s", argv[0]);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        errno = rc;
        return kiln_fail_errno(err, KILN_E_NOTFOUND, "cannot run %s", argv[0]);
    }

    size_t len = 0;
    long deadline = now_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        long left = deadline - now_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            timed_out = pr == 0;
            break;
        }
        char buf[4096];
        ssize_t n = read(fds[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t keep = cap > len + 1 ? cap - len - 1 : 0;
        if ((size_t)n < keep)
            keep = (size_t)n;
        memcpy(out + len, buf, keep);
        len += keep;
    }
    if (cap)
        out[len < cap ? len : cap - 1] = '\0';
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (timed_out)
        return kiln_fail(err, KILN_E_TIMEOUT, "%s did not finish within %d ms", argv[0],
                         timeout_ms);
    return KILN_OK;
}
