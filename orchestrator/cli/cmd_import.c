/* cmd_import.c - `kiln import kernelbench PROBLEM.py|DIR`: KernelBench
 * problems as kiln workloads (kbimport.h, kbprobe.h), each checked as it is
 * written. */
#include <jansson.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "kbimport.h"
#include "kbprobe.h"
#include "wlcheck.h"
#include "workload.h"

#define KB_WORKLOAD_NAME_MAX 64 /* workload.json's name limit */

/* "19_ReLU.py" -> "kb_19_relu": the workload name ([a-z0-9_]{1,64}), from
 * the file's base name with anything outside [a-z0-9] folded to '_'. A
 * longer one keeps its first 55 characters (the problem number and a
 * readable prefix) and ends in '_' and 8 hex digits of a hash of the whole
 * base name, so it is never refused for length and stays deterministic. */
static void name_from_path(const char *path, char out[KB_WORKLOAD_NAME_MAX + 1])
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t blen = strlen(base);
    if (blen >= 3 && strcmp(base + blen - 3, ".py") == 0)
        blen -= 3;
    char full[PATH_MAX + 4] = "kb_";
    size_t n = 3;
    uint32_t h = 2166136261u; /* FNV-1a over the base name's bytes */
    for (size_t i = 0; i < blen && n + 1 < sizeof(full); i++) {
        h = (h ^ (unsigned char)base[i]) * 16777619u;
        char c = base[i];
        c = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '_';
        if (c == '_' && full[n - 1] == '_')
            continue;
        full[n++] = c;
    }
    while (n > 3 && full[n - 1] == '_')
        n--;
    full[n] = '\0';
    if (n <= KB_WORKLOAD_NAME_MAX) {
        memcpy(out, full, n + 1);
        return;
    }
    size_t keep = KB_WORKLOAD_NAME_MAX - 9;
    while (keep > 3 && full[keep - 1] == '_')
        keep--;
    snprintf(out, KB_WORKLOAD_NAME_MAX + 1, "%.*s_%08x", (int)keep, full, (unsigned)h);
}

/* One problem's outcome: a row of the table, an element of --json. */
struct import_row {
    char problem[256]; /* the file's base name, safe charset */
    char name[KB_WORKLOAD_NAME_MAX + 1];
    char dir[PATH_MAX];
    bool imported;
    char reason[KILN_ERR_MSG_MAX]; /* why not (one line), or the check's problems */
    char scaled[900];              /* "cpu: n 4096 -> 836 (...); cuda: ..." or "" */
    size_t ninputs, nparams;
    unsigned backends;
};

/* The cpu backend's performance case: a float64 reference and a C kernel
 * on a shared 2-core host in seconds, not minutes. */
#define IMPORT_CPU_BYTES (8ll << 20)
/* KernelBench's fp32 tolerance (atol = rtol), as its v0 and v0.1 judged
 * (and as the fast_p numbers published for them were computed); upstream's
 * eval.py at 423217d uses 1e-4 for fp32 (--tolerance 1e-4 follows it). */
#define IMPORT_TOLERANCE 1e-2
/* The cuda performance case keeps KernelBench's sizes up to kiln's case
 * limit: the harness holds a case's tensors and a pristine copy of its
 * inputs on the GPU (about twice its bytes, 8 GiB at the limit), within
 * any 16 GB GPU; its float64 reference must fit half the host's memory. */
#define IMPORT_CUDA_WHY "kiln's 4 GiB per case"

struct import_opts {
    const char *flops;  /* NULL: the probe's count */
    const char *kernel; /* bytes of --kernel, or NULL */
    size_t kernel_len;
    const char *kernel_file; /* kernel.cu or kernel.c */
    bool check;              /* run the import-time check (--no-check: not) */
    long long timeout_ms;
    struct kbp_plan plan;
};

#define IMPORT_CHECKED                                                                             \
    "kiln workload check on every case of every backend (inputs.py and reference.py in the "       \
    "script sandbox, every tensor against the signature, the performance cases and a held-out "    \
    "draw too)"

