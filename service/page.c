/* page.c - GET /: a read-only HTML page of the queue and the leaderboards;
 * GET /mine: a tenant's own submissions and verdicts. No script, no forms;
 * every value from the database (user names, workload names, diagnostics)
 * is HTML-escaped, and the response's CSP header forbids scripts (http.c).
 * The public page shows no submission id (a tenant's handle), no source, no
 * diagnostic, and tenants by their public names (db_tenant.c). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "service_impl.h"
#include "strbuf.h"

static void esc(struct strbuf *sb, json_t *v)
{
    char num[64];
    if (json_is_string(v))
        strbuf_put_escaped(sb, json_string_value(v));
    else if (json_is_integer(v))
        strbuf_printf(sb, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) {
        snprintf(num, sizeof(num), "%.4f", json_real_value(v));
        strbuf_puts(sb, num);
    } else
        strbuf_puts(sb, "-");
}

static void put_date(struct strbuf *sb, double t)
{
    char buf[32];
    time_t s = (time_t)t;
    struct tm tm;
    if (t > 0 && gmtime_r(&s, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", &tm))
        strbuf_puts(sb, buf);
    else
        strbuf_puts(sb, "-");
}

static void put_head(struct strbuf *sb, const char *title)
{
    strbuf_printf(sb,
                  "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<title>%s</title><style>body{font-family:sans-serif;"
                  "margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
                  "padding:2px 8px}</style></head><body>\n<h1>kiln</h1>\n",
                  title);
}

static bool serves(const char *backends, const char *b)
{
    size_t n = strlen(b);
    for (const char *p = backends; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ','))
        if (strcspn(p, ",") == n && !strncmp(p, b, n))
            return true;
    return false;
}

/* Where a newcomer finds their own verdict, and, on a server without a
 * GPU, why nothing of theirs will be ranked. */
static void put_own_link(struct strbuf *sb, const char *backends)
{
    if (!serves(backends, "cuda"))
        strbuf_puts(sb, "<p id=\"cpu-only\">This server has no GPU worker: it judges cpu "
                        "submissions (a verdict, then the held-out check) but ranks none, "
                        "because a cpu candidate runs inside the process that times it, so its "
                        "timings are its own to write. Boards rank GPU verdicts only.</p>\n");
    strbuf_puts(sb, "<p id=\"mine\">Your own submissions and verdicts: <a href=\"/mine\">/mine"
                    "</a> (any user name, your token as the password).</p>\n");
}

static void put_queue(struct strbuf *sb, json_t *q)
{
    strbuf_printf(sb,
                  "<h2>Queue</h2>\n<p id=\"queue-summary\">%lld queued, %lld running</p>\n"
                  "<table id=\"queue\"><tr><th>user</th><th>leaderboard</th>"
                  "<th>backend</th><th>state</th></tr>\n",
                  (long long)json_integer_value(json_object_get(q, "queued")),
                  (long long)json_integer_value(json_object_get(q, "running")));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(q, "jobs"), i, r)
    {
        strbuf_puts(sb, "<tr><td>");
        esc(sb, json_object_get(r, "user"));
        strbuf_puts(sb, "</td><td>");
        esc(sb, json_object_get(r, "leaderboard"));
        strbuf_puts(sb, "</td><td>");
        esc(sb, json_object_get(r, "backend"));
        strbuf_puts(sb, "</td><td>");
        esc(sb, json_object_get(r, "state"));
        strbuf_puts(sb, "</td></tr>\n");
    }
    strbuf_puts(sb, "</table>\n");
}

/* One leaderboard's table on one GPU (name: the workload, shown: its title). */
static void put_board_table(struct strbuf *sb, const char *name, const char *shown, const char *gpu,
                            json_t *entries)
{
    strbuf_puts(sb, "<h3>");
    strbuf_put_escaped(sb, shown);
    strbuf_puts(sb, " on ");
    strbuf_put_escaped(sb, gpu);
    strbuf_puts(sb, "</h3>\n<table class=\"board\" data-workload=\"");
    strbuf_put_escaped(sb, name);
    strbuf_puts(sb, "\"><tr><th>rank</th><th>user</th><th>geomean ms</th>"
                    "<th>finished</th></tr>\n");
    size_t k;
    json_t *e;
    json_array_foreach(entries, k, e)
    {
        strbuf_puts(sb, "<tr><td>");
        esc(sb, json_object_get(e, "rank"));
        strbuf_puts(sb, "</td><td class=\"user\">");
        esc(sb, json_object_get(e, "user"));
        strbuf_puts(sb, "</td><td>");
        esc(sb, json_object_get(e, "geomean_ms"));
        strbuf_puts(sb, "</td><td>");
        put_date(sb, json_number_value(json_object_get(e, "finished")));
        strbuf_puts(sb, "</td></tr>\n");
    }
    strbuf_puts(sb, "</table>\n");
}

