/* cmd_eval.c - `kiln eval WORKLOAD CANDIDATE`: judge one candidate. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "candidate.h"
#include "cli.h"
#include "clock.h"
#include "cli_common.h"
#include "commands.h"
#include "digest.h"
#include "eval_junit.h"
#include "eval_output.h"
#include "eval_rows.h"
#include "compile.h"
#include "evaluate.h"
#include "session.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "strbuf.h"
#include "suggest.h"
#include "text.h"

struct eval_cli {
    const char *workload, *candidate, *work, *junit;
    const char *reference; /* given data (given.h) */
    enum kiln_backend backend;
    enum compile_tool compiler;
    int warmups, iterations, hot, keep, no_reference, no_baseline;
    enum cli_output output;              /* --json, --csv, --markdown, --quiet: one at most */
    const char *sets[CAND_MAX_TUNABLES]; /* --set NAME=VALUE, as given */
    size_t nsets;
    struct cli_common common; /* --gpu, --seed, --timeout, --input-cases, --executor */
};

/* "NAME=V NAME=V" of the tunables evaluated ("" for none). */
static void config_text(const json_t *config, char *out, size_t cap)
{
    size_t len = 0;
    const char *k;
    const json_t *v;
    out[0] = '\0';
    json_object_foreach((json_t *)config, k, v)
    {
        if (len < cap)
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%lld", len ? " " : "", k,
                                    (long long)json_integer_value(v));
    }
}

/* One cell of the text table from a row (eval_rows.h): `decimals` places
 * of value * scale, then `suffix`; "-" when unknown. */
static const char *fmt_cell(const json_t *r, const char *col, int decimals, double scale,
                            const char *suffix, char *buf, size_t cap)
{
    const json_t *v = json_object_get(r, col);
    if (json_is_number(v))
        snprintf(buf, cap, "%.*f%s", decimals, json_number_value(v) * scale, suffix);
    else
        snprintf(buf, cap, "-");
    return buf;
}

/* "1.37x SAME": a speedup over the start with its call against the noise
 * (FAST, SLOW, SAME: within it, AMBIGUOUS), never a bare ratio; "-" when
 * there is none. */
static const char *speedup_cell(const json_t *r, char *buf, size_t cap)
{
    const json_t *v = json_object_get(r, "speedup_vs_reference");
    const char *call = json_string_value(json_object_get(r, "speedup_vs_reference_call"));
    if (json_is_number(v))
        snprintf(buf, cap, "%.2fx %s", json_number_value(v), call ? call : "?");
    else
        snprintf(buf, cap, "-");
    return buf;
}

/* The visible cases, from the same rows as --csv and --markdown (the text
 * adds each failing case's detail and notes on thin timings). */