static void remove_written(const char *dir)
{
    struct kiln_err rm;
    kiln_err_clear(&rm);
    if (fs_remove_tree(dir, &rm) != KILN_OK)
        fprintf(stderr, "kiln import: warning: %s\n", rm.msg);
}

/* The import-time check: the written workload as kiln loads it (a starting
 * kernel is optional) through the whole of kiln workload check, and no
 * correctness case whose reference a zero or constant output passes. */
static enum kiln_rc check_written(const char *dir, char *problems, size_t cap, struct kiln_err *err)
{
    char tmp[PATH_MAX], cache[PATH_MAX];
    enum kiln_rc rc = fs_make_tempdir("kbcheck", tmp, sizeof(tmp), err);
    if (rc != KILN_OK)
        return rc;
    if ((rc = fs_join(cache, sizeof(cache), tmp, "cache", err))) {
        remove_written(tmp);
        return rc;
    }
    struct workload *w = NULL;
    rc = workload_load(dir, &w, err);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "the written workload does not load");
        remove_written(tmp);
        return rc;
    }
    struct wlcheck_opts co = {.backends = KILN_BACKEND_ALL, .cache_dir = cache, .seed = 1};
    struct wlcheck_result res;
    wlcheck_run(w, &co, &res);
    if (res.nproblems) {
        snprintf(problems, cap, "%s", res.problems);
        rc = kiln_fail(err, res.environment != KILN_OK ? res.environment : KILN_E_REJECTED,
                       "the written workload fails kiln workload check: %s", res.problems);
    } else if (res.weak_correctness) {
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "a correctness case's reference is weak (%s): a constant kernel would "
                       "pass it",
                       res.weak_first);
    }
    remove_written(tmp);
    workload_free(w);
    return rc;
}

/* The row's "scaled" text from the probe's notes. */
static void scaled_row(struct import_row *row, const struct kb_probe *pr)
{
    const struct kbp_scaled *s[2] = {&pr->scaled_cpu, &pr->scaled_kb};
    const char *which[2] = {"cpu", "cuda"};
    size_t at = 0;
    for (int i = 0; i < 2; i++) {
        if (!s[i]->sizes[0])
            continue;
        int w = snprintf(row->scaled + at, sizeof(row->scaled) - at, "%s%s: %s (x%.3g to fit %s)",
                         at ? "; " : "", which[i], s[i]->sizes, s[i]->factor,
                         s[i]->host_bound ? "its float64 reference in half the host's memory"
                         : i == 0         ? "the cpu budget"
                                          : IMPORT_CUDA_WHY);
        at = w > 0 && (size_t)w < sizeof(row->scaled) - at ? at + (size_t)w : at;
    }
}

/* Imports one problem into `dir`; the row says how it went. */
static enum kiln_rc import_one(const char *problem, const char *name, const char *dir,
                               const struct import_opts *io, struct import_row *row,
                               struct kiln_err *err)
{
    const char *base = strrchr(problem, '/');
    kbimport_safe_text(base ? base + 1 : problem, row->problem, sizeof(row->problem));
    snprintf(row->name, sizeof(row->name), "%s", name);
    snprintf(row->dir, sizeof(row->dir), "%s", dir);
    char *src = NULL;
    size_t len = 0;
    struct kb_problem p;
    memset(&p, 0, sizeof(p));
    struct kb_probe *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return kiln_fail(err, KILN_E_NOMEM, "%s", problem);
    struct kb_options o = {.name = name,
                           .origin = problem,
                           .flops = io->flops,
                           .kernel = io->kernel,
                           .kernel_len = io->kernel_len,
                           .kernel_file = io->kernel_file,
                           .budget_why = IMPORT_CUDA_WHY};
    enum kiln_rc rc = fs_read_file(problem, KB_MAX_SRC, &src, &len, err);
    if (rc == KILN_OK)
        rc = kbimport_parse(src, len, &p, err);
    if (rc == KILN_OK)
        rc = kbprobe_run(&p, &io->plan, io->timeout_ms, pr, err);
    if (rc == KILN_OK)
        rc = kbimport_write(&p, pr, &o, dir, err);
    bool written = rc == KILN_OK;
    if (rc == KILN_OK && io->check)
        rc = check_written(dir, row->reason, sizeof(row->reason), err);
    if (written && rc != KILN_OK)
        remove_written(dir); /* never leave a workload that fails its check */
    row->imported = rc == KILN_OK;
    row->ninputs = pr->ninputs;
    row->nparams = pr->nparams;
    scaled_row(row, pr);
    row->backends = (io->plan.cpu_bytes ? KILN_BACKEND_CPU : 0u) |
                    (io->plan.cuda_bytes ? KILN_BACKEND_CUDA : 0u);
    if (rc != KILN_OK) {
        /* One line for the table. */
        char esc[sizeof(row->reason)];
        snprintf(esc, sizeof(esc), "%s", err->msg);
        for (char *c = esc; *c; c++)
            if ((unsigned char)*c < 0x20)
                *c = ' ';
        snprintf(row->reason, sizeof(row->reason), "%s", esc);
    }
    kbimport_free(&p);
    free(pr);
    free(src);
    return rc;
}

