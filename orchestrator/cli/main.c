/*
 * main.c - kiln's entry point: finds the subcommand and hands it the rest of
 * the command line. Everything else lives in libraries the commands call.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kiln_version.h"
#include "suggest.h"
#include "text.h"

static void print_help(void)
{
    puts("kiln - optimize and evaluate untrusted CUDA kernels in sandboxes\n"
         "\n"
         "usage: kiln [--version] [--help] COMMAND [ARGS...]\n"
         "\n"
         "commands:");
    for (const struct kiln_cmd *c = kiln_commands; c->name; c++)
        printf("  %-12s %s\n", c->name, c->summary);
    puts("\n"
         "Run `kiln COMMAND --help` (or `kiln help COMMAND`) for a command's options and an\n"
         "example.\n"
         "\n"
         "example:\n"
         "  kiln doctor          # what this machine can run, and how to fix what it cannot");
}

/* "unknown command" with the closest known one, if any. */
static int unknown_command(const char *name)
{
    struct suggest near;
    suggest_init(&near, name);
    for (const struct kiln_cmd *c = kiln_commands; c->name; c++)
        suggest_consider(&near, c->name);
    char shown[256];
    text_escape_control(shown, sizeof(shown), name);
    if (near.best)
        fprintf(stderr, "kiln: unknown command '%s'; did you mean '%s'? (see kiln --help)\n", shown,
                near.best);
    else
        fprintf(stderr, "kiln: unknown command '%s' (see kiln --help)\n", shown);
    return KILN_EXIT_USAGE;
}

/* `kiln help CMD`: the command's own help, as `kiln CMD --help` prints it. */
static int help_for(const char *name)
{
    const struct kiln_cmd *cmd = cli_find(name);
    if (!cmd)
        return unknown_command(name);
    fputs(cmd->help, stdout);
    return KILN_EXIT_OK;
}

static void print_version(void)
{
    printf("kiln %s (git %s, built with CUDA %s)\n", KILN_VERSION, KILN_GIT_REV, KILN_CUDA_VERSION);
}

int main(int argc, char **argv)
{
    /* A pipe whose reader died (a sandbox whose init failed a set-up step
     * before reading its go byte) must be an EPIPE error the caller
     * reports, not a signal that kills kiln mid-run. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        fprintf(stderr, "kiln: missing command (see kiln --help)\n");
        return KILN_EXIT_USAGE;
    }
    const char *arg = argv[1];
    if (strcmp(arg, "help") == 0 && argc > 2) /* `kiln help CMD` is `kiln CMD --help` */
        return help_for(argv[2]);
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0) {
        print_help();
        return KILN_EXIT_OK;
    }
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
        print_version();
        return KILN_EXIT_OK;
    }
    if (arg[0] == '-') {
        static const char *const top[] = {"--help", "--version", NULL};
        const char *near = suggest_among(arg, top);
        char shown[256];
        text_escape_control(shown, sizeof(shown), arg);
        if (near)
            fprintf(stderr, "kiln: unknown option '%s'; did you mean '%s'? (see kiln --help)\n",
                    shown, near);
        else
            fprintf(stderr, "kiln: unknown option '%s' (see kiln --help)\n", shown);
        return KILN_EXIT_USAGE;
    }
    const struct kiln_cmd *cmd = cli_find(arg);
    if (!cmd)
        return unknown_command(arg);
    return cmd->run(argc - 1, argv + 1);
}