static void print_table(const struct eval_outcome *o, const char *title,
                        const struct eval_rows_context *ctx)
{
    const struct verdict *v = &o->v;
    printf("%s\n", title);
    json_t *rows = eval_rows_json(ctx, v, NULL), *cx = eval_rows_context_json(ctx);
    printf("  device %s; compiled with %s%s%s; timing %s\n", ctx->device, ctx->compile_flags,
           ctx->config && ctx->config[0] ? "; " : "", ctx->config ? ctx->config : "",
           json_string_value(json_object_get(cx, "timing_rule")));
    json_decref(cx);
    if (v->ncases) /* none ran (refused before the first run): no empty table */
        printf("  %-14s %-4s %-6s %-16s %7s %11s %7s %9s %9s %15s %11s %6s\n", "case", "set",
               "status", "sizes", "samples", "median ms", "noise %", "GB/s", "GFLOP/s", "vs ref",
               "vs baseline", "% SOL");
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        const json_t *r = json_array_get(rows, i);
        char n[32], med[32], noise[32], gbs[32], gfs[32], ref[32], base[32], sol[32];
        const char *sizes = json_string_value(json_object_get(r, "sizes"));
        char few[96] = "";
        const char *target = json_string_value(json_object_get(r, "rse_target"));
        if (target && strcmp(target, "reached") != 0)
            snprintf(few, sizeof(few), "  (target not reached: rse %.2f%% over the case's sets)",
                     100 * verdict_case_rse(v, c->name));
        else if (c->timed && !stats_has_interval(&c->timing))
            snprintf(few, sizeof(few), "  (%zu sample%s: no interval)", c->timing.n,
                     c->timing.n == 1 ? "" : "s");
        else if (c->scored && !c->timed && c->correct)
            snprintf(few, sizeof(few), "  (not timed: fewer iterations than sets)");
        printf("  %-14s %-4d %-6s %-16s %7s %11s %7s %9s %9s %15s %11s %6s%s%s\n", c->name, c->set,
               c->correct ? "pass" : "FAIL", sizes ? sizes : "-",
               fmt_cell(r, "samples", 0, 1, "", n, sizeof(n)),
               fmt_cell(r, "median_ms", 4, 1, "", med, sizeof(med)),
               fmt_cell(r, "noise_pct", 2, 1, "", noise, sizeof(noise)),
               fmt_cell(r, "gb_per_s", 1, 1, "", gbs, sizeof(gbs)),
               fmt_cell(r, "gflop_per_s", 1, 1, "", gfs, sizeof(gfs)),
               speedup_cell(r, ref, sizeof(ref)),
               fmt_cell(r, "speedup_vs_baseline", 2, 1, "x", base, sizeof(base)),
               fmt_cell(r, "fraction_of_floor", 1, 100, "", sol, sizeof(sol)),
               c->scored ? "" : "  (not scored)", few);
        char esc[sizeof(c->detail) * 4];
        if (!c->correct && c->detail[0])
            printf("      %s\n", text_escape_control(esc, sizeof(esc), c->detail));
    }
    json_decref(rows);
    if (v->ncases && v->floor_unit[0])
        printf("  %% SOL: the median against the physics floor, the %s peak or DRAM bandwidth "
               "(whichever bounds the case)\n",
               verdict_floor_label(v));
    char sum[sizeof(v->summary) * 4];
    /* The compiler's messages are printed once, whole, under the table. */
    bool diag_below = v->status == VERDICT_COMPILE_ERROR && !strcmp(o->stage, "compile") &&
                      !strncmp(v->detail, "compilation failed", 18) && o->compile.diagnostics &&
                      o->compile.diagnostics[0];
    printf("  status: %s (stage %s)\n  %s\n", verdict_status_name(v->status), o->stage,
           diag_below ? "compile_error: compilation failed (the compiler's messages follow)"
                      : text_escape_control(sum, sizeof(sum), v->summary));
}

/* --json's "starting_kernel": its file name, null when there is none. */
static json_t *start_json(const struct eval_session *s)
{
    if (!eval_session_has_start(s))
        return json_null();
    return json_string(workload_file_name(workload_kernel_file(eval_session_backend(s))));
}

/* The medians of one baseline column, then why some case has none. */
static void print_medians(enum eval_baseline_state state, const struct eval_medians *m,
                          const char *detail)
{
    if (state == EVAL_BASELINE_OK) {
        for (size_t i = 0; i < m->n; i++)
            printf("%s%s %.4f ms", i ? ", " : "", m->cases[i].name, m->cases[i].ms);
        printf("%s", detail[0] ? "; " : "");
    }
    text_fputs_escaped(stdout, detail, strlen(detail));
    printf("\n");
}

/* One line on the vendor baseline under the table (torch: eager, then a
 * line for torch.compile, which "vs baseline" does not divide by). */
static void print_baseline(const struct eval_baseline *b)
{
    if (!b || b->kind == WL_BASELINE_NONE) {
        printf("  vendor baseline: none declared by the workload\n");
        return;
    }
    printf("  vendor baseline (%s%s): ", eval_baseline_kind_name(b->kind),
           b->kind == WL_BASELINE_TORCH ? " eager" : "");
    print_medians(b->state, &b->medians, b->detail);
    if (b->kind == WL_BASELINE_TORCH) {
        printf("  torch.compile: ");
        print_medians(b->compile_state, &b->compile, b->compile_detail);
    }
}

/* Where the data came from when not from the workload (given.h). */
static void add_given_json(json_t *doc, const struct eval_session *s)
{
    const struct given_inputs *gi = eval_session_given_inputs(s);
    const struct given_reference *gr = eval_session_given_reference(s);
    json_object_set_new(doc, "input_cases",
                        given_source_json(gi ? gi->path : NULL, gi ? gi->sha256 : NULL));
    json_object_set_new(doc, "reference_script",
                        given_source_json(gr ? gr->path : NULL, gr ? gr->sha256 : NULL));
}

static void print_given(const struct eval_session *s)
{
    const struct given_inputs *gi = eval_session_given_inputs(s);
    const struct given_reference *gr = eval_session_given_reference(s);
    if (gi)
        printf("  inputs: from --input-cases %s (sha256 %.16s), not the workload's inputs.py\n",
               gi->path, gi->sha256);
    if (gr)
        printf("  reference: --reference %s (sha256 %.16s), not the workload's reference.py\n",
               gr->path, gr->sha256);
}

/* The held-out draw, shown once the check ran: the secret seed and the
 * sizes nobody saw before (recorded so the check can be reproduced). */
