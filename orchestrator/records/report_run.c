/* report_run.c - a run's heatmap.svg and report.html, regenerated from its
 * records (`kiln report`, and the optimizer when a run finishes). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastp.h"
#include "report.h"
#include "runrec.h"

/* A candidate id as kiln writes them (digits): anything else in a record
 * is not used to build a path. */
static int plain_id(const char *id)
{
    size_t n = strspn(id, "0123456789");
    return n > 0 && n < 10 && id[n] == '\0';
}

/* Each candidate's verdict.json, by id, for the first REPORT_MAX_ROWS
 * candidates, at most 16 MiB each (VERDICT_MAX_JSON) and 64 MiB in all so
 * a hostile record cannot make the report hold gigabytes; one that is
 * missing, unreadable or past the budget is left out (the page then shows
 * what summary.json has). */
static json_t *read_verdicts(const struct runrec *rr, const json_t *summary)
{
    json_t *all = json_object();
    const json_t *cands = json_object_get(summary, "candidates");
    size_t budget = 64u << 20;
    for (size_t i = 0; all && i < json_array_size(cands) && i < REPORT_MAX_ROWS; i++) {
        const char *id = json_string_value(json_object_get(json_array_get(cands, i), "id"));
        if (!id || !plain_id(id))
            continue;
        char rel[64], *text = NULL;
        size_t len = 0;
        snprintf(rel, sizeof(rel), "candidates/%s/verdict.json", id);
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        if (runrec_read(rr, rel, 16u << 20, &text, &len, &ignore) == KILN_OK && len <= budget) {
            budget -= len;
            json_error_t je;
            json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
            if (v)
                json_object_set_new(all, id, v);
        }
        free(text);
    }
    return all;
}

/* An optional record: absent (older runs) or unreadable leaves NULL. */
static json_t *read_optional(const struct runrec *rr, const char *rel)
{
    json_t *doc = NULL;
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    if (runrec_read_json(rr, rel, 4u << 20, &doc, &ignore) != KILN_OK)
        return NULL;
    return doc;
}

enum kiln_rc report_write_run(const struct runrec *rr, struct kiln_err *err)
{
    json_t *summary = NULL, *history = NULL, *run = NULL, *env = NULL, *verdicts = NULL;
    char *best = NULL, *svg = NULL, *html = NULL;
    size_t len = 0;
    enum kiln_rc rc = runrec_read_json(rr, "summary.json", 64u << 20, &summary, err);
    if (rc == KILN_OK)
        rc = runrec_read_json(rr, "history.json", 64u << 20, &history, err);
    if (rc == KILN_OK)
        rc = runrec_check_version(summary, "summary.json", SUMMARY_VERSION, err);
    if (rc == KILN_OK)
        rc = runrec_check_versions(NULL, history, NULL, err);
    if (rc == KILN_OK) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        /* No best.cu (no candidate passed) is a report, not an error. */
        if (runrec_read(rr, "best.cu", 4u << 20, &best, &len, &ignore) != KILN_OK)
            (void)(runrec_read(rr, "best.c", 4u << 20, &best, &len, &ignore) == KILN_OK);
        run = read_optional(rr, "run.json");
        env = read_optional(rr, "environment.json");
        verdicts = read_verdicts(rr, summary);
    }
    struct report_run in = {summary, history, run, env, verdicts, best};
    if (rc == KILN_OK)
        rc = report_heatmap_svg(&in, &svg, err);
    if (rc == KILN_OK)
        rc = runrec_write(rr, "heatmap.svg", svg, strlen(svg), err);
    if (rc == KILN_OK)
        rc = report_html(&in, &html, err);
    if (rc == KILN_OK)
        rc = runrec_write(rr, "report.html", html, strlen(html), err);
    json_decref(summary);
    json_decref(history);
    json_decref(run);
    json_decref(env);
    json_decref(verdicts);
    free(best);
    free(svg);
    free(html);
    return rc;
}
