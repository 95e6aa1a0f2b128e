/* cmd_bench.c - `kiln bench kernelbench LEVEL_DIR`: a KernelBench level in
 * one command that can be stopped and run again (bench_kb.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_kb.h"
#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "fsutil.h"
#include "evaluate.h"
#include "gpuinfo.h"

static volatile sig_atomic_t stop_flag;

/* kiln bench's command line. */
struct bench_cli {
    struct bench b;
    const char *level, *out, *replay, *backend, *workloads;
    struct bench_run_opts ro;
    enum cli_output output;
    bool baseline_only; /* --baseline-only: torch eager of each problem, nothing else */
    long gpu, warmups, iterations, timeout_s;
};

/* An option handed to every kiln optimize, with its value (NULL: none). */
static int pass_on(struct bench_cli *c, const char *opt, const char *val)
{
    if (c->b.nargs + 2 > BENCH_MAX_ARGS)
        return cli_usage_error("bench", "too many options");
    c->b.args[c->b.nargs++] = (char *)opt;
    if (val)
        c->b.args[c->b.nargs++] = (char *)val;
    return -1;
}

/* A whole number option in [lo, hi] into *v (NULL: none), passed on: -1,
 * else the exit status. */
static int pass_number(struct bench_cli *c, const char *opt, long lo, long hi, long *v)
{
    long x;
    if (cli_parse_long(optarg, lo, hi, &x) != 0)
        return cli_usage_error("bench", "%s needs %ld..%ld, got '%s'", opt, lo, hi, optarg);
    if (v)
        *v = x;
    return pass_on(c, opt, optarg);
}

static int bench_option(int ch, struct bench_cli *c)
{
    switch (ch) {
    case 'o':
        c->out = optarg;
        return -1;
    case 'p':
        if (!strcmp(optarg, "tuner"))
            optarg = "tune"; /* the word for kiln's tuner */
        if (strcmp(optarg, "tune") && strcmp(optarg, "llm") && strcmp(optarg, "replay"))
            return cli_usage_error("bench", "unknown proposer '%s' (tune, llm, replay)", optarg);
        snprintf(c->b.proposer, sizeof(c->b.proposer), "%s", optarg);
        return -1;
    case 'r':
        c->replay = optarg;
        return -1;
    case 'w':
        c->workloads = optarg;
        return -1;
    case 'B':
        if (strcmp(optarg, "cuda") && strcmp(optarg, "cpu"))
            return cli_usage_error("bench", "--backend is cuda or cpu, not '%s'", optarg);
        c->backend = optarg;
        return -1;
    case 'S': {
        long s;
        if (cli_parse_long(optarg, 1, 7 * 86400, &s) != 0)
            return cli_usage_error("bench", "--stop-after needs 1..604800 seconds, got '%s'",
                                   optarg);
        c->ro.time_budget_s = (double)s;
        return -1;
    }
    case 'A':
        c->ro.archive = false;
        return -1;
    case 'n':
        return pass_number(c, "--max-iterations", 1, 1000, NULL);
    case 'W':
        return pass_number(c, "--warmups", 0, 100000, &c->warmups);
    case 'i':
        return pass_number(c, "--iterations", 1, 100000, &c->iterations);
    case CLI_OPT_SEED:
        return pass_number(c, "--seed", 0, (1L << 52), NULL);
    case CLI_OPT_GPU:
        return pass_number(c, "--gpu", 0, GPUINFO_MAX - 1, &c->gpu);
    case 'b':
        c->baseline_only = true;
        return -1;
    case 't':
        if (cli_parse_long(optarg, 10, 86400, &c->timeout_s) != 0)
            return cli_usage_error("bench", "--timeout needs 10..86400 seconds, got '%s'", optarg);
        return -1;
    case 'm':
        return pass_on(c, "--model", optarg);
    case 'u':
        return pass_on(c, "--base-url", optarg);
    }
    struct kiln_err usage = KILN_ERR_INIT;
    if (cli_output_option(ch, &c->output, NULL, &usage) != KILN_OK)
        return cli_usage_report("bench", &usage);
    return -1;
}

static int parse_args(int argc, char **argv, struct bench_cli *c)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"output", required_argument, NULL, 'o'},
                                         {"proposer", required_argument, NULL, 'p'},
                                         {"replay", required_argument, NULL, 'r'},
                                         {"workloads", required_argument, NULL, 'w'},
                                         {"backend", required_argument, NULL, 'B'},
                                         {"stop-after", required_argument, NULL, 'S'},
                                         {"no-archive", no_argument, NULL, 'A'},
                                         {"baseline-only", no_argument, NULL, 'b'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"max-iterations", required_argument, NULL, 'n'},
                                         {"warmups", required_argument, NULL, 'W'},
                                         {"iterations", required_argument, NULL, 'i'},
                                         {"model", required_argument, NULL, 'm'},
                                         {"base-url", required_argument, NULL, 'u'},
                                         CLI_OPTS_SEED,
                                         CLI_OPTS_GPU,
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_QUIET,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("bench");
    int done = 0, ch, status;
    optind = 1;
    while ((ch = cli_getopt(self, argc, argv, "o:", opts, &done)) != -1)
        if ((status = bench_option(ch, c)) >= 0)
            return status;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind + 2 != argc || strcmp(argv[optind], "kernelbench") != 0)
        return cli_usage_error("bench", "usage: kiln bench kernelbench LEVEL_DIR [-o DIR] "
                                        "[--proposer tune|llm|replay]");
    c->level = argv[optind + 1];
    if (c->baseline_only)
        return c->b.proposer[0] || c->replay || c->workloads
                   ? cli_usage_error("bench", "--baseline-only times torch alone: no "
                                              "--proposer, --replay or --workloads")
                   : -1;
    if (c->timeout_s)
        return cli_usage_error("bench", "--timeout is --baseline-only's (each kiln optimize "
                                        "takes its policies' limits)");
    if (!c->b.proposer[0])
        return cli_usage_error("bench", "needs --proposer tune|llm|replay (imported problems "
                                        "have no starting kernel: tune needs one, llm a "
                                        "--model, replay a --replay DIR)");
    bool is_replay = !strcmp(c->b.proposer, "replay");
    if (is_replay != (c->replay != NULL))
        return cli_usage_error("bench", c->replay ? "--replay needs --proposer replay"
                                                  : "--proposer replay needs --replay DIR (an "
                                                    "earlier bench's -o DIR)");
    bool model = false;
    for (size_t i = 0; i < c->b.nargs; i++)
        model = model || !strcmp(c->b.args[i], "--model");
    if (!strcmp(c->b.proposer, "llm") && !model)
        return cli_usage_error("bench", "--proposer llm needs --model NAME");
    return -1;
}

