/* cmd_optimize.c - `kiln optimize` and `kiln resume`. */
#include <curl/curl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "docs_prompt.h"
#include "evaluate.h"
#include "session.h"
#include "gpuinfo.h"
#include "optimize.h"
#include "wlgen.h"

/* The signal that asked kiln to stop (SIGINT, SIGTERM), 0 while none.
 * Signal handlers can only reach static storage: this is main's, and the
 * optimizer only reads it through opt_options.stop. */
static volatile sig_atomic_t stop_signal;

/* What the first Ctrl-C prints (cli_catch_stop). */
static const char stop_notice[] =
    "\nkiln: stopping: the step in progress ends now and is not recorded, every finished "
    "candidate is kept; press Ctrl-C again to stop at once\n";

/* Exit status 128 + the signal (130 for SIGINT), as the shell reports it. */
static int interrupted_exit(const char *cmd, struct kiln_err *err)
{
    cli_report(cmd, err);
    return 128 + (stop_signal ? (int)stop_signal : SIGINT);
}

/* An option that takes a count: a usage error unless it is in range. */
static int parse_count_option(int c, struct opt_options *o)
{
    long v;
    switch (c) {
    case 'G':
        if (cli_parse_long(optarg, 1, WLGEN_MAX_ATTEMPTS, &v))
            return cli_usage_error("optimize", "--gen-attempts needs 1..%d, got '%s'",
                                   WLGEN_MAX_ATTEMPTS, optarg);
        o->gen_attempts = (int)v;
        break;
    case 'n':
        if (cli_parse_long(optarg, 1, 1000, &v))
            return cli_usage_error("optimize", "--max-iterations needs 1..1000, got '%s'", optarg);
        o->max_iterations = (int)v;
        break;
    case 'j':
        if (cli_parse_long(optarg, 1, 64, &v))
            return cli_usage_error("optimize", "--jobs needs 1..64, got '%s'", optarg);
        o->jobs = (int)v;
        break;
    case 'W':
    case 'i': {
        struct kiln_err e = KILN_ERR_INIT;
        if (cli_run_count(c, optarg, &o->warmups, &o->iterations, &e) != KILN_OK)
            return cli_usage_report("optimize", &e);
        break;
    }
    case 'K':
        if (cli_parse_long(optarg, 1, DOCS_K_MAX, &v))
            return cli_usage_error("optimize", "--docs needs 1..%d passages, got '%s'", DOCS_K_MAX,
                                   optarg);
        o->docs = (int)v;
        break;
    }
    return -1;
}

/* One option into `o`, `common` or `description`: -1 when taken, else the
 * exit status of a usage error. */
static int parse_option(int c, struct opt_options *o, struct cli_common *common,
                        const char **description)
{
    switch (c) {
    case 'd':
        *description = optarg;
        break;
    case 'G':
    case 'n':
    case 'j':
    case 'i':
    case 'W':
    case 'K':
        return parse_count_option(c, o);
    case 'p':
        if (strcmp(optarg, "tune") && strcmp(optarg, "llm") && strcmp(optarg, "replay"))
            return cli_usage_error("optimize", "unknown proposer '%s' (tune, llm, replay)", optarg);
        o->proposer = optarg;
        break;
    case 'm':
        o->model = optarg;
        break;
    case 'u':
        o->base_url = optarg;
        break;
    case 'r':
        o->replay_dir = optarg;
        break;
    case 'R':
        o->reference = optarg;
        break;
    case 'k':
        o->initial_kernel = optarg;
        break;
    case 'b':
        if (!(o->backend = kiln_backend_from_name(optarg)))
            return cli_usage_error("optimize", "unknown backend '%s' (cuda or cpu)", optarg);
        break;
    case 'o':
        o->results_dir = optarg;
        break;
    case 'C':
        if (!compile_tool_from_name(optarg, &o->compiler))
            return cli_usage_error("optimize", "unknown compiler '%s' (nvcc or nvrtc)", optarg);
        break;
    case 'e':
        o->dotenv = optarg;
        break;
    case 'P':
        o->profile = true;
        break;
    case 'I':
        o->keep_inputs = true;
        break;
    case 'D':
        o->docs_dir = optarg;
        break;
    case 'T':
        o->tuner_run = optarg;
        break;
    case 'q':
        o->quiet = true;
        break;
    case 'J':
        o->json = true;
        break;
    default: {
        struct kiln_err usage = KILN_ERR_INIT;
        if (cli_common_option(c, optarg, common, NULL, &usage) != KILN_OK)
            return cli_usage_report("optimize", &usage);
        break;
    }
    }
    return -1;
}

