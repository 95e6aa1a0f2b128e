/*
 * front.c - the `kiln` executable: runs `kiln sandbox` itself and hands
 * every other command to kiln-full, the whole CLI (main.c), beside it.
 *
 * Why two executables: the whole CLI links libcurl, OpenSSL, SQLite and
 * libmicrohttpd, about 45 shared objects whose loading (relocations, page
 * faults, constructors) cost more than building the sandbox itself, on
 * every `kiln sandbox` (issue 20). This one links what the sandbox needs
 * (libseccomp, libcap, jansson); the sandbox code is the same library.
 * kiln-full is found beside this file (/proc/self/exe), never on PATH, and
 * takes the same argv: exec keeps the pid, fds and exit status, so callers
 * see one kiln process.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "fsutil.h"

const struct kiln_cmd kiln_commands[] = {
    {"sandbox", cmd_sandbox_summary, cmd_sandbox_help, cmd_sandbox},
    {NULL, NULL, NULL, NULL},
};

/* Replaces this process with kiln-full; returns only when that failed. */
static int run_full(char **argv)
{
    char path[PATH_MAX];
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_self_path(true, path, sizeof(path) - sizeof("/kiln-full"), &e) != KILN_OK) {
        fprintf(stderr, "kiln: cannot find its own directory: %s; is /proc mounted?\n", e.msg);
        return KILN_EXIT_USAGE;
    }
    strcat(path, "/kiln-full");
    execv(path, argv);
    fprintf(stderr,
            "kiln: cannot run %s: %s (kiln runs every command but sandbox from kiln-full, "
            "built and installed beside it: rebuild or reinstall kiln)\n",
            path, strerror(errno));
    return KILN_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "sandbox") != 0)
        return run_full(argv);
    /* As main.c: a sandbox whose init died before reading its go byte is
     * an EPIPE error to report, not a signal that kills kiln. */
    signal(SIGPIPE, SIG_IGN);
    return cmd_sandbox(argc - 1, argv + 1);
}
