/* conn.c - who gets a connection: a table of the live connections (MHD's
 * connection notifications), room kept for other clients under the global
 * and per-address caps (a newcomer evicts the connection that is making
 * the least progress, an authenticated one that progresses last), a cap on
 * requests pipelined over unread answers, the client address behind a
 * trusted reverse proxy (X-Forwarded-For) and a cap on its requests in
 * flight. The deadlines and the progress they measure: conn_watch.c.
 *
 * Why the fd may be used from the ticker thread: libmicrohttpd 0.9.75
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

#include "conn_impl.h"
#include "strbuf.h"

/* Requests begun in a row while the client had not taken earlier answers:
 * past this, the connection is answered 429 and closed. A client that
 * reads never reaches it; one that pipelines without reading would
 * otherwise have every queued request answered into a socket it drains
 * at its own pace. */
#define CONN_PIPELINE_MAX 16
/* The kernel's send buffer of each connection: what answers a client
 * leaves unread can hold at most (the default grows to megabytes). */
#define CONN_SNDBUF (64 * 1024)

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

void sconn_cut_locked(struct sconn *t, struct centry *e)
{
    /* Both directions: MHD sees EOF and closes it; the client sees EOF. */
    shutdown(e->fd, SHUT_RDWR);
    e->cut = true;
    t->live--;
}

void sconn_phase_locked(struct centry *e, enum cphase p)
{
    cwatch_sample(e);
    e->phase = p;
    e->since = serve_mono();
    e->phase_rx = e->rx;
}

struct centry *sconn_victim_locked(const struct sconn *t, const struct caddr *addr, double now)
{
    struct centry *victim = NULL;
    int vclass = 0;
    double vrate = 0;
    for (struct centry *e = t->head; e; e = e->next) {
        if (e->cut || (addr && !caddr_eq(&e->peer, addr)))
            continue;
        int k = cwatch_class(t, e, now);
        double rate = cwatch_rate(e, now);
        if (!victim || k < vclass || (k == vclass && rate < vrate) ||
            (k == vclass && rate == vrate && e->since < victim->since)) {
            victim = e;
            vclass = k;
            vrate = rate;
        }
    }
    return victim;
}

/* Evicts sconn_victim_locked's choice; false when there is none. */
static bool evict_locked(struct sconn *t, const struct caddr *addr)
{
    struct centry *victim = sconn_victim_locked(t, addr, serve_mono());
    if (!victim)
        return false;
    sconn_cut_locked(t, victim);
    t->recent.evicted++;
    return true;
}

