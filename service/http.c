/* http.c - the HTTP API on libmicrohttpd: the route table, bodies read raw
 * with a size cap, bearer-token auth, JSON errors {"error":{code,message}}.
 * One internal epoll thread; the connection limits, the request deadline
 * and the client address behind a proxy are conn.c's, the memory limit and
 * the idle timeout libmicrohttpd's. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "service_impl.h"
#include "strbuf.h"

/* AUTH_OPTIONAL: public, but a valid token shows its owner more (a
 * leaderboard's own entries); a bad token is still refused. AUTH_PAGE: a
 * user's token, also as HTTP Basic's password, so a browser asks for it
 * (read-only HTML only: a browser sends Basic credentials by itself, so a
 * route that changes anything never takes them). */
enum auth_need { AUTH_NONE, AUTH_OPTIONAL, AUTH_USER, AUTH_ADMIN, AUTH_PAGE };

struct shttp {
    struct shttp_cfg cfg;
    struct MHD_Daemon *d;
    struct ssse *sse;
    struct sconn *conns;
    int unix_fd;
};

struct route;

/* One request, from its headers (on_request's first call) to its end. */
struct reqstate {
    char line[96]; /* "METHOD /path" for the request log, printable ASCII only */
    char *body;    /* only ever read for a request whose token was checked first */
    size_t len, cap;
    size_t max; /* the body's cap: SERVE_TAR_MAX for a tarball, else SERVE_BODY_MAX */
    bool too_big, started;
    struct timespec t0;
    const struct route *route;     /* matched at the headers */
    char arg[SERVE_BOARD_MAX + 1]; /* the {id} or {workload} of the path */
    struct stoken tok;
    bool authed;   /* tok holds a valid token */
    bool answered; /* a response is queued */
};

struct ctx {
    struct shttp *h;
    struct MHD_Connection *c;
    struct reqstate *rs;
    const char *method, *url;
    char arg[SERVE_BOARD_MAX + 1]; /* the {id} or {workload} of the path */
    struct stoken tok;
    bool authed; /* tok holds a valid token */
};

typedef enum MHD_Result (*handler_fn)(struct ctx *x);

static enum MHD_Result h_health(struct ctx *x);
static enum MHD_Result h_page(struct ctx *x);
static enum MHD_Result h_submit(struct ctx *x);
static enum MHD_Result h_get(struct ctx *x);
static enum MHD_Result h_events(struct ctx *x);
static enum MHD_Result h_hacked(struct ctx *x);
static enum MHD_Result h_board(struct ctx *x);
static enum MHD_Result h_queue(struct ctx *x);
static enum MHD_Result h_rotate(struct ctx *x);
static enum MHD_Result h_list(struct ctx *x);
static enum MHD_Result h_cancel(struct ctx *x);
static enum MHD_Result h_metrics(struct ctx *x);
static enum MHD_Result h_mine(struct ctx *x);

/* The route table: the server answers these and nothing else (the OpenAPI
 * test holds service/openapi.yaml to exactly this list). */
static const struct route {
    const char *method, *path;
    handler_fn fn;
    enum auth_need auth;
} routes[] = {
    {"GET", "/healthz", h_health, AUTH_NONE},
    {"GET", "/metrics", h_metrics, AUTH_NONE},
    {"GET", "/", h_page, AUTH_NONE},
    {"GET", "/mine", h_mine, AUTH_PAGE},
    {"POST", "/v1/submissions", h_submit, AUTH_USER},
    {"GET", "/v1/submissions", h_list, AUTH_USER},
    {"GET", "/v1/submissions/{id}", h_get, AUTH_USER},
    {"DELETE", "/v1/submissions/{id}", h_cancel, AUTH_USER},
    {"GET", "/v1/submissions/{id}/events", h_events, AUTH_USER},
    {"POST", "/v1/submissions/{id}/hacked", h_hacked, AUTH_ADMIN},
    {"GET", "/v1/leaderboards/{workload}", h_board, AUTH_OPTIONAL},
    {"GET", "/v1/queue", h_queue, AUTH_NONE},
    {"POST", "/v1/leaderboards/{workload}/rotate-seed", h_rotate, AUTH_ADMIN},
};

void serve_print_routes(void)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(*routes); i++)
        printf("%s %s\n", routes[i].method, routes[i].path);
}

/* A path segment: an id, a workload or a community leaderboard (NAME@SHA256). */
static bool seg_ok(const char *s, size_t n)
{
    if (n == 0 || n > SERVE_BOARD_MAX || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == '@'))
            return false;
    }
    return true;
}

