/* cmd_archive.c - `kiln archive`, `kiln verify`, `kiln replay`, `kiln compare`:
 * a run sealed into one file, checked, re-run, and compared (runarchive.h,
 * replay.h). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_common.h"
#include "commands.h"
#include "fsutil.h"
#include "replay.h"
#include "runarchive.h"
#include "text.h"

/* The command line as one string, for ARCHIVE.json. */
static void join_argv(int argc, char **argv, char *out, size_t cap)
{
    size_t off = (size_t)snprintf(out, cap, "kiln");
    for (int i = 0; i < argc && off < cap; i++)
        off += (size_t)snprintf(out + off, cap - off, " %s", argv[i]);
}

/* A run made without --keep-inputs dropped work/inputs when it finished:
 * its archive holds the record but not the data the candidates ran on.
 * Said once, with what that means for kiln replay. */
static void note_no_inputs(const char *run_dir)
{
    char path[PATH_MAX], given[PATH_MAX];
    struct stat st;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_join(path, sizeof(path), run_dir, "work/inputs", &e) != KILN_OK ||
        fs_join(given, sizeof(given), run_dir, "given/inputs", &e) != KILN_OK ||
        (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) ||
        (lstat(given, &st) == 0 && S_ISDIR(st.st_mode)))
        return;
    char shown[PATH_MAX * 4];
    fprintf(stderr,
            "kiln: note: %s holds no inputs: the run was made without --keep-inputs, so its "
            "generated inputs and references were removed when it finished. The archive holds "
            "its record (sources, verdicts, timings, logs, the workload with its scripts and "
            "seed); kiln replay regenerates the inputs and references from that seed and "
            "re-runs the candidates on them, it cannot re-check them against the original "
            "bytes. To archive those, run kiln optimize --keep-inputs.\n",
            text_escape_control(shown, sizeof(shown), run_dir));
}

static int exit_for(const struct kiln_err *err)
{
    return err->rc == KILN_E_USAGE || err->rc == KILN_E_NOTFOUND || err->rc == KILN_E_UNSUPPORTED
               ? KILN_EXIT_USAGE
               : KILN_EXIT_FAIL;
}

int cmd_archive(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"output", required_argument, NULL, 'o'},
                                         {"sign", required_argument, NULL, 's'},
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("archive");
    struct runarchive_write_opts o = {0};
    int done = 0, c;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "o:", opts, &done)) != -1) {
        if (c == 'o')
            o.out_path = optarg;
        else if (c == 's')
            o.sign_key = optarg;
        else
            return c;
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind + 1 != argc)
        return cli_usage_error("archive", "needs exactly one run directory");
    o.run_dir = argv[optind];
    char cmdline[4096], written[PATH_MAX];
    join_argv(argc, argv, cmdline, sizeof(cmdline));
    o.command_line = cmdline;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (runarchive_write(&o, written, &err) != KILN_OK) {
        cli_report("archive", &err);
        return exit_for(&err);
    }
    note_no_inputs(o.run_dir);
    printf("kiln: archived %s to %s%s\n", o.run_dir, written, o.sign_key ? " (signed)" : "");
    return KILN_EXIT_OK;
}

/* verify --json: {"version", "archive", "intact", "run", "files",
 * "signed_by", "error"}; null where a field does not apply. */
static void verify_json(const char *archive, const struct runarchive *ar,
                        const struct kiln_err *err)
{
    const char *run = ar ? strrchr(ar->run, '/') : NULL;
    json_t *doc =
        json_pack("{s:i, s:s, s:b, s:o, s:o, s:o, s:o}", "version", 1, "archive", archive, "intact",
                  ar != NULL, "run", ar ? json_string(run ? run + 1 : ar->run) : json_null(),
                  "files", ar ? json_integer((json_int_t)ar->nfiles) : json_null(), "signed_by",
                  ar && ar->signed_ok ? json_string(ar->signer) : json_null(), "error",
                  ar ? json_null() : json_string(err->msg));
    /* A path that is not UTF-8 leaves no document; the exit status still says it. */
    if (doc && json_dumpf(doc, stdout, JSON_INDENT(2)) == 0)
        putchar('\n');
    json_decref(doc);
}

