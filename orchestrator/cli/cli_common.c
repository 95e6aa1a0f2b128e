/* cli_common.c - see cli_common.h. */
#include "cli_common.h"
#include "gpuarch.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "evaluate.h"
#include "gpuinfo.h"
#include "interrupt.h"

/* A usage error, its message in `err` for the command to print. */
#define USAGE(...) kiln_fail(err, KILN_E_USAGE, __VA_ARGS__)

/* Says whether the parser took the option (`taken` may be NULL). */
static void set_taken(bool *taken, bool value)
{
    if (taken)
        *taken = value;
}

enum kiln_rc cli_output_option(int opt, enum cli_output *out, bool *taken, struct kiln_err *err)
{
    static const char *const names[] = {"", "--json", "--csv", "--markdown", "--quiet"};
    enum cli_output want;
    switch (opt) {
    case CLI_OPT_JSON:
        want = CLI_OUT_JSON;
        break;
    case CLI_OPT_CSV:
        want = CLI_OUT_CSV;
        break;
    case CLI_OPT_MARKDOWN:
        want = CLI_OUT_MARKDOWN;
        break;
    case CLI_OPT_QUIET:
        want = CLI_OUT_QUIET;
        break;
    default:
        set_taken(taken, false);
        return KILN_OK;
    }
    set_taken(taken, true);
    if (*out != CLI_OUT_TEXT && *out != want)
        return USAGE("%s and %s exclude each other: choose one output format", names[*out],
                     names[want]);
    *out = want;
    return KILN_OK;
}

/* --gpu, --seed, --timeout and --slurm-array-limit: whole numbers in
 * their bounds. */
static enum kiln_rc number_option(int opt, const char *arg, struct cli_common *o,
                                  struct kiln_err *err)
{
    long v;
    switch (opt) {
    case CLI_OPT_GPU:
        if (cli_parse_long(arg, 0, GPUINFO_MAX - 1, &v))
            return USAGE("--gpu needs a GPU index 0..%d, got '%s'", GPUINFO_MAX - 1, arg);
        o->gpu = (int)v;
        break;
    case CLI_OPT_SEED:
        if (cli_parse_long(arg, 0, 1L << 52, &v))
            return USAGE("--seed needs a number 0..2^52, got '%s'", arg);
        o->seed = (uint64_t)v;
        o->seed_set = true;
        break;
    case CLI_OPT_TIMEOUT:
        if (cli_parse_long(arg, 1, 86400, &v))
            return USAGE("--timeout needs 1..86400 seconds, got '%s'", arg);
        o->timeout_s = v;
        break;
    case CLI_OPT_SLURM_ARRAY_LIMIT:
        if (cli_parse_long(arg, 1, 10000, &v))
            return USAGE("--slurm-array-limit needs 1..10000 tasks at once, got '%s'", arg);
        o->slurm.array_limit = (unsigned)v;
        break;
    }
    return KILN_OK;
}

/* --arch: an architecture the toolkit compiles for (gpuarch.h). */
static enum kiln_rc arch_option(const char *arg, struct cli_common *o, struct kiln_err *err)
{
    int cc;
    struct kiln_err e = KILN_ERR_INIT;
    if (gpuarch_check(arg, "--arch", &cc, &e) != KILN_OK)
        return USAGE("%s", e.msg);
    o->arch = arg;
    return KILN_OK;
}

/* --until-rse: "off", or a relative standard error in (0, 50%] given as a
 * fraction (0.005) or a percentage (0.5%). */
static enum kiln_rc until_rse_option(const char *arg, struct cli_common *o, struct kiln_err *err)
{
    o->timing_set = true;
    if (!strcmp(arg, "off")) {
        o->adaptive = false;
        return KILN_OK;
    }
    char *end;
    double r = strtod(arg, &end);
    if (end != arg && !strcmp(end, "%"))
        r /= 100;
    else if (end == arg || *end)
        r = -1;
    if (!(r > 0 && r <= 0.5))
        return USAGE("--until-rse needs a relative standard error in (0, 50%%] such as 0.5%% "
                     "or 0.005, or off, got '%s'",
                     arg);
    o->adaptive = true;
    o->target_rse = r;
    return KILN_OK;
}

/* --time-budget: seconds in (0, 3600]. */
static enum kiln_rc time_budget_option(const char *arg, struct cli_common *o, struct kiln_err *err)
{
    char *end;
    double s = strtod(arg, &end);
    if (end == arg || *end || !(s > 0 && s <= 3600))
        return USAGE("--time-budget needs seconds in (0, 3600], got '%s'", arg);
    o->budget_ms = s * 1000;
    return KILN_OK;
}

/* --executor and the Slurm options that go with it (strings, checked by
 * cli_common_check and the Slurm runner). */
static enum kiln_rc executor_option(int opt, const char *arg, struct cli_common *o,
                                    struct kiln_err *err)
{
    switch (opt) {
    case CLI_OPT_EXECUTOR:
        if (!strcmp(arg, "local"))
            o->executor = CLI_EXEC_LOCAL;
        else if (!strcmp(arg, "slurm"))
            o->executor = CLI_EXEC_SLURM;
        else
            return USAGE("unknown executor '%s' (local or slurm)", arg);
        break;
    case CLI_OPT_SPOOL:
        o->slurm.spool = arg;
        break;
    case CLI_OPT_PARTITION:
        o->slurm.partition = arg;
        break;
    case CLI_OPT_ACCOUNT:
        o->slurm.account = arg;
        break;
    case CLI_OPT_SLURM_KILN:
        o->slurm.node_kiln = arg;
        break;
    case CLI_OPT_SLURM_GRES:
        o->slurm.gres = arg;
        break;
    }
    return KILN_OK;
}