static json_t *row_json(const struct import_row *r, bool checked)
{
    char next[PATH_MAX + 64];
    snprintf(next, sizeof(next), "kiln workload check %s", r->dir);
    json_t *backends = json_array();
    if (r->backends & KILN_BACKEND_CUDA)
        json_array_append_new(backends, json_string("cuda"));
    if (r->backends & KILN_BACKEND_CPU)
        json_array_append_new(backends, json_string("cpu"));
    return json_pack("{s:s, s:s, s:s, s:b, s:s?, s:I, s:I, s:o, s:s?, s:s?, s:s?}", "problem",
                     r->problem, "workload", r->name, "dir", r->dir, "imported", r->imported,
                     "reason", r->imported ? NULL : r->reason, "inputs", (json_int_t)r->ninputs,
                     "params", (json_int_t)r->nparams, "backends", backends, "scaled",
                     r->scaled[0] ? r->scaled : NULL, "checked",
                     r->imported && checked ? IMPORT_CHECKED : NULL, "next",
                     r->imported ? next : NULL);
}

static int print_json(json_t *doc)
{
    if (!doc) {
        fprintf(stderr, "kiln import: the --json report could not be made (a path that is not "
                        "UTF-8?)\n");
        return KILN_EXIT_FAIL;
    }
    json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(doc);
    return KILN_EXIT_OK;
}

/* The problem number a KernelBench file name starts with ("19_ReLU.py":
 * 19), or -1. */
static long long problem_number(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    long long n = 0;
    size_t i = 0;
    for (; base[i] >= '0' && base[i] <= '9' && i < 12; i++)
        n = n * 10 + (base[i] - '0');
    return i ? n : -1;
}

/* By problem number (1, 2, ..., 10, ..., 100; unnumbered files last), then
 * by name: KernelBench's own order. */
static int cmp_problem(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    long long nx = problem_number(x), ny = problem_number(y);
    if (nx != ny)
        return nx < 0 ? 1 : ny < 0 ? -1 : nx < ny ? -1 : 1;
    return strcmp(x, y);
}

#define IMPORT_MAX_FILES 4096

/* The folder's *.py regular files, sorted; NULL-terminated heap list. */
static char **list_problems(const char *dir, size_t *n, struct kiln_err *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        kiln_fail_errno(err, KILN_E_NOTFOUND, "%s", dir);
        return NULL;
    }
    char **names = calloc(IMPORT_MAX_FILES + 1, sizeof(*names));
    *n = 0;
    struct dirent *e;
    while (names && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".py") != 0 || e->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue; /* links and odd files are not problems */
        if (*n >= IMPORT_MAX_FILES) {
            kiln_fail(err, KILN_E_LIMIT, "%s: more than %d *.py files", dir, IMPORT_MAX_FILES);
            for (size_t i = 0; i < *n; i++)
                free(names[i]);
            free(names);
            closedir(d);
            return NULL;
        }
        names[(*n)++] = strdup(path);
    }
    closedir(d);
    if (!names) {
        kiln_fail(err, KILN_E_NOMEM, "listing %s", dir);
        return NULL;
    }
    for (size_t i = 0; i < *n; i++)
        if (!names[i]) {
            for (size_t j = 0; j < *n; j++)
                free(names[j]);
            free(names);
            kiln_fail(err, KILN_E_NOMEM, "listing %s", dir);
            return NULL;
        }
    qsort(names, *n, sizeof(*names), cmp_problem);
    return names;
}

