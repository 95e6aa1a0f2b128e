/* cmd_workloads.c - `kiln workloads` and `kiln workload check`. */
#include <dirent.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "fsutil.h"
#include "session.h"
#include "wlcheck.h"
#include "workload.h"
#include "text.h"

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The description's first sentence (ending at a '.' that follows a non-dot
 * and precedes a space or the end, so "x[1] + ... + x[n]" is not an end),
 * cut at a word boundary with "..." when it would not fit in `cap`. */
static void first_sentence(const char *d, char *out, size_t cap)
{
    size_t n = 0;
    while (d[n] && !(d[n] == '.' && n > 0 && d[n - 1] != '.' && (d[n + 1] == ' ' || !d[n + 1])))
        n++;
    if (n < cap) {
        snprintf(out, cap, "%.*s", (int)n, d);
        return;
    }
    size_t cut = cap - 4;
    while (cut > cap / 2 && d[cut] != ' ')
        cut--;
    snprintf(out, cap, "%.*s...", (int)cut, d);
}

/* kiln workloads lists at most this many. */
#define LISTED_MAX 128

/* The options: -1 to go on, else the exit status. */
static int parse_workloads_args(int argc, char **argv, enum cli_output *out)
{
    static const struct option opts[] = {
        CLI_HELP_OPTION, CLI_OPTS_JSON, CLI_OPTS_QUIET, {0, 0, 0, 0}};
    struct kiln_err usage = KILN_ERR_INIT;
    const struct kiln_cmd *self = cli_find("workloads");
    int done = 0;
    optind = 1;
    int opt;
    while ((opt = cli_getopt(self, argc, argv, "", opts, &done)) != -1)
        if (cli_output_option(opt, out, NULL, &usage) != KILN_OK)
            return cli_usage_report("workloads", &usage);
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind < argc)
        return cli_usage_error("workloads", "unexpected argument '%s'", argv[optind]);
    return -1;
}

/* A directory without workload.json that holds workloads (kernelbench/) is
 * a group: its members go into names[*n...] as GROUP/NAME. How many (0:
 * dir/group is not a group). */
static size_t add_group_members(const char *dir, const char *group, char **names, size_t *n)
{
    char sub[PATH_MAX], probe[PATH_MAX + 16];
    snprintf(sub, sizeof(sub), "%s/%s", dir, group);
    snprintf(probe, sizeof(probe), "%s/workload.json", sub);
    DIR *g = access(probe, F_OK) != 0 ? opendir(sub) : NULL;
    if (!g)
        return 0;
    struct dirent *ge;
    size_t members = 0;
    while ((ge = readdir(g)) && *n < LISTED_MAX) {
        char name[PATH_MAX];
        snprintf(name, sizeof(name), "%s/%s", group, ge->d_name);
        snprintf(probe, sizeof(probe), "%s/%s/workload.json", sub, ge->d_name);
        if (ge->d_name[0] != '.' && ge->d_type == DT_DIR && access(probe, F_OK) == 0) {
            names[(*n)++] = strdup(name);
            members++;
        }
    }
    closedir(g);
    return members;
}

/* The workloads in dir, sorted by name, into names[] (each strdup()ed, the
 * caller frees them): -1 to go on, else the exit status. */
static int list_names(const char *dir, char **names, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "kiln: cannot open %s (set KILN_DATA_DIR to kiln's source tree)\n", dir);
        return KILN_EXIT_USAGE;
    }
    struct dirent *de;
    while ((de = readdir(d)) && *n < LISTED_MAX) {
        if (de->d_name[0] == '.' || de->d_type != DT_DIR)
            continue;
        size_t members = add_group_members(dir, de->d_name, names, n);
        if (!members && *n < LISTED_MAX)
            names[(*n)++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, *n, sizeof(*names), by_name);
    return -1;
}

/* The name column is as wide as the longest name (14 to 64): the names are
 * what kiln eval and optimize take (GROUP/NAME for a group's members). */
static int name_width(char *const *names, size_t n)
{
    int width = 14;
    for (size_t i = 0; i < n; i++)
        if (names[i] && (int)strlen(names[i]) > width)
            width = (int)strlen(names[i]) < 64 ? (int)strlen(names[i]) : 64;
    return width;
}

