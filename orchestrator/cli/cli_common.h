/*
 * cli_common.h - the options several commands share, parsed in one place so
 * they mean the same thing and have the same bounds everywhere:
 *   --gpu N          0..GPUINFO_MAX-1
 *   --seed N         0..2^52
 *   --timeout S      1..86400 seconds (each harness or script run)
 *   --input-cases P  a path (given.h checks it)
 *   --arch sm_XX     the GPU architecture candidates are compiled for (one the
 *                    toolkit supports: base/gpuarch.h); default the GPU's own
 *   --executor E     local (default) or slurm, with --spool DIR, --partition P,
 *                    --account A, --slurm-kiln PATH, --slurm-gres G
 *   --until-rse R    time each case until the relative standard error of its
 *                    mean is under R ("0.5%" or 0.005; "off": a fixed count)
 *   --time-budget S  with --until-rse: at most S seconds of timed runs a case
 * A command lists CLI_COMMON_OPTIONS in its getopt table (those it takes:
 * the letters below are reserved for them) and hands each option it does
 * not know itself to cli_common_option().
 *
 * The parsers print nothing: a bad value is KILN_E_USAGE with the message
 * in `err`, which the command prints with cli_usage_report() (one line,
 * exit status 2, as every usage error).
 */
#ifndef KILN_CLI_COMMON_H
#define KILN_CLI_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "slurm.h"

enum cli_executor { CLI_EXEC_LOCAL = 0, CLI_EXEC_SLURM = 1 };

struct cli_common {
    int gpu;
    bool seed_set;
    uint64_t seed;
    long timeout_s; /* 0: the policy's default */
    const char *input_cases;
    const char *arch; /* --arch; NULL: the GPU's own (checked by the parser) */
    enum cli_executor executor;
    struct slurm_config slurm; /* spool, partition, account, node_kiln, gres */
    /* --until-rse / --time-budget: timing_set when either was given;
     * adaptive false with timing_set: "--until-rse off". */
    bool timing_set, adaptive;
    double target_rse, budget_ms; /* 0: EVAL_DEFAULT_* */
};

/* getopt_long values of the shared options (outside the ASCII range that
 * the commands' own single-letter values use). */
enum {
    CLI_OPT_GPU = 0x1000,
    CLI_OPT_SEED,
    CLI_OPT_TIMEOUT,
    CLI_OPT_INPUT_CASES,
    CLI_OPT_EXECUTOR,
    CLI_OPT_SPOOL,
    CLI_OPT_PARTITION,
    CLI_OPT_ACCOUNT,
    CLI_OPT_SLURM_KILN,
    CLI_OPT_SLURM_GRES,
    CLI_OPT_JSON,
    CLI_OPT_CSV,
    CLI_OPT_MARKDOWN,
    CLI_OPT_QUIET,
    CLI_OPT_SLURM_ARRAY_LIMIT,
    CLI_OPT_UNTIL_RSE,
    CLI_OPT_TIME_BUDGET,
    CLI_OPT_ARCH,
};

/* What a command prints: its text (default), or one of the formats below;
 * they exclude each other (naming two is a usage error). --quiet prints
 * nothing on stdout: the exit status (and files asked for) say it all. */
enum cli_output { CLI_OUT_TEXT = 0, CLI_OUT_JSON, CLI_OUT_CSV, CLI_OUT_MARKDOWN, CLI_OUT_QUIET };

/* The output options, for the getopt tables of the commands that take them. */
#define CLI_OPTS_JSON                                                                              \
    {                                                                                              \
        "json", no_argument, NULL, CLI_OPT_JSON                                                    \
    }
#define CLI_OPTS_CSV                                                                               \
    {                                                                                              \
        "csv", no_argument, NULL, CLI_OPT_CSV                                                      \
    }
#define CLI_OPTS_MARKDOWN                                                                          \
    {                                                                                              \
        "markdown", no_argument, NULL, CLI_OPT_MARKDOWN                                            \
    }
#define CLI_OPTS_QUIET                                                                             \
    {                                                                                              \
        "quiet", no_argument, NULL, CLI_OPT_QUIET                                                  \
    }

/* When `opt` is an output option, stores it in *out and sets *taken (NULL:
 * the caller's table lists no other option that reaches this call);
 * KILN_E_USAGE when a different format was already chosen. */
enum kiln_rc cli_output_option(int opt, enum cli_output *out, bool *taken,
                               struct kiln_err *err) KILN_NODISCARD;

#define CLI_OPTS_GPU                                                                               \
    {                                                                                              \
        "gpu", required_argument, NULL, CLI_OPT_GPU                                                \
    }
#define CLI_OPTS_SEED                                                                              \
    {                                                                                              \
        "seed", required_argument, NULL, CLI_OPT_SEED                                              \
    }
#define CLI_OPTS_TIMEOUT                                                                           \
    {                                                                                              \
        "timeout", required_argument, NULL, CLI_OPT_TIMEOUT                                        \
    }
#define CLI_OPTS_INPUTS                                                                            \
    {                                                                                              \
        "input-cases", required_argument, NULL, CLI_OPT_INPUT_CASES                                \
    }
