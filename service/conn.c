/* conn.c - who gets a connection and for how long: a table of the live
 * connections (MHD's connection notifications), a total deadline on
 * receiving each request (a ticker thread cuts the late ones), room kept for
 * other clients under the global and per-address caps (the oldest
 * connection still receiving its request is evicted for a new one), the
 * client address behind a trusted reverse proxy (X-Forwarded-For) and a
 * cap on its requests in flight.
 *
 * Why the fd may be shut down from the ticker thread: libmicrohttpd 0.9.75
 * calls MHD_CONNECTION_NOTIFY_CLOSED before it closes the socket (daemon.c,
 * MHD_cleanup_connections and the failure path of new_connection_process_),
 * and the CLOSED handler takes the table's mutex to remove the entry; so an
 * fd read from the table under the mutex is still the connection's own.
 * Everything else (accept policy, notifications, request callbacks) runs
 * on MHD's one internal thread. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "service_impl.h"

#define CONN_TICK_MS 250

/* A client address: IPv4 or IPv6 (a forwarded one may be either). */
struct caddr {
    int family; /* AF_INET, AF_INET6; 0: none (a unix socket peer) */
    unsigned char a[16];
};

struct centry {
    struct centry *prev, *next;
    int fd;
    struct caddr peer;   /* who connected */
    struct caddr client; /* whom the current request is for: peer, or its forwarded address */
    bool from_proxy;
    bool receiving; /* still receiving a request (or idle between two) */
    bool in_flight; /* a proxied request counted against `client` */
    bool cut;       /* shut down by us: on its way out, counted nowhere */
    double since;   /* when it began receiving: accept, or the previous response's end */
};

struct sconn {
    struct sconn_cfg cfg;
    unsigned soft_cap;
    struct caddr proxy; /* --trusted-proxy; family 0: none */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct centry *head, *tail;
    unsigned live;                        /* entries not cut */
    unsigned timed_out, evicted, refused; /* since the last log line */
    double last_log;
    bool quit;
    pthread_t ticker;
    bool have_ticker;
};

static bool caddr_eq(const struct caddr *x, const struct caddr *y)
{
    return x->family == y->family && !memcmp(x->a, y->a, sizeof(x->a));
}

