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
        json_array_append_new(items,
                              json_pack("{s:s, s:s, s:s, s:s, s:s}", "check", it->name, "state",
                                        doctor_state_name(it->state), "detail", it->detail, "fix",
                                        it->fix, "disables", it->disables));
    }
    /* "version": the document's format (1), as every JSON document kiln prints. */
    json_t *doc = json_pack("{s:i, s:o, s:i}", "version", 1, "checks", items, "status", status);
    json_dumpf(doc, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(doc);
    return status;
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
    int status = KILN_EXIT_OK;
    for (size_t i = 0; i < r.n; i++)
        if (r.items[i].state != DOCTOR_OK)
            status = KILN_EXIT_FAIL;
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
    if (status == KILN_EXIT_OK)
        puts("kiln can run its full job on this machine.");
    else {
        fputs("kiln can run only part of its job here; not available:", stdout);
        for (size_t i = 0; i < r.n; i++)
            if (r.items[i].state != DOCTOR_OK)
                printf("\n  - %s", r.items[i].disables);
        putchar('\n');
    }
    return status;
}