static void add_held_out_json(json_t *doc, const struct eval_session *s, bool ran)
{
    const struct heldout_set *h = ran ? eval_session_held_out_draw(s) : NULL;
    json_t *j = h ? heldout_json(eval_session_workload(s), h) : NULL;
    json_object_set_new(doc, "held_out_draw", j ? j : json_null());
}

static void print_held_out(const struct eval_session *s)
{
    const struct heldout_set *h = eval_session_held_out_draw(s);
    const struct workload *w = eval_session_workload(s);
    if (!h)
        return;
    printf("  held-out seed %llu, cases:", (unsigned long long)h->seed);
    for (size_t i = 0; i < h->n; i++) {
        printf("%s %s(", i ? ";" : "", h->cases[i].name);
        for (size_t k = 0; k < w->nsizes; k++)
            printf("%s%s=%lld", k ? " " : "", w->size_names[k], (long long)h->cases[i].sizes[k]);
        printf(")%s", h->cases[i].kind == WL_CASE_PERFORMANCE ? " timed" : "");
    }
    printf("\n");
}

/* The tunables of `cand` as one line: "UNROLL {1, 2, 4, 8} = 4, ...". */
static void describe_tunables(const struct candidate *cand, char *buf, size_t cap)
{
    struct strbuf sb;
    strbuf_init(&sb);
    for (size_t t = 0; t < cand->ntunables; t++) {
        const struct cand_tunable *tu = &cand->tunables[t];
        strbuf_printf(&sb, "%s%s {", t ? ", " : "", tu->name);
        for (size_t v = 0; v < tu->nvalues; v++)
            strbuf_printf(&sb, "%s%lld", v ? ", " : "", (long long)tu->values[v]);
        strbuf_printf(&sb, "} = %lld", (long long)tu->def);
    }
    snprintf(buf, cap, "%s", sb.data && !sb.oom ? sb.data : "");
    strbuf_free(&sb);
}

/* One --set NAME=VALUE into config[]; a usage error naming what exists. */
static enum kiln_rc apply_set(const struct candidate *cand, const char *arg, int64_t *config,
                              bool *seen, struct kiln_err *err)
{
    char name[CAND_NAME_MAX + 1], have[2048];
    size_t nlen = strcspn(arg, "=");
    snprintf(name, sizeof(name), "%.*s", (int)(nlen < CAND_NAME_MAX ? nlen : CAND_NAME_MAX), arg);
    describe_tunables(cand, have, sizeof(have));
    int i = nlen <= CAND_NAME_MAX ? candidate_tunable_index(cand, name) : -1;
    if (i < 0) {
        struct suggest sg;
        suggest_init(&sg, name);
        for (size_t t = 0; t < cand->ntunables; t++)
            suggest_consider(&sg, cand->tunables[t].name);
        char hint[CAND_NAME_MAX + 32] = "";
        if (sg.best)
            snprintf(hint, sizeof(hint), "did you mean '%s'? ", sg.best);
        return cand->ntunables
                   ? kiln_fail(err, KILN_E_USAGE, "--set %s: no tunable %s; %sthe candidate's: %s",
                               arg, name, hint, have)
                   : kiln_fail(err, KILN_E_USAGE,
                               "--set %s: the candidate declares no tunable (// kiln: tunable)",
                               arg);
    }
    if (seen[i])
        return kiln_fail(err, KILN_E_USAGE, "--set %s: %s is set twice", arg, name);
    seen[i] = true;
    const struct cand_tunable *tu = &cand->tunables[i];
    char *end = NULL;
    errno = 0;
    long long v = strtoll(arg + nlen + 1, &end, 10);
    bool listed = false;
    for (size_t k = 0; !errno && end != arg + nlen + 1 && !*end && k < tu->nvalues; k++)
        listed |= tu->values[k] == v;
    if (!listed)
        return kiln_fail(err, KILN_E_USAGE, "--set %s: not one of %s's values; the candidate's: %s",
                         arg, name, have);
    config[i] = v;
    return KILN_OK;
}

/* The configuration --set asks for (the defaults elsewhere), checked like
 * the tuner's (values in their sets, every `require`) before anything runs.
 * A candidate whose directives do not parse is left to the parse stage. */
