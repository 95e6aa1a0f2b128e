/* cmd_doctor.c - `kiln doctor`: print doctor_collect()'s findings. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "doctor.h"

static int print_json(const struct doctor_report *r, int status)
{
    json_t *items = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const struct doctor_item *it = &r->items[i];
        json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "check", it->name,
                                               "state", doctor_state_name(it->state), "detail",
                                               it->detail, "fix", it->fix, "disables", it->disables,
                                               "needed", it->needed));
    }
    /* "version": the document's format (1), as every JSON document kiln prints. */
    json_t *doc = json_pack("{s:i, s:o, s:i}", "version", 1, "checks", items, "status", status);
    json_dumpf(doc, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(doc);
    return status;
}

/* Prints what the items that are not OK disable, the needed ones or the
 * others; how many it printed. */
static size_t list_disabled(const struct doctor_report *r, bool needed)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->items[i].state != DOCTOR_OK && r->items[i].needed == needed) {
            printf("\n  - %s", r->items[i].disables);
            n++;
        }
    return n;
}

/* The last lines: whether kiln can do its job here (every needed check
 * OK: a cpu-only host whose cpu backend works can), and what is not
 * available, what must be fixed first. */
static void print_summary(const struct doctor_report *r, int status)
{
    size_t optional = 0;
    for (size_t i = 0; i < r->n; i++)
        optional += r->items[i].state != DOCTOR_OK && !r->items[i].needed;
    if (status != KILN_EXIT_OK) {
        fputs("kiln cannot run its job here until these are fixed:", stdout);
        list_disabled(r, true);
        if (optional)
            fputs("\nalso not available (optional):", stdout);
    } else if (optional) {
        fputs("kiln can run its job on this machine; not available here (optional):", stdout);
    } else {
        puts("kiln can run its full job on this machine.");
        return;
    }
    list_disabled(r, false);
    putchar('\n');
}

int cmd_doctor(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_HELP_OPTION, CLI_OPTS_JSON, CLI_OPTS_QUIET, {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("doctor");
    int done = 0, c;
    enum cli_output out = CLI_OUT_TEXT;
    struct kiln_err usage = KILN_ERR_INIT;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1)
        if (cli_output_option(c, &out, NULL, &usage) != KILN_OK)
            return cli_usage_report("doctor", &usage);
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind < argc)
        return cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);

    static struct doctor_report r;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (doctor_collect(&r, &err) != KILN_OK) {
        cli_report("doctor", &err);
        return KILN_EXIT_USAGE;
    }
    int status = doctor_exit_status(&r) ? KILN_EXIT_FAIL : KILN_EXIT_OK;
    if (out == CLI_OUT_JSON)
        return print_json(&r, status);
    if (out == CLI_OUT_QUIET) /* the exit status alone: 0 all, 1 part */
        return status;
    for (size_t i = 0; i < r.n; i++) {
        const struct doctor_item *it = &r.items[i];
        printf("%-9s %-16s %s\n", doctor_state_name(it->state), it->name, it->detail);
        if (it->state != DOCTOR_OK)
            printf("%-9s %-16s   disables: %s\n%-9s %-16s   fix: %s\n", "", "", it->disables, "",
                   "", it->fix);
    }
    print_summary(&r, status);
    return status;
}
