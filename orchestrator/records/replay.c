#include "replay.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "candidate.h"
#include "digest.h"
#include "envcap.h"
#include "gpuarch.h"
#include "fsutil.h"
#include "manifest.h"
#include "perfcmp.h"
#include "runarchive.h"
#include "runrec.h"
#include "session.h"
#include "strbuf.h"
#include "text.h"
#include "timings.h"
#include "verdict.h"

#define RUN_JSON_MAX     (1u << 20)
#define HISTORY_JSON_MAX (64u << 20)

/* A run to compare: a directory, or an archive opened into one. */
struct side {
    char dir[PATH_MAX];
    struct runarchive ar; /* root[0] when opened from an archive */
    json_t *run, *history, *env;
};

static json_t *load_json(const char *dir, const char *rel, size_t max, bool need,
                         struct kiln_err *err, enum kiln_rc *rc)
{
    char path[PATH_MAX + 64], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc r = fs_read_file(path, max, &text, &len, &e);
    if (r != KILN_OK) {
        if (need && *rc == KILN_OK) {
            *err = e;
            *rc = r;
        }
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!j && need && *rc == KILN_OK)
        *rc = kiln_fail(err, KILN_E_PARSE, "%s: line %d: %s", path, je.line, je.text);
    return j;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static bool is_archive(const char *p)
{
    size_t n = strlen(p);
    return n > 8 && !strcmp(p + n - 8, ".tar.zst");
}

static enum kiln_rc side_open(const char *arg, const struct replay_opts *o, struct side *s,
                              struct kiln_err *err)
{
    memset(s, 0, sizeof(*s));
    enum kiln_rc rc = KILN_OK;
    if (is_archive(arg)) {
        rc = runarchive_open(arg, NULL, NULL, o->allowed_signers, &s->ar, err);
        if (rc == KILN_OK)
            snprintf(s->dir, sizeof(s->dir), "%s", s->ar.run);
    } else {
        struct runrec rr;
        rc = runrec_open(arg, &rr, err);
        if (rc == KILN_OK) {
            snprintf(s->dir, sizeof(s->dir), "%s", rr.dir);
            /* Checked strictly: a record that does not verify is not compared. */
            rc = runrec_manifest_check(&rr, (size_t)-1, NULL, err);
            if (rc == KILN_E_NOTFOUND) {
                if (!o->quiet)
                    fprintf(stderr,
                            "kiln: warning: %s has no MANIFEST: its files cannot be "
                            "verified\n",
                            rr.dir);
                kiln_err_clear(err);
                rc = KILN_OK;
            }
        }
    }
    if (rc == KILN_OK) {
        s->run = load_json(s->dir, "run.json", RUN_JSON_MAX, true, err, &rc);
        s->history = load_json(s->dir, "history.json", HISTORY_JSON_MAX, true, err, &rc);
        json_t *env = load_json(s->dir, "environment.json", RUN_JSON_MAX, false, err, &rc);
        /* Records newer than this kiln are refused, not misread. */
        if (rc == KILN_OK)
            rc = runrec_check_versions(s->run, s->history, env, err);
        /* The reading right after timing is the closest to the clocks the
         * samples ran at; runs stopped before the end have only "before". */
        json_t *at = json_object_get(env, "after_timing");
        s->env = envcap_from_run(s->run, at ? at : json_object_get(env, "before_timing"));
        json_decref(env);
    }
    if (rc == KILN_OK && (!json_is_object(s->run) || !json_is_array(s->history)))
        rc = kiln_fail(err, KILN_E_PARSE, "%s: run.json or history.json is not what kiln writes",
                       s->dir);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "%s", arg);
    return rc;
}

static void side_close(struct side *s)
{
    json_decref(s->run);
    json_decref(s->history);
    json_decref(s->env);
    runarchive_close(&s->ar);
    memset(s, 0, sizeof(*s));
}

/* The SM clock in MHz when known, else 0. */
static double clock_of(const json_t *env)
{
    const char *v = jstr(env, "sm_clock_mhz");
    char *end = NULL;
    double x = v ? strtod(v, &end) : 0;
    return end && end != v && *end == '\0' && x > 0 && x < 1e5 ? x : 0;
}

/* Status of candidates/ID/verdict.json ("" when unreadable). */
static void verdict_status_of(const char *dir, const char *id, char *out, size_t cap)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", id);
    struct kiln_err e;
    enum kiln_rc rc = KILN_OK;
    json_t *v = load_json(dir, rel, VERDICT_MAX_JSON, false, &e, &rc);
    const char *s = jstr(v, "status");
    enum verdict_status st;
    snprintf(out, cap, "%s", s && verdict_status_from_name(s, &st) ? s : "");
    json_decref(v);
}

/* What was run, the key candidates are paired by (never by number: two
 * runs' candidate 002 may be different kernels, and a tuner's candidates
 * share one source and differ in their configuration). The backend, the
 * compiler, the source's SHA-256 and every tunable's value (defaults filled
 * in: the -D defines it was compiled with); kiln's other compile flags
 * follow from the backend and the compiler. */
struct kernel_ident {
    char key[SHA256_HEX_LEN + 1]; /* "" when nothing was run */
    char source[SHA256_HEX_LEN + 1];
    char config[256]; /* "UNROLL=2 VEC=4", "(no tunables)" */
};

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The compiler that applies: the cpu backend has one (its version is in
 * the environment, judged as drift); cuda's is the run's (nvcc, nvrtc). */
