/* conn_impl.h - what conn.c (who gets a connection) and conn_watch.c (how
 * each one is progressing, and the deadlines) share; not a public header.
 * Every field below is guarded by sconn.mu. */
#ifndef KILN_CONN_IMPL_H
#define KILN_CONN_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "service_impl.h"

#define CONN_TICK_MS 250
#define CONN_WINDOW  8   /* ticks of progress kept: a rate is over the last 2 s */
#define CONN_GRACE_S 1.0 /* a phase younger than this is not judged slow yet */

/* A client address: IPv4 or IPv6 (a forwarded one may be either). */
struct caddr {
    int family; /* AF_INET, AF_INET6; 0: none (a unix socket peer) */
    unsigned char a[16];
};

/* Where a connection is: whose turn it is, and which deadline holds. */
enum cphase {
    CP_HEAD,   /* receiving a request's line and headers */
    CP_BODY,   /* receiving its body */
    CP_ANSWER, /* its response is being produced or sent */
    CP_IDLE,   /* keep-alive: between a response and the next request */
};

struct centry {
    struct centry *prev, *next;
    int fd;
    struct caddr peer;   /* who connected */
    struct caddr client; /* whom the current request is for: peer, or its forwarded address */
    bool from_proxy;
    bool in_flight; /* a proxied request counted against `client` */
    bool cut;       /* shut down by us: on its way out, counted nowhere */
    bool authed;    /* the current request carried a valid token */
    bool tcp;       /* TCP_INFO answers: byte counts are known */
    bool served;    /* a response was sent: libmicrohttpd zeroed its whole pool */
    enum cphase phase;
    double accepted;    /* when it connected */
    double since;       /* when the phase began */
    unsigned pipelined; /* requests begun in a row while earlier answers were unread */
    /* Progress, sampled by the ticker (conn_watch.c). */
    uint64_t rx, acked;          /* bytes received from and acknowledged by the client */
    uint64_t phase_rx;           /* rx when the phase began */
    uint32_t outq;               /* bytes sent or queued but not yet acknowledged */
    uint64_t moved[CONN_WINDOW]; /* rx + acked at each of the last ticks */
    unsigned nmoved;             /* samples in moved[] (at most CONN_WINDOW) */
    double rate;                 /* bytes per second over moved[]; < 0: not known yet */
    double backlog_since;        /* start of the write window (0: nothing unacknowledged) */
    uint64_t backlog_acked;      /* acked at its start */
};

/* Counts since the last log line, and totals for /metrics. */
struct ccounts {
    unsigned long head_late, body_slow, write_stalled, pipelined, evicted, refused;
};

struct sconn {
    struct sconn_cfg cfg;
    unsigned soft_cap;
    struct caddr proxy; /* --trusted-proxy; family 0: none */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct centry *head, *tail;
    unsigned live; /* entries not cut */
    struct ccounts recent, total;
    double last_log;
    bool quit;
    pthread_t ticker;
    bool have_ticker;
};

/* conn.c */
void sconn_cut_locked(struct sconn *t, struct centry *e);
/* Enters phase p now (the ticker's next sample measures it afresh). */
void sconn_phase_locked(struct centry *e, enum cphase p);
/* Whom a newcomer evicts, among all (addr NULL) or those of addr: the
 * connection of the lowest class (cwatch_class), the slowest of it, the
 * oldest of those; NULL when there is none. */
struct centry *sconn_victim_locked(const struct sconn *t, const struct caddr *addr, double now);

/* conn_watch.c */
/* Reads e's byte counts from the kernel (TCP_INFO, SIOCOUTQ); false on a
 * socket without them (a unix socket: only outq is known). */
bool cwatch_sample(struct centry *e);
/* Unacknowledged bytes of e's socket now (for a request that begins). */
uint32_t cwatch_outq(const struct centry *e);
/* The eviction order: lower is evicted first (SECURITY.md, "The service"). */
int cwatch_class(const struct sconn *t, const struct centry *e, double now);
/* e's bytes per second: over the last ticks, or since it connected while
 * it is too young for two samples. */
double cwatch_rate(const struct centry *e, double now);
/* Whether e has missed its phase's deadline at `now` (counted by reason in
 * t->recent); keeps e's write window. */
bool cwatch_past_deadline(struct sconn *t, struct centry *e, double now);
void *cwatch_ticker(void *arg);

#endif
