/* cmd_sandbox.c - `kiln sandbox`: run any command in a kiln sandbox. */
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "hostvars.h"
#include "sandbox.h"
#include "text.h"

const char cmd_sandbox_summary[] =
    "run a command in a kiln sandbox (namespaces, seccomp policy, limits)";

const char cmd_sandbox_help[] =
    "usage: kiln sandbox --policy P [options] -- CMD ARGS...\n"
    "\n"
    "Runs CMD the way kiln runs untrusted code: new user, mount, PID, net, IPC,\n"
    "UTS and cgroup namespaces, a read-only image of host paths (images/), a\n"
    "seccomp policy (policies/), no capabilities, limits. Prints the program's\n"
    "captured stdout/stderr, then one verdict line on stderr: exit status,\n"
    "signal, refused syscall, limit hit, time.\n"
    "\n"
    "Exit status: the program's; 124 timeout; 159 refused syscall; 128+N killed\n"
    "by signal N; 2 the sandbox could not be built (the message says which step).\n"
    "\n"
    "options:\n"
    "  -p, --policy P       compile, script, gpu-run or profile (policies/P.json)\n"
    "  --image I            images/I.json (default: same name as the policy)\n"
    "  --gpu N              grant GPU N (gpu-run, profile): /dev/nvidiaN's node only\n"
    "  --in HOST[:NAME]     place a file or directory read-only at /in/NAME\n"
    "  --out FILE.tar       write /out as a tar stream (regular files only)\n"
    "  --timeout S          wall clock in seconds (kills everything)\n"
    "  --memory MB, --pids N, --cpu S, --fsize MB, --nofile N,\n"
    "  --tmp-size MB, --out-size MB, --tar-size MB, --output-cap KB\n"
    "                       override the policy's limits\n"
    "  --env NAME=VALUE     add to the image's environment (nothing is inherited)\n"
    "  --cwd DIR            working directory inside\n"
    "\n"
    "No --json or --quiet: stdout and stderr are the program's, unchanged.\n"
    "\n"
    "example:\n"
    "  kiln sandbox --policy script --out o.tar -- python3 -c \"import numpy\"\n";

#define MAX_INPUTS 64
#define MAX_ENV    64

/* Seconds with an optional fraction ("2", "0.5") to milliseconds. */
static int parse_seconds(const char *s, long long *ms)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !(v > 0) || v > 86400.0 * 30)
        return -1;
    *ms = (long long)(v * 1000.0 + 0.5);
    return *ms > 0 ? 0 : -1;
}

static int parse_in(char *arg, struct sandbox_input *in)
{
    char *colon = strrchr(arg, ':');
    in->host_path = arg;
    if (colon) {
        *colon = '\0';
        in->name = colon + 1;
    } else {
        const char *slash = strrchr(arg, '/');
        in->name = slash ? slash + 1 : arg;
    }
    return *in->host_path && *in->name ? 0 : -1;
}

static int exit_status_of(const struct sandbox_result *r)
{
    switch (r->verdict) {
    case SANDBOX_EXITED:
        return r->exit_code;
    case SANDBOX_TIMEOUT:
        return KILN_EXIT_TIMEOUT;
    case SANDBOX_REFUSED:
        return KILN_EXIT_SIGNAL_BASE + SIGSYS; /* as if killed by SIGSYS */
    case SANDBOX_SIGNALED:
    case SANDBOX_LIMIT:
        return r->signal ? KILN_EXIT_SIGNAL_BASE + r->signal
                         : (r->exit_code ? r->exit_code : KILN_EXIT_FAIL);
    }
    return KILN_EXIT_FAIL;
}

enum {
    O_IMAGE = 1000,
    O_GPU,
    O_IN,
    O_OUT,
    O_TIMEOUT,
    O_MEM,
    O_PIDS,
    O_CPU,
    O_FSIZE,
    O_NOFILE,
    O_TMP,
    O_OUTSZ,
    O_OUTPUT,
    O_ENV,
    O_CWD,
    O_TAR
};

