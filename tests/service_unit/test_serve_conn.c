/* Unit tests of the connection defence's policy (issue 34) on synthetic
 * samples, no sockets and no clock: whom a newcomer evicts (the least
 * progress first, an authenticated request that progresses last, never by
 * age alone) and which deadline a connection has missed (a slow honest
 * upload is never cut for its age; a drip, a late header and a reader that
 * does not take its answer are). service_floods drives the same policy
 * over real sockets; these pin each rule on its own, whatever the load. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "conn_impl.h"

#define NOW 1000.0 /* a synthetic monotonic time, seconds */

static void config(struct sconn *t)
{
    memset(t, 0, sizeof(*t));
    t->cfg = (struct sconn_cfg){.max_connections = 64,
                                .per_ip = 16,
                                .request_timeout_s = 10,
                                .write_timeout_s = 10,
                                .min_rate = 4096};
}

/* A TCP connection from 127.0.0.`host`, in phase p since `age` seconds,
 * moving `rate` bytes a second over a full window of samples. */
static void conn(struct sconn *t, struct centry *e, int host, enum cphase p, double age,
                 double rate)
{
    memset(e, 0, sizeof(*e));
    e->peer.family = 2; /* AF_INET; the value only has to match */
    e->peer.a[0] = 127;
    e->peer.a[3] = (unsigned char)host;
    e->client = e->peer;
    e->tcp = true;
    e->phase = p;
    e->accepted = e->since = NOW - age;
    e->nmoved = CONN_WINDOW;
    e->rate = rate;
    e->prev = t->tail;
    *(t->tail ? &t->tail->next : &t->head) = e;
    t->tail = e;
    t->live++;
}

/* Evicts sconn_victim_locked's choice as conn.c does. */
static struct centry *evict(struct sconn *t, const struct caddr *addr)
{
    struct centry *v = sconn_victim_locked(t, addr, NOW);
    if (v) {
        v->cut = true;
        t->live--;
    }
    return v;
}

static void test_eviction_by_progress(void **state)
{
    (void)state;
    struct sconn t;
    config(&t);
    /* Added oldest first: the authenticated upload is the oldest of all,
     * exactly what "oldest still receiving" evicted first. */
    struct centry authed_upload, upload, stream, young, stuck, idle, half_open;
    conn(&t, &authed_upload, 1, CP_BODY, 30, 150e3);
    authed_upload.authed = true;
    conn(&t, &upload, 2, CP_BODY, 20, 150e3);
    conn(&t, &stream, 2, CP_ANSWER, 15, 0); /* the server's turn: nothing unread */
    stream.authed = true;
    conn(&t, &stuck, 3, CP_ANSWER, 12, 10); /* 60 KB unread, a byte now and then */
    stuck.outq = 60000;
    conn(&t, &idle, 1, CP_IDLE, 8, 0);
    conn(&t, &half_open, 4, CP_HEAD, 5, 0);
    conn(&t, &young, 4, CP_HEAD, 0.3, 0);

    assert_int_equal(cwatch_class(&t, &half_open, NOW), 0);
    assert_int_equal(cwatch_class(&t, &idle, NOW), 0);
    assert_int_equal(cwatch_class(&t, &stuck, NOW), 0);
    assert_int_equal(cwatch_class(&t, &young, NOW), 1);
    assert_int_equal(cwatch_class(&t, &upload, NOW), 2);
    assert_int_equal(cwatch_class(&t, &stream, NOW), 3);
    assert_int_equal(cwatch_class(&t, &authed_upload, NOW), 3);
    /* An idle keep-alive connection whose next request is arriving at a
     * good rate is not idle; arriving under the floor, it is a drip. */
    idle.rx = 100;
    assert_int_equal(cwatch_class(&t, &idle, NOW), 0);
    idle.rate = 50e3;
    assert_int_equal(cwatch_class(&t, &idle, NOW), 2);
    idle.rx = 0;
    idle.rate = 0;

    /* Per address: 127.0.0.1's newcomer evicts its idle connection, never
     * its older authenticated upload. */
    struct caddr one = authed_upload.peer;
    assert_ptr_equal(evict(&t, &one), &idle);
    assert_ptr_equal(evict(&t, &one), &authed_upload); /* the last one left */
    authed_upload.cut = false;
    t.live++;

    /* Globally: the slowest of the class 0 first (the reader taking 10 B/s
     * is ahead of the silent ones only by its rate), then by age; then the
     * young; then progress without a token; the authenticated last. */
    const struct centry *want[] = {&half_open, &stuck, &young, &upload, &stream, &authed_upload};
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
        assert_ptr_equal(evict(&t, NULL), want[i]);
    assert_null(evict(&t, NULL));
    assert_int_equal(t.live, 0);
}

