/* cmd_serve.c - `kiln serve` and `kiln token`: the CLI glue over service/. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "service.h"

static int parse_gpus(const char *s, struct serve_opts *o)
{
    o->ngpus = 0;
    while (*s) {
        long v;
        char buf[16];
        size_t n = strcspn(s, ",");
        if (n == 0 || n >= sizeof(buf) || o->ngpus >= SERVE_MAX_GPUS)
            return -1;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (cli_parse_long(buf, 0, SERVE_MAX_GPUS - 1, &v))
            return -1;
        o->gpus[o->ngpus++] = (int)v;
        s += n + (s[n] == ',');
    }
    return o->ngpus ? 0 : -1;
}

/* `kiln serve`'s command line: the server's options, and the ones the
 * server gives a worker process it starts (-1: not given). */
struct serve_cli {
    struct serve_opts o;
    struct cli_common cc;
    long worker, wgpu, lockfd, ckworker;
};

/* An option that takes a number: a usage error unless it is in range. */
static int parse_serve_number(int c, struct serve_cli *s)
{
    struct serve_opts *o = &s->o;
    long v;
    switch (c) {
    case 'W':
    case 'i':
        /* 0: the harness's default (how the server passes "not set" on). */
        if (cli_parse_long(optarg, 0, 100000, &v))
            return cli_usage_error("serve", "--%s needs a number, got '%s'",
                                   c == 'W' ? "warmups" : "iterations", optarg);
        *(c == 'W' ? &o->warmups : &o->iterations) = (int)v;
        break;
    case 'm':
    case 'p':
        if (cli_parse_long(optarg, 1, 100000, &v))
            return cli_usage_error("serve", "--%s needs a number, got '%s'",
                                   c == 'm' ? "max-connections" : "per-ip", optarg);
        *(c == 'm' ? &o->max_connections : &o->per_ip_connections) = (unsigned)v;
        break;
    case 'T':
    case 'Y':
    case 's':
        if (cli_parse_long(optarg, 1, c == 's' ? 100000 : 3600, &v))
            return cli_usage_error("serve", "--%s needs a number, got '%s'",
                                   c == 'T'   ? "request-timeout"
                                   : c == 'Y' ? "write-timeout"
                                              : "max-streams",
                                   optarg);
        *(c == 'T'   ? &o->request_timeout_s
          : c == 'Y' ? &o->write_timeout_s
                     : &o->max_streams) = (unsigned)v;
        break;
    case 'R':
        /* Bytes a second: a floor, so at least 1 and far below any link. */
        if (cli_parse_long(optarg, 1, 1 << 30, &v))
            return cli_usage_error("serve", "--min-rate needs bytes a second, got '%s'", optarg);
        o->min_rate = (unsigned)v;
        break;
    case 'k':
        if (cli_parse_long(optarg, 0, SERVE_MAX_COMPILE_WORKERS, &v))
            return cli_usage_error("serve", "--compile-workers needs 0 to %d, got '%s'",
                                   SERVE_MAX_COMPILE_WORKERS, optarg);
        o->compile_workers = v ? (int)v : -1;
        break;
    case 'L':
        /* 0: the default; short leases let tests see the reaper work. */
        if (cli_parse_long(optarg, 0, 86400, &v))
            return cli_usage_error("serve", "--lease needs seconds, got '%s'", optarg);
        o->lease_s = (int)v;
        break;
    case 'n':
        /* Each is a worker process with a Slurm job in flight at a time. */
        if (cli_parse_long(optarg, 1, SERVE_MAX_GPUS, &v))
            return cli_usage_error("serve", "--slurm-workers needs 1 to %d, got '%s'",
                                   SERVE_MAX_GPUS, optarg);
        o->slurm_workers = (int)v;
        break;
    }
    return -1;
}

/* The server's own options for a worker process it starts. */
static int parse_worker_option(int c, struct serve_cli *s)
{
    long v;
    if (c == 'K') {
        if (cli_parse_long(optarg, 0, SERVE_MAX_COMPILE_WORKERS, &v))
            return cli_usage_error("serve", "bad worker option '%s'", optarg);
        s->ckworker = v;
        return -1;
    }
    if (cli_parse_long(optarg, c == 'G' ? -1 : 0, 1 << 20, &v))
        return cli_usage_error("serve", "bad worker option '%s'", optarg);
    *(c == 'X' ? &s->worker : c == 'G' ? &s->wgpu : &s->lockfd) = v;
    return -1;
}