static const char *compiler_of(enum kiln_backend b, const json_t *run)
{
    const char *c = jstr(run, "compiler");
    return b == KILN_BACKEND_CPU ? "cc" : c ? c : "nvcc";
}

/* `config`: name -> value as recorded (NULL: the defaults). Settings that
 * are not the source's tunables are part of the key too, so one that was
 * not applied cannot pass for one that was. */
static void kernel_ident_of(enum kiln_backend b, const char *compiler, const char *src, size_t len,
                            const json_t *config, struct kernel_ident *k)
{
    memset(k, 0, sizeof(*k));
    sha256_hex_of(src, len, k->source);
    struct strbuf sb, cfg;
    strbuf_init(&sb);
    strbuf_init(&cfg);
    struct candidate *c = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (candidate_parse(src, len, b, &c, &e) != KILN_OK)
        c = NULL;
    for (size_t i = 0; c && i < c->ntunables; i++) {
        json_t *v = json_object_get(config, c->tunables[i].name);
        strbuf_printf(&cfg, "%s%s=%lld", i ? " " : "", c->tunables[i].name,
                      (long long)(json_is_integer(v) ? json_integer_value(v) : c->tunables[i].def));
    }
    const char *extra[CAND_MAX_TUNABLES];
    size_t nextra = 0;
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)config, name, v)
    {
        bool known = false;
        for (size_t i = 0; c && i < c->ntunables && !known; i++)
            known = !strcmp(c->tunables[i].name, name);
        if (!known && nextra < CAND_MAX_TUNABLES)
            extra[nextra++] = name;
    }
    qsort(extra, nextra, sizeof(extra[0]), cmp_cstr);
    for (size_t i = 0; i < nextra; i++) {
        v = json_object_get(config, extra[i]);
        strbuf_printf(&cfg, "%s%s=%lld(not a tunable)", cfg.len ? " " : "", extra[i],
                      (long long)json_integer_value(v));
    }
    candidate_free(c);
    strbuf_printf(&sb, "%s\n%s\n%s\n%s", kiln_backend_name(b), compiler, k->source,
                  cfg.data ? cfg.data : "");
    if (sb.data)
        sha256_hex_of(sb.data, sb.len, k->key);
    /* Names from a record's verdict.json reach the terminal: escaped. */
    text_escape_control(k->config, sizeof(k->config), cfg.len ? cfg.data : "(no tunables)");
    strbuf_free(&sb);
    strbuf_free(&cfg);
}

/* Candidate `id` of a recorded run: its source and recorded configuration
 * (k->key "" when it has no source: nothing was run). */
static void recorded_ident(const struct side *s, const char *id, struct kernel_ident *k)
{
    static const char *const ext[] = {"cu", "c"};
    memset(k, 0, sizeof(*k));
    const char *bname = jstr(s->run, "backend");
    enum kiln_backend b = kiln_backend_from_name(bname ? bname : "");
    char *src = NULL;
    size_t len = 0;
    for (size_t i = 0; i < 2 && !src; i++) {
        char path[PATH_MAX + 64];
        struct kiln_err e;
        kiln_err_clear(&e);
        snprintf(path, sizeof(path), "%s/candidates/%s/candidate.%s", s->dir, id, ext[i]);
        if (fs_read_file(path, 1u << 20, &src, &len, &e) != KILN_OK)
            src = NULL;
    }
    if (!src || !b) {
        free(src);
        snprintf(k->config, sizeof(k->config), "%s", src ? "unknown backend" : "no source");
        return;
    }
    char vrel[64];
    snprintf(vrel, sizeof(vrel), "candidates/%s/verdict.json", id);
    enum kiln_rc ign = KILN_OK;
    struct kiln_err ie;
    json_t *vj = load_json(s->dir, vrel, VERDICT_MAX_JSON, false, &ie, &ign);
    kernel_ident_of(b, compiler_of(b, s->run), src, len, json_object_get(vj, "config"), k);
    json_decref(vj);
    free(src);
}

static enum kiln_rc read_timings(const char *path, struct timings *t, bool *present,
                                 struct kiln_err *err)
{
    memset(t, 0, sizeof(*t));
    char *text = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    *present = false;
    if (fs_read_file(path, TIMINGS_MAX_BYTES, &text, &len, &e) != KILN_OK)
        return KILN_OK; /* a candidate that never ran has none */
    enum kiln_rc rc = timings_parse(text, len, t, err);
    free(text);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "%s", path);
    else
        *present = true;
    return rc;
}

/* Every set's samples of case `name`, pooled (malloc'd; *n may be 0). */
static double *pooled(const struct timings *t, const char *name, size_t *n)
{
    size_t total = 0;
    for (size_t i = 0; i < t->ncases; i++)
        if (!strcmp(t->cases[i].name, name))
            total += t->cases[i].nsamples;
    double *x = malloc((total ? total : 1) * sizeof(double));
    *n = 0;
    for (size_t i = 0; x && i < t->ncases; i++)
        if (!strcmp(t->cases[i].name, name)) {
            memcpy(x + *n, t->cases[i].samples_ms, t->cases[i].nsamples * sizeof(double));
            *n += t->cases[i].nsamples;
        }
    return x;
}

/* A CSV field, quoted when it holds a comma, quote or line break (RFC
 * 4180); the `why` texts are kiln's own, case names are plain. */
static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

