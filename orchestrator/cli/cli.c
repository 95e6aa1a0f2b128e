#include "cli.h"
#include "suggest.h"
#include "text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct kiln_cmd *cli_find(const char *name)
{
    for (const struct kiln_cmd *c = kiln_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "kiln %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see kiln %s --help)\n", cmd);
    return KILN_EXIT_USAGE;
}

int cli_usage_report(const char *cmd, const struct kiln_err *err)
{
    return cli_usage_error(cmd, "%s", err->msg);
}

void cli_report(const char *what, const struct kiln_err *err)
{
    /* Messages quote sandboxed scripts, compilers and servers: escaped. */
    char msg[KILN_ERR_MSG_MAX * 4];
    text_escape_control(msg, sizeof(msg), err->msg[0] ? err->msg : kiln_strerror(err->rc));
    fprintf(stderr, "kiln: %s: %s\n", what, msg);
}

/* The long option `arg` ("--name" or "--name=value") names, without the
 * dashes and value, into dst[cap]. */
static const char *long_name(const char *arg, char *dst, size_t cap)
{
    arg += 2;
    size_t n = strcspn(arg, "=");
    snprintf(dst, cap, "%.*s", (int)(n < cap ? n : cap - 1), arg);
    return dst;
}

/* "unknown option '--x'", with the closest long option offered. */
static void unknown_long(const struct kiln_cmd *cmd, const char *arg, const struct option *longopts)
{
    char name[SUGGEST_MAX_LEN + 1];
    struct suggest s;
    suggest_init(&s, long_name(arg, name, sizeof(name)));
    const char *prefix_of = NULL;
    int prefixes = 0;
    for (const struct option *o = longopts; o->name; o++) {
        suggest_consider(&s, o->name);
        if (name[0] && strncmp(o->name, name, strlen(name)) == 0) {
            prefix_of = o->name;
            prefixes++;
        }
    }
    if (!s.best && prefixes == 1) /* an abbreviation (refused above) */
        s.best = prefix_of;
    char shown[KILN_ERR_MSG_MAX];
    text_escape_control(shown, sizeof(shown), arg);
    if (s.best)
        cli_usage_error(cmd->name, "unknown option '%s'; did you mean '--%s'?", shown, s.best);
    else
        cli_usage_error(cmd->name, "unknown option '%s'", shown);
}

/* The argument that getopt read as the unknown short option `opt` when it
 * names an existing file ("-mykernel.c"), else NULL: the user meant the
 * file, and GNU's answer is to put it after `--` or write ./-mykernel.c. */
static const char *file_like_option(int argc, char **argv, int opt)
{
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] == opt && access(argv[i], F_OK) == 0)
            return argv[i];
    return NULL;
}

int cli_getopt(const struct kiln_cmd *cmd, int argc, char **argv, const char *shortopts,
               const struct option *longopts, int *done)
{
    /* Leading ':' makes getopt report a missing argument as ':' and stay
     * quiet, so the one-line message below is the only one printed. */
    char spec[128];
    snprintf(spec, sizeof(spec), ":h%s", shortopts ? shortopts : "");
    static const struct option help_only[] = {{"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
    const struct option *opts = longopts ? longopts : help_only;
    opterr = 0;
    int index = -1;
    int c = getopt_long(argc, argv, spec, opts, &index);
    if (index >= 0) {
        /* getopt_long takes any unambiguous prefix; kiln wants the whole
         * name, so a prefix that works today cannot turn ambiguous (and a
         * script break) when a later flag shares it. */
        const char *arg = optarg && optind >= 2 && optarg == argv[optind - 1] ? argv[optind - 2]
                                                                              : argv[optind - 1];
        char name[SUGGEST_MAX_LEN + 1];
        if (strncmp(arg, "--", 2) == 0 &&
            strcmp(long_name(arg, name, sizeof(name)), opts[index].name) != 0) {
            *done = 2;
            unknown_long(cmd, arg, opts);
            return -1;
        }
    }
    switch (c) {
    case 'h':
        fputs(cmd->help, stdout);
        *done = 1;
        return -1;
    case ':':
        *done = 2;
        cli_usage_error(cmd->name, "option '%s' needs an argument", argv[optind - 1]);
        return -1;
    case '?':
        *done = 2;
        if (optopt && file_like_option(argc, argv, optopt)) {
            char shown[KILN_ERR_MSG_MAX];
            text_escape_control(shown, sizeof(shown), file_like_option(argc, argv, optopt));
            cli_usage_error(cmd->name,
                            "unknown option '-%c'; to name the file '%s', put it after -- "
                            "(kiln %s [OPTIONS] -- ARGS...) or write ./%s",
                            optopt, shown, cmd->name, shown);
        } else if (optopt)
            cli_usage_error(cmd->name, "unknown option '-%c'", optopt);
        else if (strncmp(argv[optind - 1], "--", 2) == 0)
            unknown_long(cmd, argv[optind - 1], opts);
        else
            cli_usage_error(cmd->name, "unknown option '%s'", argv[optind - 1]);
        return -1;
    default:
        return c;
    }
}

int cli_parse_long(const char *s, long min, long max, long *out)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_exit_status(enum kiln_rc rc)
{
    if (rc == KILN_E_USAGE || rc == KILN_E_NOTFOUND)
        return KILN_EXIT_USAGE;
    return rc == KILN_E_CANCELLED ? KILN_EXIT_INTERRUPTED : KILN_EXIT_FAIL;
}