enum kiln_rc cli_common_option(int opt, const char *arg, struct cli_common *o, bool *taken,
                               struct kiln_err *err)
{
    set_taken(taken, true);
    switch (opt) {
    case CLI_OPT_GPU:
    case CLI_OPT_SEED:
    case CLI_OPT_TIMEOUT:
    case CLI_OPT_SLURM_ARRAY_LIMIT:
        return number_option(opt, arg, o, err);
    case CLI_OPT_INPUT_CASES:
        o->input_cases = arg;
        return KILN_OK;
    case CLI_OPT_ARCH:
        return arch_option(arg, o, err);
    case CLI_OPT_UNTIL_RSE:
        return until_rse_option(arg, o, err);
    case CLI_OPT_TIME_BUDGET:
        return time_budget_option(arg, o, err);
    case CLI_OPT_EXECUTOR:
    case CLI_OPT_SPOOL:
    case CLI_OPT_PARTITION:
    case CLI_OPT_ACCOUNT:
    case CLI_OPT_SLURM_KILN:
    case CLI_OPT_SLURM_GRES:
        return executor_option(opt, arg, o, err);
    }
    set_taken(taken, false);
    return KILN_OK;
}

enum kiln_rc cli_common_check(const struct cli_common *o, struct kiln_err *err)
{
    bool slurm_opts = o->slurm.spool || o->slurm.partition || o->slurm.account ||
                      o->slurm.node_kiln || o->slurm.gres || o->slurm.array_limit;
    if (o->executor == CLI_EXEC_LOCAL && slurm_opts)
        return USAGE("--spool, --partition, --account and --slurm-* need "
                     "--executor slurm");
    if (o->executor == CLI_EXEC_SLURM && !o->slurm.spool)
        return USAGE("--executor slurm needs --spool DIR (a directory the "
                     "compute nodes share with this host)");
    if (o->budget_ms > 0 && !o->adaptive)
        return USAGE("--time-budget bounds adaptive timing: give --until-rse R with it");
    return KILN_OK;
}

/* Signal handlers reach only static storage: the flag and notice of the
 * one handler this process installed (cli_catch_stop). */
static volatile sig_atomic_t *stop_flag;
static const char *stop_notice;
static size_t stop_notice_len;

/* The process that installed the handler: its fork()ed children (compile
 * workers, sandbox supervisors) inherit the handler, and a Ctrl-C reaches
 * the whole process group, but the notice is said once, by kiln itself. */
static pid_t stop_owner;

static void on_stop(int sig)
{
    if (stop_flag)
        *stop_flag = sig;
    interrupt_raise(); /* every sandbox of kiln's process tree stops (interrupt.h) */
    /* A second signal takes the default action: the user insists. */
    signal(sig, SIG_DFL);
    if (stop_notice_len && getpid() == stop_owner) {
        ssize_t n = write(STDERR_FILENO, stop_notice, stop_notice_len);
        (void)n;
    }
}

void cli_catch_stop(volatile sig_atomic_t *flag, const char *notice)
{
    stop_flag = flag;
    stop_owner = getpid();
    struct kiln_err e = KILN_ERR_INIT;
    if (interrupt_init(&e) != KILN_OK) /* then a stop waits for the step in progress */
        fprintf(stderr, "kiln: warning: %s\n", e.msg);
    stop_notice = notice ? notice : "\nkiln: stopping (press Ctrl-C again to stop at once)\n";
    stop_notice_len = strlen(stop_notice);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction was;
        if (sigaction(sigs[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

enum kiln_rc cli_common_executor(const struct cli_common *o, const char *job_name,
                                 struct slurm_runner *slurm, volatile sig_atomic_t *cancel,
                                 const struct sbexec_runner **runner, struct kiln_err *err)
{
    *runner = NULL;
    if (o->executor == CLI_EXEC_LOCAL)
        return KILN_OK;
    struct slurm_config cfg = o->slurm;
    cfg.job_name = job_name;
    cfg.cancel = cancel;
    enum kiln_rc rc = slurm_runner_init(slurm, &cfg, err);
    if (rc != KILN_OK)
        return rc;
    /* The CLI is the process: the handler and its flag belong to it. */
    cli_catch_stop(cancel, "\nkiln: stopping: cancelling the Slurm jobs (press Ctrl-C again to "
                           "stop at once)\n");
    *runner = &slurm->runner;
    return KILN_OK;
}

enum kiln_rc cli_run_count(int opt, const char *arg, int *warmups, int *iterations,
                           struct kiln_err *err)
{
    long v;
    if (cli_parse_long(arg, opt == 'W' ? 0 : 1, 100000, &v))
        return kiln_fail(err, KILN_E_USAGE, "--%s needs a number, got '%s'",
                         opt == 'W' ? "warmups" : "iterations", arg);
    if (opt == 'W')
        *warmups = v == 0 ? EVAL_NO_WARMUPS : (int)v;
    else
        *iterations = (int)v;
    return KILN_OK;
}
