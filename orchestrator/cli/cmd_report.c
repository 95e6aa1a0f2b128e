/* cmd_report.c - `kiln report RUN_DIR`: regenerate heatmap.svg and report.html. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "report.h"
#include "runrec.h"

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION, {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("report");
    int done = 0;
    optind = 1;
    while (cli_getopt(self, argc, argv, "", opts, &done) != -1)
        ;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind + 1 != argc)
        return cli_usage_error("report", "needs exactly one run directory");
    struct runrec rr;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (runrec_open(argv[optind], &rr, &err) != KILN_OK || report_write_run(&rr, &err) != KILN_OK) {
        cli_report("report", &err);
        return err.rc == KILN_E_NOTFOUND || err.rc == KILN_E_USAGE ? KILN_EXIT_USAGE
                                                                   : KILN_EXIT_FAIL;
    }
    printf("kiln: wrote %s/heatmap.svg and %s/report.html\n", rr.dir, rr.dir);
    return KILN_EXIT_OK;
}
