/* Unit tests of service/: the submission parser's rules, and the queue's
 * exactly-once commit (a verdict commits only under the lease that claimed
 * the job, and only once), the token bucket and quota, idempotency keys,
 * the visible seed per leaderboard and the run timeline's lease guard. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "db_fixture.h"
#include "evaluate.h"
#include "service_impl.h"

static enum kiln_rc parse(const char *body, struct serve_submission *s, struct kiln_err *e)
{
    kiln_err_clear(e);
    return serve_parse_submission(body, strlen(body), s, e);
}

static void test_parse_ok(void **state)
{
    (void)state;
    struct serve_submission s;
    struct kiln_err e;
    assert_int_equal(parse("{\"workload\":\"saxpy\",\"source\":\"int x;\"}", &s, &e), KILN_OK);
    assert_string_equal(s.workload, "saxpy");
    assert_string_equal(s.backend, "cuda");
    assert_int_equal(s.source_len, 6);
    serve_submission_free(&s);
    assert_int_equal(
        parse("{\"workload\":\"a.b-c_d\",\"backend\":\"cpu\",\"source\":\"x\"}", &s, &e), KILN_OK);
    assert_string_equal(s.backend, "cpu");
    serve_submission_free(&s);
}

static void test_parse_refusals(void **state)
{
    (void)state;
    struct serve_submission s;
    struct kiln_err e;
    const char *bad[] = {"",
                         "[]",
                         "{",
                         "{\"workload\":\"saxpy\"}",
                         "{\"source\":\"x\"}",
                         "{\"workload\":\"../x\",\"source\":\"x\"}",
                         "{\"workload\":\".x\",\"source\":\"x\"}",
                         "{\"workload\":\"a/b\",\"source\":\"x\"}",
                         "{\"workload\":\"\",\"source\":\"x\"}",
                         "{\"workload\":\"a\",\"source\":\"\"}",
                         "{\"workload\":\"a\",\"source\":\"a\\u0000b\"}",
                         "{\"workload\":\"a\",\"source\":\"x\",\"backend\":\"tpu\"}",
                         "{\"workload\":\"a\",\"source\":\"x\",\"extra\":1}",
                         "{\"workload\":\"a\",\"workload\":\"b\",\"source\":\"x\"}",
                         "{\"workload\":\"a\",\"source\":[[[[[1]]]]]}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        assert_int_not_equal(parse(bad[i], &s, &e), KILN_OK);
        assert_true(e.msg[0] != '\0');
        assert_null(s.source);
    }
    /* The source cap. */
    size_t n = SERVE_SOURCE_MAX + 1;
    char *big = malloc(n + 64);
    assert_non_null(big);
    int k = snprintf(big, 64, "{\"workload\":\"a\",\"source\":\"");
    memset(big + k, 'x', n);
    strcpy(big + k + n, "\"}");
    assert_int_equal(parse(big, &s, &e), KILN_E_LIMIT);
    free(big);
}

/* A token row with the given limits, as kiln token add would write it. */
static void add_token(struct fixture *f, struct stoken *t, double burst, long quota)
{
    struct serve_token_opts o = {
        .db = f->db, .name = "alice", .burst = burst, .quota = quota, .rate = 0.0001};
    char tok[SERVE_TOKEN_MAX], auth[SERVE_TOKEN_MAX + 16];
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(serve_token_add(&o, tok, &e), KILN_OK);
    snprintf(auth, sizeof(auth), "Bearer %s", tok);
    assert_int_equal(sauth_check(&f->d, auth, false, t, &e), KILN_OK);
    /* One changed character of the secret is refused. */
    auth[strlen(auth) - 1] = auth[strlen(auth) - 1] == '0' ? '1' : '0';
    struct stoken t2;
    kiln_err_clear(&e);
    assert_int_equal(sauth_check(&f->d, auth, false, &t2, &e), KILN_E_REJECTED);
}

static void submit(struct fixture *f, const struct stoken *t, const char *key, const char *sha,
                   char id[SERVE_ID_LEN + 1], enum ssubmit_result want)
{
    struct serve_submission sub = {
        .workload = "saxpy", .backend = "cpu", .source = "x", .source_len = 1};
    struct ssubmit s = {.tok = t, .idem_key = key, .sub = &sub, .body_sha = sha};
    enum ssubmit_result res;
    double retry = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(sdb_submit(&f->d, &s, id, &res, &retry, &e), KILN_OK);
    assert_int_equal(res, want);
}