/* A workload that loads: its backends, cases and first sentence. */
static void list_loaded(const char *name, int width, const struct workload *w, enum cli_output out,
                        json_t *list)
{
    size_t perf = 0;
    for (size_t c = 0; c < w->ncases; c++)
        perf += w->cases[c].kind == WL_CASE_PERFORMANCE;
    char line[80];
    first_sentence(w->description, line, sizeof(line));
    const char *be = w->backends == KILN_BACKEND_ALL    ? "cuda,cpu"
                     : w->backends == KILN_BACKEND_CUDA ? "cuda"
                                                        : "cpu";
    if (out == CLI_OUT_TEXT)
        printf("%-*s %-9s %2zu cases (%zu perf)  %s\n", width, name, be, w->ncases, perf, line);
    json_array_append_new(
        list, json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:s}", "name", name, "status", "ok",
                        "backends", be, "cases", (json_int_t)w->ncases, "performance_cases",
                        (json_int_t)perf, "sha256", w->hash, "description", line));
}

/* A workload that does not load: BROKEN, and why. */
static void list_broken(const char *name, int width, const struct kiln_err *err,
                        enum cli_output out, json_t *list)
{
    char esc[KILN_ERR_MSG_MAX * 4];
    text_escape_control(esc, sizeof(esc), err->msg);
    if (out == CLI_OUT_TEXT)
        printf("%-*s BROKEN: %s\n", width, name, esc);
    json_array_append_new(
        list, json_pack("{s:s, s:s, s:s}", "name", name, "status", "broken", "error", esc));
}

/* Workload `name` of dir into `list` (and on stdout as text): false when
 * it does not load. */
static bool list_workload(const char *dir, const char *name, int width, enum cli_output out,
                          json_t *list)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct workload *w = NULL;
    struct kiln_err err = KILN_ERR_INIT;
    bool loaded = workload_load(path, &w, &err) == KILN_OK;
    if (loaded)
        list_loaded(name, width, w, out, list);
    else
        list_broken(name, width, &err, out, list);
    workload_free(w);
    return loaded;
}

/* --json: the list as one document; `status` unless printing fails. */
static int print_listing(json_t *list, enum cli_output out, int status)
{
    if (out != CLI_OUT_JSON) {
        json_decref(list);
        return status;
    }
    json_t *doc = json_pack("{s:i, s:o}", "version", 1, "workloads", list);
    if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0) {
        fprintf(stderr, "kiln workloads: out of memory printing JSON\n");
        status = KILN_EXIT_USAGE;
    }
    putchar('\n');
    json_decref(doc);
    return status;
}

int cmd_workloads(int argc, char **argv)
{
    enum cli_output out = CLI_OUT_TEXT;
    int status = parse_workloads_args(argc, argv, &out);
    if (status >= 0)
        return status;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/workloads", fs_data_dir());
    char *names[LISTED_MAX];
    size_t n = 0;
    if ((status = list_names(dir, names, &n)) >= 0)
        return status;
    int width = name_width(names, n);
    status = KILN_EXIT_OK;
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        if (names[i] && !list_workload(dir, names[i], width, out, list))
            status = KILN_EXIT_FAIL;
        free(names[i]);
    }
    return print_listing(list, out, status);
}

/* What workload check was given in place of the workload's own data. */
struct check_given {
    const char *input_cases;                 /* NULL: inputs.py */
    const struct given_reference *reference; /* NULL: reference.py */
};

static int check_loaded(const char *dir, unsigned backends, uint64_t seed, const char *cache,
                        long long timeout_ms, const struct check_given *cg, enum cli_output out);

static int workload_check(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"backend", required_argument, NULL, 'b'},
                                         CLI_OPTS_SEED,
                                         {"cache", required_argument, NULL, 'c'},
                                         CLI_OPTS_TIMEOUT,
                                         CLI_OPTS_INPUTS,
                                         {"reference", required_argument, NULL, 'R'},
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_QUIET,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("workload");
    enum cli_output out = CLI_OUT_TEXT;
    struct check_given cg = {0};
    const char *reference = NULL;
    int done = 0, c;
    unsigned backends = KILN_BACKEND_ALL;
    struct cli_common common = {.seed = 1};
    struct kiln_err usage = KILN_ERR_INIT;
    const char *cache = NULL;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1) {
        if (c == 'b' && strcmp(optarg, "all") != 0 && !(backends = kiln_backend_from_name(optarg)))
            return cli_usage_error("workload", "unknown backend '%s' (cuda, cpu or all)", optarg);
        if (c == 'c')
            cache = optarg;
        if (cli_common_option(c, optarg, &common, NULL, &usage) != KILN_OK)
            return cli_usage_report("workload", &usage);
        if (c == 'R')
            reference = optarg;
        if (cli_output_option(c, &out, NULL, &usage) != KILN_OK)
            return cli_usage_report("workload", &usage);
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    long long timeout_s = common.timeout_s;
    uint64_t seed = common.seed;
    cg.input_cases = common.input_cases;
    if (optind + 1 != argc)
        return cli_usage_error("workload", "check needs exactly one workload directory");
    char dir[PATH_MAX];
    struct kiln_err err;
    kiln_err_clear(&err);
    if (workload_resolve_dir(argv[optind], dir, sizeof(dir), &err) != KILN_OK) {
        cli_report("workload check", &err);
        return KILN_EXIT_USAGE;
    }
    workload_warn_shadow(argv[optind], NULL);
    struct stat st;
    if (cg.input_cases && stat(cg.input_cases, &st) != 0) {
        kiln_fail_errno(&err, KILN_E_NOTFOUND, "--input-cases %s", cg.input_cases);
        cli_report("workload check", &err);
        return KILN_EXIT_USAGE;
    }
    struct given_reference ref;
    if (reference && given_reference_load(reference, &ref, &err) != KILN_OK) {
        cli_report("workload check", &err);
        return KILN_EXIT_USAGE;
    }
    cg.reference = reference ? &ref : NULL;
    int status = check_loaded(dir, backends, (uint64_t)seed, cache, 1000LL * timeout_s, &cg, out);
    if (reference)
        given_reference_free(&ref);
    return status;
}

