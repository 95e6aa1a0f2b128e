/* cmd_summarize.c - `kiln summarize RUN...`: fast_p over several workloads
 * (fastp.h), one problem per kiln optimize run. */
#include <jansson.h>
#include <stdbool.h>
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

/* The speedups fast_p is taken against: the reference always, torch eager
 * and torch.compile where some problem has a torch time. */
static const struct {
    enum fastp_vs vs;
    const char *name, *json_key, *words;
} VS[] = {
    {FASTP_VS_REFERENCE, "reference", "fast_p", "the reference"},
    {FASTP_VS_EAGER, "torch_eager", "fast_p_vs_torch_eager", "torch eager"},
    {FASTP_VS_COMPILE, "torch_compile", "fast_p_vs_torch_compile", "torch.compile"},
};
#define NVS (sizeof(VS) / sizeof(VS[0]))

static bool vs_shown(const struct fastp_problem *probs, size_t n, size_t v)
{
    return VS[v].vs == FASTP_VS_REFERENCE || fastp_timed(probs, n, VS[v].vs) > 0;
}

static json_t *num_or_null(double x)
{
    return x > 0 ? json_real(x) : json_null();
}

static json_t *run_json(const char *run, const struct fastp_problem *p)
{
    return json_pack("{s:s, s:s, s:i, s:o, s:b, s:o, s:o, s:o, s:o, s:o}", "run", run, "workload",
                     p->workload, "summary_version", p->version, "best",
                     p->correct ? json_string(p->best) : json_null(), "correct", p->correct,
                     "speedup_vs_reference", num_or_null(fastp_speedup(p, FASTP_VS_REFERENCE)),
                     "torch_eager_ms", num_or_null(p->eager_ms), "torch_compile_ms",
                     num_or_null(p->compile_ms), "speedup_vs_torch_eager",
                     num_or_null(fastp_speedup(p, FASTP_VS_EAGER)), "speedup_vs_torch_compile",
                     num_or_null(fastp_speedup(p, FASTP_VS_COMPILE)));
}

static void print_json(char **runs, const struct fastp_problem *probs, size_t n,
                       const struct thresholds *t)
{
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, run_json(runs[i], &probs[i]));
    json_t *doc = json_pack("{s:i, s:I, s:o}", "version", SUMMARIZE_DOC_VERSION, "problems",
                            (json_int_t)n, "runs", list);
    for (size_t v = 0; doc && v < NVS; v++) {
        json_t *fp = vs_shown(probs, n, v) ? json_object() : json_null();
        for (size_t i = 0; json_is_object(fp) && i < t->n; i++) {
            char key[32];
            snprintf(key, sizeof(key), "%g", t->p[i]);
            json_object_set_new(fp, key, json_real(fastp_fraction_vs(probs, n, t->p[i], VS[v].vs)));
        }
        json_object_set_new(doc, VS[v].json_key, fp);
    }
    if (doc)
        json_dumpf(doc, stdout, JSON_INDENT(2)), putchar('\n');
    json_decref(doc);
}

static void print_fastp_table(enum cli_output out, const struct fastp_problem *probs, size_t n,
                              const struct thresholds *t)
{
    bool csv = out == CLI_OUT_CSV;
    printf(csv ? "p,fast_p,count,problems,vs\n"
               : "| p | fast_p | count | problems | vs |\n|---:|---:|---:|---:|---|\n");
    for (size_t v = 0; v < NVS; v++)
        for (size_t i = 0; vs_shown(probs, n, v) && i < t->n; i++) {
            double f = fastp_fraction_vs(probs, n, t->p[i], VS[v].vs);
            printf(csv ? "%g,%.6g,%.0f,%zu,%s\n" : "| %g | %.6g | %.0f | %zu | %s |\n", t->p[i], f,
                   f * (double)n, n, VS[v].name);
        }
}

/* "2.50x" or "-" when unknown. */
static const char *ratio(double x, char *buf, size_t cap)
{
    if (x > 0)
        snprintf(buf, cap, "%.2fx", x);
    else
        snprintf(buf, cap, "-");
    return buf;
}

static void print_text(char **runs, const struct fastp_problem *probs, size_t n,
                       const struct thresholds *t)
{
    printf("kiln summarize: %zu workload%s\n", n, n == 1 ? "" : "s");
    printf("  %-28s %-20s %-6s %-8s %-12s %-12s %s\n", "run", "workload", "best", "correct",
           "vs reference", "vs eager", "vs compile");
    for (size_t i = 0; i < n; i++) {
        const struct fastp_problem *p = &probs[i];
        char a[32], b[32], c[32];
        printf("  %-28s %-20s %-6s %-8s %-12s %-12s %s\n", runs[i], p->workload,
               p->correct ? p->best : "-", p->correct ? "yes" : "no",
               ratio(fastp_speedup(p, FASTP_VS_REFERENCE), a, sizeof(a)),
               ratio(fastp_speedup(p, FASTP_VS_EAGER), b, sizeof(b)),
               ratio(fastp_speedup(p, FASTP_VS_COMPILE), c, sizeof(c)));
    }
    for (size_t v = 0; v < NVS; v++) {
        if (!vs_shown(probs, n, v))
            continue;
        printf("  ");
        for (size_t i = 0; i < t->n; i++)
            printf("%sfast_%g %.3f", i ? "  " : "", t->p[i],
                   fastp_fraction_vs(probs, n, t->p[i], VS[v].vs));
        printf("  (fraction of workloads correct and more than p times as fast as %s", VS[v].words);
        if (VS[v].vs != FASTP_VS_REFERENCE)
            printf("; %zu of %zu with a %s time", fastp_timed(probs, n, VS[v].vs), n, VS[v].words);
        printf(")\n");
    }
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