struct report {
    const struct replay_opts *o;
    struct replay_result *res;
    json_t *cands;    /* --json */
    json_t *unpaired; /* --json */
    double clock_scale;
    const json_t *env_before, *env_now; /* borrowed */
    /* The architectures the two sides compiled for ("" for cpu); timings
     * of two architectures are never judged against each other. */
    char arch_before[GPUARCH_NAME_MAX], arch_now[GPUARCH_NAME_MAX];
};

/* Why the timings of a pair are not judged, or NULL when they are. */
static const char *timings_not_compared(const struct report *r, char *buf, size_t cap)
{
    if (!strcmp(r->arch_before, r->arch_now))
        return NULL;
    snprintf(buf, cap,
             "compiled for %s before and %s now: timings from two GPU architectures are "
             "not compared",
             r->arch_before[0] ? r->arch_before : "the cpu",
             r->arch_now[0] ? r->arch_now : "the cpu");
    return buf;
}

/* Judges one pair of runs of the same kernel (`k`): candidate `id` before,
 * `id_now` now. Status equal, then per case. `new_status` and `nt` are the
 * new side. */
/* One candidate's two sides, being judged. */
struct pair {
    const char *id, *id_now;
    const char *old_status, *new_status;
    bool equal;
    json_t *cj; /* its entry in --json's candidates */
};

static void print_pair(const struct report *r, const struct pair *pr,
                       const struct kernel_ident *kern)
{
    char now[32] = "";
    if (strcmp(pr->id, pr->id_now))
        snprintf(now, sizeof(now), " (now %s)", pr->id_now);
    if (r->o->format == REPLAY_TEXT)
        printf("candidate %s%s: verdict %s -> %s%s\n  kernel: %s, source %.12s\n", pr->id, now,
               pr->old_status[0] ? pr->old_status : "?", pr->new_status[0] ? pr->new_status : "?",
               pr->equal ? " (equal)" : "  CHANGED", kern->config, kern->source);
    else if (r->o->format == REPLAY_MARKDOWN)
        printf("| %s%s | %s | %s -> %s | %s | | | |\n", pr->id, now, kern->config, pr->old_status,
               pr->new_status, pr->equal ? "equal" : "**CHANGED**");
}

/* True (and said) when the pair's timings are not to be judged. */
static bool timings_skipped(const struct report *r, const struct pair *pr)
{
    char whybuf[200];
    const char *skip = timings_not_compared(r, whybuf, sizeof(whybuf));
    if (!skip)
        return false;
    r->res->not_compared++;
    json_object_set_new(pr->cj, "timings_not_compared", json_string(skip));
    if (r->o->format == REPLAY_TEXT)
        printf("  timings not judged: %s\n", skip);
    return true;
}

/* The host load on both sides, "0.42 -> 6.21 on 2 CPUs" (the 1 minute
 * averages), for a SLOW or FAST call: a busy host explains one. "" when
 * neither side recorded it. */
static void load_beside(const struct report *r, const struct perf_judgement *j, char *out,
                        size_t cap)
{
    out[0] = '\0';
    if (j->call != PERF_SLOW && j->call != PERF_FAST)
        return;
    const char *a = jstr(r->env_before, "host_load"), *b = jstr(r->env_now, "host_load");
    double la = -1, lb = -1;
    if (a)
        sscanf(a, "%lf", &la);
    if (b)
        sscanf(b, "%lf", &lb);
    if (la < 0 && lb < 0)
        return;
    const char *cpus = b && strstr(b, " on ") ? strstr(b, " on ") : a ? strstr(a, " on ") : NULL;
    char x[32] = "?", y[32] = "?";
    if (la >= 0)
        snprintf(x, sizeof(x), "%.2f", la);
    if (lb >= 0)
        snprintf(y, sizeof(y), "%.2f", lb);
    snprintf(out, cap, "; host load %s -> %s%s", x, y, cpus ? cpus : "");
}

static void print_case(const struct report *r, const struct pair *pr, const char *name,
                       const struct perf_judgement *j)
{
    char load[96];
    load_beside(r, j, load, sizeof(load));
    if (r->o->format == REPLAY_TEXT)
        printf("  %-16s %-9s median %.4g -> %.4g ms (%zu, %zu samples)  %s%s\n", name,
               perf_call_name(j->call), j->old_median, j->new_median, j->n_old, j->n_new, j->why,
               load);
    else if (r->o->format == REPLAY_MARKDOWN)
        printf("| %s | %s | | | **%s** | %.4g -> %.4g ms | %s%s |\n", pr->id, name,
               perf_call_name(j->call), j->old_median, j->new_median, j->why, load);
    else if (r->o->format == REPLAY_CSV) {
        printf("%s,%s,%s,%s,%d,%s,%.6g,%.6g,%.6g,", pr->id, name, pr->old_status, pr->new_status,
               pr->equal, perf_call_name(j->call), j->old_median, j->new_median, j->ratio);
        csv_field(j->why);
        printf(",%s\n", pr->id_now);
    }
}

static json_t *case_json(const char *name, const struct perf_judgement *j)
{
    return json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:s}", "case", name,
                     "call", perf_call_name(j->call), "median_before_ms", j->old_median,
                     "median_now_ms", j->new_median, "ratio", j->ratio, "ratio_lo", j->lo,
                     "ratio_hi", j->hi, "samples_before", (json_int_t)j->n_old, "samples_now",
                     (json_int_t)j->n_new, "clock_scale", j->clock_scale, "why", j->why);
}