static enum kiln_rc configure(const struct eval_cli *o, const char *src, size_t len,
                              enum kiln_backend backend, int64_t *config, bool *have,
                              json_t **shown, struct kiln_err *err)
{
    *have = false;
    *shown = NULL;
    struct candidate *cand = NULL;
    struct kiln_err perr;
    kiln_err_clear(&perr);
    if (candidate_parse(src, len, backend, &cand, &perr) != KILN_OK)
        return KILN_OK;
    bool seen[CAND_MAX_TUNABLES] = {false};
    candidate_default_config(cand, config);
    enum kiln_rc rc = KILN_OK;
    for (size_t i = 0; rc == KILN_OK && i < o->nsets; i++)
        rc = apply_set(cand, o->sets[i], config, seen, err);
    if (rc == KILN_OK && candidate_check_config(cand, config, NULL, &perr) != KILN_OK)
        rc = kiln_fail(err, KILN_E_USAGE, "--set: that configuration is not allowed: %s", perr.msg);
    *have = rc == KILN_OK && o->nsets > 0;
    /* The configuration evaluated, for --json's "config" and the text. */
    *shown = rc == KILN_OK ? json_object() : NULL;
    for (size_t t = 0; *shown && t < cand->ntunables; t++)
        json_object_set_new(*shown, cand->tunables[t].name, json_integer((json_int_t)config[t]));
    candidate_free(cand);
    return rc;
}

/* One option into `o`: -1 when taken, else a usage error's exit status. */
static int parse_option(int c, struct eval_cli *o)
{
    switch (c) {
    case 'b':
        if (!(o->backend = kiln_backend_from_name(optarg)))
            return cli_usage_error("eval", "unknown backend '%s' (cuda or cpu)", optarg);
        break;
    case 'J':
        o->junit = optarg;
        break;
    case 'w':
        o->work = optarg;
        break;
    case 'W':
    case 'i': {
        struct kiln_err e = KILN_ERR_INIT;
        if (cli_run_count(c, optarg, &o->warmups, &o->iterations, &e) != KILN_OK)
            return cli_usage_report("eval", &e);
        break;
    }
    case 'H':
        o->hot = 1;
        break;
    case 'R':
        o->no_reference = 1;
        break;
    case 'B':
        o->no_baseline = 1;
        break;
    case 'F':
        o->reference = optarg;
        break;
    case 'S':
        if (o->nsets == CAND_MAX_TUNABLES)
            return cli_usage_error("eval", "--set at most %d times", CAND_MAX_TUNABLES);
        if (!strchr(optarg, '='))
            return cli_usage_error("eval", "--set needs NAME=VALUE, got '%s'", optarg);
        o->sets[o->nsets++] = optarg;
        break;
    case 'C':
        if (!compile_tool_from_name(optarg, &o->compiler))
            return cli_usage_error("eval", "unknown compiler '%s' (nvcc or nvrtc)", optarg);
        break;
    default: {
        struct kiln_err usage = KILN_ERR_INIT;
        bool taken;
        if (cli_output_option(c, &o->output, &taken, &usage) != KILN_OK ||
            (!taken && cli_common_option(c, optarg, &o->common, NULL, &usage) != KILN_OK))
            return cli_usage_report("eval", &usage);
        break;
    }
    }
    return -1;
}