static unsigned count_peer_locked(const struct sconn *t, const struct caddr *addr)
{
    unsigned n = 0;
    for (const struct centry *e = t->head; e; e = e->next)
        n += !e->cut && caddr_eq(&e->peer, addr);
    return n;
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
    if (pthread_create(&t->ticker, NULL, cwatch_ticker, t) != 0) {
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
        ok = evict_locked(t, &a);
    if (ok && t->live >= t->soft_cap)
        ok = evict_locked(t, NULL);
    if (!ok)
        t->recent.refused++;
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
    e->tcp = e->peer.family != 0;
    e->rate = -1;
    e->accepted = serve_mono();
    /* What a client leaves unread is held in this much kernel memory at
     * most; a failure leaves the kernel's default. */
    int sndbuf = CONN_SNDBUF;
    if (e->tcp)
        (void)setsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    pthread_mutex_lock(&t->mu);
    sconn_phase_locked(e, CP_HEAD);
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

enum sconn_begin sconn_request_begin(struct sconn *t, struct MHD_Connection *c, bool has_body)
{
    struct centry *e = entry_of(c);
    if (!e)
        return SCONN_GO;
    struct caddr fwd;
    enum sconn_begin verdict = SCONN_GO;
    if (e->from_proxy && !forwarded_for(c, &fwd))
        fwd = e->peer; /* missing or malformed: the proxy's own bucket */
    pthread_mutex_lock(&t->mu);
    /* Answers still unread when the next request begins: pipelined over
     * them. A client that reads resets the count with its next request. */
    e->pipelined = cwatch_outq(e) > 0 ? e->pipelined + 1 : 0;
    if (e->pipelined > CONN_PIPELINE_MAX) {
        verdict = SCONN_PIPELINED;
        t->recent.pipelined++;
    }
    if (e->from_proxy) {
        unsigned n = 0;
        for (const struct centry *o = t->head; o; o = o->next)
            n += o->in_flight && caddr_eq(&o->client, &fwd);
        if (verdict == SCONN_GO && n >= t->cfg.per_ip)
            verdict = SCONN_BUSY;
        e->client = fwd;
        e->in_flight = verdict != SCONN_BUSY;
    }
    e->authed = false;
    /* A request with a body is received only when its body is. */
    sconn_phase_locked(e, has_body && verdict == SCONN_GO ? CP_BODY : CP_ANSWER);
    pthread_mutex_unlock(&t->mu);
    return verdict;
}

/* Runs f on c's entry under the mutex, when it has one. */
static void with_entry(struct sconn *t, struct MHD_Connection *c,
                       void (*f)(struct sconn *, struct centry *))
{
    struct centry *e = entry_of(c);
    if (!e)
        return;
    pthread_mutex_lock(&t->mu);
    f(t, e);
    pthread_mutex_unlock(&t->mu);
}

static void authed_locked(struct sconn *t, struct centry *e)
{
    (void)t;
    e->authed = true;
}

void sconn_request_authed(struct sconn *t, struct MHD_Connection *c)
{
    with_entry(t, c, authed_locked);
}

static void answer_locked(struct sconn *t, struct centry *e)
{
    (void)t;
    if (e->phase != CP_ANSWER)
        sconn_phase_locked(e, CP_ANSWER);
}

void sconn_request_answer(struct sconn *t, struct MHD_Connection *c)
{
    with_entry(t, c, answer_locked);
}

static void end_locked(struct sconn *t, struct centry *e)
{
    (void)t;
    e->in_flight = false;
    e->authed = false;
    e->served = true;
    e->client = e->peer;
    sconn_phase_locked(e, CP_IDLE); /* keep-alive: the next request's deadline starts now */
}

void sconn_request_end(struct sconn *t, struct MHD_Connection *c)
{
    with_entry(t, c, end_locked);
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
                                bool close, const char *message)
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
    if (close)
        MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
    MHD_destroy_response(r);
    return ret;
}

/* What libmicrohttpd may hold for e: its pool, zeroed whole after a first
 * response, else at most the bytes the client sent (the pool fills as it
 * reads). Without byte counts, the whole pool. */
static uint64_t pool_bytes(const struct centry *e)
{
    if (e->served || !e->tcp)
        return SCONN_MEMORY;
    return e->rx < SCONN_MEMORY ? e->rx : SCONN_MEMORY;
}

void sconn_metrics_text(struct sconn *t, struct strbuf *sb)
{
    static const char *const phase_name[] = {"head", "body", "answer", "idle"};
    unsigned by_phase[4] = {0}, unauthed = 0;
    uint64_t unauth_bytes = 0;
    pthread_mutex_lock(&t->mu);
    for (const struct centry *e = t->head; e; e = e->next) {
        if (e->cut)
            continue;
        by_phase[e->phase]++;
        if (!e->authed) {
            unauthed++;
            unauth_bytes += pool_bytes(e);
        }
    }
    struct ccounts c = t->total, *r = &t->recent;
    c.head_late += r->head_late;
    c.body_slow += r->body_slow;
    c.write_stalled += r->write_stalled;
    c.pipelined += r->pipelined;
    c.evicted += r->evicted;
    c.refused += r->refused;
    pthread_mutex_unlock(&t->mu);
    strbuf_puts(sb, "# HELP kiln_connections Open connections by phase.\n"
                    "# TYPE kiln_connections gauge\n");
    for (int i = 0; i < 4; i++)
        strbuf_printf(sb, "kiln_connections{phase=\"%s\"} %u\n", phase_name[i], by_phase[i]);
    strbuf_printf(sb,
                  "# HELP kiln_unauthenticated_connections Connections whose current request "
                  "carries no valid token (idle ones included).\n"
                  "# TYPE kiln_unauthenticated_connections gauge\n"
                  "kiln_unauthenticated_connections %u\n"
                  "# HELP kiln_unauthenticated_memory_bytes At most what the server holds for "
                  "them: libmicrohttpd's pool each (no body is read before its token is "
                  "checked).\n"
                  "# TYPE kiln_unauthenticated_memory_bytes gauge\n"
                  "kiln_unauthenticated_memory_bytes %llu\n",
                  unauthed, (unsigned long long)unauth_bytes);
    strbuf_puts(sb, "# HELP kiln_connections_closed_total Connections the server ended, by "
                    "reason.\n# TYPE kiln_connections_closed_total counter\n");
    const struct {
        const char *why;
        unsigned long n;
    } closed[] = {{"request_timeout", c.head_late},
                  {"slow_body", c.body_slow},
                  {"write_timeout", c.write_stalled},
                  {"pipelined", c.pipelined},
                  {"evicted", c.evicted},
                  {"refused", c.refused}};
    for (size_t i = 0; i < sizeof(closed) / sizeof(*closed); i++)
        strbuf_printf(sb, "kiln_connections_closed_total{reason=\"%s\"} %lu\n", closed[i].why,
                      closed[i].n);
}