/* Case `name`'s samples before (`ot`) against now (`nt`; NULL: none). */
static enum kiln_rc judge_case(const struct report *r, const struct pair *pr, const char *name,
                               const struct timings *ot, const struct timings *nt,
                               struct kiln_err *err)
{
    size_t na = 0, nb = 0;
    double *a = pooled(ot, name, &na), *b = nt ? pooled(nt, name, &nb) : NULL;
    struct perf_judgement j;
    enum kiln_rc rc;
    if (!a || (nt && !b))
        rc = kiln_fail(err, KILN_E_NOMEM, "comparing timings: out of memory");
    else
        rc = perfcmp_judge(a, na, b ? b : a, b ? nb : 0, r->clock_scale, NULL, &j, err);
    free(a);
    free(b);
    if (rc != KILN_OK) {
        kiln_err_prefix(err, "candidate %s case %s", pr->id, name);
        return rc;
    }
    size_t *count[] = {&r->res->same, &r->res->fast, &r->res->slow, &r->res->ambiguous};
    (*count[j.call])++;
    print_case(r, pr, name, &j);
    json_array_append_new(json_object_get(pr->cj, "cases"), case_json(name, &j));
    return KILN_OK;
}

/* Whether case i's name came earlier in t's list. */
static bool listed_before(const struct timings *t, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (!strcmp(t->cases[k].name, t->cases[i].name))
            return true;
    return false;
}

static enum kiln_rc judge_candidate(struct report *r, const char *id, const char *id_now,
                                    const struct kernel_ident *kern, const char *old_status,
                                    const char *new_status, const struct timings *ot,
                                    const struct timings *nt, struct kiln_err *err)
{
    struct pair pr = {id, id_now, old_status, new_status, !strcmp(old_status, new_status), NULL};
    r->res->candidates++;
    if (!pr.equal)
        r->res->verdicts_changed++;
    /* same_source: always true since pairs are made of one kernel (kept
     * for readers of version 1). */
    pr.cj = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:{s:s, s:s}, s:[]}", "candidate", id,
                      "candidate_now", id_now, "verdict_before", old_status, "verdict_now",
                      new_status, "verdict_equal", pr.equal, "same_source", true, "kernel",
                      "source_sha256", kern->source, "config", kern->config, "cases");
    print_pair(r, &pr, kern);
    if (timings_skipped(r, &pr))
        ot = NULL;
    enum kiln_rc rc = KILN_OK;
    size_t judged = 0;
    /* Cases in the order the old side lists them, each once. */
    for (size_t i = 0; rc == KILN_OK && ot && i < ot->ncases; i++) {
        if (listed_before(ot, i))
            continue;
        rc = judge_case(r, &pr, ot->cases[i].name, ot, nt, err);
        judged += rc == KILN_OK;
    }
    if (r->o->format == REPLAY_CSV && judged == 0 && rc == KILN_OK)
        printf("%s,,%s,%s,%d,,,,,,%s\n", id, old_status, new_status, pr.equal, id_now);
    json_array_append_new(r->cands, pr.cj);
    return rc;
}

/* A candidate that could not be paired with a run of the same kernel:
 * listed, never judged. `side`: "before" or "now". */
static void report_unpaired(struct report *r, const char *side, const char *id,
                            const struct kernel_ident *k, const char *why)
{
    r->res->unpaired++;
    json_array_append_new(r->unpaired,
                          json_pack("{s:s, s:s, s:s?, s:s, s:s}", "run", side, "candidate", id,
                                    "source_sha256", k->source[0] ? k->source : NULL, "config",
                                    k->config, "why", why));
    bool before = !strcmp(side, "before");
    if (r->o->format == REPLAY_TEXT)
        printf("unpaired: candidate %s of the %s run [%s, source %.12s]: %s\n", id,
               before ? "first" : "second", k->config, k->source[0] ? k->source : "-", why);
    else if (r->o->format == REPLAY_MARKDOWN)
        printf("| %s | %s | unpaired (%s only) | | | | %s |\n", id, k->config, side, why);
    else if (r->o->format == REPLAY_CSV) {
        printf("%s,,,,,UNPAIRED,,,,", before ? id : "");
        csv_field(why);
        printf(",%s\n", before ? "" : id);
    }
}