/* The options that only make sense together, and the one WORKLOAD or
 * --description: -1 when they agree, else a usage error's exit status. */
static int check_operands(int argc, char **argv, struct opt_options *o, const char *description)
{
    if (description && argc - optind != 0)
        return cli_usage_error("optimize", "give either a WORKLOAD or --description TEXT (the "
                                           "model writes the workload), not both");
    if (!description && argc - optind != 1)
        return cli_usage_error("optimize", "needs exactly one WORKLOAD (or --description TEXT)");
    if (description && !description[0])
        return cli_usage_error("optimize", "--description is empty: say what to compute");
    if (description && strlen(description) > WLGEN_DESC_MAX)
        return cli_usage_error("optimize", "--description is longer than %d bytes", WLGEN_DESC_MAX);
    if (description && !o->replay_dir && !o->model)
        return cli_usage_error("optimize", "--description needs --model NAME (the model writes "
                                           "the workload), or --replay RUN_DIR of such a run");
    o->workload = description ? NULL : argv[optind];
    o->description = description;
    if (o->proposer && !strcmp(o->proposer, "replay") && !o->replay_dir)
        return cli_usage_error("optimize", "--proposer replay needs --replay RUN_DIR");
    if (o->docs && (!o->proposer || strcmp(o->proposer, "llm")))
        return cli_usage_error("optimize", "--docs needs --proposer llm (only a model reads "
                                           "documentation)");
    if (o->docs_dir && !o->docs)
        return cli_usage_error("optimize", "--docs-dir needs --docs K (how many passages)");
    if (o->tuner_run && (!o->proposer || strcmp(o->proposer, "llm")))
        return cli_usage_error("optimize", "--tuner-run needs --proposer llm (the findings go "
                                           "into the model's prompt)");
    if (o->tuner_run && (o->initial_kernel || description))
        return cli_usage_error("optimize", "--tuner-run starts from that run's best kernel: give "
                                           "it without --initial-kernel and --description");
    if (o->proposer && !strcmp(o->proposer, "llm") && !o->model)
        return cli_usage_error("optimize", "--proposer llm needs --model NAME");
    return -1;
}

/* The command line into `o` and `common`: -1 to go on, else the exit
 * status (--help, or a usage error). */
static int parse_args(int argc, char **argv, struct opt_options *o, struct cli_common *common)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"description", required_argument, NULL, 'd'},
                                         {"gen-attempts", required_argument, NULL, 'G'},
                                         {"max-iterations", required_argument, NULL, 'n'},
                                         {"proposer", required_argument, NULL, 'p'},
                                         {"model", required_argument, NULL, 'm'},
                                         {"base-url", required_argument, NULL, 'u'},
                                         {"replay", required_argument, NULL, 'r'},
                                         CLI_OPTS_INPUTS,
                                         {"reference", required_argument, NULL, 'R'},
                                         {"initial-kernel", required_argument, NULL, 'k'},
                                         CLI_OPTS_GPU,
                                         {"backend", required_argument, NULL, 'b'},
                                         {"results", required_argument, NULL, 'o'},
                                         {"jobs", required_argument, NULL, 'j'},
                                         {"compiler", required_argument, NULL, 'C'},
                                         CLI_OPTS_SEED,
                                         CLI_OPTS_EXECUTOR,
                                         {"iterations", required_argument, NULL, 'i'},
                                         {"warmups", required_argument, NULL, 'W'},
                                         CLI_OPTS_TIMING,
                                         CLI_OPTS_ARCH,
                                         {"env-file", required_argument, NULL, 'e'},
                                         {"profile", no_argument, NULL, 'P'},
                                         {"keep-inputs", no_argument, NULL, 'I'},
                                         {"docs", required_argument, NULL, 'K'},
                                         {"docs-dir", required_argument, NULL, 'D'},
                                         {"tuner-run", required_argument, NULL, 'T'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"json", no_argument, NULL, 'J'},
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("optimize");
    const char *description = NULL;
    int done = 0, c, st;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1)
        if ((st = parse_option(c, o, common, &description)) >= 0)
            return st;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    struct kiln_err usage = KILN_ERR_INIT;
    if (cli_common_check(common, &usage) != KILN_OK)
        return cli_usage_report("optimize", &usage);
    o->gpu = common->gpu;
    o->seed = common->seed;
    o->seed_random = !common->seed_set;
    o->input_cases = common->input_cases;
    o->adaptive = common->adaptive;
    o->target_rse = common->target_rse;
    o->budget_ms = common->budget_ms;
    o->arch = common->arch;
    return check_operands(argc, argv, o, description);
}