/* A row of the table: the problem's full file name (`width` wide, the
 * folder's longest), then what became of it. */
static void print_row(const struct import_row *r, int width)
{
    if (r->imported)
        printf("%-*s  imported  %s%s%s%s\n", width, r->problem, r->name,
               r->scaled[0] ? "  (scaled: " : "", r->scaled, r->scaled[0] ? ")" : "");
    else
        printf("%-*s  refused   %s\n", width, r->problem, r->reason);
}

/* The table's first column: as wide as the longest file name. */
static int name_width(char *const *files, size_t n)
{
    size_t w = 7;
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(files[i], '/');
        size_t l = strlen(base ? base + 1 : files[i]);
        w = l > w ? l : w;
    }
    return w > 200 ? 200 : (int)w;
}

/* kiln import kernelbench DIR: every *.py in DIR into OUT/<name>/. */
static int import_folder(const char *folder, const char *out_dir, const struct import_opts *io,
                         enum cli_output out)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    size_t n = 0;
    char **files = list_problems(folder, &n, &err);
    if (!files) {
        cli_report("import", &err);
        return KILN_EXIT_USAGE;
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        kiln_fail_errno(&err, KILN_E_IO, "-o %s", out_dir);
        cli_report("import", &err);
        for (size_t i = 0; i < n; i++)
            free(files[i]);
        free(files);
        return KILN_EXIT_FAIL;
    }
    json_t *rows = json_array();
    size_t imported = 0, scaled = 0;
    struct import_row *r = malloc(sizeof(*r));
    int width = name_width(files, n);
    for (size_t i = 0; r && i < n; i++) {
        memset(r, 0, sizeof(*r));
        char name[KB_WORKLOAD_NAME_MAX + 1], dir[PATH_MAX];
        name_from_path(files[i], name);
        snprintf(dir, sizeof(dir), "%s/%s", out_dir, name);
        kiln_err_clear(&err);
        if (import_one(files[i], name, dir, io, r, &err) == KILN_OK) {
            imported++;
            scaled += r->scaled[0] != 0;
        }
        if (out == CLI_OUT_TEXT) {
            print_row(r, width);
            fflush(stdout);
        }
        json_array_append_new(rows, row_json(r, io->check));
        free(files[i]);
    }
    free(r);
    free(files);
    int status = imported ? KILN_EXIT_OK : KILN_EXIT_FAIL;
    if (out == CLI_OUT_TEXT)
        printf("kiln: %zu of %zu problems imported (%zu scaled down to fit), %zu refused%s%s\n",
               imported, n, scaled, n - imported, io->check ? "; each checked by " : "",
               io->check ? IMPORT_CHECKED : "");
    else if (out == CLI_OUT_JSON)
        status = print_json(json_pack("{s:i, s:s, s:I, s:I, s:I, s:o}", "version", 1, "folder",
                                      folder, "problems", (json_int_t)n, "imported",
                                      (json_int_t)imported, "scaled", (json_int_t)scaled, "rows",
                                      rows ? rows : json_array())) == KILN_EXIT_OK
                     ? status
                     : KILN_EXIT_FAIL;
    if (out != CLI_OUT_JSON)
        json_decref(rows);
    return status;
}

/* kiln import's command line. */
struct import_cli {
    const char *dir, *kernel_path, *name; /* -o, --kernel, --name */
    const char *backend;                  /* --backend, or NULL: the host's */
    const char *tolerance;                /* --tolerance, or NULL */
    const char *problem;                  /* PROBLEM.py or DIR */
    bool folder;                          /* problem is a folder */
    struct import_opts io;
    enum cli_output out;
};

/* One option into `ic` (the shared ones into `common`): -1 when taken, else
 * a usage error's exit status. */
