/*
 * cli.h - the subcommand table and the option helpers every command uses.
 *
 * main() looks the first argument up in kiln_commands[] and calls its run
 * function with argv[0] set to the command's name. A run function returns
 * the process exit status: 0 success, 1 the job's own failure (a candidate
 * failed, a check found a problem), 2 usage or environment error.
 */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "error.h"

enum {
    KILN_EXIT_OK = 0,
    KILN_EXIT_FAIL = 1,          /* the job's own failure */
    KILN_EXIT_USAGE = 2,         /* usage or environment error */
    KILN_EXIT_TIMEOUT = 124,     /* kiln sandbox: the program ran out of time (as timeout(1)) */
    KILN_EXIT_SIGNAL_BASE = 128, /* kiln sandbox: 128 + N, the program was killed by signal N */
    KILN_EXIT_INTERRUPTED = 130, /* stopped by SIGINT or SIGTERM (128 + SIGINT) */
};

/* The exit status for a job that failed with `rc`: usage/environment,
 * interrupted, or the job's own failure. */
int cli_exit_status(enum kiln_rc rc);

struct kiln_cmd {
    const char *name;
    const char *summary; /* one line for `kiln --help` */
    const char *help;    /* full text for `kiln CMD --help`, with an example */
    int (*run)(int argc, char **argv);
};

/* The table, terminated by an entry whose name is NULL (commands.c). */
extern const struct kiln_cmd kiln_commands[];

const struct kiln_cmd *cli_find(const char *name);

/* Prints "kiln CMD: MESSAGE (see kiln CMD --help)" on stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) KILN_PRINTF(2, 3);

/* Prints the usage error in `err` (its message) as cli_usage_error() does;
 * returns 2 (KILN_EXIT_USAGE). */
int cli_usage_report(const char *cmd, const struct kiln_err *err);

/* Prints "kiln: WHAT: DETAIL" from an error buffer on stderr. */
void cli_report(const char *what, const struct kiln_err *err);

/*
 * Runs getopt_long over a command's arguments with kiln's conventions:
 * `--help`/`-h` prints the command's help and sets *done (exit 0); an
 * unknown option or a missing argument prints one line and returns 2.
 * Returns -1 when options are exhausted, or the option's value.
 */
int cli_getopt(const struct kiln_cmd *cmd, int argc, char **argv, const char *shortopts,
               const struct option *longopts, int *done);

#define CLI_HELP_OPTION                                                                            \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }

/* Parses a whole decimal number in [min, max]; 0 on success, -1 otherwise. */
int cli_parse_long(const char *s, long min, long max, long *out);

#endif
