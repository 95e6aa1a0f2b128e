/* cmd_report.c - `kiln report RUN_DIR`: regenerate heatmap.svg and report.html. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "fastp.h"
#include "fsutil.h"
#include "report.h"
#include "runrec.h"

enum kiln_rc report_write_run(const struct runrec *rr, struct kiln_err *err)
{
    json_t *summary = NULL, *history = NULL;
    char *best = NULL, *svg = NULL, *html = NULL;
    size_t len = 0;
    enum kiln_rc rc = runrec_read_json(rr, "summary.json", 64u << 20, &summary, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(rr, "history.json", 64u << 20, &history, err);
    if (rc == KILN_OK)
        rc = runrec_check_version(summary, "summary.json", SUMMARY_VERSION, err);
    if (rc == KILN_OK)
        rc = runrec_check_versions(NULL, history, NULL, err);
    if (rc == KILN_OK) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        /* No best.cu (no candidate passed) is a report, not an error. */
        if (runrec_read(rr, "best.cu", 4u << 20, &best, &len, &ignore) != KILN_OK)
            (void)(runrec_read(rr, "best.c", 4u << 20, &best, &len, &ignore) == KILN_OK);
    }
    if (rc == KILN_OK)
        rc = report_heatmap_svg(summary, &svg, err);
    if (rc == KILN_OK)
        rc = runrec_write(rr, "heatmap.svg", svg, strlen(svg), err);
    if (rc == KILN_OK)
        rc = report_html(summary, history, best, &html, err);
    if (rc == KILN_OK)
        rc = runrec_write(rr, "report.html", html, strlen(html), err);
    json_decref(summary);
    json_decref(history);
    free(best);
    free(svg);
    free(html);
    return rc;
}

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