/* One option into `s`: -1 when taken, else the exit status (--routes
 * prints the routes and stops; a usage error). */
static int parse_serve_option(int c, struct serve_cli *s)
{
    struct serve_opts *o = &s->o;
    switch (c) {
    case 'l':
        o->listen = optarg;
        break;
    case 'S':
        o->socket = optarg;
        break;
    case 'd':
        o->db = optarg;
        break;
    case 'D':
        o->data = optarg;
        break;
    case 'w':
        o->workloads = optarg;
        break;
    case 'g':
        if (parse_gpus(optarg, o))
            return cli_usage_error("serve", "--gpus needs GPU indices like 0,1, got '%s'", optarg);
        break;
    case 'W':
    case 'i':
    case 'm':
    case 'p':
    case 'T':
    case 'Y':
    case 'R':
    case 's':
    case 'k':
    case 'L':
    case 'n':
        return parse_serve_number(c, s);
    case 'P':
        o->trusted_proxy = optarg; /* checked by the server (service/conn.c) */
        break;
    case 'q':
        o->quiet = true;
        break;
    case 'N':
        o->public_names = true;
        break;
    case 'r':
        serve_print_routes();
        return KILN_EXIT_OK;
    case 'X':
    case 'G':
    case 'F':
    case 'K':
        return parse_worker_option(c, s);
    default: {
        struct kiln_err usage = KILN_ERR_INIT;
        bool taken;
        if (cli_common_option(c, optarg, &s->cc, &taken, &usage) != KILN_OK)
            return cli_usage_report("serve", &usage);
        if (!taken)
            return KILN_EXIT_USAGE;
        break;
    }
    }
    return -1;
}

/* The options that only make sense together, and the common ones passed
 * on: -1 when they agree, else a usage error's exit status. */
static int check_serve_options(struct serve_cli *s)
{
    struct serve_opts *o = &s->o;
    if (o->listen && o->socket)
        return cli_usage_error("serve", "--listen and --socket exclude each other");
    struct kiln_err usage = KILN_ERR_INIT;
    if (cli_common_check(&s->cc, &usage) != KILN_OK)
        return cli_usage_report("serve", &usage);
    if (s->cc.executor == CLI_EXEC_SLURM)
        o->slurm = &s->cc.slurm;
    /* Adaptive unless --until-rse off (the service's default: every entry
     * of a board timed to the same noise). */
    o->timing_fixed = s->cc.timing_set && !s->cc.adaptive;
    o->target_rse = s->cc.target_rse;
    o->budget_ms = s->cc.budget_ms;
    o->arch = s->cc.arch;
    if (o->slurm_workers && !o->slurm)
        return cli_usage_error("serve", "--slurm-workers needs --executor slurm");
    if (o->slurm && o->ngpus)
        return cli_usage_error("serve", "--gpus and --executor slurm exclude each other: through "
                                        "Slurm the cluster picks the GPU (--slurm-workers N)");
    return -1;
}

/* The command line into `s`: -1 to go on, else the exit status. */
static int parse_serve_args(int argc, char **argv, struct serve_cli *s)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"listen", required_argument, NULL, 'l'},
                                         {"socket", required_argument, NULL, 'S'},
                                         {"db", required_argument, NULL, 'd'},
                                         {"data", required_argument, NULL, 'D'},
                                         {"gpus", required_argument, NULL, 'g'},
                                         {"workloads", required_argument, NULL, 'w'},
                                         {"warmups", required_argument, NULL, 'W'},
                                         {"iterations", required_argument, NULL, 'i'},
                                         {"max-connections", required_argument, NULL, 'm'},
                                         {"per-ip", required_argument, NULL, 'p'},
                                         {"request-timeout", required_argument, NULL, 'T'},
                                         {"write-timeout", required_argument, NULL, 'Y'},
                                         {"min-rate", required_argument, NULL, 'R'},
                                         {"public-names", no_argument, NULL, 'N'},
                                         {"max-streams", required_argument, NULL, 's'},
                                         {"trusted-proxy", required_argument, NULL, 'P'},
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"routes", no_argument, NULL, 'r'},
                                         /* the server's own use: one worker process */
                                         {"worker", required_argument, NULL, 'X'},
                                         {"worker-gpu", required_argument, NULL, 'G'},
                                         {"worker-lock-fd", required_argument, NULL, 'F'},
                                         {"compile-worker", required_argument, NULL, 'K'},
                                         {"compile-workers", required_argument, NULL, 'k'},
                                         {"lease", required_argument, NULL, 'L'},
                                         {"slurm-workers", required_argument, NULL, 'n'},
                                         CLI_OPTS_EXECUTOR,
                                         CLI_OPTS_TIMING,
                                         CLI_OPTS_ARCH,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("serve");
    int done = 0, c, st;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1)
        if ((st = parse_serve_option(c, s)) >= 0)
            return st;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind != argc)
        return cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
    return check_serve_options(s);
}