static int import_option(int c, struct import_cli *ic, struct cli_common *common)
{
    switch (c) {
    case 'o':
        ic->dir = optarg;
        break;
    case 'f':
        ic->io.flops = optarg;
        break;
    case 'k':
        ic->kernel_path = optarg;
        break;
    case 'n':
        ic->name = optarg;
        break;
    case 'C':
        ic->io.check = false;
        break;
    case 'b':
        ic->backend = optarg;
        break;
    case 'T':
        ic->tolerance = optarg;
        break;
    default: {
        struct kiln_err usage = KILN_ERR_INIT;
        if (cli_common_option(c, optarg, common, NULL, &usage) != KILN_OK ||
            cli_output_option(c, &ic->out, NULL, &usage) != KILN_OK)
            return cli_usage_report("import", &usage);
        break;
    }
    }
    return -1;
}

/* The host's memory, half of which a float64 reference may take. */
static long long host_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (long long)pages * size : 8ll << 30;
}

/* What the probe is asked (kbprobe.h): the backends' performance cases
 * (--backend; by default cuda and cpu where a GPU is, cpu alone where none
 * is) and the tolerance. -1 to go on, else the exit status. */
static int import_plan(struct import_cli *ic)
{
    unsigned backends = KILN_BACKEND_CPU;
    if (ic->backend && strcmp(ic->backend, "all") == 0) {
        backends = KILN_BACKEND_ALL;
    } else if (ic->backend) {
        backends = kiln_backend_from_name(ic->backend);
        if (!backends)
            return cli_usage_error("import", "unknown backend '%s' (cuda, cpu or all)",
                                   ic->backend);
    } else {
        struct gpuinfo g[GPUINFO_MAX];
        size_t ng = 0;
        struct kiln_err e = KILN_ERR_INIT;
        if (gpuinfo_list("/proc", g, &ng, &e) == KILN_OK && ng > 0)
            backends = KILN_BACKEND_ALL;
    }
    struct kbp_plan *pl = &ic->io.plan;
    pl->cpu_bytes = (backends & KILN_BACKEND_CPU) ? IMPORT_CPU_BYTES : 0;
    pl->cuda_bytes = (backends & KILN_BACKEND_CUDA) ? (long long)WL_CASE_BYTES : 0;
    pl->host_memory = host_memory() / 2;
    pl->tolerance = IMPORT_TOLERANCE;
    if (ic->tolerance) {
        char *end = NULL;
        errno = 0;
        double t = strtod(ic->tolerance, &end);
        if (errno || end == ic->tolerance || *end || !(t > 0.0 && t <= 0.5))
            return cli_usage_error("import",
                                   "--tolerance %s: expected KernelBench's atol = rtol, a number "
                                   "in (0, 0.5] such as 1e-2 (v0.1) or 1e-4 (upstream's fp32)",
                                   ic->tolerance);
        pl->tolerance = t;
    }
    return -1;
}

/* The options and arguments into `ic`: -1 to go on, else the exit status. */
static int parse_import_args(int argc, char **argv, struct import_cli *ic)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"output", required_argument, NULL, 'o'},
                                         {"flops", required_argument, NULL, 'f'},
                                         {"kernel", required_argument, NULL, 'k'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"no-check", no_argument, NULL, 'C'},
                                         {"backend", required_argument, NULL, 'b'},
                                         {"tolerance", required_argument, NULL, 'T'},
                                         CLI_OPTS_TIMEOUT,
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_QUIET,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("import");
    struct cli_common common = {0};
    int done = 0, c, status;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "o:", opts, &done)) != -1)
        if ((status = import_option(c, ic, &common)) >= 0)
            return status;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind + 2 != argc || strcmp(argv[optind], "kernelbench") != 0)
        return cli_usage_error("import", "usage: kiln import kernelbench PROBLEM.py|DIR [-o DIR]");
    ic->io.timeout_ms = common.timeout_s > 0 ? 1000LL * common.timeout_s : 300000;
    ic->problem = argv[optind + 1];
    struct stat st;
    ic->folder = stat(ic->problem, &st) == 0 && S_ISDIR(st.st_mode);
    if (ic->folder && ic->name)
        return cli_usage_error("import", "--name names one workload; a folder's are derived "
                                         "from its files' names");
    return import_plan(ic);
}

