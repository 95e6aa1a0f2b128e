/* cmd_import.c - `kiln import kernelbench PROBLEM.py`: a KernelBench level-1
 * problem as a kiln workload (kbimport.h). */
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "fsutil.h"
#include "kbimport.h"

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

/* --json: what was written and what to run next, as one object. */
static int print_json(const char *dir, const struct kb_options *o, size_t ninputs, bool kernel)
{
    char next[PATH_MAX + 64];
    snprintf(next, sizeof(next), "kiln workload check %s", dir);
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:I, s:s, s:b, s:s}", "version", 1, "workload",
                            o->name, "dir", dir, "source", o->origin, "inputs", (json_int_t)ninputs,
                            "out_shape", o->out_shape, "kernel", kernel, "next", next);
    if (!doc) {
        fprintf(stderr,
                "kiln import: wrote %s, but the --json report could not be made (a path or name "
                "that is not UTF-8?)\n",
                dir);
        return KILN_EXIT_FAIL;
    }
    json_dumpf(doc, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(doc);
    return KILN_EXIT_OK;
}

int cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"output", required_argument, NULL, 'o'},
                                         {"out-shape", required_argument, NULL, 's'},
                                         {"flops", required_argument, NULL, 'f'},
                                         {"kernel", required_argument, NULL, 'k'},
                                         {"name", required_argument, NULL, 'n'},
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_QUIET,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("import");
    const char *dir = NULL, *kernel_path = NULL, *name = NULL;
    struct kb_options o = {.flops = "0"};
    enum cli_output out = CLI_OUT_TEXT;
    int done = 0, c;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "o:", opts, &done)) != -1) {
        switch (c) {
        case 'o':
            dir = optarg;
            break;
        case 's':
            o.out_shape = optarg;
            break;
        case 'f':
            o.flops = optarg;
            break;
        case 'k':
            kernel_path = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        default:
            if (cli_output_option("import", c, &out) < 0)
                return KILN_EXIT_USAGE;
            break;
        }
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind + 2 != argc || strcmp(argv[optind], "kernelbench") != 0)
        return cli_usage_error("import", "usage: kiln import kernelbench PROBLEM.py --out-shape "
                                         "DIMS [-o DIR]");
    const char *problem = argv[optind + 1];
    char auto_name[KB_WORKLOAD_NAME_MAX + 1];
    name_from_path(problem, auto_name);
    o.name = name ? name : auto_name;
    o.origin = problem;
    for (const char *p = o.name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return cli_usage_error("import", "--name '%s': use [a-z0-9_], at most 64", o.name);
    if (strlen(o.name) > 64 || !o.name[0])
        return cli_usage_error("import", "--name '%s': use [a-z0-9_], at most 64", o.name);
    if (!o.out_shape)
        return cli_usage_error("import",
                               "--out-shape is needed: the output's dimensions over the "
                               "problem's constants, e.g. --out-shape \"M, N\" (kiln never runs "
                               "the problem outside the sandbox to find it)");
    if (!dir)
        dir = o.name;

    struct kiln_err err;
    kiln_err_clear(&err);
    char *src = NULL, *kernel = NULL;
    size_t len = 0, klen = 0;
    struct kb_problem p;
    memset(&p, 0, sizeof(p));
    enum kiln_rc rc = fs_read_file(problem, KB_MAX_SRC, &src, &len, &err);
    if (rc == KILN_OK && kernel_path)
        rc = fs_read_file(kernel_path, 1u << 20, &kernel, &klen, &err);
    o.kernel = kernel;
    o.kernel_len = klen;
    if (rc == KILN_OK) {
        rc = kbimport_parse(src, len, &p, &err);
        if (rc != KILN_OK)
            kiln_err_prefix(&err, "%s", problem);
    }
    if (rc == KILN_OK)
        rc = kbimport_write(&p, &o, dir, &err);
    size_t ninputs = p.ninputs;
    kbimport_free(&p);
    free(src);
    free(kernel);
    if (rc != KILN_OK) {
        cli_report("import", &err);
        return rc == KILN_E_USAGE ? KILN_EXIT_USAGE : KILN_EXIT_FAIL;
    }
    if (out == CLI_OUT_JSON)
        return print_json(dir, &o, ninputs, kernel_path != NULL);
    if (out == CLI_OUT_QUIET)
        return KILN_EXIT_OK;
    printf("kiln: wrote %s (workload %s: %zu inputs, output (%s))\n", dir, o.name, ninputs,
           o.out_shape);
    if (!kernel_path)
        printf("kiln: add %s/kernel.cu (a starting kernel; evaluator/CANDIDATE.md), then:\n"
               "  kiln workload check %s    (needs torch in the script sandbox)\n",
               dir, dir);
    else
        printf("kiln: next: kiln workload check %s    (needs torch in the script sandbox)\n", dir);
    return KILN_EXIT_OK;
}
