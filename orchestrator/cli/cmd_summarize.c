/* cmd_summarize.c - `kiln summarize RUN...`: fast_p over several workloads
 * (fastp.h), one problem per kiln optimize run. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beneath.h"
#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "fastp.h"

#define SUMMARIZE_MAX_RUNS    4096
#define SUMMARIZE_DOC_VERSION 1

/* The thresholds printed: KernelBench's 0, 1 and 2, and --fast-p's. */
struct thresholds {
    double p[4];
    size_t n;
};

static void add_threshold(struct thresholds *t, double p)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->p[i] == p)
            return;
    t->p[t->n++] = p;
}

static enum kiln_rc read_run(const char *dir, struct fastp_problem *p, struct kiln_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    /* summary.json is read beneath the run, never through a link. */
    enum kiln_rc rc =
        beneath_read_file(dir, "summary.json", FASTP_SUMMARY_MAX_BYTES, &buf, &len, err);
    if (rc == KILN_OK)
        rc = fastp_summary_parse(buf, len, p, err);
    free(buf);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "%s: not a finished kiln optimize run, or not one this kiln reads",
                        dir);
    return rc;
}

static void print_json(char **runs, const struct fastp_problem *probs, size_t n,
                       const struct thresholds *t)
{
    json_t *list = json_array(), *fp = json_object();
    for (size_t i = 0; i < n; i++) {
        const struct fastp_problem *p = &probs[i];
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:i, s:o, s:b, s:o}", "run", runs[i], "workload",
                            p->workload, "summary_version", p->version, "best",
                            p->correct ? json_string(p->best) : json_null(), "correct", p->correct,
                            "speedup_vs_reference",
                            p->correct && p->speedup > 0 ? json_real(p->speedup) : json_null()));
    }
    for (size_t i = 0; i < t->n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "%g", t->p[i]);
        json_object_set_new(fp, key, json_real(fastp_fraction(probs, n, t->p[i])));
    }
    json_t *doc = json_pack("{s:i, s:I, s:o, s:o}", "version", SUMMARIZE_DOC_VERSION, "problems",
                            (json_int_t)n, "fast_p", fp, "runs", list);
    if (doc)
        json_dumpf(doc, stdout, JSON_INDENT(2)), putchar('\n');
    json_decref(doc);
}

static void print_fastp_table(enum cli_output out, const struct fastp_problem *probs, size_t n,
                              const struct thresholds *t)
{
    bool csv = out == CLI_OUT_CSV;
    printf(csv ? "p,fast_p,count,problems\n"
               : "| p | fast_p | count | problems |\n|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < t->n; i++) {
        double f = fastp_fraction(probs, n, t->p[i]);
        printf(csv ? "%g,%.6g,%.0f,%zu\n" : "| %g | %.6g | %.0f | %zu |\n", t->p[i], f,
               f * (double)n, n);
    }
}

static void print_text(char **runs, const struct fastp_problem *probs, size_t n,
                       const struct thresholds *t)
{
    printf("kiln summarize: %zu workload%s\n", n, n == 1 ? "" : "s");
    printf("  %-28s %-20s %-6s %-8s %s\n", "run", "workload", "best", "correct", "vs reference");
    for (size_t i = 0; i < n; i++) {
        const struct fastp_problem *p = &probs[i];
        char sp[32] = "-";
        if (p->correct && p->speedup > 0)
            snprintf(sp, sizeof(sp), "%.2fx", p->speedup);
        printf("  %-28s %-20s %-6s %-8s %s\n", runs[i], p->workload, p->correct ? p->best : "-",
               p->correct ? "yes" : "no", sp);
    }
    printf("  ");
    for (size_t i = 0; i < t->n; i++)
        printf("%sfast_%g %.3f", i ? "  " : "", t->p[i], fastp_fraction(probs, n, t->p[i]));
    printf("  (fraction of workloads correct and more than p times as fast as the reference)\n");
}

int cmd_summarize(int argc, char **argv)
{
    static const struct option opts[] = {
        CLI_HELP_OPTION,   {"fast-p", required_argument, NULL, 'p'},
        CLI_OPTS_JSON,     CLI_OPTS_CSV,
        CLI_OPTS_MARKDOWN, CLI_OPTS_QUIET,
        {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("summarize");
    struct thresholds t = {{0, 1, 2}, 3};
    enum cli_output out = CLI_OUT_TEXT;
    struct kiln_err usage = KILN_ERR_INIT;
    int done = 0, c;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1) {
        if (c == 'p') {
            char *end = NULL;
            double p = strtod(optarg, &end);
            if (!*optarg || *end || !(p >= 0 && p <= 1000))
                return cli_usage_error("summarize", "--fast-p needs a number 0..1000, got '%s'",
                                       optarg);
            add_threshold(&t, p);
        } else if (cli_output_option(c, &out, NULL, &usage) != KILN_OK) {
            return cli_usage_report("summarize", &usage);
        }
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    size_t n = (size_t)(argc - optind);
    if (n == 0)
        return cli_usage_error("summarize", "needs one or more run directories");
    if (n > SUMMARIZE_MAX_RUNS)
        return cli_usage_error("summarize", "at most %d runs", SUMMARIZE_MAX_RUNS);
    struct fastp_problem *probs = calloc(n, sizeof(*probs));
    if (!probs) {
        fprintf(stderr, "kiln summarize: out of memory\n");
        return KILN_EXIT_USAGE;
    }
    char **runs = argv + optind;
    struct kiln_err err;
    kiln_err_clear(&err);
    int status = KILN_EXIT_OK;
    for (size_t i = 0; i < n && status == KILN_EXIT_OK; i++) {
        if (read_run(runs[i], &probs[i], &err) != KILN_OK) {
            cli_report("summarize", &err);
            status = KILN_EXIT_USAGE;
        }
        /* fast_p counts each problem once: two runs of one workload would
         * weigh it twice. */
        for (size_t k = 0; k < i && status == KILN_EXIT_OK; k++)
            if (!strcmp(probs[k].workload, probs[i].workload))
                status = cli_usage_error("summarize",
                                         "%s and %s are both runs of workload %s: give one run "
                                         "per workload",
                                         runs[k], runs[i], probs[i].workload);
    }
    if (status == KILN_EXIT_OK) {
        if (out == CLI_OUT_JSON)
            print_json(runs, probs, n, &t);
        else if (out == CLI_OUT_CSV || out == CLI_OUT_MARKDOWN)
            print_fastp_table(out, probs, n, &t);
        else if (out == CLI_OUT_TEXT)
            print_text(runs, probs, n, &t);
    }
    free(probs);
    return status;
}