/* `workload check --json`: the verdict and its problems, one per line of
 * `problems` (escaped: they quote the workload's scripts). */
static void check_json(const char *dir, const struct workload *w, const char *problems,
                       enum kiln_rc environment)
{
    json_t *list = json_array();
    char line[WLCHECK_PROBLEMS_MAX], esc[sizeof(line) * 4];
    for (const char *p = problems; list && p && *p;) {
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof(line), "%.*s", (int)n, p);
        json_array_append_new(list, json_string(text_escape_control(esc, sizeof(esc), line)));
        p += n + (p[n] == '\n');
    }
    json_t *doc =
        json_pack("{s:i, s:{s:s, s:s?, s:s?}, s:s, s:o, s:o}", "version", 1, "workload", "dir", dir,
                  "name", w ? w->name : NULL, "sha256", w ? w->hash : NULL, "status",
                  json_array_size(list) ? "problems" : "pass", "problems",
                  list ? list : json_array(), "host_failure",
                  environment != KILN_OK ? json_string(kiln_strerror(environment)) : json_null());
    if (doc)
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER), putchar('\n');
    else
        fprintf(stderr, "kiln workload check: out of memory printing JSON\n");
    json_decref(doc);
}

/* A workload's backends as its workload.json spells them. */
static const char *backends_text(unsigned backends)
{
    return backends == KILN_BACKEND_ALL    ? "[\"cuda\", \"cpu\"]"
           : backends == KILN_BACKEND_CUDA ? "[\"cuda\"]"
                                           : "[\"cpu\"]";
}

/* Which starting kernels are there (the check compiles and runs them
 * after the scripts: wlcheck_opts.check_start) and which part is skipped
 * for lack of one, since a starting kernel is optional. */
static void print_kernels(const struct workload *w, unsigned backends)
{
    const enum kiln_backend all[] = {KILN_BACKEND_CUDA, KILN_BACKEND_CPU};
    for (size_t b = 0; b < 2; b++) {
        if (!(w->backends & backends & all[b]))
            continue;
        const char *f = workload_file_name(workload_kernel_file(all[b]));
        if (workload_start_kernel(w, all[b]))
            printf("ok    %s: starting kernel %s present (compiled and run on the correctness "
                   "cases below)\n",
                   kiln_backend_name(all[b]), f);
        else
            printf("SKIP  %s: no starting kernel (%s), the kernel part is skipped: candidates "
                   "are still judged against the reference, but speedups vs the start are not "
                   "computed and the tuner has nothing to tune (use --proposer llm)\n",
                   kiln_backend_name(all[b]), f);
    }
}

/* A workload that does not load: every problem of its workload.json, one
 * line each (the error's message holds only as many as fit), and how many
 * more there are when even the list was full. */
static void say_load_failure(const char *dir, const struct kiln_err *err,
                             const struct wl_problems *probs, enum cli_output out)
{
    size_t shown = 0;
    for (const char *p = probs->text; *p; p++)
        shown += *p == '\n';
    char esc[KILN_ERR_MSG_MAX * 4], line[WLCHECK_PROBLEMS_MAX], more[64] = "";
    if (shown < probs->n)
        snprintf(more, sizeof(more), "... and %zu more (fix these and run again)\n",
                 probs->n - shown);
    if (out == CLI_OUT_JSON) {
        char *list = malloc(sizeof(probs->text) + sizeof(more));
        if (list)
            snprintf(list, sizeof(probs->text) + sizeof(more), "%s%s", probs->text, more);
        check_json(dir, NULL, probs->n > 1 && list ? list : err->msg, KILN_OK);
        free(list);
        return;
    }
    if (out != CLI_OUT_TEXT)
        return;
    if (probs->n <= 1) {
        printf("FAIL  %s\n", text_escape_control(esc, sizeof(esc), err->msg));
        return;
    }
    printf("FAIL  %s/workload.json: %zu problems:\n", dir, probs->n);
    for (const char *p = probs->text; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof(line), "%.*s", (int)len, p);
        printf("FAIL    %s\n", text_escape_control(esc, sizeof(esc), line));
        p += len + (p[len] == '\n');
    }
    if (more[0])
        printf("FAIL    %s", more);
}