static void test_slower_of_a_class_first(void **state)
{
    (void)state;
    struct sconn t;
    config(&t);
    struct centry fast, slow, slow_young;
    conn(&t, &fast, 1, CP_BODY, 40, 500e3);
    conn(&t, &slow, 1, CP_BODY, 30, 20e3);
    conn(&t, &slow_young, 1, CP_BODY, 10, 20e3);
    /* Both above the floor: the slower goes first, the older of equals. */
    assert_ptr_equal(evict(&t, NULL), &slow);
    assert_ptr_equal(evict(&t, NULL), &slow_young);
    assert_ptr_equal(evict(&t, NULL), &fast);
    /* Under the floor, a body is a drip: class 0 whatever its age. */
    struct sconn t2;
    config(&t2);
    struct centry drip;
    conn(&t2, &drip, 1, CP_BODY, 3, 1000);
    assert_int_equal(cwatch_class(&t2, &drip, NOW), 0);
}

static void test_body_deadline(void **state)
{
    (void)state;
    struct sconn t;
    config(&t);
    struct centry up, drip;
    /* 900 KB in 60 s (15 KB/s): allowed 10 s plus 900 KB at 4096 B/s. */
    conn(&t, &up, 1, CP_BODY, 60, 15e3);
    up.rx = 900 * 1024;
    assert_false(cwatch_past_deadline(&t, &up, NOW));
    /* A drip: 100 bytes in 11 s. */
    conn(&t, &drip, 2, CP_BODY, 11, 9);
    drip.rx = 100;
    assert_true(cwatch_past_deadline(&t, &drip, NOW));
    assert_int_equal(t.recent.body_slow, 1);
    /* Only this request's bytes count: a connection that sent 1 MB of an
     * earlier request earns nothing for this one. */
    up.phase_rx = up.rx;
    assert_true(cwatch_past_deadline(&t, &up, NOW));
    assert_int_equal(t.recent.body_slow, 2);
}

static void test_head_and_idle_deadline(void **state)
{
    (void)state;
    struct sconn t;
    config(&t);
    struct centry head, idle, stream;
    conn(&t, &head, 1, CP_HEAD, 9, 0);
    assert_false(cwatch_past_deadline(&t, &head, NOW));
    head.since = NOW - 10.5;
    assert_true(cwatch_past_deadline(&t, &head, NOW));
    conn(&t, &idle, 1, CP_IDLE, 10.5, 0);
    assert_true(cwatch_past_deadline(&t, &idle, NOW));
    assert_int_equal(t.recent.head_late, 2);
    /* An answer the server is still producing (an event stream waiting
     * for events) has no deadline here. */
    conn(&t, &stream, 1, CP_ANSWER, 600, 0);
    assert_false(cwatch_past_deadline(&t, &stream, NOW));
}

static void test_write_deadline(void **state)
{
    (void)state;
    struct sconn t;
    config(&t);
    struct centry reader, nonreader, unix_peer;
    conn(&t, &nonreader, 1, CP_ANSWER, 0, 0);
    nonreader.outq = 60000;
    /* The window opens with the first unacknowledged byte... */
    assert_false(cwatch_past_deadline(&t, &nonreader, NOW));
    /* ...and a client that took 100 bytes in 10.5 s missed it. */
    nonreader.acked += 100;
    assert_false(cwatch_past_deadline(&t, &nonreader, NOW + 9.5));
    assert_true(cwatch_past_deadline(&t, &nonreader, NOW + 10.5));
    assert_int_equal(t.recent.write_stalled, 1);

    /* A slow but real reader (5 KB/s) keeps up window after window. */
    conn(&t, &reader, 2, CP_ANSWER, 0, 0);
    reader.outq = 60000;
    assert_false(cwatch_past_deadline(&t, &reader, NOW));
    for (int w = 1; w <= 3; w++) {
        reader.acked += 5000 * 10;
        assert_false(cwatch_past_deadline(&t, &reader, NOW + 10.0 * w));
    }
    /* Everything taken: no backlog, no window. */
    reader.outq = 0;
    assert_false(cwatch_past_deadline(&t, &reader, NOW + 100));
    assert_true(reader.backlog_since == 0);

    /* Without byte counts (a unix socket), a backlog that lasts a whole
     * window is a stall. */
    conn(&t, &unix_peer, 3, CP_ANSWER, 0, 0);
    unix_peer.tcp = false;
    unix_peer.outq = 10;
    assert_false(cwatch_past_deadline(&t, &unix_peer, NOW));
    assert_true(cwatch_past_deadline(&t, &unix_peer, NOW + 10.5));
    assert_int_equal(t.recent.write_stalled, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eviction_by_progress), cmocka_unit_test(test_slower_of_a_class_first),
        cmocka_unit_test(test_body_deadline),        cmocka_unit_test(test_head_and_idle_deadline),
        cmocka_unit_test(test_write_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
