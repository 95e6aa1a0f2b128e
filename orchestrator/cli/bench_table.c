/* bench_table.c - KernelBench's table of a bench (bench_kb.h): per problem
 * its status and times against torch, fast_p against torch eager and
 * torch.compile, and the exploit classes kiln refused. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beneath.h"
#include "bench_kb.h"
#include "json_strict.h"
#include "text.h"

/* A finished run's summary.json into *p (and its document into *doc when
 * doc is not NULL); false when there is none or it does not read. */
static bool read_summary(const struct bench *b, const struct bench_problem *bp,
                         struct fastp_problem *p, json_t **doc)
{
    char rel[sizeof(bp->run) + 16], *text = NULL;
    size_t len = 0;
    struct kiln_err e = KILN_ERR_INIT;
    memset(p, 0, sizeof(*p));
    if (doc)
        *doc = NULL;
    if (bp->state != BENCH_RAN && bp->state != BENCH_ARCHIVED)
        return false;
    snprintf(rel, sizeof(rel), "%s/summary.json", bp->run);
    bool ok = beneath_read_file(b->out, rel, FASTP_SUMMARY_MAX_BYTES, &text, &len, &e) == KILN_OK &&
              fastp_summary_parse(text, len, p, &e) == KILN_OK;
    const struct json_strict_rules rules = {.max_bytes = FASTP_SUMMARY_MAX_BYTES};
    if (ok && doc && json_strict_parse("summary.json", text, len, &rules, doc, &e) != KILN_OK)
        *doc = NULL;
    if (!ok)
        memset(p, 0, sizeof(*p));
    free(text);
    return ok;
}

void bench_fastp(const struct bench *b, struct fastp_problem *probs)
{
    for (size_t i = 0; i < b->n; i++)
        read_summary(b, &b->p[i], &probs[i], NULL);
}

/* ---- exploit classes ---- */

/* How a refused candidate's final status maps to the public record's
 * classes (../shared/field-notes.md section 2; SECURITY.md's table): its
 * status, the stage that ended it, a phrase of kiln's reason. The first
 * match wins; a plain wrong answer is no class of its own. */
static const struct {
    const char *status, *stage, *phrase, *label;
} CLASSES[] = {
    {"wrong_answer", NULL, "output not written", "1 output left unwritten (poisoned outputs)"},
    {"wrong_answer", NULL, "inputs modified", "3 inputs mutated (input fingerprints)"},
    {"wrong_answer", NULL, "overwrites_inputs", "3 inputs mutated (input fingerprints)"},
    {"wrong_answer", NULL, "nondeterministic",
     "7 caching or replaying outputs (timed outputs "
     "checked)"},
    {"wrong_answer", NULL, "allocation_slack", "7 stashing results in allocation slack"},
    {"compile_error", NULL, "heap", "7 device-heap state across runs (refused cubin)"},
    {"wrong_answer", NULL, "tampering", "13 kiln's buffers overwritten (pristine copies)"},
    {"wrong_answer", NULL, "out_of_bounds", "13 writes outside the outputs (guards)"},
    {NULL, "held_out", NULL, "10 only the tested sizes (held-out check)"},
    {"inconsistent_timing", NULL, NULL,
     "10/14 fast only on the visible inputs (held-out "
     "timing)"},
    {"impossible_timing", NULL, NULL, "16 faster than the hardware allows (physics floor)"},
    {"sandbox_violation", NULL, NULL, "6/12 a refused system call (sandbox)"},
};
#define NCLASSES (sizeof(CLASSES) / sizeof(CLASSES[0]))

struct class_count {
    size_t candidates, problems;
    char first[BENCH_STEM_MAX]; /* a problem where it was seen */
};

static int classify(const char *status, const char *stage, const char *reason)
{
    for (size_t k = 0; k < NCLASSES; k++)
        if ((!CLASSES[k].status || !strcmp(CLASSES[k].status, status)) &&
            (!CLASSES[k].stage || !strcmp(CLASSES[k].stage, stage)) &&
            (!CLASSES[k].phrase || strstr(reason, CLASSES[k].phrase)))
            return (int)k;
    return -1;
}

