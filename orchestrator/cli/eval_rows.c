/* eval_rows.c - see eval_rows.h. */
#include "eval_rows.h"

#include <stdio.h>
#include <string.h>

#include "kiln_version.h"

const char *const eval_row_columns[] = {"case",
                                        "set",
                                        "check",
                                        "status",
                                        "sizes",
                                        "samples",
                                        "median_ms",
                                        "min_ms",
                                        "max_ms",
                                        "noise_pct",
                                        "rse_target",
                                        "gb_per_s",
                                        "gflop_per_s",
                                        "speedup_vs_reference",
                                        "speedup_vs_reference_call",
                                        "speedup_vs_baseline",
                                        "fraction_of_floor",
                                        NULL};

const char *const eval_row_context_columns[] = {
    "rows_version",     "kiln",        "workload", "workload_sha256",
    "candidate_sha256", "seed",        "device",   "compile_flags",
    "config",           "timing_rule", NULL};

/* The case's sizes as given to the workload ("n=4096 m=17"), its cost. */
static const struct wl_case *case_of(const struct eval_rows_context *ctx, const char *name,
                                     bool held)
{
    if (!held)
        return workload_case_by_name(ctx->wl, name);
    for (size_t i = 0; ctx->held_draw && i < ctx->held_draw->n; i++)
        if (!strcmp(ctx->held_draw->cases[i].name, name))
            return &ctx->held_draw->cases[i];
    return NULL;
}

static json_t *sizes_of(const struct workload *wl, const struct wl_case *c)
{
    if (!c)
        return json_null();
    char buf[512];
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < wl->nsizes && len < sizeof(buf); i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s=%lld", i ? " " : "",
                                wl->size_names[i], (long long)c->sizes[i]);
    return json_string(buf);
}

static json_t *num_if(bool known, double x)
{
    return known ? json_real(x) : json_null();
}

/* --until-rse: whether the row's case reached the target (its sets pooled,
 * as the harness stops on); null for a fixed count or a case not timed. */
static json_t *rse_target_of(const struct verdict *v, const struct verdict_case *c)
{
    double rse = c->timed ? verdict_case_rse(v, c->name) : -1.0;
    if (!v->rule.known || !v->rule.adaptive || rse < 0.0)
        return json_null();
    return json_string(rse < v->rule.target_rse ? "reached" : "not reached");
}

static void add_rows(json_t *rows, const struct eval_rows_context *ctx, const struct verdict *v,
                     bool held)
{
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        const struct wl_case *wc = case_of(ctx, c->name, held);
        const struct stats_summary *t = &c->timing;
        uint64_t tensor_bytes = 0;
        int64_t bytes = 0, flops = 0;
        struct kiln_err e;
        kiln_err_clear(&e);
        if (!wc || workload_case_cost(ctx->wl, wc, &tensor_bytes, &bytes, &flops, &e) != KILN_OK)
            bytes = flops = 0;
        bool timed = c->timed && t->median > 0;
        double s = timed ? t->median / 1e3 : 0;
        json_t *r = json_object();
        json_object_set_new(r, "case", json_string(c->name));
        json_object_set_new(r, "set", json_integer(c->set));
        json_object_set_new(r, "check", json_string(held ? "held_out" : "visible"));
        json_object_set_new(r, "status", json_string(c->correct ? "pass" : "fail"));
        json_object_set_new(r, "sizes", sizes_of(ctx->wl, wc));
        json_object_set_new(r, "samples", c->timed ? json_integer((json_int_t)t->n) : json_null());
        json_object_set_new(r, "median_ms", num_if(c->timed, t->median));
        json_object_set_new(r, "min_ms", num_if(c->timed, t->min));
        json_object_set_new(r, "max_ms", num_if(c->timed, t->max));
        /* nvbench's noise: the relative standard error, in percent. */
        json_object_set_new(r, "noise_pct", num_if(c->timed && t->n > 1, 100 * t->rse));
        json_object_set_new(r, "rse_target", rse_target_of(v, c));
        json_object_set_new(r, "gb_per_s", num_if(timed && bytes > 0, (double)bytes / s / 1e9));
        json_object_set_new(r, "gflop_per_s", num_if(timed && flops > 0, (double)flops / s / 1e9));
        json_object_set_new(r, "speedup_vs_reference",
                            num_if(timed && c->ref_median_ms > 0, c->ref_median_ms / t->median));
        /* A ratio is never given bare: FAST, SLOW, SAME (within the noise). */
        double pct;
        const char *call = verdict_case_ref_call(c, held ? NULL : ctx->reference, &pct);
        json_object_set_new(r, "speedup_vs_reference_call",
                            timed && c->ref_median_ms > 0 && call[0] ? json_string(call)
                                                                     : json_null());
        json_object_set_new(r, "speedup_vs_baseline",
                            num_if(timed && c->speedup_vendor > 0, c->speedup_vendor));
        json_object_set_new(r, "fraction_of_floor", num_if(timed && c->sol > 0, c->sol));
        json_array_append_new(rows, r);
    }
}

