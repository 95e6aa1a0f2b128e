/* sse.c - GET /v1/submissions/{id}/events: server-sent events, one per
 * stage the submission went through, read from the database and ended
 * after the verdict. A stream with nothing new is suspended (it holds no
 * thread and does not spin); a ticker resumes the suspended ones a few
 * times a second to look again. Streams end after SSE_MAX_S regardless.
 * A token holds at most max_streams at once (counted here, under the mutex):
 * each open stream holds a connection, and the connections are shared.
 * The token is checked again every SSE_RECHECK_S while the stream is open:
 * once it is revoked or expired, the stream sends one last event saying so
 * (token_revoked, token_expired) and ends. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service_impl.h"

#define SSE_TICK_MS   200
#define SSE_MAX_S     900 /* a client may reconnect with Last-Event-ID */
#define SSE_KEEPALIVE 15
#define SSE_RETRY_S   15 /* Retry-After of a refused stream */
#define SSE_RECHECK_S 1  /* how often an open stream's token is checked again */

struct stream {
    struct ssse *owner;
    struct MHD_Connection *c;
    char id[SERVE_WORKLOAD_NAME_MAX + 1];
    char tok[SERVE_TOKEN_ID_LEN + 1]; /* whose stream it is */
    long long after;
    char *pending; /* formatted events not yet handed to MHD */
    size_t plen, poff;
    bool finished, suspended;
    bool closing; /* the last event is pending: end once it is sent */
    double started, last_sent, last_check;
    struct stream *next; /* in owner->waiting while suspended */
};

/* Streams open per token; a token's entry goes when its last stream does. */
struct tokstreams {
    struct tokstreams *next;
    char tok[SERVE_TOKEN_ID_LEN + 1];
    unsigned n;
};

struct ssse {
    struct sdb *db;
    unsigned max_streams;
    struct tokstreams *per_token;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct stream *waiting;
    bool quit;
    pthread_t ticker;
    bool have_ticker;
};

static void resume_all_locked(struct ssse *s)
{
    for (struct stream *st = s->waiting; st; st = st->next) {
        st->suspended = false;
        MHD_resume_connection(st->c);
    }
    s->waiting = NULL;
}

static void *ticker(void *arg)
{
    struct ssse *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->quit) {
        struct timespec ts;
        serve_time_in(CLOCK_REALTIME, SSE_TICK_MS, &ts);
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        resume_all_locked(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

enum kiln_rc ssse_start(struct sdb *db, unsigned max_streams, struct ssse **out,
                        struct kiln_err *err)
{
    struct ssse *s = calloc(1, sizeof(*s));
    if (!s)
        return kiln_fail(err, KILN_E_NOMEM, "sse");
    s->db = db;
    s->max_streams = max_streams;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->ticker, NULL, ticker, s) != 0) {
        ssse_free(s);
        return kiln_fail(err, KILN_E_INTERNAL, "cannot start the event-stream thread");
    }
    s->have_ticker = true;
    *out = s;
    return KILN_OK;
}

void ssse_stop(struct ssse *s)
{
    pthread_mutex_lock(&s->mu);
    s->quit = true;
    resume_all_locked(s);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->have_ticker)
        pthread_join(s->ticker, NULL);
    s->have_ticker = false;
}

