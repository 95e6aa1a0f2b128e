/* conn_watch.c - how each connection is progressing, and the deadlines
 * that follow from it. A ticker thread samples every connection's byte
 * counts from the kernel 4 times a second (TCP_INFO: bytes received from
 * the client and bytes it acknowledged; SIOCOUTQ: bytes it has not taken
 * yet) and cuts one that is
 *   - late with its request's line and headers, or idle between two
 *     requests, past --request-timeout;
 *   - sending its body slower than the floor: it may take --request-timeout
 *     plus the time the bytes it sent would take at --min-rate (caddy's
 *     rule), so a large honest upload is never cut by its age;
 *   - not taking its answer: a response waits in the socket and the client
 *     acknowledged less than --min-rate bytes a second over the last
 *     --write-timeout (a reader that does not read, or reads a byte at a time).
 * The same samples give each connection a rate, which decides whom a
 * newcomer evicts (cwatch_class). Nothing here reads libmicrohttpd's state:
 * what the client did is in the kernel's counters.
 *
 * Why the fd may be used from this thread: conn.c's header comment. */
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "conn_impl.h"

uint32_t cwatch_outq(const struct centry *e)
{
    int n = 0;
    return ioctl(e->fd, SIOCOUTQ, &n) == 0 && n > 0 ? (uint32_t)n : 0;
}

bool cwatch_sample(struct centry *e)
{
    e->outq = cwatch_outq(e);
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    /* tcpi_bytes_received is Linux 4.1's; a kernel without it leaves 0. */
    if (!e->tcp || getsockopt(e->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received)) {
        e->tcp = false;
        return false;
    }
    e->rx = ti.tcpi_bytes_received;
    e->acked = ti.tcpi_bytes_acked;
    return true;
}

/* The moved-bytes ring and the rate over it. */
static void update_rate(struct centry *e)
{
    uint64_t now_moved = e->rx + e->acked;
    if (e->nmoved < CONN_WINDOW) {
        e->moved[e->nmoved++] = now_moved;
    } else {
        memmove(e->moved, e->moved + 1, (CONN_WINDOW - 1) * sizeof(*e->moved));
        e->moved[CONN_WINDOW - 1] = now_moved;
    }
    e->rate = e->nmoved < 2 ? -1
                            : (double)(e->moved[e->nmoved - 1] - e->moved[0]) /
                                  ((e->nmoved - 1) * (CONN_TICK_MS / 1000.0));
}

double cwatch_rate(const struct centry *e, double now)
{
    if (e->nmoved >= 2)
        return e->rate;
    double age = now - e->accepted;
    return (double)(e->rx + e->acked) / (age > 0.05 ? age : 0.05);
}

/* Whether a phase waits on the client: its request, or its taking an answer. */
static bool waits_on_client(const struct centry *e)
{
    return e->phase != CP_ANSWER || e->outq > 0;
}

int cwatch_class(const struct sconn *t, const struct centry *e, double now)
{
    /* 0: idle keep-alive, or waiting on a client that moves less than the
     *    floor (a slowloris, a reader that does not read);
     * 1: a phase too young to judge;
     * 2: progressing (or the server's turn), no valid token;
     * 3: the same with a valid token: evicted last. */
    if (!waits_on_client(e))
        return 2 + e->authed;
    /* Between two requests, unless the next one's bytes are coming. */
    if (e->phase == CP_IDLE && !(e->tcp && e->rx > e->phase_rx))
        return 0;
    if (now - e->since < CONN_GRACE_S)
        return 1;
    if (e->tcp ? cwatch_rate(e, now) < (double)t->cfg.min_rate : e->phase != CP_BODY)
        return 0;
    return 2 + e->authed;
}

/* The write window: while something waits unacknowledged, the client must
 * take min_rate bytes a second over each write_timeout. Kept across the
 * requests of a connection (a backlog is the socket's, not a request's);
 * true when the client fell behind. */
static bool write_stalled(const struct sconn *t, struct centry *e, double now)
{
    if (e->outq == 0) {
        e->backlog_since = 0;
        return false;
    }
    if (e->backlog_since == 0) {
        e->backlog_since = now;
        e->backlog_acked = e->acked;
        return false;
    }
    double span = now - e->backlog_since;
    if (span < t->cfg.write_timeout_s)
        return false;
    /* Without byte counts (a unix socket), a backlog that lasts the whole
     * window is a stall. */
    if (e->tcp && (double)(e->acked - e->backlog_acked) >= t->cfg.min_rate * span) {
        e->backlog_since = now; /* it keeps up: a new window */
        e->backlog_acked = e->acked;
        return false;
    }
    return true;
}

bool cwatch_past_deadline(struct sconn *t, struct centry *e, double now)
{
    double age = now - e->since;
    bool stalled = write_stalled(t, e, now);
    switch (e->phase) {
    case CP_HEAD:
    case CP_IDLE:
        if (age <= t->cfg.request_timeout_s)
            return false;
        t->recent.head_late++;
        return true;
    case CP_BODY: {
        double allowed = t->cfg.request_timeout_s;
        if (e->tcp)
            allowed += (double)(e->rx - e->phase_rx) / t->cfg.min_rate;
        if (age <= allowed)
            return false;
        t->recent.body_slow++;
        return true;
    }
    case CP_ANSWER:
        if (!stalled)
            return false;
        t->recent.write_stalled++;
        return true;
    }
    return false;
}

static void log_locked(struct sconn *t, double now)
{
    struct ccounts *r = &t->recent;
    unsigned long sum =
        r->head_late + r->body_slow + r->write_stalled + r->pipelined + r->evicted + r->refused;
    if (now - t->last_log < 1 || !sum)
        return;
    if (!t->cfg.quiet)
        fprintf(stderr,
                "kiln serve: connections: %lu cut past --request-timeout, %lu sending a body "
                "under --min-rate, %lu not taking their answers (--write-timeout), %lu closed "
                "for pipelining unread answers, %lu evicted for room, %lu refused (no room)\n",
                r->head_late, r->body_slow, r->write_stalled, r->pipelined, r->evicted, r->refused);
    t->total.head_late += r->head_late;
    t->total.body_slow += r->body_slow;
    t->total.write_stalled += r->write_stalled;
    t->total.pipelined += r->pipelined;
    t->total.evicted += r->evicted;
    t->total.refused += r->refused;
    memset(r, 0, sizeof(*r));
    t->last_log = now;
}

void *cwatch_ticker(void *arg)
{
    struct sconn *t = arg;
    pthread_mutex_lock(&t->mu);
    while (!t->quit) {
        struct timespec ts;
        serve_time_in(CLOCK_MONOTONIC, CONN_TICK_MS, &ts);
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        double now = serve_mono();
        for (struct centry *e = t->head; e; e = e->next) {
            if (e->cut)
                continue;
            cwatch_sample(e);
            update_rate(e);
            if (cwatch_past_deadline(t, e, now))
                sconn_cut_locked(t, e);
        }
        log_locked(t, now);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}