/* Matches url against pattern; a {name} segment takes one safe segment. */
static bool match(const char *pat, const char *url, char *arg, size_t cap)
{
    while (*pat && *url) {
        if (*pat == '{') {
            const char *pe = strchr(pat, '}');
            size_t n = strcspn(url, "/");
            if (!pe || !seg_ok(url, n) || n >= cap)
                return false;
            memcpy(arg, url, n);
            arg[n] = '\0';
            pat = pe + 1;
            url += n;
            continue;
        }
        if (*pat != *url)
            return false;
        pat++;
        url++;
    }
    return !*pat && !*url;
}

/* Headers a handler adds to its response: name/value pairs, NULL-ended. */
struct hdrs {
    const char *kv[12][2];
};

static void hdr_add(struct hdrs *h, const char *name, const char *value)
{
    for (size_t i = 0; i + 1 < sizeof(h->kv) / sizeof(*h->kv); i++)
        if (!h->kv[i][0]) {
            h->kv[i][0] = name;
            h->kv[i][1] = value;
            return;
        }
}

/* Every response forbids scripts, framing and sniffing (the page is the
 * only HTML; the CSP is a header so it covers everything served). */
static enum MHD_Result send_text_h(struct ctx *x, unsigned status, const char *type, char *text,
                                   size_t len, const struct hdrs *extra)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(
        r, "Content-Security-Policy",
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    for (size_t i = 0; extra && i < sizeof(extra->kv) / sizeof(*extra->kv) && extra->kv[i][0]; i++)
        MHD_add_response_header(r, extra->kv[i][0], extra->kv[i][1]);
    enum MHD_Result ret = MHD_queue_response(x->c, status, r);
    MHD_destroy_response(r);
    x->rs->answered = ret == MHD_YES;
    return ret;
}

static enum MHD_Result send_text(struct ctx *x, unsigned status, const char *type, char *text,
                                 size_t len)
{
    return send_text_h(x, status, type, text, len, NULL);
}

static enum MHD_Result send_json_h(struct ctx *x, unsigned status, json_t *doc,
                                   const struct hdrs *extra)
{
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!s)
        return MHD_NO;
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) {
        free(s);
        return MHD_NO;
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    return send_text_h(x, status, "application/json", t, n + 1, extra);
}

static enum MHD_Result send_json(struct ctx *x, unsigned status, json_t *doc)
{
    return send_json_h(x, status, doc, NULL);
}