static void test_exactly_once(void **state)
{
    struct fixture *f = *state;
    struct stoken t;
    add_token(f, &t, 10, 10);
    char id[SERVE_ID_LEN + 1];
    submit(f, &t, NULL, "s1", id, SSUBMIT_NEW);
    struct sjob a, b;
    bool got = false, committed = true, held = true;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(sdb_claim(&f->d, "cuda", &a, &got, &e), KILN_OK);
    assert_false(got); /* another backend's queue */
    assert_int_equal(sdb_claim(&f->d, "cpu", &a, &got, &e), KILN_OK);
    assert_true(got);
    assert_string_equal(a.id, id);
    assert_int_equal(a.attempts, 1);
    /* The lease expires (a stopped worker); the reaper requeues; b claims. */
    f->d.lease_s = -1;
    assert_int_equal(sdb_heartbeat(&f->d, &a, &held, &e), KILN_OK);
    int n = 0;
    assert_int_equal(sdb_requeue(&f->d, false, &n, &e), KILN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(sdb_heartbeat(&f->d, &a, &held, &e), KILN_OK);
    assert_false(held);
    f->d.lease_s = 30;
    assert_int_equal(sdb_claim(&f->d, "cpu", &b, &got, &e), KILN_OK);
    assert_true(got);
    assert_int_equal(b.attempts, 2);
    struct sverdict v = {.status = "pass",
                         .stage = "pass",
                         .detail = "",
                         .gpu_model = "cpu",
                         .record = "r",
                         .score_ms = 1,
                         .verified = true};
    assert_int_equal(sdb_finish(&f->d, &a, &v, &committed, &e), KILN_OK);
    assert_false(committed); /* the stale holder commits nothing */
    assert_int_equal(sdb_finish(&f->d, &b, &v, &committed, &e), KILN_OK);
    assert_true(committed);
    assert_int_equal(sdb_finish(&f->d, &b, &v, &committed, &e), KILN_OK);
    assert_false(committed); /* and only once */
    json_t *evs = NULL;
    bool fin = false;
    assert_int_equal(sdb_events_json(&f->d, id, 0, &evs, &fin, &e), KILN_OK);
    assert_true(fin);
    size_t verdicts = 0, i;
    json_t *ev;
    json_array_foreach(evs, i, ev)
    {
        verdicts += !strcmp(json_string_value(json_object_get(ev, "stage")), "verdict");
    }
    assert_int_equal(verdicts, 1);
    json_decref(evs);
    sjob_free(&a);
    sjob_free(&b);
}

static void test_limits_and_idempotency(void **state)
{
    struct fixture *f = *state;
    struct stoken t;
    add_token(f, &t, 2, 3);
    char id1[SERVE_ID_LEN + 1], id2[SERVE_ID_LEN + 1], id3[SERVE_ID_LEN + 1];
    submit(f, &t, "k", "s1", id1, SSUBMIT_NEW);
    submit(f, &t, "k", "s1", id2, SSUBMIT_REPLAY);
    assert_string_equal(id1, id2);
    submit(f, &t, "k", "s2", id2, SSUBMIT_IDEM_CLASH);
    submit(f, &t, NULL, "s3", id3, SSUBMIT_NEW);
    submit(f, &t, NULL, "s4", id3, SSUBMIT_RATE); /* burst 2 spent, rate ~0 */
    /* Quota 3: two pending, a third would be allowed by quota but not rate;
     * with the bucket refilled, the fourth pending one is refused by quota. */
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(sdb_exec(&f->d, "UPDATE tokens SET bucket=100, burst=100", &e), KILN_OK);
    submit(f, &t, NULL, "s5", id3, SSUBMIT_NEW);
    submit(f, &t, NULL, "s6", id3, SSUBMIT_QUOTA);
}

/* One visible seed per leaderboard, copied into each job; a rotation
 * changes it for later jobs only; a community board has its own. */
static void test_visible_seed(void **state)
{
    struct fixture *f = *state;
    struct stoken t;
    add_token(f, &t, 10, 10);
    char id1[SERVE_ID_LEN + 1], id2[SERVE_ID_LEN + 1], id3[SERVE_ID_LEN + 1];
    submit(f, &t, NULL, "s1", id1, SSUBMIT_NEW);
    submit(f, &t, NULL, "s2", id2, SSUBMIT_NEW);
    char seed[32];
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(sdb_rotate_seed(&f->d, "saxpy", seed, &e), KILN_OK);
    submit(f, &t, NULL, "s3", id3, SSUBMIT_NEW);
    struct serve_submission sub = {
        .workload = "saxpy", .backend = "cpu", .source = "x", .source_len = 1};
    struct ssubmit cs = {.tok = &t,
                         .sub = &sub,
                         .body_sha = "s4",
                         .board = "saxpy@0123456789ab",
                         .wl_dir = "/nonexistent/community"};
    char id4[SERVE_ID_LEN + 1];
    enum ssubmit_result res;
    double retry = 0;
    assert_int_equal(sdb_submit(&f->d, &cs, id4, &res, &retry, &e), KILN_OK);
    struct sjob j[4];
    bool got = false;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sdb_claim(&f->d, "cpu", &j[i], &got, &e), KILN_OK);
        assert_true(got);
    }
    assert_string_equal(j[0].id, id1);
    assert_true(j[0].visible_seed != 0);
    assert_true(j[0].visible_seed == j[1].visible_seed);
    assert_true(j[2].visible_seed == strtoull(seed, NULL, 10));
    assert_true(j[2].visible_seed != j[0].visible_seed);
    assert_string_equal(j[2].board, "saxpy");
    assert_string_equal(j[2].wl_dir, "");
    assert_string_equal(j[3].board, "saxpy@0123456789ab");
    assert_string_equal(j[3].wl_dir, "/nonexistent/community");
    assert_true(j[3].visible_seed != j[2].visible_seed);
    for (int i = 0; i < 4; i++)
        sjob_free(&j[i]);
}