static void caddr_from_sockaddr(const struct sockaddr *sa, socklen_t len, struct caddr *out)
{
    memset(out, 0, sizeof(*out));
    if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        out->family = AF_INET;
        memcpy(out->a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        out->family = AF_INET6;
        memcpy(out->a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

static void caddr_str(const struct caddr *x, char *buf, size_t cap)
{
    if (!x->family || !inet_ntop(x->family, x->a, buf, (socklen_t)cap))
        snprintf(buf, cap, "unix");
}

/* The room kept above the soft cap for evicted connections MHD has not
 * closed yet (it accepts at most 10 a turn, then closes what was cut). */
static unsigned soft_cap_of(unsigned max_connections)
{
    unsigned reserve = max_connections / 16;
    reserve = reserve < 1 ? 1 : reserve > 16 ? 16 : reserve;
    return max_connections > reserve ? max_connections - reserve : 1;
}

static void cut_locked(struct sconn *t, struct centry *e)
{
    /* Both directions: MHD sees EOF and closes it; the client sees EOF. */
    shutdown(e->fd, SHUT_RDWR);
    e->cut = true;
    t->live--;
}

/* Evicts the connection that has been receiving longest among all (addr
 * NULL) or those of addr; false when none is receiving. */
static bool evict_oldest_locked(struct sconn *t, const struct caddr *addr)
{
    struct centry *old = NULL;
    for (struct centry *e = t->head; e; e = e->next)
        if (!e->cut && e->receiving && (!addr || caddr_eq(&e->peer, addr)) &&
            (!old || e->since < old->since))
            old = e;
    if (!old)
        return false;
    cut_locked(t, old);
    t->evicted++;
    return true;
}

static unsigned count_peer_locked(const struct sconn *t, const struct caddr *addr)
{
    unsigned n = 0;
    for (const struct centry *e = t->head; e; e = e->next)
        n += !e->cut && caddr_eq(&e->peer, addr);
    return n;
}

static void log_locked(struct sconn *t, double now)
{
    if (t->cfg.quiet || now - t->last_log < 1 || !(t->timed_out + t->evicted + t->refused))
        return;
    fprintf(stderr,
            "kiln serve: connections: %u cut past --request-timeout, %u evicted for room, %u "
            "refused (no room)\n",
            t->timed_out, t->evicted, t->refused);
    t->timed_out = t->evicted = t->refused = 0;
    t->last_log = now;
}

static void *ticker(void *arg)
{
    struct sconn *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->quit) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += CONN_TICK_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        double now = serve_mono();
        for (struct centry *e = t->head; e; e = e->next)
            if (!e->cut && e->receiving && now - e->since > t->cfg.request_timeout_s) {
                cut_locked(t, e);
                t->timed_out++;
            }
        log_locked(t, now);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

enum kiln_rc sconn_start(const struct sconn_cfg *cfg, struct sconn **out, struct kiln_err *err)
{
    struct caddr proxy = {0};
    if (cfg->trusted_proxy) {
        if (inet_pton(AF_INET, cfg->trusted_proxy, proxy.a) != 1)
            return kiln_fail(err, KILN_E_USAGE,
                             "--trusted-proxy '%s' must be the proxy's IPv4 address, as in "
                             "--trusted-proxy 127.0.0.1",
                             cfg->trusted_proxy);
        proxy.family = AF_INET;
    }
    struct sconn *t = calloc(1, sizeof(*t));
    if (!t)
        return kiln_fail(err, KILN_E_NOMEM, "connection table");
    t->cfg = *cfg;
    t->proxy = proxy;
    t->soft_cap = soft_cap_of(cfg->max_connections);
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&t->ticker, NULL, ticker, t) != 0) {
        sconn_free(t);
        return kiln_fail(err, KILN_E_INTERNAL, "cannot start the connection ticker thread");
    }
    t->have_ticker = true;
    *out = t;
    return KILN_OK;
}

void sconn_free(struct sconn *t)
{
    if (!t)
        return;
    if (t->have_ticker) {
        pthread_mutex_lock(&t->mu);
        t->quit = true;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->ticker, NULL);
    }
    /* MHD_stop_daemon has sent CLOSED for every connection: none is left. */
    while (t->head) {
        struct centry *e = t->head;
        t->head = e->next;
        free(e);
    }
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static bool is_proxy(const struct sconn *t, const struct caddr *a)
{
    return t->proxy.family && caddr_eq(a, &t->proxy);
}

enum MHD_Result sconn_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct sconn *t = cls;
    struct caddr a;
    caddr_from_sockaddr(addr, addrlen, &a);
    /* A proxy's connections carry everyone: only the global cap holds them. */
    bool per_addr = a.family && !is_proxy(t, &a);
    pthread_mutex_lock(&t->mu);
    bool ok = true;
    if (per_addr && count_peer_locked(t, &a) >= t->cfg.per_ip)
        ok = evict_oldest_locked(t, &a);
    if (ok && t->live >= t->soft_cap)
        ok = evict_oldest_locked(t, NULL);
    if (!ok)
        t->refused++;
    pthread_mutex_unlock(&t->mu);
    return ok ? MHD_YES : MHD_NO;
}

void sconn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode code)
{
    struct sconn *t = cls;
    struct centry *e = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (!e)
            return;
        pthread_mutex_lock(&t->mu);
        *(e->prev ? &e->prev->next : &t->head) = e->next;
        *(e->next ? &e->next->prev : &t->tail) = e->prev;
        if (!e->cut)
            t->live--;
        pthread_mutex_unlock(&t->mu);
        free(e);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ca =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    e = fd ? calloc(1, sizeof(*e)) : NULL;
    if (!e) {
        /* Untracked, it would escape every limit: refuse it instead. */
        if (fd)
            shutdown(fd->connect_fd, SHUT_RDWR);
        return;
    }
    e->fd = fd->connect_fd;
    caddr_from_sockaddr(ca ? ca->client_addr : NULL,
                        ca && ca->client_addr ? (socklen_t)sizeof(struct sockaddr_in6) : 0,
                        &e->peer);
    e->client = e->peer;
    e->from_proxy = is_proxy(t, &e->peer);
    e->receiving = true;
    e->since = serve_mono();
    pthread_mutex_lock(&t->mu);
    e->prev = t->tail;
    *(t->tail ? &t->tail->next : &t->head) = e;
    t->tail = e;
    t->live++;
    pthread_mutex_unlock(&t->mu);
    *socket_context = e;
}