static int parse_args(int argc, char **argv, struct eval_cli *o)
{
    static const struct option opts[] = {CLI_HELP_OPTION,
                                         {"backend", required_argument, NULL, 'b'},
                                         CLI_OPTS_GPU,
                                         CLI_OPTS_JSON,
                                         CLI_OPTS_CSV,
                                         CLI_OPTS_MARKDOWN,
                                         CLI_OPTS_QUIET,
                                         {"junit", required_argument, NULL, 'J'},
                                         {"work", required_argument, NULL, 'w'},
                                         CLI_OPTS_SEED,
                                         {"warmups", required_argument, NULL, 'W'},
                                         {"iterations", required_argument, NULL, 'i'},
                                         {"hot", no_argument, NULL, 'H'},
                                         {"no-reference", no_argument, NULL, 'R'},
                                         {"no-baseline", no_argument, NULL, 'B'},
                                         CLI_OPTS_TIMEOUT,
                                         CLI_OPTS_TIMING,
                                         CLI_OPTS_ARCH,
                                         CLI_OPTS_INPUTS,
                                         CLI_OPTS_EXECUTOR,
                                         {"reference", required_argument, NULL, 'F'},
                                         {"compiler", required_argument, NULL, 'C'},
                                         {"set", required_argument, NULL, 'S'},
                                         {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("eval");
    int done = 0, c, st;
    optind = 1;
    while ((c = cli_getopt(self, argc, argv, "", opts, &done)) != -1)
        if ((st = parse_option(c, o)) >= 0)
            return st;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    struct kiln_err usage = KILN_ERR_INIT;
    if (cli_common_check(&o->common, &usage) != KILN_OK)
        return cli_usage_report("eval", &usage);
    if (argc - optind != 2)
        return cli_usage_error("eval", "needs WORKLOAD and CANDIDATE");
    o->workload = argv[optind];
    o->candidate = argv[optind + 1];
    return -1;
}

/* One evaluation, from the session opened to the result printed. */
struct eval_run {
    const struct eval_cli *o;
    struct eval_session *s;
    char *src;
    size_t len;
    uint64_t seed;
    bool seed_given;
    int64_t config[CAND_MAX_TUNABLES];
    bool configured;     /* --set: config[] applies (else the defaults) */
    json_t *config_json; /* the tunables' values evaluated */
    struct eval_outcome out, held;
    bool compiled, have_held;
    /* The rows' context: what every row of every format was judged in. */
    char digest[SHA256_HEX_LEN + 1];
    struct eval_device dev;
    char flags[256], device[400], cfg[512];
    const struct eval_target *target;
    struct eval_rows_context rctx;
};

/* No --seed: fresh inputs every time (recorded for --seed N). */
static enum kiln_rc pick_seed(struct eval_run *r, struct kiln_err *err)
{
    r->seed_given = r->o->common.seed_set;
    r->seed = r->o->common.seed;
    return r->seed_given ? KILN_OK : eval_fresh_seed(&r->seed, err);
}

/* Read the candidate, open the session on the workload and check --set. */
static enum kiln_rc open_run(struct eval_run *r, const struct sbexec_runner *runner,
                             struct kiln_err *err)
{
    const struct eval_cli *o = r->o;
    struct eval_session_opts so = {.workload = o->workload,
                                   .backend = o->backend,
                                   .gpu = o->common.gpu,
                                   .work_dir = o->work,
                                   .seed = r->seed,
                                   .warmups = o->warmups,
                                   .iterations = o->iterations,
                                   .adaptive = o->common.adaptive,
                                   .target_rse = o->common.target_rse,
                                   .budget_ms = o->common.budget_ms,
                                   .arch = o->common.arch,
                                   .hot = o->hot,
                                   .run_timeout_ms = 1000LL * o->common.timeout_s,
                                   .candidate_hint = o->candidate,
                                   .compiler = o->compiler,
                                   .verbose = o->output == CLI_OUT_TEXT,
                                   .input_cases = o->common.input_cases,
                                   .reference = o->reference,
                                   .runner = runner};
    /* Fail fast: parse, plan and compile the candidate before any input is
     * generated or reference timed, so a candidate that cannot compile is
     * reported in seconds (the session generates its inputs on first run). */
    so.defer_inputs = true;
    enum kiln_rc rc = fs_read_file(o->candidate, 1u << 20, &r->src, &r->len, err);
    if (rc == KILN_OK)
        rc = eval_session_open(&so, &r->s, err);
    if (rc != KILN_OK)
        return rc;
    return configure(o, r->src, r->len, eval_session_backend(r->s), r->config, &r->configured,
                     &r->config_json, err);
}

/* The starting kernel and the vendor baseline, timed once the candidate
 * passed (correctness first: a wrong candidate fails without them); its
 * speedups are then computed against them and judged against the noise. */
static enum kiln_rc time_start_and_baseline(struct eval_run *r, double *t_start,
                                            double *start_inputs, double *t_baseline,
                                            struct kiln_err *err)
{
    struct eval_session *s = r->s;
    enum kiln_rc rc = KILN_OK;
    if (!r->o->no_reference) {
        double t0 = clock_mono_s(), in0 = eval_session_inputs_seconds(s);
        if ((rc = eval_session_reference(s, err)) != KILN_OK)
            return rc;
        *t_start = clock_mono_s() - t0;
        *start_inputs = eval_session_inputs_seconds(s) - in0;
    }
    if (!r->o->no_baseline) {
        double t0 = clock_mono_s();
        if ((rc = eval_session_baseline(s, err)) != KILN_OK)
            return rc;
        *t_baseline = clock_mono_s() - t0;
    }
    eval_session_rescore(s, &r->out);
    const struct eval_outcome *ref = eval_session_reference_outcome(s);
    verdict_judge_ref(&r->out.v, ref ? &ref->v : NULL);
    return KILN_OK;
}

/* Compile, run the candidate (its correctness cases first), then time the
 * reference and the baseline, then the held-out check; the turnaround's
 * parts add up to its total. */
static enum kiln_rc judge(struct eval_run *r, double wall0, struct kiln_err *err)
{
    struct eval_session *s = r->s;
    const int64_t *tunables = r->configured ? r->config : NULL; /* NULL: the defaults */
    double t_start = 0, t_baseline = 0, t_held = 0, start_inputs = 0;
    eval_session_show_source(s, "candidate", r->o->candidate);
    enum kiln_rc rc = eval_session_compile(s, "candidate", r->src, r->len, tunables, &r->out, err);
    if (rc != KILN_OK)
        return rc;
    r->compiled = r->out.v.status == VERDICT_PASS;
    if (r->compiled) {
        eval_outcome_free(&r->out);
        memset(&r->out, 0, sizeof(r->out));
        rc = eval_session_run_compiled(s, "candidate", r->src, r->len, tunables, &r->out, err);
        if (rc != KILN_OK)
            return rc;
    }
    if (r->out.v.status == VERDICT_PASS &&
        (rc = time_start_and_baseline(r, &t_start, &start_inputs, &t_baseline, err)) != KILN_OK)
        return rc;
    if (r->out.v.status == VERDICT_PASS) {
        double t0 = clock_mono_s();
        rc = eval_session_held_out(s, "candidate", r->src, r->len, tunables, &r->held, err);
        if (rc != KILN_OK)
            return rc;
        t_held = clock_mono_s() - t0;
        r->have_held = true;
        eval_session_apply_held_out(s, &r->out, &r->held);
    }
    /* The session's work around the candidate is part of the evaluation:
     * total is its wall time, and the parts add up to it (other: the rest). */
    r->out.t.inputs = eval_session_inputs_seconds(s);
    r->out.t.start = t_start > start_inputs ? t_start - start_inputs : 0;
    r->out.t.baseline = t_baseline;
    r->out.t.held_out = t_held;
    r->out.t.total = clock_mono_s() - wall0;
    return KILN_OK;
}

/* The rows' context: the candidate's digest, the device, the flags and the
 * configuration every row of every format was judged in. */
static void describe_context(struct eval_run *r)
{
    struct eval_session *s = r->s;
    char cpu[256];
    sha256_hex_of(r->src, r->len, r->digest);
    eval_device_describe(eval_session_backend(s), r->o->common.gpu, &r->dev);
    r->target = eval_session_target(s);
    compile_flags_describe(eval_session_backend(s), r->o->compiler,
                           r->target ? r->target->arch : NULL, r->flags, sizeof(r->flags));
    eval_cpu_model(cpu, sizeof(cpu));
    if (eval_session_backend(s) == KILN_BACKEND_CPU)
        snprintf(r->device, sizeof(r->device), "cpu (%s)", cpu[0] ? cpu : "model unknown");
    else
        snprintf(r->device, sizeof(r->device), "%s", r->dev.text);
    config_text(r->config_json, r->cfg, sizeof(r->cfg));
    r->rctx =
        (struct eval_rows_context){.wl = eval_session_workload(s),
                                   .candidate_sha256 = r->digest,
                                   .seed = r->seed,
                                   .device = r->device,
                                   .compile_flags = r->flags,
                                   .config = r->cfg,
                                   .held_draw = r->have_held ? eval_session_held_out_draw(s) : NULL,
                                   .rule = &r->out.v.rule};
    const struct eval_outcome *ref = eval_session_reference_outcome(s);
    r->rctx.reference = ref ? &ref->v : NULL;
}

/* --json: how the speedup over the start stands against the noise
 * ("speedup_vs_reference_call": FAST, SLOW, SAME, AMBIGUOUS; null without
 * a speedup) and, with --until-rse, whether every case reached the target
 * ("timing_target"; null for a fixed count). */
static void add_noise_json(json_t *doc, const struct verdict *v)
{
    bool call = v->ref_call[0] && v->speedup_ref > 0;
    json_object_set_new(doc, "speedup_vs_reference_call",
                        call ? json_string(v->ref_call) : json_null());
    json_object_set_new(doc, "speedup_vs_reference_noise_pct",
                        call ? json_real(v->ref_noise_pct) : json_null());
    double worst = 0;
    const char *wc = NULL;
    bool met = verdict_rse_target_met(v, &worst, &wc);
    json_object_set_new(doc, "timing_target",
                        v->rule.known && v->rule.adaptive
                            ? json_pack("{s:f, s:b, s:o, s:o}", "target_rse", v->rule.target_rse,
                                        "reached", met && wc, "worst_rse",
                                        wc ? json_real(worst) : json_null(), "worst_case",
                                        wc ? json_string(wc) : json_null())
                            : json_null());
}

/* --json: the verdict's document, with how and where it was reached. */
static enum kiln_rc print_json(const struct eval_run *r, struct kiln_err *err)
{
    struct eval_session *s = r->s;
    struct eval_doc_info info = {.workload_source = r->o->workload,
                                 .wl = eval_session_workload(s),
                                 .candidate_path = r->o->candidate,
                                 .candidate_sha256 = r->digest,
                                 .device = &r->dev};
    json_t *doc = NULL;
    enum kiln_rc rc = eval_doc_json(&r->out.v, &info, &doc, err);
    if (rc != KILN_OK)
        return rc;
    json_object_set_new(doc, "stage", json_string(r->out.stage));
    add_noise_json(doc, &r->out.v);
    /* The tunables' values evaluated (--set, else the defaults); null
     * when the directives did not parse. */
    json_object_set(doc, "config", r->config_json ? r->config_json : json_null());
    json_object_set_new(doc, "turnaround_s", eval_turnaround_json(&r->out.t));
    json_object_set_new(doc, "ran_as", r->out.where[0] ? json_string(r->out.where) : json_null());
    json_object_set_new(doc, "ran_on", eval_ran_on_json(&r->out));
    json_object_set_new(doc, "arch", eval_arch_json(&r->out));
    json_object_set_new(doc, "target", eval_target_json(r->target));
    json_object_set_new(doc, "backend", json_string(kiln_backend_name(eval_session_backend(s))));
    json_object_set_new(doc, "held_out",
                        r->have_held ? json_string(verdict_status_name(r->held.v.status))
                                     : json_null());
    /* The starting kernel's file, null when the workload has none
     * (then every speedup_vs_reference is null: nothing to compare). */
    json_object_set_new(doc, "starting_kernel", start_json(s));
    json_object_set_new(doc, "reference_generated_by_model",
                        json_boolean(eval_session_workload(s)->provenance == WL_PROVENANCE_MODEL));
    /* The vendor baseline: kind, status and why not, per-case medians
     * (null when it was not timed: --no-baseline). */
    const struct eval_baseline *bl = eval_session_baseline_result(s);
    json_object_set_new(doc, "baseline", bl ? eval_baseline_json(bl) : json_null());
    add_given_json(doc, s);
    json_object_set_new(doc, "seed", json_integer((json_int_t)r->seed));
    json_object_set_new(doc, "seed_source", json_string(r->seed_given ? "--seed" : "random"));
    add_held_out_json(doc, s, r->have_held);
    /* The same rows as --csv and --markdown, held-out ones included. */
    json_object_set_new(doc, "rows_version", json_integer(EVAL_ROWS_VERSION));
    json_object_set_new(doc, "rows",
                        eval_rows_json(&r->rctx, &r->out.v, r->have_held ? &r->held.v : NULL));
    json_object_set_new(doc, "row_context", eval_rows_context_json(&r->rctx));
    json_dumpf(doc, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(doc);
    return KILN_OK;
}

/* --set: the configuration judged, whole. */
static void print_configuration(const json_t *config_json)
{
    const char *k;
    json_t *v;
    printf("  configuration:");
    json_object_foreach((json_t *)config_json, k, v)
    {
        printf(" %s=%lld", k, (long long)json_integer_value(v));
    }
    printf("\n");
}

/* The compiler's messages and the harness log, under everything else. */
static void print_logs(const struct eval_outcome *out)
{
    /* The compiler quotes the candidate; the log is the candidate's. */
    if (out->compile.diagnostics && out->compile.diagnostics[0] &&
        out->v.status == VERDICT_COMPILE_ERROR) {
        printf("compiler diagnostics:\n");
        text_fputs_escaped(stdout, out->compile.diagnostics, strlen(out->compile.diagnostics));
    }
    if (out->log_tail && out->v.status != VERDICT_PASS) {
        printf("harness log (tail):\n");
        text_fputs_escaped(stdout, out->log_tail, strlen(out->log_tail));
    }
}

/* The text: the table, then one line on each thing that shaped it. */
static void print_text(const struct eval_run *r)
{
    struct eval_session *s = r->s;
    const struct eval_cli *o = r->o;
    char title[300], line[600];
    snprintf(title, sizeof(title), "kiln eval %s %s (%s backend)", o->workload, o->candidate,
             kiln_backend_name(eval_session_backend(s)));
    print_table(&r->out, title, &r->rctx);
    if (eval_session_workload(s)->provenance == WL_PROVENANCE_MODEL)
        printf("  reference generated by the model: not an independent oracle\n");
    if (!eval_session_has_start(s))
        printf("  no starting kernel (%s): speedups vs the start are not computed (vs ref "
               "-)\n",
               workload_file_name(workload_kernel_file(eval_session_backend(s))));
    if (!o->no_baseline && eval_session_baseline_result(s))
        print_baseline(eval_session_baseline_result(s));
    else if (!o->no_baseline && r->compiled)
        printf("  vendor baseline: not timed (the candidate did not pass: correctness first)\n");
    eval_turnaround_line(&r->out.t, line, sizeof(line));
    if (r->out.t.compile > 0 || r->out.t.run > 0) /* refused before any stage: nothing to show */
        printf("  turnaround: %s\n", line);
    if (r->out.where[0])
        printf("  ran as: %s\n", r->out.where);
    if (r->have_held)
        printf("  held-out check (fresh inputs, secret seed, unseen sizes): %s%s%s\n",
               verdict_status_name(r->held.v.status), r->held.v.detail[0] ? ": " : "",
               text_escape_control(line, sizeof(line), r->held.v.detail));
    print_given(s);
    if (!o->common.input_cases && r->compiled)
        printf("  inputs: seed %llu (%s; --seed %llu reproduces them)\n",
               (unsigned long long)r->seed, r->seed_given ? "--seed" : "random",
               (unsigned long long)r->seed);
    if (r->have_held)
        print_held_out(s);
    if (r->configured)
        print_configuration(r->config_json);
    print_logs(&r->out);
}

/* The result in the format asked for (--quiet: none). */
static enum kiln_rc print_result(const struct eval_run *r, struct kiln_err *err)
{
    enum cli_output output = r->o->output;
    if (output == CLI_OUT_JSON)
        return print_json(r, err);
    if (output == CLI_OUT_CSV || output == CLI_OUT_MARKDOWN) {
        json_t *rows = eval_rows_json(&r->rctx, &r->out.v, r->have_held ? &r->held.v : NULL);
        eval_rows_print(stdout, output == CLI_OUT_CSV ? EVAL_ROWS_CSV : EVAL_ROWS_MARKDOWN,
                        &r->rctx, rows);
        json_decref(rows);
    } else if (output == CLI_OUT_TEXT) {
        print_text(r);
    }
    return KILN_OK;
}

/* --junit FILE: the verdict as a JUnit report, written whole or not at all. */
static enum kiln_rc write_junit(const struct eval_run *r, struct kiln_err *err)
{
    if (!r->o->junit)
        return KILN_OK;
    struct eval_junit_info ji = {.candidate = r->o->candidate,
                                 .candidate_sha256 = r->digest,
                                 .device = r->dev.text,
                                 .backend = eval_session_backend(r->s),
                                 .wall_s = r->out.t.total};
    char *xml = NULL;
    enum kiln_rc rc = eval_junit_text(eval_session_workload(r->s), &ji, &r->out,
                                      r->have_held ? &r->held : NULL, &xml, err);
    if (rc == KILN_OK)
        rc = fs_write_atomic(r->o->junit, xml, strlen(xml), err);
    free(xml);
    return rc;
}

static void eval_run_free(struct eval_run *r)
{
    json_decref(r->config_json);
    eval_outcome_free(&r->out);
    eval_outcome_free(&r->held);
    eval_session_close(r->s);
    free(r->src);
}

int cmd_eval(int argc, char **argv)
{
    struct eval_cli o = {0};
    int st = parse_args(argc, argv, &o);
    if (st >= 0)
        return st;
    struct kiln_err err;
    kiln_err_clear(&err);
    struct eval_run r;
    memset(&r, 0, sizeof(r));
    r.o = &o;
    struct slurm_runner slurm;
    static volatile sig_atomic_t cancel;
    const struct sbexec_runner *runner = NULL;
    if (cli_common_executor(&o.common, "kiln-eval", &slurm, &cancel, &runner, &err) != KILN_OK ||
        pick_seed(&r, &err) != KILN_OK) {
        cli_report("eval", &err);
        return KILN_EXIT_USAGE;
    }
    /* turnaround total: the wall time of the whole evaluation. */
    double wall0 = clock_mono_s();
    int status = KILN_EXIT_USAGE;
    if (open_run(&r, runner, &err) != KILN_OK || judge(&r, wall0, &err) != KILN_OK)
        goto fail;
    status = r.out.v.status == VERDICT_PASS ? KILN_EXIT_OK : KILN_EXIT_FAIL;
    describe_context(&r);
    if (print_result(&r, &err) != KILN_OK || write_junit(&r, &err) != KILN_OK)
        goto fail;
    goto done;
fail:
    cli_report("eval", &err);
    /* kiln could not reach a verdict: an environment error, or interrupted. */
    status = err.rc == KILN_E_CANCELLED ? KILN_EXIT_INTERRUPTED : KILN_EXIT_USAGE;
done:
    eval_run_free(&r);
    return status;
}