/* --kernel's file into *kernel (the caller frees it) and ic->io: -1 to go
 * on, else the exit status. */
static int read_kernel(struct import_cli *ic, char **kernel)
{
    if (!ic->kernel_path)
        return -1;
    struct kiln_err err = KILN_ERR_INIT;
    if (fs_read_file(ic->kernel_path, 1u << 20, kernel, &ic->io.kernel_len, &err) != KILN_OK) {
        cli_report("import", &err);
        return KILN_EXIT_USAGE;
    }
    ic->io.kernel = *kernel;
    size_t l = strlen(ic->kernel_path);
    ic->io.kernel_file =
        l > 2 && strcmp(ic->kernel_path + l - 2, ".c") == 0 ? "kernel.c" : "kernel.cu";
    return -1;
}

/* A workload name kiln takes: [a-z0-9_], 1 to 64 characters. */
static bool workload_name_valid(const char *name)
{
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return name[0] && strlen(name) <= KB_WORKLOAD_NAME_MAX;
}

/* What was written, and what to do next. */
static void print_imported(const char *dir, const char *name, const struct import_row *r,
                           const struct import_opts *io)
{
    printf("kiln: wrote %s (workload %s: %zu inputs, %zu parameters; backends %s)\n", dir, name,
           r->ninputs, r->nparams,
           r->backends == KILN_BACKEND_ALL    ? "cuda, cpu"
           : r->backends == KILN_BACKEND_CUDA ? "cuda"
                                              : "cpu (no GPU here: --backend all adds the cuda "
                                                "case at KernelBench's sizes)");
    if (r->scaled[0])
        printf("kiln: scaled down to fit: %s\n", r->scaled);
    if (io->check)
        printf("kiln: checked: %s\n", IMPORT_CHECKED);
    printf("kiln: next: kiln workload check %s   (every case, the performance one too)\n", dir);
    if (!io->kernel)
        printf("kiln: no starting kernel (optional): judge a kernel with kiln eval %s "
               "CANDIDATE.cu (or .c on the cpu backend), or let a model write one with kiln "
               "optimize %s --proposer llm; the tuner and speedups vs the start need "
               "%s/kernel.cu or kernel.c (--kernel, evaluator/CANDIDATE.md)\n",
               dir, dir, dir);
}

/* kiln import kernelbench PROBLEM.py: one workload, into -o DIR or ./NAME. */
static int import_file(const struct import_cli *ic)
{
    char auto_name[KB_WORKLOAD_NAME_MAX + 1];
    name_from_path(ic->problem, auto_name);
    const char *name = ic->name ? ic->name : auto_name;
    if (!workload_name_valid(name))
        return cli_usage_error("import", "--name: use [a-z0-9_], at most 64");
    const char *dir = ic->dir ? ic->dir : name;
    struct kiln_err err = KILN_ERR_INIT;
    struct import_row *r = calloc(1, sizeof(*r));
    enum kiln_rc rc = r ? import_one(ic->problem, name, dir, &ic->io, r, &err)
                        : kiln_fail(&err, KILN_E_NOMEM, "importing %s", ic->problem);
    int status = KILN_EXIT_OK;
    if (rc != KILN_OK) {
        cli_report("import", &err);
        status = KILN_EXIT_FAIL;
    } else if (ic->out == CLI_OUT_JSON) {
        json_t *doc = row_json(r, ic->io.check);
        if (doc)
            json_object_set_new(doc, "version", json_integer(1));
        status = print_json(doc);
    } else if (ic->out == CLI_OUT_TEXT) {
        print_imported(dir, name, r, &ic->io);
    }
    free(r);
    return status;
}

int cmd_import(int argc, char **argv)
{
    struct import_cli ic = {.io = {.flops = NULL, .check = true}, .out = CLI_OUT_TEXT};
    int status = parse_import_args(argc, argv, &ic);
    if (status >= 0)
        return status;
    char *kernel = NULL;
    if ((status = read_kernel(&ic, &kernel)) >= 0)
        return status;
    if (ic.folder)
        status = import_folder(ic.problem, ic.dir ? ic.dir : ".", &ic.io, ic.out);
    else
        status = import_file(&ic);
    free(kernel);
    return status;
}