/* Environment drift and the clock scale, printed before any timing. */
static void environment(struct report *r, const json_t *before, const json_t *now,
                        const char *now_label)
{
    char drift[2048];
    r->res->drift = envcap_drift(before, now, drift, sizeof(drift));
    r->res->arch_changed = strcmp(r->arch_before, r->arch_now) != 0;
    r->env_before = before;
    r->env_now = now;
    double ca = clock_of(before), cb = clock_of(now);
    r->clock_scale = ca > 0 && cb > 0 ? cb / ca : 1.0;
    if (r->o->format == REPLAY_CSV)
        printf("candidate,case,verdict_before,verdict_now,verdict_equal,call,median_before_ms,"
               "median_now_ms,ratio,why,candidate_now\n");
    if (r->o->format == REPLAY_JSON || r->o->format == REPLAY_CSV)
        return;
    bool md = r->o->format == REPLAY_MARKDOWN;
    printf("%senvironment (recorded -> %s):\n", md ? "```\n" : "", now_label);
    printf("  %-18s %s -> %s\n", "target arch", r->arch_before[0] ? r->arch_before : "-",
           r->arch_now[0] ? r->arch_now : "-");
    static const char *const keys[] = {
        "gpu_model", "gpu_uuid",     "driver",        "cuda_toolkit_kiln", "nvcc",
        "cc",        "sm_clock_mhz", "mem_clock_mhz", "host_kernel",       "host_load"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        printf("  %-18s %s -> %s\n", keys[i], jstr(before, keys[i]) ? jstr(before, keys[i]) : "?",
               jstr(now, keys[i]) ? jstr(now, keys[i]) : "?");
    if (strcmp(r->arch_before, r->arch_now))
        printf("ARCH: candidates were compiled for %s before and %s now: verdicts are "
               "compared, timings are not (SAME, FAST and SLOW need one architecture)\n",
               r->arch_before[0] ? r->arch_before : "the cpu",
               r->arch_now[0] ? r->arch_now : "the cpu");
    if (r->res->drift)
        printf("DRIFT: %zu setting%s that matter for timing changed; timings below are "
               "judged anyway, read them with this in mind:\n%s",
               r->res->drift, r->res->drift == 1 ? "" : "s", drift);
    else
        printf("no environment drift in what both sides know\n");
    if (r->clock_scale != 1.0)
        printf("timings are clock-normalised: new samples x %.4f (SM clock %.0f -> %.0f MHz)\n",
               r->clock_scale, ca, cb);
    else
        printf("timings are not clock-normalised: %s\n",
               ca > 0 && cb > 0 ? "the SM clocks are equal"
                                : "the SM clock at timing was not recorded on both sides");
    if (md)
        printf("```\n\n| candidate | case | verdict | | call | median | why |\n"
               "| --- | --- | --- | --- | --- | --- | --- |\n");
}

static void finish(struct report *r, const char *what)
{
    struct replay_result *x = r->res;
    if (r->o->format == REPLAY_JSON) {
        json_t *doc =
            json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:O}", "version",
                      REPLAY_JSON_VERSION, "command", what, "candidates", (json_int_t)x->candidates,
                      "verdicts_changed", (json_int_t)x->verdicts_changed, "slow",
                      (json_int_t)x->slow, "fast", (json_int_t)x->fast, "same", (json_int_t)x->same,
                      "ambiguous", (json_int_t)x->ambiguous, "environment_drift",
                      (json_int_t)x->drift, "results", json_incref(r->cands), "unpaired_count",
                      (json_int_t)x->unpaired, "unpaired", r->unpaired);
        if (doc)
            json_object_set_new(doc, "arch",
                                json_pack("{s:s?, s:s?, s:b, s:I}", "before",
                                          r->arch_before[0] ? r->arch_before : NULL, "now",
                                          r->arch_now[0] ? r->arch_now : NULL, "changed",
                                          x->arch_changed, "timings_not_compared",
                                          (json_int_t)x->not_compared));
        if (doc)
            json_object_set_new(doc, "environment",
                                json_pack("{s:O?, s:O?, s:f}", "recorded", r->env_before, "now",
                                          r->env_now, "clock_scale", r->clock_scale));
        if (doc)
            json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(doc);
        return;
    }
    if (r->o->format == REPLAY_CSV) /* the table alone; the exit status says the rest */
        return;
    printf("%s%s: %zu candidate%s, %zu verdict%s changed; cases: %zu SAME, %zu FAST, %zu SLOW, "
           "%zu AMBIGUOUS; %zu unpaired (not compared: no run of the same kernel on the other "
           "side)\n",
           r->o->format == REPLAY_MARKDOWN ? "\n" : "", what, x->candidates,
           x->candidates == 1 ? "" : "s", x->verdicts_changed, x->verdicts_changed == 1 ? "" : "s",
           x->same, x->fast, x->slow, x->ambiguous, x->unpaired);
    if (x->not_compared)
        printf("%zu candidate%s' timings not judged: compiled for %s before and %s now\n",
               x->not_compared, x->not_compared == 1 ? "'s" : "s", r->arch_before, r->arch_now);
}

/* The candidates a run recorded, each with what was run. */
struct recorded {
    char id[4];
    struct kernel_ident k;
    bool paired;
};

static enum kiln_rc recorded_list(const struct side *s, struct recorded **out, size_t *n,
                                  struct kiln_err *err)
{
    size_t nh = json_array_size(s->history);
    *n = 0;
    *out = calloc(nh ? nh : 1, sizeof(**out));
    if (!*out)
        return kiln_fail(err, KILN_E_NOMEM, "compare: out of memory");
    for (size_t i = 0; i < nh; i++) {
        const char *id = jstr(json_array_get(s->history, i), "candidate");
        if (!id || strlen(id) != 3 || strspn(id, "0123456789") != 3)
            continue;
        struct recorded *c = &(*out)[(*n)++];
        snprintf(c->id, sizeof(c->id), "%s", id);
        recorded_ident(s, id, &c->k);
    }
    return KILN_OK;
}

/* b's partner for `a`: a run of the same kernel, the same number first. */
static struct recorded *partner(const struct recorded *a, struct recorded *b, size_t nb)
{
    if (!a->k.key[0])
        return NULL;
    for (size_t k = 0; k < nb; k++)
        if (!b[k].paired && !strcmp(b[k].id, a->id) && !strcmp(b[k].k.key, a->k.key))
            return &b[k];
    for (size_t k = 0; k < nb; k++)
        if (!b[k].paired && !strcmp(b[k].k.key, a->k.key))
            return &b[k];
    return NULL;
}