/* The run timeline is stamped only under the job's lease. */
static void test_timeline_lease(void **state)
{
    struct fixture *f = *state;
    struct stoken t;
    add_token(f, &t, 10, 10);
    char id[SERVE_ID_LEN + 1];
    submit(f, &t, NULL, "s1", id, SSUBMIT_NEW);
    struct sjob a;
    bool got = false;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(sdb_claim(&f->d, "cpu", &a, &got, &e), KILN_OK);
    assert_true(got);
    assert_int_equal(sdb_mark_run(&f->d, &a, false, &e), KILN_OK);
    char lease[sizeof(a.lease)];
    memcpy(lease, a.lease, sizeof(lease));
    a.lease[0] = a.lease[0] == '0' ? '1' : '0'; /* a stale holder's */
    assert_int_equal(sdb_mark_run(&f->d, &a, true, &e), KILN_OK);
    json_t *doc = NULL;
    assert_int_equal(sdb_submission_json(&f->d, id, &doc, &e), KILN_OK);
    json_t *tl = json_object_get(doc, "timeline");
    assert_true(json_is_real(json_object_get(tl, "run_started")));
    assert_true(json_is_null(json_object_get(tl, "run_finished")));
    assert_null(json_object_get(doc, "secret_seed")); /* never served */
    json_decref(doc);
    memcpy(a.lease, lease, sizeof(lease));
    assert_int_equal(sdb_mark_run(&f->d, &a, true, &e), KILN_OK);
    assert_int_equal(sdb_submission_json(&f->d, id, &doc, &e), KILN_OK);
    tl = json_object_get(doc, "timeline");
    assert_true(json_real_value(json_object_get(tl, "run_finished")) >=
                json_real_value(json_object_get(tl, "run_started")));
    json_decref(doc);
    sjob_free(&a);
}

/* A remembered community check is found by its whole key only (each
 * part changes the answer), the claim carries the tarball's digest, and the
 * outcome survives reopening the database (a restart). */
static void test_check_cache(void **state)
{
    struct fixture *f = *state;
    struct kiln_err e;
    kiln_err_clear(&e);
    char checker[256], problems[256];
    assert_int_equal(serve_checker_id(checker, sizeof(checker), &e), KILN_OK);
    assert_non_null(strstr(checker, "check rules"));
    struct scheck_key k = {.tar_sha = "aa", .backend = "cpu", .seed = 7, .checker = checker};
    bool found = true;
    assert_int_equal(sdb_check_known(&f->d, &k, &found, problems, sizeof(problems), &e), KILN_OK);
    assert_false(found);
    assert_int_equal(sdb_check_remember(&f->d, &k, "1 problem(s): inputs.py", &e), KILN_OK);
    struct scheck_key other[4] = {k, k, k, k};
    other[0].tar_sha = "ab";
    other[1].backend = "cuda";
    other[2].seed = 8;
    other[3].checker = "kiln 0.0.0 (git old) check rules 0";
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sdb_check_known(&f->d, &other[i], &found, problems, sizeof(problems), &e),
                         KILN_OK);
        assert_false(found);
    }
    assert_int_equal(sdb_check_remember(&f->d, &other[0], "", &e), KILN_OK);
    sdb_close(&f->d);
    assert_int_equal(sdb_open(f->db, &f->d, &e), KILN_OK);
    assert_int_equal(sdb_check_known(&f->d, &k, &found, problems, sizeof(problems), &e), KILN_OK);
    assert_true(found);
    assert_string_equal(problems, "1 problem(s): inputs.py");
    assert_int_equal(sdb_check_known(&f->d, &other[0], &found, problems, sizeof(problems), &e),
                     KILN_OK);
    assert_true(found);
    assert_string_equal(problems, ""); /* passed */
    struct stoken t;
    add_token(f, &t, 10, 10);
    char id[SERVE_ID_LEN + 1];
    submit(f, &t, NULL, "0123abcd", id, SSUBMIT_NEW);
    struct sjob j;
    bool got = false;
    assert_int_equal(sdb_claim(&f->d, "cpu", &j, &got, &e), KILN_OK);
    assert_true(got);
    assert_string_equal(j.body_sha, "0123abcd");
    sjob_free(&j);
}