/* `path` made absolute into out (it must exist). */
static int absolute(const char *what, const char *path, char *out, size_t cap)
{
    char buf[PATH_MAX];
    if (!realpath(path, buf))
        return cli_usage_error("bench", "%s %s: %s", what, path, strerror(errno));
    if (strlen(buf) >= cap)
        return cli_usage_error("bench", "%s %s: path too long", what, path);
    memcpy(out, buf, strlen(buf) + 1);
    return -1;
}

/* The bench's paths and backend: -1 to go on, else the exit status. */
static int settle(struct bench_cli *c)
{
    struct stat st;
    int status = absolute("LEVEL_DIR", c->level, c->b.level, sizeof(c->b.level));
    if (status >= 0)
        return status;
    if (stat(c->b.level, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_usage_error("bench", "LEVEL_DIR %s is not a directory of problem files",
                               c->level);
    if (c->replay &&
        (status = absolute("--replay", c->replay, c->b.replay, sizeof(c->b.replay))) >= 0)
        return status;
    if (c->workloads && (status = absolute("--workloads", c->workloads, c->b.workloads,
                                           sizeof(c->b.workloads))) >= 0)
        return status;
    char def[PATH_MAX];
    const char *base = strrchr(c->b.level, '/');
    snprintf(def, sizeof(def), "results/bench-%s", base ? base + 1 : c->b.level);
    const char *out = c->out ? c->out : def;
    struct kiln_err err = KILN_ERR_INIT;
    if (fs_mkdirs(out, &err) != KILN_OK) {
        cli_report("bench", &err);
        return KILN_EXIT_USAGE;
    }
    if ((status = absolute("-o", out, c->b.out, sizeof(c->b.out))) >= 0)
        return status;
    if (c->backend) {
        snprintf(c->b.backend, sizeof(c->b.backend), "%s", c->backend);
    } else {
        struct gpuinfo g[GPUINFO_MAX];
        size_t ng = 0;
        bool gpu = gpuinfo_list("/proc", g, &ng, &err) == KILN_OK && ng > 0;
        snprintf(c->b.backend, sizeof(c->b.backend), "%s", gpu ? "cuda" : "cpu");
    }
    return -1;
}

int cmd_bench(int argc, char **argv)
{
    struct bench_cli c;
    memset(&c, 0, sizeof(c));
    c.ro.archive = true;
    c.warmups = -1; /* not given */
    int status = parse_args(argc, argv, &c);
    if (status < 0)
        status = settle(&c);
    if (status >= 0)
        return status;
    c.ro.quiet = c.output == CLI_OUT_QUIET;
    c.ro.stop = &stop_flag;
    cli_catch_stop(&stop_flag, "kiln bench: stopping after the current step (the same command "
                               "continues); Ctrl-C again to end at once");
    struct kiln_err err = KILN_ERR_INIT;
    if (c.baseline_only) {
        enum kiln_rc rc = bench_eager(&c.b, (int)c.gpu,
                                      c.warmups < 0    ? 0 /* the default */
                                      : c.warmups == 0 ? EVAL_NO_WARMUPS
                                                       : (int)c.warmups,
                                      (int)c.iterations, c.timeout_s ? c.timeout_s : 480,
                                      c.output == CLI_OUT_JSON, &err);
        if (rc != KILN_OK)
            cli_report("bench", &err);
        bench_free(&c.b);
        return rc == KILN_OK ? KILN_EXIT_OK : cli_exit_status(rc);
    }
    bool complete = false;
    enum kiln_rc rc = bench_open(&c.b, &err);
    if (rc == KILN_OK)
        rc = bench_run(&c.b, &c.ro, &complete, &err);
    if (rc == KILN_OK || rc == KILN_E_CANCELLED) {
        if (c.output == CLI_OUT_TEXT || c.output == CLI_OUT_JSON)
            bench_print(&c.b, c.output == CLI_OUT_JSON, complete);
    }
    if (rc != KILN_OK)
        cli_report("bench", &err);
    bench_free(&c.b);
    return rc == KILN_OK ? KILN_EXIT_OK : cli_exit_status(rc);
}