/* workload check once the arguments are in: load, then every backend. */
static int check_loaded(const char *dir, unsigned backends, uint64_t seed, const char *cache,
                        long long timeout_ms, const struct check_given *cg, enum cli_output out)
{
    char tmp[PATH_MAX] = "";
    struct kiln_err err;
    kiln_err_clear(&err);
    struct workload *w = NULL;
    bool text = out == CLI_OUT_TEXT;
    struct wl_problems *probs = malloc(sizeof(*probs));
    if (!probs) {
        fprintf(stderr, "kiln workload check: out of memory\n");
        return KILN_EXIT_USAGE;
    }
    if (workload_load_problems(dir, &w, probs, &err) != KILN_OK) {
        say_load_failure(dir, &err, probs, out);
        free(probs);
        return KILN_EXIT_FAIL;
    }
    free(probs);
    /* An explicit --backend the workload does not list would check nothing
     * and "pass": say so instead (usage error, exit 2). */
    if ((w->backends & backends) == 0) {
        const char *asked = kiln_backend_name((enum kiln_backend)backends);
        fprintf(stderr,
                "kiln workload check: %s does not list the %s backend (workload.json "
                "\"backends\": %s), so there is nothing to check on it. Fix: check it with "
                "--backend %s, or add \"%s\" to its backends (with a kernel for it)\n",
                w->name, asked ? asked : "asked", backends_text(w->backends),
                (w->backends & KILN_BACKEND_CUDA) ? "cuda" : "cpu", asked ? asked : "?");
        if (out == CLI_OUT_JSON)
            check_json(dir, w, "the workload does not list the backend asked for", KILN_OK);
        workload_free(w);
        return KILN_EXIT_USAGE;
    }
    if (text)
        printf("ok    %s/workload.json parses: %s, %zu cases, %zu fixed held-out, %d drawn per "
               "check%s, hash %.16s\n",
               dir, w->name, w->ncases, w->nheld_out, w->held_draw.draw,
               w->held_draw.draw ? "" : " (no held_out ranges: the held-out sizes are public)",
               w->hash);
    if (text)
        print_kernels(w, backends);
    if (cg->reference && text)
        printf("ok    reference: --reference %s (sha256 %.16s) instead of reference.py\n",
               cg->reference->path, cg->reference->sha256);
    if (!cache) {
        if (fs_make_tempdir("check", tmp, sizeof(tmp), &err) != KILN_OK) {
            cli_report("workload check", &err);
            workload_free(w);
            return KILN_EXIT_USAGE;
        }
        cache = tmp;
    }
    if (w->provenance == WL_PROVENANCE_MODEL && text)
        printf("NOTE  reference generated by the model: not an independent oracle "
               "(workload.json: provenance)\n");
    struct wlcheck_opts co = {.backends = backends,
                              .cache_dir = cache,
                              .seed = seed,
                              .script_timeout_ms = timeout_ms,
                              .input_cases = cg->input_cases,
                              .reference = cg->reference,
                              .table = text ? stdout : NULL,
                              .check_start = true};
    struct wlcheck_result res;
    wlcheck_run(w, &co, &res);
    int status = res.nproblems ? KILN_EXIT_FAIL : KILN_EXIT_OK;
    if (tmp[0] && fs_remove_tree(tmp, &err) != KILN_OK)
        cli_report("workload check", &err);
    if (text)
        printf("%s: %s\n", w->name,
               status == KILN_EXIT_OK ? "workload check passed" : "PROBLEMS FOUND");
    else if (out == CLI_OUT_JSON)
        check_json(dir, w, res.problems, res.environment);
    workload_free(w);
    return status;
}

int cmd_workload(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "check") == 0)
        return workload_check(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(cli_find("workload")->help, stdout);
        return KILN_EXIT_OK;
    }
    if (argc >= 2 && argv[1][0] == '-')
        return cli_usage_error("workload", "unknown option '%s'", argv[1]);
    return cli_usage_error("workload", argc < 2 ? "missing subcommand (check)"
                                                : "unknown subcommand (only: check)");
}