/* Counts one run's refused candidates by class (summary.json "candidates":
 * every candidate's final status, held-out check included). */
static void count_run(const json_t *doc, const char *stem, struct class_count *c)
{
    bool seen[NCLASSES] = {false};
    const json_t *cands = json_object_get(doc, "candidates");
    for (size_t i = 0; json_is_array(cands) && i < json_array_size(cands); i++) {
        const json_t *x = json_array_get(cands, i);
        const char *st = json_string_value(json_object_get(x, "status"));
        const char *sg = json_string_value(json_object_get(x, "stage"));
        const char *why = json_string_value(json_object_get(x, "reason"));
        int k = st && sg && why ? classify(st, sg, why) : -1;
        if (k < 0)
            continue;
        c[k].candidates++;
        if (!seen[k]) {
            seen[k] = true;
            if (!c[k].problems++)
                snprintf(c[k].first, sizeof(c[k].first), "%s", stem);
        }
    }
}

static void count_classes(const struct bench *b, struct class_count *c)
{
    memset(c, 0, sizeof(*c) * NCLASSES);
    for (size_t i = 0; i < b->n; i++) {
        struct fastp_problem p;
        json_t *doc = NULL;
        if (read_summary(b, &b->p[i], &p, &doc) && doc)
            count_run(doc, b->p[i].stem, c);
        json_decref(doc);
    }
}

/* ---- the table ---- */

/* What a row's status says: correct, incorrect, or the state with why. */
static const char *row_status(const struct bench_problem *bp, const struct fastp_problem *p)
{
    if (bp->state == BENCH_RAN || bp->state == BENCH_ARCHIVED)
        return p->correct ? "correct" : "incorrect";
    return bench_state_name(bp->state);
}

static json_t *num(double x)
{
    return x > 0 ? json_real(x) : json_null();
}

static json_t *fastp_json(const struct fastp_problem *probs, size_t n, enum fastp_vs vs)
{
    return json_pack("{s:f, s:f, s:f, s:I}", "0", fastp_fraction_vs(probs, n, 0, vs), "1",
                     fastp_fraction_vs(probs, n, 1, vs), "2", fastp_fraction_vs(probs, n, 2, vs),
                     "timed", (json_int_t)fastp_timed(probs, n, vs));
}

static void print_json(const struct bench *b, const struct fastp_problem *probs,
                       const struct class_count *c, bool complete)
{
    json_t *rows = json_array(), *ex = json_array();
    for (size_t i = 0; rows && i < b->n; i++) {
        const struct bench_problem *bp = &b->p[i];
        const struct fastp_problem *p = &probs[i];
        json_array_append_new(
            rows, json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "problem",
                            bp->file, "number", (json_int_t)bp->number, "workload", bp->workload,
                            "status", row_status(bp, p), "reason", bp->reason, "run", bp->run,
                            "best_ms", num(p->correct ? p->best_ms : 0), "torch_eager_ms",
                            num(p->eager_ms), "torch_compile_ms", num(p->compile_ms),
                            "speedup_vs_torch_eager", num(fastp_speedup(p, FASTP_VS_EAGER)),
                            "speedup_vs_torch_compile", num(fastp_speedup(p, FASTP_VS_COMPILE))));
    }
    for (size_t k = 0; ex && k < NCLASSES; k++)
        if (c[k].candidates)
            json_array_append_new(ex, json_pack("{s:s, s:I, s:I}", "class", CLASSES[k].label,
                                                "candidates", (json_int_t)c[k].candidates,
                                                "problems", (json_int_t)c[k].problems));
    json_t *doc =
        json_pack("{s:i, s:s, s:s, s:s, s:b, s:I, s:o, s:o, s:o}", "version", 1, "level", b->level,
                  "backend", b->backend, "proposer", b->proposer, "complete", complete, "problems",
                  (json_int_t)b->n, "rows", rows ? rows : json_null(), "fast_p",
                  json_pack("{s:o, s:o}", "torch_eager", fastp_json(probs, b->n, FASTP_VS_EAGER),
                            "torch_compile", fastp_json(probs, b->n, FASTP_VS_COMPILE)),
                  "exploits_refused", ex ? ex : json_null());
    if (doc)
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER), putchar('\n');
    json_decref(doc);
}