/* {"error": {"code": CODE, "message": ...}}: every error kiln sends. */
static json_t *error_doc(const char *code, const char *fmt, ...) KILN_PRINTF(2, 3);
static json_t *error_doc(const char *code, const char *fmt, ...)
{
    char msg[KILN_ERR_MSG_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
}

static enum MHD_Result send_error(struct ctx *x, unsigned status, const char *code, const char *fmt,
                                  ...) KILN_PRINTF(4, 5);
static enum MHD_Result send_error(struct ctx *x, unsigned status, const char *code, const char *fmt,
                                  ...)
{
    char msg[KILN_ERR_MSG_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *doc = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
    return send_json(x, status, doc);
}

/* A kiln error from the database or a parser, as the fitting HTTP error. */
static enum MHD_Result send_kiln_err(struct ctx *x, const struct kiln_err *e)
{
    switch (e->rc) {
    case KILN_E_NOTFOUND:
        return send_error(x, MHD_HTTP_NOT_FOUND, "not_found", "%s", e->msg);
    case KILN_E_PARSE:
    case KILN_E_USAGE:
        return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_request", "%s", e->msg);
    case KILN_E_LIMIT:
        return send_error(x, MHD_HTTP_CONTENT_TOO_LARGE, "too_large", "%s", e->msg);
    default:
        fprintf(stderr, "kiln serve: %s %s: %s\n", x->method, x->url, e->msg);
        return send_error(x, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                          "the server failed: %s (see its log)", kiln_strerror(e->rc));
    }
}

static enum MHD_Result h_health(struct ctx *x)
{
    json_t *q = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_queue_json(x->h->cfg.db, &q, &e) != KILN_OK)
        return send_error(x, MHD_HTTP_SERVICE_UNAVAILABLE, "unhealthy", "database: %s", e.msg);
    json_t *doc =
        json_pack("{s:s,s:O,s:O,s:s}", "status", "ok", "queued", json_object_get(q, "queued"),
                  "running", json_object_get(q, "running"), "backends", x->h->cfg.backends);
    json_decref(q);
    return send_json(x, MHD_HTTP_OK, doc);
}

static enum MHD_Result h_page(struct ctx *x)
{
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (spage_render(x->h->cfg.db, x->h->cfg.backends, &html, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_text(x, MHD_HTTP_OK, "text/html; charset=utf-8", html, strlen(html));
}

static bool backend_served(const char *backends, const char *b)
{
    size_t n = strlen(b);
    for (const char *p = backends; *p;) {
        size_t m = strcspn(p, ",");
        if (m == n && !strncmp(p, b, n))
            return true;
        p += m + (p[m] == ',');
    }
    return false;
}

static bool is_tar(struct MHD_Connection *c)
{
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    return ct && !strncasecmp(ct, "application/x-tar", 17) && (!ct[17] || ct[17] == ';');
}

static enum MHD_Result queue_submission(struct ctx *x, const char *idem,
                                        const struct serve_submission *sub, const char *board,
                                        const char *wl_dir);

/* A community workload and its candidate, as a tarball: parsed and stored
 * here; its scripts run (checked, then judged) only in the worker. */
static enum MHD_Result submit_tar(struct ctx *x, const char *idem)
{
    struct serve_community com;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (serve_parse_community(x->rs->body ? x->rs->body : "", x->rs->len, &com, &e) != KILN_OK) {
        if (e.rc == KILN_E_REJECTED)
            return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_tarball", "%s", e.msg);
        if (e.rc == KILN_E_PARSE)
            return send_error(x, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_workload", "%s", e.msg);
        return send_kiln_err(x, &e);
    }
    enum MHD_Result ret;
    char dir[PATH_MAX], board[SERVE_BOARD_MAX + 1];
    if (!backend_served(x->h->cfg.backends, com.backend)) {
        ret = send_error(x, MHD_HTTP_UNPROCESSABLE_CONTENT, "no_worker",
                         "this server has no %s worker (it runs: %s); submit candidate.%s instead",
                         com.backend, x->h->cfg.backends, strcmp(com.backend, "cpu") ? "c" : "cu");
    } else if (serve_store_community(x->h->cfg.opts->data, &com, dir, sizeof(dir), board, &e) !=
               KILN_OK) {
        ret = e.rc == KILN_E_PARSE
                  ? send_error(x, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_workload", "%s", e.msg)
                  : send_kiln_err(x, &e);
    } else {
        struct serve_submission sub = {.source = com.source, .source_len = com.source_len};
        snprintf(sub.workload, sizeof(sub.workload), "%s", com.name);
        snprintf(sub.backend, sizeof(sub.backend), "%s", com.backend);
        ret = queue_submission(x, idem, &sub, board, dir);
    }
    serve_community_free(&com);
    return ret;
}

static enum MHD_Result h_submit(struct ctx *x)
{
    const char *idem = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Idempotency-Key");
    if (idem) {
        size_t n = strlen(idem);
        bool ok = n > 0 && n <= SERVE_IDEM_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = idem[i] > 0x20 && idem[i] < 0x7f;
        if (!ok)
            return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_idempotency_key",
                              "Idempotency-Key must be 1-%d printable ASCII characters without "
                              "spaces",
                              SERVE_IDEM_MAX);
    }
    if (is_tar(x->c))
        return submit_tar(x, idem);
    const char *ct = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16))
        return send_error(x, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                          "send the submission as Content-Type: application/json, or a community "
                          "workload as application/x-tar");
    struct serve_submission sub;
    struct kiln_err e;
    kiln_err_clear(&e);
    /* A ustar tarball has "ustar" at offset 257: say what was meant rather
     * than what the JSON parser makes of tar bytes. */
    if (x->rs->len >= 262 && !memcmp(x->rs->body + 257, "ustar", 5))
        return send_error(x, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                          "the body is a tar archive sent as %s: send a community workload "
                          "tarball as Content-Type: application/x-tar",
                          ct);
    if (serve_parse_submission(x->rs->body ? x->rs->body : "", x->rs->len, &sub, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    enum MHD_Result ret;
    char wl[PATH_MAX];
    struct stat sb;
    snprintf(wl, sizeof(wl), "%s/%s/workload.json", x->h->cfg.workloads_dir, sub.workload);
    if (stat(wl, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        ret = send_error(x, MHD_HTTP_UNPROCESSABLE_CONTENT, "unknown_workload",
                         "this server has no workload '%s' (GET / lists those with entries)",
                         sub.workload);
        goto out;
    }
    if (!backend_served(x->h->cfg.backends, sub.backend)) {
        ret = send_error(x, MHD_HTTP_UNPROCESSABLE_CONTENT, "no_worker",
                         "this server has no %s worker (it runs: %s); submit for one of those",
                         sub.backend, x->h->cfg.backends);
        goto out;
    }
    ret = queue_submission(x, idem, &sub, NULL, NULL);
out:
    serve_submission_free(&sub);
    return ret;
}

/* Queues a parsed submission: idempotency, quota, rate, then 202. */
static enum MHD_Result queue_submission(struct ctx *x, const char *idem,
                                        const struct serve_submission *sub, const char *board,
                                        const char *wl_dir)
{
    enum MHD_Result ret;
    struct kiln_err e;
    kiln_err_clear(&e);
    char sha[SHA256_HEX_LEN + 1];
    sha256_hex_of(x->rs->body ? x->rs->body : "", x->rs->len, sha);
    struct ssubmit s = {.tok = &x->tok,
                        .idem_key = idem,
                        .sub = sub,
                        .body_sha = sha,
                        .board = board,
                        .wl_dir = wl_dir};
    char id[SERVE_ID_LEN + 1];
    enum ssubmit_result res;
    double retry = 0;
    if (sdb_submit(x->h->cfg.db, &s, id, &res, &retry, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    /* RateLimit-* (the IETF draft's fields, as most APIs send them): the
     * token's bucket after this request. */
    struct hdrs hd = {0};
    struct sbucket bk;
    char lim[32], rem[32], rst[32], ra[32], loc[64];
    kiln_err_clear(&e);
    if (sdb_bucket(x->h->cfg.db, x->tok.id, &bk, &e) == KILN_OK) {
        snprintf(lim, sizeof(lim), "%.0f", bk.burst);
        snprintf(rem, sizeof(rem), "%.0f", bk.remaining < 0.5 ? 0 : bk.remaining - 0.4999);
        snprintf(rst, sizeof(rst), "%.0f", bk.reset_s + 0.4999);
        hdr_add(&hd, "RateLimit-Limit", lim);
        hdr_add(&hd, "RateLimit-Remaining", rem);
        hdr_add(&hd, "RateLimit-Reset", rst);
    }
    switch (res) {
    case SSUBMIT_NEW:
    case SSUBMIT_REPLAY:
        snprintf(loc, sizeof(loc), "/v1/submissions/%s", id);
        hdr_add(&hd, "Location", loc);
        ret = send_json_h(x, MHD_HTTP_ACCEPTED,
                          json_pack("{s:s,s:b,s:s}", "id", id, "replayed", res == SSUBMIT_REPLAY,
                                    "location", loc),
                          &hd);
        break;
    case SSUBMIT_IDEM_CLASH:
        ret = send_error(x, MHD_HTTP_UNPROCESSABLE_CONTENT, "idempotency_key_reused",
                         "Idempotency-Key was used for submission %s with a different body: use "
                         "a new key for a new submission",
                         id);
        break;
    case SSUBMIT_QUOTA:
        hdr_add(&hd, "Retry-After", "10");
        ret = send_json_h(x, MHD_HTTP_TOO_MANY_REQUESTS,
                          error_doc("quota_exceeded",
                                    "token '%s' has as many submissions queued or running as its "
                                    "quota allows: wait for some to finish (or cancel one)",
                                    x->tok.name),
                          &hd);
        break;
    default:
        snprintf(ra, sizeof(ra), "%.0f", retry < 1 ? 1 : retry + 0.5);
        hdr_add(&hd, "Retry-After", ra);
        ret = send_json_h(x, MHD_HTTP_TOO_MANY_REQUESTS,
                          error_doc("rate_limited", "too many submissions for this token: retry "
                                                    "after the Retry-After header's seconds"),
                          &hd);
    }
    return ret;
}

static enum MHD_Result h_get(struct ctx *x)
{
    json_t *doc = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_job_visible(x->h->cfg.db, x->arg, &x->tok, &e) != KILN_OK ||
        sdb_submission_json(x->h->cfg.db, x->arg, &doc, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_json(x, MHD_HTTP_OK, doc);
}

/* Whether s is a submission id's shape (the cursors are ids). */
static bool id_shaped(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n == SERVE_ID_LEN && !s[n];
}

/* GET /v1/submissions?limit=N&cursor=C[&all=true]: the caller's own. */
static enum MHD_Result h_list(struct ctx *x)
{
    const char *lim = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *cur = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "cursor");
    const char *all = MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, "all");
    long long limit = 50;
    char *end;
    if (lim && (limit = strtoll(lim, &end, 10), *end || end == lim || limit < 1 || limit > 500))
        return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_request",
                          "limit must be a number from 1 to 500, got '%.40s'", lim);
    if (cur && !id_shaped(cur))
        return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_request",
                          "cursor must be a next_cursor this server returned, got '%.40s'", cur);
    bool want_all = all && !strcmp(all, "true");
    if (all && !want_all && strcmp(all, "false"))
        return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_request", "all must be true or false");
    if (want_all && !x->tok.admin)
        return send_error(x, MHD_HTTP_FORBIDDEN, "forbidden",
                          "all=true lists every tenant's submissions: it needs an admin token");
    json_t *doc = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_list_json(x->h->cfg.db, &x->tok, want_all, cur, (int)limit, &doc, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_json(x, MHD_HTTP_OK, doc);
}

/* DELETE /v1/submissions/{id}: cancels a queued or running submission. */
static enum MHD_Result h_cancel(struct ctx *x)
{
    char was[16];
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_job_visible(x->h->cfg.db, x->arg, &x->tok, &e) != KILN_OK ||
        sdb_cancel(x->h->cfg.db, x->arg, x->tok.name, was, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    if (!strcmp(was, "done"))
        return send_error(x, MHD_HTTP_CONFLICT, "already_finished",
                          "submission %s has its verdict already: there is nothing to cancel",
                          x->arg);
    return send_json(x, MHD_HTTP_OK,
                     json_pack("{s:s,s:s,s:s,s:s}", "id", x->arg, "state", "done", "status",
                               "cancelled", "was", was));
}

/* The queue's and verdicts' metrics (the database), then the connections'. */
static enum MHD_Result h_metrics(struct ctx *x)
{
    char *text = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_metrics_text(x->h->cfg.db, x->h->cfg.workers, &text, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_puts(&sb, text);
    free(text);
    sconn_metrics_text(x->h->conns, &sb);
    if (strbuf_finish(&sb, &text, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_text(x, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
                     strlen(text));
}

/* GET /mine: the caller's own submissions and verdicts as HTML (a browser
 * opens it with the token as the Basic password). */
static enum MHD_Result h_mine(struct ctx *x)
{
    char *html = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (spage_render_mine(x->h->cfg.db, &x->tok, x->h->cfg.backends, &html, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_text(x, MHD_HTTP_OK, "text/html; charset=utf-8", html, strlen(html));
}

static enum MHD_Result h_events(struct ctx *x)
{
    json_t *probe = NULL;
    bool fin;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_job_visible(x->h->cfg.db, x->arg, &x->tok, &e) != KILN_OK ||
        sdb_events_json(x->h->cfg.db, x->arg, 0, &probe, &fin, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    json_decref(probe);
    long long after = 0;
    const char *last = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Last-Event-ID");
    if (last) {
        char *end;
        errno = 0;
        after = strtoll(last, &end, 10);
        if (errno || *end || after < 0)
            return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_last_event_id",
                              "Last-Event-ID must be an event number this server sent");
    }
    struct MHD_Response *r = ssse_response(x->h->sse, x->c, x->arg, after, x->tok.id);
    if (!r)
        return ssse_refused(x->h->sse, x->c, x->tok.id);
    enum MHD_Result ret = MHD_queue_response(x->c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result h_hacked(struct ctx *x)
{
    char reason[512] = "flagged by an admin";
    if (x->rs->len) {
        json_error_t je;
        json_t *doc = json_loadb(x->rs->body, x->rs->len, JSON_REJECT_DUPLICATES, &je);
        json_t *r = json_object_get(doc, "reason");
        if (!json_is_object(doc) || json_object_size(doc) != (r ? 1u : 0u) ||
            (r && (!json_is_string(r) || json_string_length(r) > 500))) {
            json_decref(doc);
            return send_error(x, MHD_HTTP_BAD_REQUEST, "bad_request",
                              "the body must be empty or {\"reason\": \"at most 500 characters\"}");
        }
        if (r)
            snprintf(reason, sizeof(reason), "%s", json_string_value(r));
        json_decref(doc);
    }
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_flag_hacked(x->h->cfg.db, x->arg, x->tok.name, reason, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_json(x, MHD_HTTP_OK,
                     json_pack("{s:s,s:b,s:s}", "id", x->arg, "hacked", 1, "reason", reason));
}

/* A leaderboard exists when a workload of its name is served, or when any
 * submission went to it (a community NAME@SHA256). */
static enum MHD_Result h_board(struct ctx *x)
{
    json_t *doc = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    bool known = false;
    char wl[PATH_MAX];
    struct stat sb;
    snprintf(wl, sizeof(wl), "%s/%s/workload.json", x->h->cfg.workloads_dir, x->arg);
    if (!strchr(x->arg, '@') && stat(wl, &sb) == 0 && S_ISREG(sb.st_mode))
        known = true;
    else if (sdb_board_known(x->h->cfg.db, x->arg, &known, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    if (!known) {
        const char *at = strchr(x->arg, '@');
        if (at && strlen(at + 1) != 64)
            return send_error(x, MHD_HTTP_NOT_FOUND, "not_found",
                              "no leaderboard %s: a community leaderboard is named by its "
                              "workload's full SHA-256, NAME@<64 hex digits> (a short form is "
                              "for display only)",
                              x->arg);
        return send_error(x, MHD_HTTP_NOT_FOUND, "not_found",
                          "no leaderboard %s (GET / lists those with entries)", x->arg);
    }
    if (sdb_leaderboard_json(x->h->cfg.db, x->arg, x->authed ? &x->tok : NULL, &doc, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_json(x, MHD_HTTP_OK, doc);
}

static enum MHD_Result h_rotate(struct ctx *x)
{
    char seed[32];
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_rotate_seed(x->h->cfg.db, x->arg, seed, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_json(x, MHD_HTTP_OK,
                     json_pack("{s:s,s:s}", "leaderboard", x->arg, "visible_seed", seed));
}

static enum MHD_Result h_queue(struct ctx *x)
{
    json_t *doc = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_queue_json(x->h->cfg.db, &doc, &e) != KILN_OK)
        return send_kiln_err(x, &e);
    return send_json(x, MHD_HTTP_OK, doc);
}

/* The route of METHOD URL into x->rs; a 404 or 405 queued (at the
 * headers, before any body) when there is none. */
static enum MHD_Result resolve(struct ctx *x)
{
    const struct route *path_hit = NULL;
    char allow[64] = "";
    for (size_t i = 0; i < sizeof(routes) / sizeof(*routes); i++) {
        const struct route *r = &routes[i];
        if (!match(r->path, x->url, x->rs->arg, sizeof(x->rs->arg)))
            continue;
        if (strcmp(r->method, x->method)) {
            path_hit = r;
            snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
                     allow[0] ? ", " : "", r->method);
            continue;
        }
        x->rs->route = r;
        return MHD_YES;
    }
    if (path_hit)
        return send_error(x, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed",
                          "%s is not allowed on %s (allowed: %s)", x->method, x->url, allow);
    return send_error(x, MHD_HTTP_NOT_FOUND, "not_found",
                      "no route %s %s (the API is described in service/openapi.yaml)", x->method,
                      x->url);
}

/* The token, checked at the headers: a request that needs one and lacks a
 * valid one is answered 401 before a byte of its body is read (libmicrohttpd
 * then closes the connection rather than read the rest). */
static enum MHD_Result authenticate(struct ctx *x)
{
    const struct route *r = x->rs->route;
    const char *a = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Authorization");
    if (r->auth == AUTH_NONE || (r->auth == AUTH_OPTIONAL && !a))
        return MHD_YES;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sauth_check(x->h->cfg.db, a, r->auth == AUTH_PAGE, &x->rs->tok, &e) != KILN_OK) {
        if (e.rc != KILN_E_REJECTED)
            return send_kiln_err(x, &e);
        struct hdrs hd = {0};
        /* A browser asks for Basic credentials only when told to. */
        if (r->auth == AUTH_PAGE)
            hdr_add(&hd, "WWW-Authenticate",
                    "Basic realm=\"kiln: any user name, your token as the password\", "
                    "charset=\"UTF-8\"");
        return send_json_h(x, MHD_HTTP_UNAUTHORIZED, error_doc("unauthorized", "%s", e.msg), &hd);
    }
    if (r->auth == AUTH_ADMIN && !x->rs->tok.admin)
        return send_error(x, MHD_HTTP_FORBIDDEN, "forbidden",
                          "this needs an admin token (kiln token add NAME --scope admin)");
    x->rs->authed = true;
    sconn_request_authed(x->h->conns, x->c);
    return MHD_YES;
}

/* The first call: the request's line and headers are in, its body is not.
 * Everything that can refuse it does so here, before the body is read. */
static enum MHD_Result begin_request(struct ctx *x)
{
    size_t uri_len, hdr_len;
    sconn_request_sizes(x->c, x->url, &uri_len, &hdr_len);
    const char *te = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Transfer-Encoding");
    const char *cl = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Content-Length");
    unsigned long long clen = cl ? strtoull(cl, NULL, 10) : 0;
    switch (sconn_request_begin(x->h->conns, x->c, te || clen > 0)) {
    case SCONN_GO:
        break;
    case SCONN_BUSY:
        return sconn_send_busy(x->c, "too_many_requests", 1, false,
                               "this client has as many requests in flight as one may (kiln "
                               "serve --per-ip): retry after the Retry-After header's seconds");
    case SCONN_PIPELINED:
        return sconn_send_busy(x->c, "too_many_pipelined", 1, true,
                               "this connection sent request after request without reading the "
                               "answers: read each answer, then send the next request");
    }
    if (uri_len > SCONN_URI_MAX)
        return send_error(x, MHD_HTTP_URI_TOO_LONG, "uri_too_long",
                          "the request's path and query are longer than %u bytes", SCONN_URI_MAX);
    if (hdr_len > SCONN_HEADERS_MAX)
        return send_error(x, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large",
                          "the request's headers are larger than %u bytes", SCONN_HEADERS_MAX);
    struct reqstate *rs = x->rs;
    rs->max = is_tar(x->c) ? SERVE_TAR_MAX : SERVE_BODY_MAX;
    /* Refused before the body is read when it says it is too large. */
    if (clen > rs->max) {
        rs->too_big = true;
        return send_error(x, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                          "the body is larger than %zu bytes", rs->max);
    }
    enum MHD_Result ret = resolve(x);
    if (ret == MHD_YES && rs->route)
        ret = authenticate(x);
    return ret;
}

/* The last call: the body is in; the route's handler answers. */
static enum MHD_Result dispatch(struct ctx *x)
{
    sconn_request_answer(x->h->conns, x->c);
    if (x->rs->too_big)
        return send_error(x, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                          "the body is larger than %zu bytes", x->rs->max);
    x->tok = x->rs->tok;
    x->authed = x->rs->authed;
    snprintf(x->arg, sizeof(x->arg), "%s", x->rs->arg);
    return x->rs->route->fn(x);
}

/* Appends n bytes of an authenticated request's body, up to its cap. */
static enum MHD_Result take_body(struct reqstate *rs, const char *upload, size_t n)
{
    if (rs->too_big || rs->len + n > rs->max) {
        rs->too_big = true; /* the rest is read and dropped, never kept */
        free(rs->body);
        rs->body = NULL;
        rs->len = rs->cap = 0;
        return MHD_YES;
    }
    if (rs->len + n + 1 > rs->cap) {
        size_t cap = rs->cap ? rs->cap : 4096;
        while (cap < rs->len + n + 1)
            cap *= 2;
        char *b = realloc(rs->body, cap);
        if (!b)
            return MHD_NO;
        rs->body = b;
        rs->cap = cap;
    }
    memcpy(rs->body + rs->len, upload, n);
    rs->len += n;
    rs->body[rs->len] = '\0';
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    struct shttp *h = cls;
    struct reqstate *rs = *con_cls;
    struct ctx x = {.h = h, .c = c, .method = method, .url = url, .rs = rs};
    if (!rs) {
        rs = calloc(1, sizeof(*rs));
        if (!rs)
            return MHD_NO;
        clock_gettime(CLOCK_MONOTONIC, &rs->t0);
        /* The path is the client's: nothing but printable ASCII reaches the log. */
        snprintf(rs->line, sizeof(rs->line), "%.8s %s", method, url);
        for (char *p = rs->line; *p; p++)
            if (*p < 0x20 || *p > 0x7e)
                *p = '?';
        *con_cls = rs;
        x.rs = rs;
        enum MHD_Result ret = begin_request(&x);
        if (rs->answered) /* refused at the headers: its body is never read */
            sconn_request_answer(h->conns, c);
        return ret;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        return take_body(rs, upload, n);
    }
    if (rs->started)
        return MHD_YES;
    rs->started = true;
    return dispatch(&x);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct shttp *h = cls;
    struct reqstate *rs = *con_cls;
    if (rs && !h->cfg.opts->quiet) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
        char client[64];
        sconn_client(c, client, sizeof(client));
        fprintf(stderr, "kiln serve: %s %s %u %.1f ms\n", client, rs->line,
                ci ? ci->http_status : 0,
                (t1.tv_sec - rs->t0.tv_sec) * 1e3 + (t1.tv_nsec - rs->t0.tv_nsec) / 1e6);
    }
    sconn_request_end(h->conns, c);
    if (!rs)
        return;
    free(rs->body);
    free(rs);
    *con_cls = NULL;
}

/* libmicrohttpd's own messages: the format is the library's (never a
 * client's), and its callback type cannot carry a format attribute. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    fputs("kiln serve: libmicrohttpd: ", stderr);
    vfprintf(stderr, fmt, ap);
}
#pragma GCC diagnostic pop

static enum kiln_rc parse_listen(const char *s, struct sockaddr_in *sa, struct kiln_err *err)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
        return kiln_fail(err, KILN_E_USAGE, "--listen '%s' must be IPV4:PORT (127.0.0.1:8470)", s);
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    if (errno || *end || colon[1] == '\0' || port < 0 || port > 65535 ||
        inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return kiln_fail(err, KILN_E_USAGE, "--listen '%s' must be IPV4:PORT (127.0.0.1:8470)", s);
    sa->sin_port = htons((uint16_t)port);
    return KILN_OK;
}

static enum kiln_rc unix_listen(const char *path, int *fd, struct kiln_err *err)
{
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(un.sun_path))
        return kiln_fail(err, KILN_E_USAGE, "--socket path '%s' is longer than %zu bytes", path,
                         sizeof(un.sun_path) - 1);
    snprintf(un.sun_path, sizeof(un.sun_path), "%s", path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return kiln_fail_errno(err, KILN_E_IO, "socket");
    /* A stale socket file of a dead server is replaced; we hold the lock. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode))
        unlink(path);
    if (bind(s, (struct sockaddr *)&un, sizeof(un)) != 0 || chmod(path, 0660) != 0 ||
        listen(s, 128) != 0) {
        enum kiln_rc rc =
            kiln_fail_errno(err, KILN_E_IO, "cannot listen on the unix socket %s", path);
        close(s);
        return rc;
    }
    *fd = s;
    return KILN_OK;
}

enum kiln_rc shttp_start(const struct shttp_cfg *cfg, struct shttp **out, struct kiln_err *err)
{
    struct shttp *h = calloc(1, sizeof(*h));
    if (!h)
        return kiln_fail(err, KILN_E_NOMEM, "http");
    h->cfg = *cfg;
    h->unix_fd = -1;
    const struct serve_opts *o = cfg->opts;
    cfg->db->public_names = o->public_names;
    struct sconn_cfg cc = {.max_connections = o->max_connections ? o->max_connections : 256,
                           .per_ip = o->per_ip_connections ? o->per_ip_connections : 64,
                           .request_timeout_s = o->request_timeout_s ? o->request_timeout_s : 10,
                           .write_timeout_s = o->write_timeout_s ? o->write_timeout_s : 10,
                           .min_rate = o->min_rate ? o->min_rate : 4096,
                           .trusted_proxy = o->trusted_proxy,
                           .quiet = o->quiet};
    enum kiln_rc rc = sconn_start(&cc, &h->conns, err);
    if (rc == KILN_OK)
        rc = ssse_start(cfg->db, o->max_streams ? o->max_streams : 8, &h->sse, err);
    struct sockaddr_in sa;
    if (rc == KILN_OK && o->socket)
        rc = unix_listen(o->socket, &h->unix_fd, err);
    else if (rc == KILN_OK)
        rc = parse_listen(o->listen ? o->listen : "127.0.0.1:8470", &sa, err);
    if (rc != KILN_OK) {
        shttp_stop(h);
        return rc;
    }
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    unsigned to = o->timeout_s ? o->timeout_s : 30;
    /* MHD's connection limit is the last resort above conn.c's soft cap;
     * its per-IP limit is replaced by conn.c's, which evicts rather than
     * refuses. Its pool is mmapped: untouched pages cost nothing. */
    if (o->socket)
        h->d = MHD_start_daemon(
            flags, 0, sconn_accept, h->conns, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
            NULL, MHD_OPTION_LISTEN_SOCKET, h->unix_fd, MHD_OPTION_CONNECTION_LIMIT,
            cc.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, to,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SCONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED,
            on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, sconn_notify, h->conns, MHD_OPTION_END);
    else
        h->d = MHD_start_daemon(
            flags, ntohs(sa.sin_port), sconn_accept, h->conns, on_request, h,
            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
            MHD_OPTION_CONNECTION_LIMIT, cc.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, to,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SCONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED,
            on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, sconn_notify, h->conns, MHD_OPTION_END);
    if (!h->d) {
        rc = o->socket ? kiln_fail(err, KILN_E_IO, "libmicrohttpd did not start on %s", o->socket)
                       : kiln_fail(err, KILN_E_IO,
                                   "cannot listen on %s (in use by another program? choose "
                                   "another --listen port)",
                                   o->listen ? o->listen : "127.0.0.1:8470");
        shttp_stop(h);
        return rc;
    }
    if (o->socket) {
        printf("kiln serve: listening on unix:%s\n", o->socket);
    } else {
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
        char host[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
        printf("kiln serve: listening on http://%s:%u\n", host,
               di ? (unsigned)di->port : (unsigned)ntohs(sa.sin_port));
    }
    fflush(stdout);
    *out = h;
    return KILN_OK;
}

void shttp_stop(struct shttp *h)
{
    if (!h)
        return;
    if (h->sse)
        ssse_stop(h->sse); /* ends and resumes suspended streams so the daemon can close them */
    if (h->d)
        MHD_stop_daemon(h->d);
    if (h->sse)
        ssse_free(h->sse);
    sconn_free(h->conns); /* after the daemon: it sent CLOSED for every connection */
    if (h->unix_fd >= 0) {
        close(h->unix_fd);
        if (h->cfg.opts->socket)
            unlink(h->cfg.opts->socket);
    }
    free(h);
}