#define CLI_OPTS_EXECUTOR                                                                          \
    {"executor", required_argument, NULL, CLI_OPT_EXECUTOR},                                       \
        {"spool", required_argument, NULL, CLI_OPT_SPOOL},                                         \
        {"partition", required_argument, NULL, CLI_OPT_PARTITION},                                 \
        {"account", required_argument, NULL, CLI_OPT_ACCOUNT},                                     \
        {"slurm-kiln", required_argument, NULL, CLI_OPT_SLURM_KILN},                               \
        {"slurm-gres", required_argument, NULL, CLI_OPT_SLURM_GRES},                               \
    {                                                                                              \
        "slurm-array-limit", required_argument, NULL, CLI_OPT_SLURM_ARRAY_LIMIT                    \
    }

#define CLI_OPTS_ARCH                                                                              \
    {                                                                                              \
        "arch", required_argument, NULL, CLI_OPT_ARCH                                              \
    }

/* The help line of --arch. */
#define CLI_ARCH_HELP                                                                              \
    "  --arch sm_XX       compile candidates for this GPU architecture (default:\n"                \
    "                     the GPU's own, or sm_90 where none can be asked, as\n"                   \
    "                     under --executor slurm; kiln doctor lists the others)\n"

#define CLI_OPTS_TIMING                                                                            \
    {"until-rse", required_argument, NULL, CLI_OPT_UNTIL_RSE},                                     \
    {                                                                                              \
        "time-budget", required_argument, NULL, CLI_OPT_TIME_BUDGET                                \
    }

/* The help lines of the timing options. */
#define CLI_TIMING_HELP                                                                            \
    "  --until-rse R      time each case until the relative standard error of its\n"               \
    "                     mean is under R (0.5% or 0.005; at least --iterations\n"                 \
    "                     runs, at most 10 times as many); off: a fixed count\n"                   \
    "  --time-budget S    with --until-rse: stop a case after S seconds of timed\n"                \
    "                     runs even if R is not reached (default 2)\n"

/* The help lines of the executor options, for a command's --help. */
#define CLI_EXECUTOR_HELP                                                                          \
    "  --executor E       where harness runs go: local (default) or slurm: each\n"                 \
    "                     becomes a Slurm job running the node's kiln (same\n"                     \
    "                     sandbox); needs --spool DIR on a file system the nodes\n"                \
    "                     share; --partition P, --account A, --slurm-kiln PATH\n"                  \
    "                     (kiln on the nodes, default this one), --slurm-gres G\n"                 \
    "                     (default gpu:1 for GPU runs), --slurm-array-limit N\n"                   \
    "                     (kiln optimize: the window's runs go out as one job\n"                   \
    "                     array, at most N running at once; default 8)\n"

/*
 * kiln's one SIGINT/SIGTERM handler. The first signal stores its number in
 * *flag, which the job polls (kiln optimize stops and leaves a record kiln
 * resume continues, every finished candidate in it; the command exits
 * 128 + the signal, 130 for Ctrl-C), raises the stop that every sandbox of
 * kiln's process tree watches (interrupt.h: the program in progress is
 * killed and its sandbox removed at once, in kiln and in the input and
 * compile workers it forked, whether the signal reached the process group
 * or kiln alone), and writes `notice` (NULL: a generic line) on stderr; a
 * second signal takes the default action: the user insists. Sandboxes run
 * in their own session. A signal ignored when kiln started (nohup) stays
 * ignored. The last call wins: one flag and notice per process.
 */
void cli_catch_stop(volatile sig_atomic_t *flag, const char *notice);

/* When `opt` is one of the shared options, stores its value `arg` in `o`
 * and sets *taken (NULL as above); KILN_E_USAGE when the value is out of
 * bounds. */
enum kiln_rc cli_common_option(int opt, const char *arg, struct cli_common *o, bool *taken,
                               struct kiln_err *err) KILN_NODISCARD;

/* --warmups N or --iterations N of kiln eval and kiln optimize (opt 'W'
 * or 'i'): warmups 0..100000, stored as EVAL_NO_WARMUPS for 0 (0 in a
 * session means "the default"), iterations 1..100000; KILN_E_USAGE naming
 * the option otherwise. */
enum kiln_rc cli_run_count(int opt, const char *arg, int *warmups, int *iterations,
                           struct kiln_err *err) KILN_NODISCARD;

/* After parsing: checks combinations (--spool without slurm, slurm without
 * --spool, --time-budget without --until-rse); KILN_E_USAGE when they
 * disagree. */
enum kiln_rc cli_common_check(const struct cli_common *o, struct kiln_err *err) KILN_NODISCARD;

/*
 * Starts the executor `o` asks for: NULL in *runner for local, else a Slurm
 * runner in `slurm` (which must outlive its use) whose jobs are cancelled
 * when SIGINT or SIGTERM arrives (cli_catch_stop with `cancel`; the
 * pipeline polls it).
 */
enum kiln_rc cli_common_executor(const struct cli_common *o, const char *job_name,
                                 struct slurm_runner *slurm, volatile sig_atomic_t *cancel,
                                 const struct sbexec_runner **runner,
                                 struct kiln_err *err) KILN_NODISCARD;

#endif