static enum kiln_rc compare_pair(struct report *r, const struct side *sa, const struct side *sb,
                                 const struct recorded *ca, const struct recorded *cb,
                                 struct kiln_err *err)
{
    char sta[32], stb[32], pa[PATH_MAX + 64], pb[PATH_MAX + 64];
    verdict_status_of(sa->dir, ca->id, sta, sizeof(sta));
    verdict_status_of(sb->dir, cb->id, stb, sizeof(stb));
    snprintf(pa, sizeof(pa), "%s/candidates/%s/timings.json", sa->dir, ca->id);
    snprintf(pb, sizeof(pb), "%s/candidates/%s/timings.json", sb->dir, cb->id);
    struct timings ta, tb;
    bool ha = false, hb = false;
    memset(&tb, 0, sizeof(tb));
    enum kiln_rc rc = read_timings(pa, &ta, &ha, err);
    if (rc == KILN_OK)
        rc = read_timings(pb, &tb, &hb, err);
    if (rc == KILN_OK)
        rc = judge_candidate(r, ca->id, cb->id, &ca->k, sta, stb, ha ? &ta : NULL, hb ? &tb : NULL,
                             err);
    timings_free(&ta);
    timings_free(&tb);
    return rc;
}

static const char *unpaired_why(const struct kernel_ident *k)
{
    if (k->key[0])
        return "no candidate of the other run ran the same kernel (source, configuration, "
               "compiler, backend)";
    return strcmp(k->config, "no source") ? "its run.json names no backend this kiln knows"
                                          : "nothing was run (no source recorded)";
}

enum kiln_rc replay_compare(const char *a, const char *b, const struct replay_opts *o,
                            struct replay_result *res, struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    struct side sa, sb;
    memset(&sb, 0, sizeof(sb));
    struct recorded *ca = NULL, *cb = NULL;
    size_t na = 0, nb = 0;
    enum kiln_rc rc = side_open(a, o, &sa, err);
    if (rc == KILN_OK)
        rc = side_open(b, o, &sb, err);
    if (rc == KILN_OK)
        rc = recorded_list(&sa, &ca, &na, err);
    if (rc == KILN_OK)
        rc = recorded_list(&sb, &cb, &nb, err);
    struct report r = {o, res, json_array(), json_array(), 1.0, NULL, NULL, "", ""};
    if (rc == KILN_OK) {
        runrec_target_arch(sa.run, r.arch_before);
        runrec_target_arch(sb.run, r.arch_now);
        if (o->format == REPLAY_MARKDOWN)
            printf("## kiln compare\n\n`%s` (before) against `%s` (now)\n\n", a, b);
        environment(&r, sa.env, sb.env, "second run");
    }
    for (size_t i = 0; rc == KILN_OK && i < na; i++) {
        struct recorded *p = partner(&ca[i], cb, nb);
        if (!p)
            continue;
        ca[i].paired = p->paired = true;
        rc = compare_pair(&r, &sa, &sb, &ca[i], p, err);
    }
    for (size_t i = 0; rc == KILN_OK && i < na; i++)
        if (!ca[i].paired)
            report_unpaired(&r, "before", ca[i].id, &ca[i].k, unpaired_why(&ca[i].k));
    for (size_t i = 0; rc == KILN_OK && i < nb; i++)
        if (!cb[i].paired)
            report_unpaired(&r, "now", cb[i].id, &cb[i].k, unpaired_why(&cb[i].k));
    if (rc == KILN_OK)
        finish(&r, "kiln compare");
    free(ca);
    free(cb);
    json_decref(r.cands);
    json_decref(r.unpaired);
    side_close(&sa);
    side_close(&sb);
    return rc;
}

/* Tunable values in the candidate's order: defaults, then the recorded ones. */
/* `ran` (NULL when none) is what will be applied, name -> value, for the
 * check that it is the recorded kernel. */
static void tunables_of(const char *src, size_t len, enum kiln_backend b, const json_t *config,
                        int64_t *vals, bool *any, json_t **ran)
{
    struct candidate *c = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    *any = false;
    *ran = NULL;
    if (candidate_parse(src, len, b, &c, &e) != KILN_OK)
        return;
    *ran = c->ntunables ? json_object() : NULL;
    for (size_t i = 0; i < c->ntunables; i++) {
        json_t *v = json_object_get(config, c->tunables[i].name);
        vals[i] = json_is_integer(v) ? json_integer_value(v) : c->tunables[i].def;
        json_object_set_new(*ran, c->tunables[i].name, json_integer((json_int_t)vals[i]));
        *any = true;
    }
    candidate_free(c);
}

/* A recorded candidate re-run, judged once all have run. */
struct redone {
    char id[4], old[32], now[32];
    struct timings ta, tb;
    bool ha, hb;
    struct kernel_ident k;
    bool unpaired; /* the recorded kernel could not be re-run as recorded */
};

/* One replay of an archived run: the run, the session re-running it, and
 * what was re-run. The paths live as long as the session that names them. */
struct replay {
    const struct replay_opts *o;
    struct side s;
    const char *bname;
    enum kiln_backend backend;
    enum compile_tool tool;
    int gpu;
    char wdir[PATH_MAX + 16], work[PATH_MAX + 16], refpath[PATH_MAX + 32];
    char given_in[PATH_MAX + 32];
    struct eval_session *sess;
    struct redone *done;
    size_t nr;
};