/* A cuda verdict through Slurm is ranked under the GPU model the node
 * reported for its run (ran_on), like a local GPU's, not under the
 * partition; without a report it keeps "slurm:PARTITION". */
static void test_slurm_gpu_group(void **state)
{
    struct fixture *f = *state;
    struct eval_outcome *out = calloc(1, sizeof(*out));
    assert_non_null(out);
    char gpu[128];
    serve_verdict_gpu("cuda", out, "cpu", "slurm:debug", gpu, sizeof(gpu));
    assert_string_equal(gpu, "slurm:debug"); /* no report */
    snprintf(out->where, sizeof(out->where), "slurm job 42, node n1");
    out->ran_on.present = true;
    snprintf(out->ran_on.node, sizeof(out->ran_on.node), "n1");
    snprintf(out->ran_on.model, sizeof(out->ran_on.model), "NVIDIA H200");
    char slurm_gpu[128];
    serve_verdict_gpu("cuda", out, "cpu", "slurm:debug", slurm_gpu, sizeof(slurm_gpu));
    assert_string_equal(slurm_gpu, "NVIDIA H200");
    serve_verdict_gpu("cpu", out, "cpu", "slurm:debug", gpu, sizeof(gpu));
    assert_string_equal(gpu, "cpu");
    char local[128];
    serve_verdict_gpu("cuda", NULL, "NVIDIA H200", NULL, local, sizeof(local));
    assert_string_equal(local, "NVIDIA H200");
    /* The leaderboard groups the Slurm entry with the local one. */
    struct stoken t;
    add_token(f, &t, 10, 10);
    struct kiln_err e;
    kiln_err_clear(&e);
    const char *models[2] = {slurm_gpu, local};
    for (int i = 0; i < 2; i++) {
        struct serve_submission sub = {
            .workload = "saxpy", .backend = "cuda", .source = "x", .source_len = 1};
        char sha[8], id[SERVE_ID_LEN + 1];
        snprintf(sha, sizeof(sha), "g%d", i);
        struct ssubmit sm = {.tok = &t, .sub = &sub, .body_sha = sha};
        enum ssubmit_result res;
        double retry = 0;
        assert_int_equal(sdb_submit(&f->d, &sm, id, &res, &retry, &e), KILN_OK);
        struct sjob j;
        bool got = false, committed = false;
        assert_int_equal(sdb_claim(&f->d, "cuda", &j, &got, &e), KILN_OK);
        assert_true(got);
        struct sverdict v = {.status = "pass",
                             .stage = "pass",
                             .detail = "",
                             .gpu_model = models[i],
                             .record = "r",
                             .score_ms = 1 + i,
                             .verified = true};
        assert_int_equal(sdb_finish(&f->d, &j, &v, &committed, &e), KILN_OK);
        assert_true(committed);
        sjob_free(&j);
    }
    json_t *lb = NULL;
    assert_int_equal(sdb_leaderboard_json(&f->d, "saxpy", NULL, &lb, &e), KILN_OK);
    json_t *gpus = json_object_get(lb, "gpus");
    assert_int_equal(json_object_size(gpus), 1);
    assert_non_null(json_object_get(gpus, "NVIDIA H200"));
    /* The public sees no submission id; the entry's owner does. */
    json_t *first = json_array_get(json_object_get(gpus, "NVIDIA H200"), 0);
    assert_null(json_object_get(first, "submission"));
    json_decref(lb);
    assert_int_equal(sdb_leaderboard_json(&f->d, "saxpy", &t, &lb, &e), KILN_OK);
    first = json_array_get(json_object_get(json_object_get(lb, "gpus"), "NVIDIA H200"), 0);
    assert_non_null(json_object_get(first, "submission"));
    json_decref(lb);
    struct stoken stranger = {.id = "0000000000000000", .name = "eve"};
    assert_int_equal(sdb_leaderboard_json(&f->d, "saxpy", &stranger, &lb, &e), KILN_OK);
    first = json_array_get(json_object_get(json_object_get(lb, "gpus"), "NVIDIA H200"), 0);
    assert_null(json_object_get(first, "submission"));
    json_decref(lb);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test_setup_teardown(test_exactly_once, db_fixture_setup, db_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_limits_and_idempotency, db_fixture_setup,
                                        db_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_visible_seed, db_fixture_setup, db_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_timeline_lease, db_fixture_setup, db_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_check_cache, db_fixture_setup, db_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_slurm_gpu_group, db_fixture_setup,
                                        db_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