void ssse_free(struct ssse *s)
{
    if (!s)
        return;
    if (s->have_ticker)
        ssse_stop(s);
    while (s->per_token) { /* none left once MHD freed every stream */
        struct tokstreams *t = s->per_token;
        s->per_token = t->next;
        free(t);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Appends the events after st->after to st->pending. */
static int fetch(struct stream *st)
{
    json_t *evs = NULL;
    bool fin = false;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sdb_events_json(st->owner->db, st->id, st->after, &evs, &fin, &e) != KILN_OK) {
        fprintf(stderr, "kiln serve: events of %s: %s\n", st->id, e.msg);
        return -1;
    }
    size_t i;
    json_t *ev;
    size_t need = 0;
    char **lines = calloc(json_array_size(evs) + 1, sizeof(char *));
    if (!lines) {
        json_decref(evs);
        return -1;
    }
    json_array_foreach(evs, i, ev)
    {
        char *data = json_dumps(ev, JSON_COMPACT);
        const char *stage = json_string_value(json_object_get(ev, "stage"));
        long long n = (long long)json_integer_value(json_object_get(ev, "n"));
        size_t m = (data ? strlen(data) : 0) + 96;
        lines[i] = malloc(m);
        if (lines[i]) {
            /* Stage names are kiln's own words; data is JSON, one line. */
            snprintf(lines[i], m, "id: %lld\nevent: %s\ndata: %s\n\n", n, stage ? stage : "event",
                     data ? data : "{}");
            need += strlen(lines[i]);
        }
        free(data);
        if (n > st->after)
            st->after = n;
    }
    if (need) {
        char *p = realloc(st->pending, st->plen + need + 1);
        if (p) {
            st->pending = p;
            for (i = 0; i < json_array_size(evs); i++)
                if (lines[i]) {
                    size_t l = strlen(lines[i]);
                    memcpy(st->pending + st->plen, lines[i], l);
                    st->plen += l;
                }
            st->last_sent = serve_now();
        }
    }
    for (i = 0; i < json_array_size(evs); i++)
        free(lines[i]);
    free(lines);
    json_decref(evs);
    st->finished = fin;
    return 0;
}

/* The token's state again, SSE_RECHECK_S after the last look: when it is
 * no longer valid, the stream's last event says why (pending) and it ends.
 * -1 when the database failed. */
static int recheck_token(struct stream *st)
{
    double now = serve_now();
    if (now - st->last_check < SSE_RECHECK_S)
        return 0;
    st->last_check = now;
    bool valid, expired;
    char why[256];
    struct kiln_err e;
    kiln_err_clear(&e);
    if (sauth_still_valid(st->owner->db, st->tok, &valid, &expired, why, sizeof(why), &e) !=
        KILN_OK) {
        fprintf(stderr, "kiln serve: events of %s: %s\n", st->id, e.msg);
        return -1;
    }
    if (valid)
        return 0;
    const char *stage = expired ? "token_expired" : "token_revoked";
    json_t *data = json_pack("{s:s,s:s}", "stage", stage, "detail", why);
    char *txt = data ? json_dumps(data, JSON_COMPACT) : NULL;
    json_decref(data);
    size_t m = (txt ? strlen(txt) : 0) + 64;
    free(st->pending);
    st->pending = txt ? malloc(m) : NULL;
    if (st->pending)
        snprintf(st->pending, m, "event: %s\ndata: %s\n\n", stage, txt);
    free(txt);
    st->plen = st->pending ? strlen(st->pending) : 0;
    st->poff = 0;
    st->closing = true;
    return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct stream *st = cls;
    if (st->poff == st->plen) {
        free(st->pending);
        st->pending = NULL;
        st->plen = st->poff = 0;
        bool quit;
        pthread_mutex_lock(&st->owner->mu);
        quit = st->owner->quit;
        pthread_mutex_unlock(&st->owner->mu);
        if (quit || st->finished || st->closing || serve_now() - st->started > SSE_MAX_S)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (recheck_token(st) != 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (!st->closing && fetch(st) != 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (st->plen == 0 && serve_now() - st->last_sent > SSE_KEEPALIVE) {
            st->pending = strdup(": keepalive\n\n");
            st->plen = st->pending ? strlen(st->pending) : 0;
            st->last_sent = serve_now();
        }
        if (st->plen == 0) {
            /* Nothing new: park the connection until the ticker's next look. */
            pthread_mutex_lock(&st->owner->mu);
            if (!st->owner->quit) {
                MHD_suspend_connection(st->c);
                st->suspended = true;
                st->next = st->owner->waiting;
                st->owner->waiting = st;
            }
            pthread_mutex_unlock(&st->owner->mu);
            return 0;
        }
    }
    size_t n = st->plen - st->poff;
    if (n > max)
        n = max;
    memcpy(buf, st->pending + st->poff, n);
    st->poff += n;
    return (ssize_t)n;
}

static struct tokstreams **tok_find_locked(struct ssse *s, const char *tok)
{
    struct tokstreams **p = &s->per_token;
    while (*p && strcmp((*p)->tok, tok))
        p = &(*p)->next;
    return p;
}

/* Counts a new stream of tok; false when it has max_streams (or no memory). */
static bool tok_take(struct ssse *s, const char *tok)
{
    pthread_mutex_lock(&s->mu);
    struct tokstreams **p = tok_find_locked(s, tok);
    if (!*p && (*p = calloc(1, sizeof(**p))) != NULL)
        snprintf((*p)->tok, sizeof((*p)->tok), "%s", tok);
    bool ok = *p && (*p)->n < s->max_streams;
    if (ok)
        (*p)->n++;
    if (*p && !(*p)->n) {
        free(*p);
        *p = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void tok_put_locked(struct ssse *s, const char *tok)
{
    struct tokstreams **p = tok_find_locked(s, tok);
    if (*p && --(*p)->n == 0) {
        struct tokstreams *t = *p;
        *p = t->next;
        free(t);
    }
}

static void stream_free(void *cls)
{
    struct stream *st = cls;
    /* A stream freed while parked (client gone at shutdown) leaves the list. */
    pthread_mutex_lock(&st->owner->mu);
    tok_put_locked(st->owner, st->tok);
    for (struct stream **p = &st->owner->waiting; *p; p = &(*p)->next)
        if (*p == st) {
            *p = st->next;
            break;
        }
    pthread_mutex_unlock(&st->owner->mu);
    free(st->pending);
    free(st);
}

struct MHD_Response *ssse_response(struct ssse *s, struct MHD_Connection *c, const char *id,
                                   long long after, const char *token_id)
{
    if (!tok_take(s, token_id))
        return NULL;
    struct stream *st = calloc(1, sizeof(*st));
    if (!st) {
        pthread_mutex_lock(&s->mu);
        tok_put_locked(s, token_id);
        pthread_mutex_unlock(&s->mu);
        return NULL;
    }
    snprintf(st->tok, sizeof(st->tok), "%s", token_id);
    st->owner = s;
    st->c = c;
    snprintf(st->id, sizeof(st->id), "%s", id);
    st->after = after;
    st->started = st->last_sent = st->last_check = serve_now();
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, st, stream_free);
    if (!r) {
        stream_free(st);
        return NULL;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    return r;
}

enum MHD_Result ssse_refused(struct ssse *s, struct MHD_Connection *c, const char *token_id)
{
    pthread_mutex_lock(&s->mu);
    struct tokstreams **p = tok_find_locked(s, token_id);
    unsigned n = *p ? (*p)->n : 0;
    pthread_mutex_unlock(&s->mu);
    if (n < s->max_streams)
        return MHD_NO; /* out of memory: the connection is closed */
    char msg[256];
    snprintf(msg, sizeof(msg),
             "this token has %u event streams open, as many as one token may (kiln serve "
             "--max-streams): close one, or retry after the Retry-After header's seconds",
             n);
    return sconn_send_busy(c, "too_many_streams", SSE_RETRY_S, false, msg);
}