/* The workload's tables, one per GPU, then its count of unranked cpu passes. */
static enum kiln_rc put_leaderboard(struct sdb *d, struct strbuf *sb, const char *name,
                                    struct kiln_err *err)
{
    json_t *board = NULL;
    enum kiln_rc rc = sdb_leaderboard_json(d, name, NULL, &board, err);
    if (rc != KILN_OK)
        return rc;
    const char *shown = json_string_value(json_object_get(board, "display"));
    const char *gpu;
    json_t *entries;
    json_object_foreach(json_object_get(board, "gpus"), gpu, entries)
        put_board_table(sb, name, shown ? shown : name, gpu, entries);
    json_int_t cpu = json_integer_value(json_object_get(
        json_object_get(json_object_get(board, "unranked"), "cpu"), "verified_passes"));
    if (cpu > 0) {
        strbuf_puts(sb, "<p class=\"unranked\">");
        strbuf_put_escaped(sb, shown ? shown : name);
        strbuf_printf(sb, ": %lld verified cpu submission(s), judged but not ranked.</p>\n",
                      (long long)cpu);
    }
    json_decref(board);
    return KILN_OK;
}

static enum kiln_rc put_leaderboards(struct sdb *d, struct strbuf *sb, json_t *wls,
                                     struct kiln_err *err)
{
    strbuf_puts(sb, "<h2>Leaderboards</h2>\n<p>Verified entries only (passed again "
                    "on a secret seed), each user's best, by geometric mean of the per-case "
                    "median times. GPU verdicts only: " SERVE_CPU_UNRANKED ".</p>\n");
    size_t i;
    json_t *w;
    json_array_foreach(wls, i, w)
    {
        const char *name = json_string_value(json_object_get(w, "workload"));
        if (!name)
            break;
        enum kiln_rc rc = put_leaderboard(d, sb, name, err);
        if (rc != KILN_OK)
            return rc;
    }
    return KILN_OK;
}

enum kiln_rc spage_render(struct sdb *d, const char *backends, char **html, struct kiln_err *err)
{
    json_t *q = NULL, *wls = NULL;
    enum kiln_rc rc = sdb_queue_json(d, &q, err);
    if (rc == KILN_OK)
        rc = sdb_workloads_json(d, &wls, err);
    if (rc != KILN_OK) {
        json_decref(q);
        return rc;
    }
    struct strbuf sb;
    strbuf_init(&sb);
    put_head(&sb, "kiln leaderboards");
    put_own_link(&sb, backends);
    put_queue(&sb, q);
    rc = put_leaderboards(d, &sb, wls, err);
    strbuf_puts(&sb, "</body></html>\n");
    json_decref(q);
    json_decref(wls);
    if (rc != KILN_OK) {
        strbuf_free(&sb);
        return rc;
    }
    return strbuf_finish(&sb, html, err);
}

/* What a tenant's verdict means for the boards, in words. */
static const char *ranking_note(json_t *r)
{
    const char *state = json_string_value(json_object_get(r, "state"));
    const char *status = json_string_value(json_object_get(r, "status"));
    const char *backend = json_string_value(json_object_get(r, "backend"));
    if (!state || strcmp(state, "done"))
        return "waiting for its verdict";
    if (!status || strcmp(status, "pass"))
        return "not ranked: it did not pass";
    if (!json_is_true(json_object_get(r, "verified")))
        return "not ranked: it passed, but not again on the secret seed";
    if (backend && !strcmp(backend, "cpu"))
        return "judged, not ranked: a cpu candidate times itself (above)";
    return "ranked on its leaderboard";
}

static void put_mine_row(struct strbuf *sb, json_t *r)
{
    static const char *const cols[] = {"id",     "leaderboard", "backend", "state",
                                       "status", "score_ms",    "detail"};
    strbuf_puts(sb, "<tr><td>");
    put_date(sb, json_number_value(json_object_get(r, "submitted")));
    for (size_t i = 0; i < sizeof(cols) / sizeof(*cols); i++) {
        strbuf_puts(sb, "</td><td>");
        esc(sb, json_object_get(r, cols[i]));
    }
    strbuf_puts(sb, "</td><td class=\"ranking\">");
    strbuf_put_escaped(sb, ranking_note(r));
    strbuf_puts(sb, "</td></tr>\n");
}

enum kiln_rc spage_render_mine(struct sdb *d, const struct stoken *tok, const char *backends,
                               char **html, struct kiln_err *err)
{
    json_t *doc = NULL;
    enum kiln_rc rc = sdb_list_json(d, tok, false, NULL, 50, &doc, err);
    if (rc != KILN_OK)
        return rc;
    struct strbuf sb;
    strbuf_init(&sb);
    put_head(&sb, "kiln: your submissions");
    strbuf_puts(&sb, "<p id=\"who\">Submissions of the token <b>");
    strbuf_put_escaped(&sb, tok->name);
    strbuf_puts(&sb, "</b>, newest first (at most 50; the API pages through all: GET "
                     "/v1/submissions).</p>\n");
    if (!serves(backends, "cuda"))
        strbuf_puts(&sb, "<p id=\"cpu-only\">This server has no GPU worker, so none of your "
                         "submissions is ranked: " SERVE_CPU_UNRANKED ".</p>\n");
    strbuf_puts(&sb, "<table id=\"submissions\"><tr><th>submitted</th><th>id</th>"
                     "<th>leaderboard</th><th>backend</th><th>state</th><th>verdict</th>"
                     "<th>geomean ms</th><th>detail</th><th>ranking</th></tr>\n");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "submissions"), i, r) put_mine_row(&sb, r);
    strbuf_puts(&sb, "</table>\n</body></html>\n");
    json_decref(doc);
    return strbuf_finish(&sb, html, err);
}