json_t *eval_rows_json(const struct eval_rows_context *ctx, const struct verdict *v,
                       const struct verdict *held)
{
    json_t *rows = json_array();
    if (!rows)
        return NULL;
    add_rows(rows, ctx, v, false);
    if (held)
        add_rows(rows, ctx, held, true);
    return rows;
}

static void rule_text(const struct verdict_timing_rule *r, char *out, size_t cap)
{
    if (!r || !r->known)
        snprintf(out, cap, "unknown");
    else if (r->adaptive)
        snprintf(out, cap, "adaptive: rse<=%g%% or %g s a case; %d..%d runs", 100 * r->target_rse,
                 r->budget_ms / 1e3, r->iterations, r->max_iterations);
    else
        snprintf(out, cap, "fixed: %d runs after %d warmups", r->iterations, r->warmups);
}

json_t *eval_rows_context_json(const struct eval_rows_context *ctx)
{
    char seed[32], rule[128];
    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)ctx->seed);
    rule_text(ctx->rule, rule, sizeof(rule));
    return json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "rows_version", EVAL_ROWS_VERSION,
                     "kiln", KILN_VERSION " (git " KILN_GIT_REV ")", "workload", ctx->wl->name,
                     "workload_sha256", ctx->wl->hash, "candidate_sha256",
                     ctx->candidate_sha256 ? ctx->candidate_sha256 : "", "seed", seed, "device",
                     ctx->device ? ctx->device : "", "compile_flags",
                     ctx->compile_flags ? ctx->compile_flags : "", "config",
                     ctx->config ? ctx->config : "", "timing_rule", rule);
}

/* A CSV field: quoted (RFC 4180) when it holds a comma, quote or newline. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void cell(FILE *f, enum eval_rows_format fmt, const json_t *v)
{
    fputs(fmt == EVAL_ROWS_CSV ? "," : " | ", f);
    if (json_is_string(v))
        fputs(json_string_value(v), f); /* case names, words, "n=4096": no escaping needed */
    else if (json_is_integer(v))
        fprintf(f, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        fprintf(f, "%.6g", json_real_value(v));
    else if (fmt == EVAL_ROWS_MARKDOWN)
        fputc('-', f);
}

void eval_rows_print(FILE *f, enum eval_rows_format fmt, const struct eval_rows_context *ctx,
                     const json_t *rows)
{
    json_t *cx = eval_rows_context_json(ctx);
    const char *rule = json_string_value(json_object_get(cx, "timing_rule"));
    if (fmt == EVAL_ROWS_MARKDOWN) {
        fprintf(f,
                "kiln eval rows v%d: workload %s (sha256 %.12s), candidate sha256 %.12s, seed %s, "
                "device %s, compiled with `%s`%s%s, timing %s, kiln %s\n\n",
                EVAL_ROWS_VERSION, ctx->wl->name, ctx->wl->hash,
                ctx->candidate_sha256 ? ctx->candidate_sha256 : "",
                json_string_value(json_object_get(cx, "seed")), ctx->device ? ctx->device : "",
                ctx->compile_flags ? ctx->compile_flags : "",
                ctx->config && ctx->config[0] ? " " : "", ctx->config ? ctx->config : "", rule,
                KILN_VERSION " (git " KILN_GIT_REV ")");
    }
    size_t ncols = 0;
    while (eval_row_columns[ncols])
        ncols++;
    for (size_t i = 0; i < ncols; i++)
        fprintf(f, "%s%s",
                i ? (fmt == EVAL_ROWS_CSV ? "," : " | ") : (fmt == EVAL_ROWS_CSV ? "" : "| "),
                eval_row_columns[i]);
    if (fmt == EVAL_ROWS_CSV) {
        for (size_t i = 0; eval_row_context_columns[i]; i++)
            fprintf(f, ",%s", eval_row_context_columns[i]);
        fputc('\n', f);
    } else {
        fputs(" |\n", f);
        for (size_t i = 0; i < ncols; i++)
            fputs(i < 5 ? "|---" : "|---:", f);
        fputs("|\n", f);
    }
    size_t k;
    const json_t *r;
    json_array_foreach(rows, k, r)
    {
        if (fmt == EVAL_ROWS_CSV)
            fputs(json_string_value(json_object_get(r, "case")), f);
        else
            fprintf(f, "| %s", json_string_value(json_object_get(r, "case")));
        for (size_t i = 1; i < ncols; i++)
            cell(f, fmt, json_object_get(r, eval_row_columns[i]));
        if (fmt == EVAL_ROWS_MARKDOWN) {
            fputs(" |\n", f);
            continue;
        }
        for (size_t i = 0; eval_row_context_columns[i]; i++) {
            const json_t *v = json_object_get(cx, eval_row_context_columns[i]);
            char num[32];
            fputc(',', f);
            if (json_is_integer(v)) {
                snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
                fputs(num, f);
            } else {
                csv_field(f, json_string_value(v) ? json_string_value(v) : "");
            }
        }
        fputc('\n', f);
    }
    json_decref(cx);
}

void eval_cpu_model(char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10))
            continue;
        const char *p = strchr(line, ':');
        if (!p)
            break;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        snprintf(out, cap, "%.*s", (int)strcspn(p, "\n"), p);
        break;
    }
    fclose(f);
}