static const struct option sandbox_opts[] = {CLI_HELP_OPTION,
                                             {"policy", required_argument, NULL, 'p'},
                                             {"image", required_argument, NULL, O_IMAGE},
                                             {"gpu", required_argument, NULL, O_GPU},
                                             {"in", required_argument, NULL, O_IN},
                                             {"out", required_argument, NULL, O_OUT},
                                             {"timeout", required_argument, NULL, O_TIMEOUT},
                                             {"memory", required_argument, NULL, O_MEM},
                                             {"pids", required_argument, NULL, O_PIDS},
                                             {"cpu", required_argument, NULL, O_CPU},
                                             {"fsize", required_argument, NULL, O_FSIZE},
                                             {"nofile", required_argument, NULL, O_NOFILE},
                                             {"tmp-size", required_argument, NULL, O_TMP},
                                             {"out-size", required_argument, NULL, O_OUTSZ},
                                             {"output-cap", required_argument, NULL, O_OUTPUT},
                                             {"tar-size", required_argument, NULL, O_TAR},
                                             {"env", required_argument, NULL, O_ENV},
                                             {"cwd", required_argument, NULL, O_CWD},
                                             {0, 0, 0, 0}};

/* What the command line asks for; spec points into inputs and env. */
struct sandbox_args {
    struct sandbox_spec spec;
    struct sandbox_input inputs[MAX_INPUTS];
    char *env[MAX_ENV + 1];
    size_t n_env;
    const char *out_path;
    int gpu;
};

/* The limit a numeric option overrides, and whether it is given in MiB;
 * NULL for any other option. */
static long long *limit_of(struct sandbox_limits *l, int opt, bool *in_mib)
{
    *in_mib = true;
    switch (opt) {
    case O_MEM:
        return &l->memory_bytes;
    case O_FSIZE:
        return &l->fsize_bytes;
    case O_TMP:
        return &l->tmp_bytes;
    case O_OUTSZ:
        return &l->out_bytes;
    case O_TAR:
        return &l->tar_bytes;
    }
    *in_mib = false;
    switch (opt) {
    case O_PIDS:
        return &l->pids;
    case O_CPU:
        return &l->cpu_s;
    case O_NOFILE:
        return &l->nofile;
    }
    return NULL;
}

/* One option from cli_getopt; 0, or the exit status of a usage error. */
static int take_option(struct sandbox_args *a, int opt, char **argv)
{
    struct sandbox_spec *spec = &a->spec;
    long v;
    bool in_mib;
    long long *lim = limit_of(&spec->limits, opt, &in_mib);
    if (lim) {
        if (cli_parse_long(optarg, 1, 1L << 40, &v))
            return cli_usage_error("sandbox", "%s wants a positive number, got '%s'",
                                   argv[optind - 2], optarg);
        *lim = in_mib ? (long long)v << 20 : (long long)v;
        return 0;
    }
    switch (opt) {
    case 'p':
        spec->policy = optarg;
        return 0;
    case O_IMAGE:
        spec->image = optarg;
        return 0;
    case O_GPU:
        if (cli_parse_long(optarg, 0, 63, &v))
            return cli_usage_error("sandbox", "--gpu wants a GPU index, got '%s'", optarg);
        a->gpu = (int)v;
        return 0;
    case O_IN:
        if (spec->n_inputs == MAX_INPUTS)
            return cli_usage_error("sandbox", "at most %d --in", MAX_INPUTS);
        if (parse_in(optarg, &a->inputs[spec->n_inputs]))
            return cli_usage_error("sandbox", "--in wants HOSTPATH[:NAME], got '%s'", optarg);
        spec->n_inputs++;
        return 0;
    case O_OUT:
        a->out_path = optarg;
        return 0;
    case O_TIMEOUT:
        if (parse_seconds(optarg, &spec->limits.timeout_ms))
            return cli_usage_error("sandbox", "--timeout wants seconds > 0, got '%s'", optarg);
        return 0;
    case O_OUTPUT:
        if (cli_parse_long(optarg, 1, 1L << 30, &v))
            return cli_usage_error("sandbox", "--output-cap wants KiB, got '%s'", optarg);
        spec->limits.output_bytes = (long long)v * 1024;
        return 0;
    case O_ENV:
        if (a->n_env == MAX_ENV || !strchr(optarg, '='))
            return cli_usage_error("sandbox", "--env wants NAME=VALUE (at most %d), got '%s'",
                                   MAX_ENV, optarg);
        a->env[a->n_env++] = optarg;
        return 0;
    case O_CWD:
        spec->cwd = optarg;
        return 0;
    }
    return KILN_EXIT_USAGE;
}