/* The recorded backend, compiler and GPU, and room for every candidate. */
static enum kiln_rc replay_settings(struct replay *p, struct kiln_err *err)
{
    p->bname = jstr(p->s.run, "backend");
    p->backend = kiln_backend_from_name(p->bname ? p->bname : "");
    p->tool = COMPILE_NVCC;
    enum kiln_rc rc = KILN_OK;
    if (!runrec_compiler(p->s.run, &p->tool))
        rc = kiln_fail(err, KILN_E_PARSE, "run.json: unknown compiler");
    if (rc == KILN_OK && !p->backend)
        rc = kiln_fail(err, KILN_E_PARSE, "run.json: unknown backend");
    p->gpu = p->o->gpu >= 0 ? p->o->gpu
                            : (int)json_integer_value(json_object_get(p->s.run, "gpu_index"));
    size_t nh = json_array_size(p->s.history);
    p->done = calloc(nh ? nh : 1, sizeof(*p->done));
    if (rc == KILN_OK && !p->done)
        rc = kiln_fail(err, KILN_E_NOMEM, "replay: out of memory");
    return rc;
}

/* The archived inputs; a run made without --keep-inputs archived none
 * (then its given/inputs, or inputs.py again from the recorded seed:
 * the same data, since inputs.py is seeded). NULL: regenerate them. */
static const char *replay_input_cases(struct replay *p)
{
    char inputs[PATH_MAX + 32];
    struct stat st;
    snprintf(inputs, sizeof(inputs), "%s/work/inputs", p->s.dir);
    snprintf(p->given_in, sizeof(p->given_in), "%s/given/inputs", p->s.dir);
    if (lstat(inputs, &st) == 0 && S_ISDIR(st.st_mode))
        return p->s.dir;
    if (lstat(p->given_in, &st) == 0 && S_ISDIR(st.st_mode))
        return p->given_in;
    return NULL;
}

/* A session set up as the run's was, its reference run first. */
static enum kiln_rc replay_open_session(struct replay *p, struct report *r, struct kiln_err *err)
{
    const struct replay_opts *o = p->o;
    snprintf(p->wdir, sizeof(p->wdir), "%s/workload", p->s.dir);
    snprintf(p->work, sizeof(p->work), "%s/replay-work", p->s.ar.root);
    snprintf(p->refpath, sizeof(p->refpath), "%s/given/reference.py", p->s.dir);
    struct stat st;
    bool given_ref = lstat(p->refpath, &st) == 0 && S_ISREG(st.st_mode);
    const char *input_cases = replay_input_cases(p);
    if (!input_cases && !o->quiet && o->format == REPLAY_TEXT)
        printf("the run did not keep its inputs: regenerating them from its seed\n");
    const json_t *seeds = json_object_get(p->s.run, "seeds");
    struct eval_session_opts so = {
        .workload = p->wdir,
        .backend = p->backend,
        .gpu = p->gpu,
        .work_dir = p->work,
        .seed = (uint64_t)json_integer_value(json_object_get(seeds, "inputs")),
        .compiler = p->tool,
        .verbose = !o->quiet && o->format == REPLAY_TEXT,
        .input_cases = input_cases,
        .reference = given_ref ? p->refpath : NULL,
    };
    runrec_timed_runs(p->s.run, &so.warmups, &so.iterations);
    runrec_timing_rule(p->s.run, &so.adaptive, &so.target_rse, &so.budget_ms);
    enum kiln_rc rc = fs_mkdirs(p->work, err);
    if (rc == KILN_OK)
        rc = eval_session_open(&so, &p->sess, err);
    if (rc != KILN_OK)
        return rc;
    /* This GPU's own architecture: a kernel compiled for the recorded
     * one might not load here; its timings are then not judged. */
    const struct eval_target *t = eval_session_target(p->sess);
    runrec_target_arch(p->s.run, r->arch_before);
    snprintf(r->arch_now, sizeof(r->arch_now), "%s", t ? t->arch : "");
    return eval_session_reference(p->sess, err);
}

/* d names the recorded kernel; false when its recorded configuration,
 * applied to its source, would make another kernel. */
static bool redo_identify(struct replay *p, const char *id, const char *src, size_t len,
                          struct redone *d, int64_t *vals, bool *any)
{
    char vrel[64];
    snprintf(vrel, sizeof(vrel), "candidates/%s/verdict.json", id);
    enum kiln_rc ign = KILN_OK;
    struct kiln_err ie;
    json_t *vj = load_json(p->s.dir, vrel, VERDICT_MAX_JSON, false, &ie, &ign);
    json_t *ran = NULL;
    tunables_of(src, len, p->backend, json_object_get(vj, "config"), vals, any, &ran);
    struct kernel_ident now_k;
    const char *cc = compiler_of(p->backend, p->s.run);
    kernel_ident_of(p->backend, cc, src, len, json_object_get(vj, "config"), &d->k);
    kernel_ident_of(p->backend, cc, src, len, ran, &now_k);
    json_decref(vj);
    json_decref(ran);
    return strcmp(d->k.key, now_k.key) == 0;
}