/* Run the optimizer until it finishes or is stopped; a run that failed
 * says where it is kept and how to continue it. */
static int run_optimizer(struct opt_options *o, struct kiln_err *err)
{
    char run_dir[PATH_MAX] = "";
    curl_global_init(CURL_GLOBAL_DEFAULT);
    o->stop = &stop_signal;
    cli_catch_stop(&stop_signal, stop_notice);
    enum kiln_rc rc = optimize_run(o, run_dir, sizeof(run_dir), err);
    curl_global_cleanup();
    if (rc == KILN_E_CANCELLED)
        return interrupted_exit("optimize", err);
    if (rc != KILN_OK) {
        cli_report("optimize", err);
        if (run_dir[0])
            fprintf(stderr, "kiln: the run so far is in %s (kiln resume %s continues it)\n",
                    run_dir, run_dir);
        return cli_exit_status(rc);
    }
    return KILN_EXIT_OK;
}

/* `typed` is the command line as given: getopt permutes `argv`. */
static int optimize_command(int argc, char **argv, char **typed)
{
    struct opt_options o = {.argc = argc, .argv = typed};
    struct cli_common common = {0};
    int st = parse_args(argc, argv, &o, &common);
    if (st >= 0)
        return st;
    struct kiln_err err;
    kiln_err_clear(&err);
    struct slurm_runner slurm;
    if (cli_common_executor(&common, "kiln-optimize", &slurm, &stop_signal, &o.runner, &err) !=
        KILN_OK) {
        cli_report("optimize", &err);
        return KILN_EXIT_USAGE;
    }
    /* No --seed: fresh inputs for this run (run.json records the seed). */
    if (o.seed_random && eval_fresh_seed(&o.seed, &err) != KILN_OK) {
        cli_report("optimize", &err);
        return KILN_EXIT_FAIL;
    }
    return run_optimizer(&o, &err);
}

int cmd_optimize(int argc, char **argv)
{
    /* getopt moves the options before the operands of the vector it parses:
     * it parses a copy, so run.json (and the report) record the command
     * line as the user typed it. */
    char **parsed = malloc(((size_t)argc + 1) * sizeof(*parsed));
    if (!parsed) {
        fprintf(stderr, "kiln optimize: out of memory copying the command line\n");
        return KILN_EXIT_FAIL;
    }
    memcpy(parsed, argv, ((size_t)argc + 1) * sizeof(*parsed));
    int status = optimize_command(argc, parsed, argv);
    free(parsed);
    return status;
}

int cmd_resume(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"base-url", required_argument, NULL, 'u'},
                                         {"env-file", required_argument, NULL, 'e'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"json", no_argument, NULL, 'J'},
                                         CLI_OPTS_EXECUTOR,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("resume");
    struct opt_resume_options ro = {0};
    struct cli_common common = {0};
    struct kiln_err usage = KILN_ERR_INIT;
    int done = 0, c;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1) {
        if (c == 'q')
            ro.quiet = true;
        if (c == 'J')
            ro.json = true;
        if (c == 'u')
            ro.base_url = optarg;
        if (c == 'e')
            ro.dotenv = optarg;
        if (c >= CLI_OPT_EXECUTOR && cli_common_option(c, optarg, &common, NULL, &usage) != KILN_OK)
            return cli_usage_report("resume", &usage);
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (argc - optind != 1)
        return cli_usage_error("resume", "needs exactly one run directory");
    if (cli_common_check(&common, &usage) != KILN_OK)
        return cli_usage_report("resume", &usage);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct kiln_err err;
    kiln_err_clear(&err);
    struct slurm_runner slurm;
    if (cli_common_executor(&common, "kiln-resume", &slurm, &stop_signal, &ro.runner, &err) !=
        KILN_OK) {
        cli_report("resume", &err);
        return KILN_EXIT_USAGE;
    }
    ro.stop = &stop_signal;
    cli_catch_stop(&stop_signal, stop_notice);
    enum kiln_rc rc = optimize_resume_with(argv[optind], &ro, &err);
    curl_global_cleanup();
    if (rc == KILN_E_CANCELLED)
        return interrupted_exit("resume", &err);
    if (rc != KILN_OK) {
        cli_report("resume", &err);
        return rc == KILN_E_USAGE || rc == KILN_E_NOTFOUND ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
    }
    return KILN_EXIT_OK;
}