/* The command line into `a`; -1 when the command is to run, else the exit
 * status (--help, a usage error). */
static int parse_args(int argc, char **argv, struct sandbox_args *a)
{
    const struct kiln_cmd *self = cli_find("sandbox");
    memset(a, 0, sizeof(*a));
    a->gpu = -1;
    a->spec.stdin_fd = -1;
    a->spec.tar_fd = -1;
    a->spec.inputs = a->inputs;
    int done = 0, c;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "p:", sandbox_opts, &done)) != -1) {
        int status = take_option(a, c, argv);
        if (status)
            return status;
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (!a->spec.policy)
        return cli_usage_error("sandbox", "--policy is required (compile, script, gpu-run)");
    if (optind >= argc)
        return cli_usage_error("sandbox", "no command given after --");
    a->env[a->n_env] = NULL;
    a->spec.env = a->env;
    a->spec.argv = &argv[optind];
    return -1;
}

/* The host's paths for the image, the GPU's nodes: the sandbox is told,
 * then runs. `res` is zeroed when it could not run. */
static enum kiln_rc run_with_hostvars(struct sandbox_args *a, struct sandbox_result *res,
                                      struct kiln_err *err)
{
    struct hostvars *hv = calloc(1, sizeof(*hv));
    enum kiln_rc rc = hv ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "out of memory");
    if (rc == KILN_OK)
        rc = hostvars_for_image(NULL, a->spec.image ? a->spec.image : a->spec.policy, hv, err);
    if (rc == KILN_OK)
        rc = hostvars_gpu(a->gpu, hv, err);
    if (rc == KILN_OK) {
        a->spec.vars = hv->vars;
        a->spec.devices = hv->devices;
        rc = sandbox_run(&a->spec, res, err);
    } else {
        memset(res, 0, sizeof(*res));
    }
    free(hv);
    return rc;
}

/* The program's output as it wrote it when piped (it may be data); escaped
 * when it reaches a terminal, which it must not drive. */
static void print_captured(const struct sandbox_result *res)
{
    if (isatty(STDOUT_FILENO))
        text_fputs_escaped(stdout, res->out.data, res->out.len);
    else
        fwrite(res->out.data, 1, res->out.len, stdout);
    fflush(stdout);
    if (isatty(STDERR_FILENO))
        text_fputs_escaped(stderr, res->err.data, res->err.len);
    else
        fwrite(res->err.data, 1, res->err.len, stderr);
}

/* On stderr: the files left out of /out, then the verdict line. */
static void print_verdict(const struct sandbox_result *res)
{
    for (const char *s = res->skipped; s && *s;) {
        const char *nl = strchr(s, '\n');
        fprintf(stderr, "kiln sandbox: left out of /out: ");
        text_fputs_escaped(stderr, s, nl ? (size_t)(nl - s) : strlen(s));
        fputc('\n', stderr);
        s = nl ? nl + 1 : s + strlen(s);
    }
    char line[512];
    sandbox_verdict_line(res, line, sizeof(line));
    fprintf(stderr, "kiln sandbox: %s [policy %s; memory: %s; stdout %llu B%s; tar %llu B%s]\n",
            line, res->policy, res->memory_cap, res->out.total, res->out.dropped ? ", capped" : "",
            res->tar_bytes, res->tar_truncated ? ", truncated" : "");
}

int cmd_sandbox(int argc, char **argv)
{
    struct sandbox_args a;
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    int tar_fd = -1;
    if (a.out_path) {
        tar_fd = open(a.out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (tar_fd < 0) {
            perror(a.out_path);
            return KILN_EXIT_USAGE;
        }
    }
    a.spec.tar_fd = tar_fd;
    struct sandbox_result res;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = run_with_hostvars(&a, &res, &err);
    if (tar_fd >= 0 && close(tar_fd) < 0 && rc == KILN_OK) {
        perror(a.out_path);
        sandbox_result_free(&res);
        return KILN_EXIT_USAGE;
    }
    if (rc != KILN_OK) {
        fprintf(stderr, "kiln: %s\n", err.msg);
        return KILN_EXIT_USAGE;
    }
    print_captured(&res);
    print_verdict(&res);
    status = exit_status_of(&res);
    sandbox_result_free(&res);
    return status;
}