/* d run again; its recorded and new timings read for judging. */
static enum kiln_rc redo_run(struct replay *p, struct redone *d, const char *src, size_t len,
                             const int64_t *vals, struct kiln_err *err)
{
    struct eval_outcome out;
    memset(&out, 0, sizeof(out));
    enum kiln_rc rc = eval_session_run(p->sess, d->id, src, len, vals, &out, err);
    char cdir[PATH_MAX], pa[PATH_MAX + 64], pb[PATH_MAX + 64];
    eval_session_candidate_dir(p->sess, d->id, false, cdir, sizeof(cdir));
    snprintf(pa, sizeof(pa), "%s/candidates/%s/timings.json", p->s.dir, d->id);
    snprintf(pb, sizeof(pb), "%s/run/timings.json", cdir);
    snprintf(d->now, sizeof(d->now), "%s", verdict_status_name(out.v.status));
    if (rc == KILN_OK)
        rc = read_timings(pa, &d->ta, &d->ha, err);
    if (rc == KILN_OK)
        rc = read_timings(pb, &d->tb, &d->hb, err);
    eval_outcome_free(&out);
    struct kiln_err rm;
    (void)(fs_remove_tree(cdir, &rm) == KILN_OK); /* big outputs: not kept */
    return rc;
}

/* History entry i re-run, unless nothing was run for it or it cannot be
 * re-run as recorded. */
static enum kiln_rc redo_candidate(struct replay *p, size_t i, struct kiln_err *err)
{
    const json_t *h = json_array_get(p->s.history, i);
    const char *id = jstr(h, "candidate"), *stage = jstr(h, "stage");
    if (!id || strlen(id) != 3 || strspn(id, "0123456789") != 3)
        return kiln_fail(err, KILN_E_PARSE, "history.json entry %zu: no candidate number", i);
    char old[32], src_path[PATH_MAX + 64];
    verdict_status_of(p->s.dir, id, old, sizeof(old));
    if (stage && !strcmp(stage, "propose")) { /* nothing was run: nothing to redo */
        if (p->o->format == REPLAY_TEXT)
            printf("candidate %s: %s in the run, before anything was compiled: nothing to "
                   "re-run\n",
                   id, old);
        return KILN_OK;
    }
    snprintf(src_path, sizeof(src_path), "%s/candidates/%s/candidate.%s", p->s.dir, id,
             p->backend == KILN_BACKEND_CUDA ? "cu" : "c");
    char *src = NULL;
    size_t len = 0;
    enum kiln_rc rc = fs_read_file(src_path, 1u << 20, &src, &len, err);
    if (rc != KILN_OK)
        return rc;
    int64_t vals[CAND_MAX_TUNABLES];
    bool any = false;
    struct redone *d = &p->done[p->nr++];
    snprintf(d->id, sizeof(d->id), "%s", id);
    snprintf(d->old, sizeof(d->old), "%s", old);
    /* Another kernel than the recorded one would be judged against its
     * samples: not run, listed as unpaired. */
    d->unpaired = !redo_identify(p, id, src, len, d, vals, &any);
    if (!d->unpaired)
        rc = redo_run(p, d, src, len, any ? vals : NULL, err);
    free(src);
    return rc;
}

/* Every re-run judged against its record, once this host's clocks after
 * the timing are known. */
static enum kiln_rc replay_judge(struct replay *p, struct report *r, json_t **now,
                                 struct kiln_err *err)
{
    enum kiln_rc rc = envcap_now(p->backend == KILN_BACKEND_CUDA ? p->gpu : -1, now, err);
    if (rc == KILN_OK)
        environment(r, p->s.env, *now, "this host after the replay's timing");
    for (size_t i = 0; rc == KILN_OK && i < p->nr; i++) {
        struct redone *d = &p->done[i];
        if (d->unpaired)
            report_unpaired(r, "before", d->id, &d->k,
                            "its recorded configuration cannot be applied to its source: "
                            "re-running it would run another kernel");
        else
            rc = judge_candidate(r, d->id, d->id, &d->k, d->old, d->now, d->ha ? &d->ta : NULL,
                                 d->hb ? &d->tb : NULL, err);
    }
    return rc;
}

static void replay_free(struct replay *p)
{
    for (size_t i = 0; i < p->nr; i++) {
        timings_free(&p->done[i].ta);
        timings_free(&p->done[i].tb);
    }
    free(p->done);
    eval_session_close(p->sess);
    side_close(&p->s);
}

enum kiln_rc replay_archive(const char *archive, const struct replay_opts *o,
                            struct replay_result *res, struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    if (!is_archive(archive))
        return kiln_fail(err, KILN_E_USAGE, "%s: kiln replay takes a .tar.zst made by kiln archive",
                         archive);
    struct replay p;
    memset(&p, 0, sizeof(p));
    p.o = o;
    enum kiln_rc rc = side_open(archive, o, &p.s, err);
    if (rc != KILN_OK)
        return rc;
    rc = replay_settings(&p, err);
    json_t *now = NULL;
    struct report r = {o, res, json_array(), json_array(), 1.0, NULL, NULL, "", ""};
    /* Everything is run first and judged after: the clocks right after this
     * replay's timing are what the run's own after-timing reading compares to. */
    if (rc == KILN_OK && o->format == REPLAY_TEXT)
        printf("kiln replay %s: %zu recorded candidates, %s backend\n", archive,
               json_array_size(p.s.history), p.bname);
    if (rc == KILN_OK)
        rc = replay_open_session(&p, &r, err);
    for (size_t i = 0; rc == KILN_OK && i < json_array_size(p.s.history); i++)
        rc = redo_candidate(&p, i, err);
    if (rc == KILN_OK)
        rc = replay_judge(&p, &r, &now, err);
    if (rc == KILN_OK)
        finish(&r, "kiln replay");
    json_decref(now);
    json_decref(r.cands);
    json_decref(r.unpaired);
    replay_free(&p);
    return rc;
}