int cmd_verify(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"allowed-signers", required_argument, NULL, 'a'},
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_QUIET,
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("verify");
    const char *allowed = NULL;
    enum cli_output out = CLI_OUT_TEXT;
    struct kiln_err usage = KILN_ERR_INIT;
    int done = 0, c;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1) {
        bool taken;
        if (cli_output_option(c, &out, &taken, &usage) != KILN_OK)
            return cli_usage_report("verify", &usage);
        if (taken)
            continue;
        if (c == 'a')
            allowed = optarg;
        else
            return c;
    }
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (optind + 1 != argc)
        return cli_usage_error("verify", "needs exactly one archive");
    struct runarchive ar;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (runarchive_open(argv[optind], NULL, NULL, allowed, &ar, &err) != KILN_OK) {
        if (out == CLI_OUT_JSON && exit_for(&err) == KILN_EXIT_FAIL) /* judged: not intact */
            verify_json(argv[optind], NULL, &err);
        cli_report("verify", &err);
        return exit_for(&err);
    }
    const char *run = strrchr(ar.run, '/');
    if (out == CLI_OUT_JSON)
        verify_json(argv[optind], &ar, &err);
    else if (out == CLI_OUT_TEXT)
        printf("kiln: %s: OK, %zu files match its MANIFEST (%s)%s%s%s\n", argv[optind], ar.nfiles,
               run ? run + 1 : ar.run, ar.signed_ok ? "; signed by " : "",
               ar.signed_ok ? ar.signer : "", ar.signed_ok ? "" : "; no signature checked");
    runarchive_close(&ar);
    return KILN_EXIT_OK;
}

/* Options replay and compare share. */
static int parse_common(const char *name, int argc, char **argv, struct replay_opts *o, bool gpu_ok)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"allowed-signers", required_argument, NULL, 'a'},
                                         {"gpu", required_argument, NULL, 'g'},
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_CSV,
                                         CLI_OPTS_MARKDOWN,
                                         {"quiet", no_argument, NULL, 'q'},
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find(name);
    memset(o, 0, sizeof(*o));
    o->gpu = -1;
    int done = 0, c;
    long v;
    bool taken;
    struct kiln_err usage = KILN_ERR_INIT;
    /* --quiet is not an output format here: it silences progress and
     * warnings and combines with any of them. */
    enum cli_output out = CLI_OUT_TEXT;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1) {
        if (c == 'a')
            o->allowed_signers = optarg;
        else if (c == 'g' && gpu_ok && cli_parse_long(optarg, 0, 63, &v) == 0)
            o->gpu = (int)v;
        else if (c == 'g')
            return cli_usage_error(name, gpu_ok ? "--gpu takes a GPU index 0..63"
                                                : "--gpu applies to kiln replay");
        else if (cli_output_option(c, &out, &taken, &usage) != KILN_OK)
            return cli_usage_report(name, &usage);
        else if (taken)
            o->format = out == CLI_OUT_JSON  ? REPLAY_JSON
                        : out == CLI_OUT_CSV ? REPLAY_CSV
                                             : REPLAY_MARKDOWN;
        else if (c == 'q')
            o->quiet = true;
        else
            return c;
    }
    if (done)
        return done == 1 ? -1 : KILN_EXIT_USAGE;
    return 0;
}

int cmd_replay(int argc, char **argv)
{
    struct replay_opts o;
    int pr = parse_common("replay", argc, argv, &o, true);
    if (pr != 0)
        return pr < 0 ? KILN_EXIT_OK : pr;
    if (optind + 1 != argc)
        return cli_usage_error("replay", "needs exactly one archive");
    struct replay_result res;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (replay_archive(argv[optind], &o, &res, &err) != KILN_OK) {
        cli_report("replay", &err);
        return exit_for(&err);
    }
    /* A verdict must reproduce; timings are reported (compare gates on them). */
    return res.verdicts_changed ? KILN_EXIT_FAIL : KILN_EXIT_OK;
}

int cmd_compare(int argc, char **argv)
{
    struct replay_opts o;
    int pr = parse_common("compare", argc, argv, &o, false);
    if (pr != 0)
        return pr < 0 ? KILN_EXIT_OK : pr;
    if (optind + 2 != argc)
        return cli_usage_error("compare", "needs two runs: RUN_A (before) and RUN_B (now)");
    struct replay_result res;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (replay_compare(argv[optind], argv[optind + 1], &o, &res, &err) != KILN_OK) {
        cli_report("compare", &err);
        return KILN_EXIT_USAGE; /* not a regression: the comparison could not be made */
    }
    /* Timings of two architectures cannot show there is no regression. */
    return res.verdicts_changed || res.slow || res.not_compared ? KILN_EXIT_FAIL : KILN_EXIT_OK;
}
