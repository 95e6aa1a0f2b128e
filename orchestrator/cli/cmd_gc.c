/* cmd_gc.c - `kiln gc`: removes old runs (gc.h), prints what went and the
 * bytes freed. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "gc.h"
#include "text.h"

static void print_report(const json_t *rep)
{
    bool dry = json_is_true(json_object_get(rep, "dry_run"));
    char name[1024];
    const json_t *e;
    size_t i;
    json_array_foreach(json_object_get(rep, "removed"), i, e)
    {
        const char *what = json_string_value(json_object_get(e, "what"));
        printf(
            "%s %s%s (%lld bytes)\n", dry ? "would remove" : "removed",
            text_escape_control(name, sizeof(name), json_string_value(json_object_get(e, "run"))),
            what && what[0] == 'w' ? "/work" : "",
            (long long)json_integer_value(json_object_get(e, "bytes")));
    }
    json_array_foreach(json_object_get(rep, "kept"), i, e) printf(
        "kept %s: %s\n",
        text_escape_control(name, sizeof(name), json_string_value(json_object_get(e, "run"))),
        json_string_value(json_object_get(e, "reason")));
    json_array_foreach(json_object_get(rep, "skipped"), i, e) printf(
        "skipped %s: %s\n",
        text_escape_control(name, sizeof(name), json_string_value(json_object_get(e, "name"))),
        json_string_value(json_object_get(e, "reason")));
    long long b = (long long)json_integer_value(json_object_get(rep, "bytes_freed"));
    printf("%s %lld bytes (%.1f MiB)%s\n", dry ? "would free" : "freed", b, b / 1048576.0,
           dry ? "; --dry-run: nothing was removed" : "");
}

/* `kiln gc --dry-run` with no rule: every run and its size, and how to
 * choose (the report's "removed" becomes "runs": nothing was chosen). */
static void as_survey(json_t *rep)
{
    json_object_set(rep, "runs", json_object_get(rep, "removed"));
    json_object_set_new(rep, "removed", json_array());
    json_object_set_new(rep, "bytes_freed", json_integer(0));
    json_object_set_new(rep, "rule", json_null());
}

static void print_survey(const json_t *rep)
{
    char name[1024];
    const json_t *e;
    size_t i;
    long long total = 0;
    json_array_foreach(json_object_get(rep, "runs"), i, e)
    {
        long long b = (long long)json_integer_value(json_object_get(e, "bytes"));
        total += b;
        printf(
            "%s (%lld bytes)\n",
            text_escape_control(name, sizeof(name), json_string_value(json_object_get(e, "run"))),
            b);
    }
    json_array_foreach(json_object_get(rep, "kept"), i, e) printf(
        "kept %s: %s\n",
        text_escape_control(name, sizeof(name), json_string_value(json_object_get(e, "run"))),
        json_string_value(json_object_get(e, "reason")));
    printf("%zu runs, %lld bytes (%.1f MiB); --dry-run with no rule: nothing would be removed. "
           "Choose the runs with --keep-last N, --older-than DAYS or both\n",
           json_array_size(json_object_get(rep, "runs")), total, total / 1048576.0);
}

int cmd_gc(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"results", required_argument, NULL, 'o'},
                                         {"keep-last", required_argument, NULL, 'k'},
                                         {"older-than", required_argument, NULL, 'a'},
                                         {"inputs-only", no_argument, NULL, 'I'},
                                         {"dry-run", no_argument, NULL, 'n'},
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_QUIET,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("gc");
    struct gc_options o = {.keep_last = -1, .older_than_days = -1, .now = (int64_t)time(NULL)};
    enum cli_output out = CLI_OUT_TEXT;
    struct kiln_err usage = KILN_ERR_INIT;
    int done = 0, c;
    long v;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1) {
        switch (c) {
        case 'o':
            o.results_dir = optarg;
            break;
        case 'k':
            if (cli_parse_long(optarg, 0, 1000000, &v))
                return cli_usage_error("gc", "--keep-last needs 0..1000000 runs, got '%s'", optarg);
            o.keep_last = (int)v;
            break;
        case 'a':
            if (cli_parse_long(optarg, 0, 100000, &v))
                return cli_usage_error("gc", "--older-than needs whole days 0..100000, got '%s'",
                                       optarg);
            o.older_than_days = (double)v;
            break;
        case 'I':
            o.inputs_only = true;
            break;
        case 'n':
            o.dry_run = true;
            break;
        default:
            if (cli_output_option(c, &out, NULL, &usage) != KILN_OK)
                return cli_usage_report("gc", &usage);
            break;
        }
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind != argc)
        return cli_usage_error("gc", "takes no arguments (the results directory is --results DIR)");
    /* --dry-run alone is a survey: every run and its size (keep none,
     * remove nothing), not a usage error. */
    bool survey = o.dry_run && o.keep_last < 0 && o.older_than_days < 0;
    if (survey)
        o.keep_last = 0;
    if (o.keep_last < 0 && o.older_than_days < 0)
        return cli_usage_error("gc", "say which runs to remove: --keep-last N, --older-than "
                                     "DAYS, or both (--dry-run alone lists the runs)");
    json_t *rep = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = gc_run(&o, &rep, &err);
    if (rep && survey)
        as_survey(rep);
    if (rep && out == CLI_OUT_JSON)
        json_dumpf(rep, stdout, JSON_INDENT(2)), putchar('\n');
    else if (rep && out != CLI_OUT_QUIET)
        (survey ? print_survey : print_report)(rep);
    json_decref(rep);
    if (rc != KILN_OK) {
        cli_report("gc", &err);
        return err.rc == KILN_E_NOTFOUND || err.rc == KILN_E_USAGE ? KILN_EXIT_USAGE
                                                                   : KILN_EXIT_FAIL;
    }
    return KILN_EXIT_OK;
}