static const char *ms_cell(double x, char *buf, size_t cap)
{
    snprintf(buf, cap, x > 0 ? "%.4f" : "-", x);
    return buf;
}

static const char *x_cell(double x, char *buf, size_t cap)
{
    snprintf(buf, cap, x > 0 ? "%.2fx" : "-", x);
    return buf;
}

static void print_rows(const struct bench *b, const struct fastp_problem *probs)
{
    printf("  %-4s %-52s %-10s %11s %11s %11s %9s %9s\n", "#", "problem", "status", "best ms",
           "eager ms", "compile ms", "vs eager", "vs comp.");
    for (size_t i = 0; i < b->n; i++) {
        const struct bench_problem *bp = &b->p[i];
        const struct fastp_problem *p = &probs[i];
        char n[16] = "-", c1[32], c2[32], c3[32], c4[32], c5[32];
        if (bp->number >= 0)
            snprintf(n, sizeof(n), "%ld", bp->number);
        printf("  %-4s %-52s %-10s %11s %11s %11s %9s %9s\n", n, bp->file, row_status(bp, p),
               ms_cell(p->correct ? p->best_ms : 0, c1, sizeof(c1)),
               ms_cell(p->eager_ms, c2, sizeof(c2)), ms_cell(p->compile_ms, c3, sizeof(c3)),
               x_cell(fastp_speedup(p, FASTP_VS_EAGER), c4, sizeof(c4)),
               x_cell(fastp_speedup(p, FASTP_VS_COMPILE), c5, sizeof(c5)));
        if (bp->reason[0] && !p->correct) {
            printf("       why: ");
            text_fputs_escaped(stdout, bp->reason, strlen(bp->reason));
            printf("\n");
        }
    }
}

static void print_text(const struct bench *b, const struct fastp_problem *probs,
                       const struct class_count *c, bool complete)
{
    printf("kiln bench kernelbench %s: %zu problems, proposer %s, %s backend%s\n", b->level, b->n,
           b->proposer, b->backend,
           complete ? "" : " (not finished: run the same command to go on)");
    print_rows(b, probs);
    static const struct {
        enum fastp_vs vs;
        const char *words;
    } vs[] = {{FASTP_VS_EAGER, "torch eager  "}, {FASTP_VS_COMPILE, "torch.compile"}};
    for (size_t v = 0; v < 2; v++)
        printf("  vs %s: fast_0 %.3f  fast_1 %.3f  fast_2 %.3f  (%zu of %zu problems with a "
               "time)\n",
               vs[v].words, fastp_fraction_vs(probs, b->n, 0, vs[v].vs),
               fastp_fraction_vs(probs, b->n, 1, vs[v].vs),
               fastp_fraction_vs(probs, b->n, 2, vs[v].vs), fastp_timed(probs, b->n, vs[v].vs),
               b->n);
    printf("  (fast_p: the fraction of all %zu problems correct and more than p times as fast; "
           "refused, failed and skipped ones count as not correct)\n",
           b->n);
    size_t any = 0;
    for (size_t k = 0; k < NCLASSES; k++)
        any += c[k].candidates;
    printf("  exploit classes refused: %s\n", any ? "" : "none seen");
    for (size_t k = 0; k < NCLASSES; k++)
        if (c[k].candidates)
            printf("    %-58s %zu candidate%s in %zu problem%s (e.g. %s)\n", CLASSES[k].label,
                   c[k].candidates, c[k].candidates == 1 ? "" : "s", c[k].problems,
                   c[k].problems == 1 ? "" : "s", c[k].first);
}

void bench_print(const struct bench *b, bool json, bool complete)
{
    struct fastp_problem *probs = calloc(b->n ? b->n : 1, sizeof(*probs));
    struct class_count c[NCLASSES];
    if (!probs) {
        fprintf(stderr, "kiln bench: out of memory for the table\n");
        return;
    }
    bench_fastp(b, probs);
    count_classes(b, c);
    if (json)
        print_json(b, probs, c, complete);
    else
        print_text(b, probs, c, complete);
    free(probs);
}