static struct centry *entry_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

static enum MHD_Result last_xff(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    if (key && value && !strcasecmp(key, "X-Forwarded-For"))
        *(const char **)cls = value;
    return MHD_YES;
}

int sconn_parse_forwarded(const char *xff, unsigned char addr[16])
{
    const char *p = strrchr(xff, ',');
    p = p ? p + 1 : xff;
    p += strspn(p, " \t");
    size_t n = strcspn(p, " \t");
    char buf[INET6_ADDRSTRLEN];
    memset(addr, 0, 16);
    if (n == 0 || n >= sizeof(buf) || p[n + strspn(p + n, " \t")])
        return 0;
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (inet_pton(AF_INET, buf, addr) == 1)
        return AF_INET;
    if (inet_pton(AF_INET6, buf, addr) == 1)
        return AF_INET6;
    memset(addr, 0, 16);
    return 0;
}

/* The last address of the last X-Forwarded-For header (the one the proxy
 * appended); false when there is none or it is not an address. */
static bool forwarded_for(struct MHD_Connection *c, struct caddr *out)
{
    const char *xff = NULL;
    MHD_get_connection_values(c, MHD_HEADER_KIND, last_xff, &xff);
    if (!xff)
        return false;
    out->family = sconn_parse_forwarded(xff, out->a);
    return out->family != 0;
}

bool sconn_request_begin(struct sconn *t, struct MHD_Connection *c, bool has_body)
{
    struct centry *e = entry_of(c);
    if (!e)
        return true;
    struct caddr fwd;
    bool busy = false;
    if (e->from_proxy && !forwarded_for(c, &fwd))
        fwd = e->peer; /* missing or malformed: the proxy's own bucket */
    pthread_mutex_lock(&t->mu);
    if (e->from_proxy) {
        unsigned n = 0;
        for (const struct centry *o = t->head; o; o = o->next)
            n += o->in_flight && caddr_eq(&o->client, &fwd);
        busy = n >= t->cfg.per_ip;
        e->client = fwd;
        e->in_flight = !busy;
    }
    /* A request with a body is received only when its body is: it stays
     * under the deadline until its response is sent (on_completed). */
    if (!has_body)
        e->receiving = false;
    pthread_mutex_unlock(&t->mu);
    return !busy;
}

void sconn_request_end(struct sconn *t, struct MHD_Connection *c)
{
    struct centry *e = entry_of(c);
    if (!e)
        return;
    pthread_mutex_lock(&t->mu);
    e->in_flight = false;
    e->client = e->peer;
    e->receiving = true; /* keep-alive: the next request's deadline starts now */
    e->since = serve_mono();
    pthread_mutex_unlock(&t->mu);
}

void sconn_client(struct MHD_Connection *c, char *buf, size_t cap)
{
    struct centry *e = entry_of(c);
    if (!e) {
        snprintf(buf, cap, "-");
        return;
    }
    caddr_str(&e->client, buf, cap); /* written only on MHD's thread, as this runs */
}

struct sizes {
    size_t n;
};

static enum MHD_Result add_size(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    struct sizes *s = cls;
    s->n += (key ? strlen(key) : 0) + (value ? strlen(value) : 0) + 2; /* "=", "&" or ": " */
    return MHD_YES;
}

void sconn_request_sizes(struct MHD_Connection *c, const char *url, size_t *uri, size_t *headers)
{
    struct sizes q = {strlen(url)}, h = {0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_size, &q);
    MHD_get_connection_values(c, MHD_HEADER_KIND, add_size, &h);
    *uri = q.n;
    *headers = h.n;
}

enum MHD_Result sconn_send_busy(struct MHD_Connection *c, const char *code, unsigned retry_after_s,
                                const char *message)
{
    json_t *doc = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
    char *txt = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    struct MHD_Response *r =
        txt ? MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) {
        free(txt);
        return MHD_NO;
    }
    char ra[16];
    snprintf(ra, sizeof(ra), "%u", retry_after_s);
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "Retry-After", ra);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
    MHD_destroy_response(r);
    return ret;
}