int cmd_serve(int argc, char **argv)
{
    struct serve_cli s = {.worker = -1, .wgpu = -1, .lockfd = -1, .ckworker = -1};
    int st = parse_serve_args(argc, argv, &s);
    if (st >= 0)
        return st;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc;
    if (s.worker >= 0)
        rc = serve_worker_main(&s.o, (int)s.worker, (int)s.wgpu, (int)s.lockfd, &err);
    else if (s.ckworker >= 0)
        rc = serve_compile_main(&s.o, (int)s.ckworker, (int)s.lockfd, &err);
    else
        rc = serve_run(&s.o, &err);
    if (rc != KILN_OK) {
        cli_report("serve", &err);
        return KILN_EXIT_USAGE;
    }
    return KILN_EXIT_OK;
}

/* --expires: a duration from now (30d, 12h, 90m, 3600s) or a UTC date. */
static int parse_expires(const char *s, double *out)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int y, mo, d, n = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && s[n] == '\0' && mo >= 1 && mo <= 12 &&
        d >= 1 && d <= 31) {
        struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d};
        time_t t = timegm(&tm);
        *out = (double)t;
        return t > now.tv_sec ? 0 : -1;
    }
    char *end;
    double v = strtod(s, &end);
    double unit = !strcmp(end, "d")   ? 86400
                  : !strcmp(end, "h") ? 3600
                  : !strcmp(end, "m") ? 60
                  : !strcmp(end, "s") ? 1
                                      : 0;
    if (end == s || unit == 0 || !(v > 0 && v * unit <= 100.0 * 365 * 86400))
        return -1;
    *out = (double)now.tv_sec + v * unit;
    return 0;
}

/* One option into `o` or `out`: -1 when taken, else a usage error's exit
 * status. */
static int parse_token_option(int c, struct serve_token_opts *o, enum cli_output *out)
{
    long v;
    switch (c) {
    case 'a':
        o->admin = true;
        break;
    case 'd':
        o->db = optarg;
        break;
    case 'r':
    case 'b': {
        char *end;
        double d = strtod(optarg, &end);
        if (*end || !(d > 0 && d <= 1e6))
            return cli_usage_error("token", "--%s needs a positive number, got '%s'",
                                   c == 'r' ? "rate" : "burst", optarg);
        *(c == 'r' ? &o->rate : &o->burst) = d;
        break;
    }
    case 'q':
        if (cli_parse_long(optarg, 1, 1000000, &v))
            return cli_usage_error("token", "--quota needs a number, got '%s'", optarg);
        o->quota = v;
        break;
    case 'e':
        if (parse_expires(optarg, &o->expires))
            return cli_usage_error("token",
                                   "--expires needs a duration (30d, 12h, 90m, 3600s) or a "
                                   "date YYYY-MM-DD (UTC) in the future, got '%s'",
                                   optarg);
        break;
    case 's':
        if (strcmp(optarg, "submit") && strcmp(optarg, "admin"))
            return cli_usage_error("token",
                                   "--scope is 'submit' (submit, read its own) or 'admin', "
                                   "got '%s'",
                                   optarg);
        o->admin = !strcmp(optarg, "admin");
        break;
    default: {
        struct kiln_err usage = KILN_ERR_INIT;
        if (cli_output_option(c, out, NULL, &usage) != KILN_OK)
            return cli_usage_report("token", &usage);
        break;
    }
    }
    return -1;
}

/* The options into `o` and `out`: -1 to go on, else the exit status. */
static int parse_token_args(int argc, char **argv, struct serve_token_opts *o, enum cli_output *out)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"admin", no_argument, NULL, 'a'},
                                         {"db", required_argument, NULL, 'd'},
                                         {"rate", required_argument, NULL, 'r'},
                                         {"burst", required_argument, NULL, 'b'},
                                         {"quota", required_argument, NULL, 'q'},
                                         {"expires", required_argument, NULL, 'e'},
                                         {"scope", required_argument, NULL, 's'},
                                         CLI_OPTS_JSON,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("token");
    int done = 0, c, st;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1)
        if ((st = parse_token_option(c, o, out)) >= 0)
            return st;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    return -1;
}

