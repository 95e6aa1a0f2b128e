/* bench_eager.c - `kiln bench kernelbench LEVEL_DIR --baseline-only`
 * (bench_kb.h): a level's torch eager times at the problems' own sizes,
 * KernelBench's own baseline, in one sandbox. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beneath.h"
#include "bench_kb.h"
#include "text.h"
#include "torch_baseline.h"

static json_t *doc_of(const struct bench *b, const struct torch_problem_time *t, size_t timed,
                      const char *detail)
{
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < b->n; i++)
        json_array_append_new(
            rows, json_pack("{s:s, s:I, s:o, s:s}", "problem", b->p[i].file, "number",
                            (json_int_t)b->p[i].number, "torch_eager_ms",
                            t[i].ms > 0 ? json_real(t[i].ms) : json_null(), "reason", t[i].detail));
    return json_pack("{s:i, s:s, s:s, s:I, s:I, s:s, s:o}", "version", 1, "level", b->level,
                     "backend", b->backend, "problems", (json_int_t)b->n, "timed",
                     (json_int_t)timed, "detail", detail, "rows", rows ? rows : json_null());
}

static void print_text(const struct bench *b, const struct torch_problem_time *t, size_t timed,
                       const char *detail)
{
    printf("kiln bench kernelbench %s --baseline-only: torch eager at each problem's own "
           "sizes, %s backend\n",
           b->level, b->backend);
    printf("  %-4s %-76s %12s\n", "#", "problem", "eager ms");
    for (size_t i = 0; i < b->n; i++) {
        char n[16] = "-", ms[32] = "-";
        if (b->p[i].number >= 0)
            snprintf(n, sizeof(n), "%ld", b->p[i].number);
        if (t[i].ms > 0)
            snprintf(ms, sizeof(ms), "%.4f", t[i].ms);
        printf("  %-4s %-76s %12s\n", n, b->p[i].file, ms);
        if (!(t[i].ms > 0)) {
            printf("       why: ");
            text_fputs_escaped(stdout, t[i].detail, strlen(t[i].detail));
            printf("\n");
        }
    }
    printf("  %zu of %zu problems timed%s%s\n", timed, b->n, detail[0] ? "; " : "", detail);
}

enum kiln_rc bench_eager(struct bench *b, int gpu, int warmups, int iterations, long timeout_s,
                         bool json, struct kiln_err *err)
{
    enum kiln_rc rc = bench_list_level(b, err);
    struct torch_problem_time *t = rc == KILN_OK ? calloc(b->n, sizeof(*t)) : NULL;
    if (rc == KILN_OK && !t)
        rc = kiln_fail(err, KILN_E_NOMEM, "the problems' times");
    if (rc != KILN_OK)
        return rc;
    for (size_t i = 0; i < b->n; i++)
        snprintf(t[i].file, sizeof(t[i].file), "%s", b->p[i].file);
    char work[PATH_MAX], detail[512];
    snprintf(work, sizeof(work), "%s/eager-work", b->out);
    struct torch_problems_request req = {.dir = b->level,
                                         .work_dir = work,
                                         .backend = strcmp(b->backend, "cuda") ? KILN_BACKEND_CPU
                                                                               : KILN_BACKEND_CUDA,
                                         .gpu = gpu,
                                         .warmups = warmups,
                                         .iterations = iterations,
                                         .timeout_ms = 1000LL * timeout_s,
                                         .deadline_s = 0.9 * (double)timeout_s};
    rc = torch_baseline_problems(&req, t, b->n, detail, sizeof(detail), err);
    size_t timed = 0;
    for (size_t i = 0; i < b->n; i++)
        timed += t[i].ms > 0;
    json_t *doc = rc == KILN_OK ? doc_of(b, t, timed, detail) : NULL;
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    if (rc == KILN_OK && !text)
        rc = kiln_fail(err, KILN_E_NOMEM, "eager.json");
    if (rc == KILN_OK)
        rc = beneath_write_atomic(b->out, "eager.json", text, strlen(text), err);
    if (rc == KILN_OK && json)
        printf("%s\n", text);
    else if (rc == KILN_OK)
        print_text(b, t, timed, detail);
    free(text);
    json_decref(doc);
    free(t);
    return rc;
}