/* `kiln token list`. */
static int token_list(const struct serve_token_opts *o, enum cli_output out)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    if (serve_token_list(o->db, out == CLI_OUT_JSON, &err) != KILN_OK) {
        cli_report("token", &err);
        return KILN_EXIT_USAGE;
    }
    return KILN_EXIT_OK;
}

/* `kiln token revoke NAME`. */
static int token_revoke(const struct serve_token_opts *o, const char *name)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    if (serve_token_revoke(o->db, name, &err) != KILN_OK) {
        cli_report("token", &err);
        return KILN_EXIT_USAGE;
    }
    fprintf(stderr, "kiln token: revoked '%s' in %s; its submissions stay\n", name, o->db);
    return KILN_EXIT_OK;
}

/* The database's folder: the default lives in ./kiln-serve/, created on
 * first use. */
static int make_db_dir(const char *db)
{
    if (!strchr(db, '/'))
        return 0;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", db);
    *strrchr(dir, '/') = '\0';
    if (dir[0] && access(dir, F_OK) != 0 && mkdir(dir, 0700) != 0) {
        fprintf(stderr, "kiln token: cannot create %s for the database\n", dir);
        return -1;
    }
    return 0;
}

/* --json: the new token with the limits as applied (0 in the options
 * means the default). */
static int print_token_json(const struct serve_token_opts *o, const char *tok)
{
    json_t *doc =
        json_pack("{s:i, s:s, s:s, s:b, s:s, s:o, s:f, s:f, s:I, s:s}", "version", 1, "name",
                  o->name, "token", tok, "admin", o->admin, "scope", o->admin ? "admin" : "submit",
                  "expires", o->expires > 0 ? json_real(o->expires) : json_null(), "rate",
                  o->rate > 0 ? o->rate : SERVE_TOKEN_RATE, "burst",
                  o->burst > 0 ? o->burst : SERVE_TOKEN_BURST, "quota",
                  (json_int_t)(o->quota > 0 ? o->quota : SERVE_TOKEN_QUOTA), "db", o->db);
    if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) != 0) {
        json_decref(doc);
        fprintf(stderr, "kiln token: the token was created but could not be printed as JSON "
                        "(a name or path that is not UTF-8): create another without --json\n");
        return -1;
    }
    putchar('\n');
    json_decref(doc);
    return 0;
}

/* `kiln token add NAME`: the token is printed once, never stored. */
static int token_add(struct serve_token_opts *o, enum cli_output out)
{
    if (make_db_dir(o->db) != 0)
        return KILN_EXIT_USAGE;
    struct kiln_err err;
    kiln_err_clear(&err);
    char tok[SERVE_TOKEN_MAX];
    if (serve_token_add(o, tok, &err) != KILN_OK) {
        cli_report("token", &err);
        return KILN_EXIT_USAGE;
    }
    if (out == CLI_OUT_JSON) {
        if (print_token_json(o, tok) != 0)
            return KILN_EXIT_USAGE;
    } else {
        printf("%s\n", tok);
    }
    fprintf(stderr,
            "kiln token: created '%s' (scope %s%s) in %s; this is the only time the token is "
            "shown (the database keeps its SHA-256)\n",
            o->name, o->admin ? "admin" : "submit", o->expires > 0 ? ", expires" : "", o->db);
    return KILN_EXIT_OK;
}

int cmd_token(int argc, char **argv)
{
    enum cli_output out = CLI_OUT_TEXT;
    struct serve_token_opts o = {.db = "kiln-serve/kiln.db"};
    int st = parse_token_args(argc, argv, &o, &out);
    if (st >= 0)
        return st;
    const char *verb = optind < argc ? argv[optind] : "";
    if (!strcmp(verb, "list") && argc - optind == 1)
        return token_list(&o, out);
    if (!strcmp(verb, "revoke") && argc - optind == 2)
        return token_revoke(&o, argv[optind + 1]);
    if (argc - optind != 2 || strcmp(verb, "add"))
        return cli_usage_error("token", "usage: kiln token add NAME [--scope submit|admin] "
                                        "[--expires 30d] [--db PATH] | kiln token list | kiln "
                                        "token revoke NAME");
    o.name = argv[optind + 1];
    return token_add(&o, out);
}
