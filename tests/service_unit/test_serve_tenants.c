/* Unit tests of what tenants see of each other (issue 34): claims take turns
 * across tenants (a second tenant's job is claimed right after the first
 * tenant's first, whatever that tenant's backlog) and queue positions follow
 * the turns; list cursors and event numbers count only the tenant's own;
 * public views name tenants by handles unless public names are on;
 * community boards never display alike; the Authorization header's one
 * parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db_fixture.h"
#include "service_impl.h"

/* Token `name` (generous limits), authenticated as the server would. */
static void tenant(struct fixture *f, const char *name, struct stoken *t)
{
    struct serve_token_opts o = {.db = f->db, .name = name, .burst = 100, .quota = 100};
    char tok[SERVE_TOKEN_MAX], auth[SERVE_TOKEN_MAX + 16];
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(serve_token_add(&o, tok, &e), KILN_OK);
    snprintf(auth, sizeof(auth), "Bearer %s", tok);
    assert_int_equal(sauth_check(&f->d, auth, false, t, &e), KILN_OK);
}

static void submit(struct fixture *f, const struct stoken *t, char id[SERVE_ID_LEN + 1])
{
    static int n;
    char sha[32];
    snprintf(sha, sizeof(sha), "body-%d", n++);
    struct serve_submission sub = {
        .workload = "saxpy", .backend = "cpu", .source = "x", .source_len = 1};
    struct ssubmit s = {.tok = t, .sub = &sub, .body_sha = sha};
    enum ssubmit_result res;
    double retry = 0;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(sdb_submit(&f->d, &s, id, &res, &retry, &e), KILN_OK);
    assert_int_equal(res, SSUBMIT_NEW);
}

static void claim(struct fixture *f, char id[SERVE_ID_LEN + 1])
{
    struct sjob j;
    bool got = false;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(sdb_claim(&f->d, "cpu", &j, &got, &e), KILN_OK);
    assert_true(got);
    snprintf(id, SERVE_ID_LEN + 1, "%s", j.id);
    sjob_free(&j);
}

static long long position(struct fixture *f, const char *id)
{
    json_t *doc = NULL;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(sdb_submission_json(&f->d, id, &doc, &e), KILN_OK);
    long long p = json_integer_value(json_object_get(doc, "position"));
    json_decref(doc);
    return p;
}

static void test_claims_take_turns(void **state)
{
    struct fixture *f = *state;
    struct stoken alice, bob, carol;
    tenant(f, "alice", &alice);
    tenant(f, "bob", &bob);
    tenant(f, "carol", &carol);
    char a[6][SERVE_ID_LEN + 1], b[SERVE_ID_LEN + 1], c[2][SERVE_ID_LEN + 1], got[SERVE_ID_LEN + 1];
    for (int i = 0; i < 6; i++)
        submit(f, &alice, a[i]); /* a full backlog */
    submit(f, &bob, b);          /* then one job */
    /* Before any claim: alice's first, then bob's. */
    assert_int_equal(position(f, a[0]), 0);
    assert_int_equal(position(f, b), 1);
    assert_int_equal(position(f, a[1]), 2);
    assert_int_equal(position(f, a[5]), 6);
    claim(f, got);
    assert_string_equal(got, a[0]);
    /* bob's single job is next, not after alice's five others. */
    assert_int_equal(position(f, b), 0);
    claim(f, got);
    assert_string_equal(got, b);
    /* A third tenant arriving now is served before alice's third job. */
    submit(f, &carol, c[0]);
    submit(f, &carol, c[1]);
    assert_int_equal(position(f, c[0]), 0);
    assert_int_equal(position(f, a[1]), 1);
    assert_int_equal(position(f, c[1]), 2);
    const char *want[] = {c[0], a[1], c[1], a[2], a[3], a[4], a[5]};
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        claim(f, got);
        assert_string_equal(got, want[i]);
    }
    /* Per-tenant queue depth is exported, by handle. */
    char *text = NULL;
    struct kiln_err e = KILN_ERR_INIT;
    submit(f, &alice, a[0]);
    assert_int_equal(sdb_metrics_text(&f->d, 1, &text, &e), KILN_OK);
    assert_non_null(strstr(text, "kiln_tenant_queue_depth{tenant=\"tenant-"));
    assert_non_null(strstr(text, "\",backend=\"cpu\"} 1\n"));
    assert_null(strstr(text, "alice"));
    free(text);
}

/* Every id of a list page, in order, and its next_cursor (NULL: none). */
static json_t *list(struct fixture *f, const struct stoken *t, const char *cursor, int limit,
                    enum kiln_rc want)
{
    json_t *doc = NULL;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(sdb_list_json(&f->d, t, false, cursor, limit, &doc, &e), want);
    return doc;
}

static void test_cursors_count_nothing(void **state)
{
    struct fixture *f = *state;
    struct stoken alice, bob;
    tenant(f, "alice", &alice);
    tenant(f, "bob", &bob);
    char a[3][SERVE_ID_LEN + 1], b[3][SERVE_ID_LEN + 1];
    for (int i = 0; i < 3; i++)
        submit(f, &bob, b[i]);
    json_t *page = list(f, &bob, NULL, 1, KILN_OK);
    char first[64];
    snprintf(first, sizeof(first), "%s", json_string_value(json_object_get(page, "next_cursor")));
    json_decref(page);
    /* The cursor is bob's own submission's id: no number in it. */
    assert_string_equal(first, b[2]);
    /* alice's activity changes nothing bob is given. */
    for (int i = 0; i < 3; i++)
        submit(f, &alice, a[i]);
    page = list(f, &bob, NULL, 1, KILN_OK);
    assert_string_equal(json_string_value(json_object_get(page, "next_cursor")), first);
    json_decref(page);
    page = list(f, &bob, first, 5, KILN_OK);
    json_t *rows = json_object_get(page, "submissions");
    assert_int_equal(json_array_size(rows), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "id")), b[1]);
    assert_true(json_is_null(json_object_get(page, "next_cursor")));
    json_decref(page);
    /* Another tenant's id is no cursor of bob's. */
    json_decref(list(f, &bob, a[0], 5, KILN_E_USAGE));
    /* Event numbers are the submission's own: bob's first event is 1. */
    json_t *evs = NULL;
    bool fin;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(sdb_events_json(&f->d, b[2], 0, &evs, &fin, &e), KILN_OK);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(evs, 0), "n")), 1);
    json_decref(evs);
}

static void test_public_names(void **state)
{
    struct fixture *f = *state;
    struct stoken alice;
    tenant(f, "alice", &alice);
    char id[SERVE_ID_LEN + 1], h1[SERVE_PUBLIC_NAME_MAX], h2[SERVE_PUBLIC_NAME_MAX];
    submit(f, &alice, id);
    json_t *q = NULL;
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(sdb_queue_json(&f->d, &q, &e), KILN_OK);
    const char *shown =
        json_string_value(json_object_get(json_array_get(json_object_get(q, "jobs"), 0), "user"));
    assert_non_null(shown);
    snprintf(h1, sizeof(h1), "%s", shown);
    json_decref(q);
    /* A handle: not the name, the same every time, and kept in the database. */
    assert_int_equal(strncmp(h1, "tenant-", 7), 0);
    assert_int_equal(strlen(h1), 17);
    pthread_mutex_lock(&f->d.mu);
    assert_int_equal(sdb_public_name_locked(&f->d, alice.id, "alice", h2, &e), KILN_OK);
    pthread_mutex_unlock(&f->d.mu);
    assert_string_equal(h1, h2);
    f->d.handle_key[0] = '\0';
    pthread_mutex_lock(&f->d.mu);
    assert_int_equal(sdb_public_name_locked(&f->d, alice.id, "alice", h2, &e), KILN_OK);
    pthread_mutex_unlock(&f->d.mu);
    assert_string_equal(h1, h2);
    /* The operator's choice: names. */
    f->d.public_names = true;
    assert_int_equal(sdb_queue_json(&f->d, &q, &e), KILN_OK);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(q, "jobs"), 0), "user")),
        "alice");
    json_decref(q);
}

static void test_board_display(void **state)
{
    (void)state;
    char h[4][65], board[4][SERVE_BOARD_MAX + 1], out[SERVE_BOARD_MAX + 1];
    /* a and b share 20 digits, c shares 16 with a, d is another name. */
    memset(h[0], 0, sizeof(h[0]));
    for (int i = 0; i < 64; i++)
        h[0][i] = "0123456789abcdef"[i % 16];
    memcpy(h[1], h[0], sizeof(h[0]));
    h[1][20] = h[0][20] == 'f' ? 'e' : 'f';
    memcpy(h[2], h[0], sizeof(h[0]));
    h[2][16] = h[0][16] == 'f' ? 'e' : 'f';
    memcpy(h[3], h[0], sizeof(h[0]));
    const char *names[] = {"gemm", "gemm", "gemm", "other"};
    const char *all[4];
    for (int i = 0; i < 4; i++) {
        snprintf(board[i], sizeof(board[i]), "%s@%s", names[i], h[i]);
        all[i] = board[i];
    }
    /* Alone: 16 digits. */
    serve_board_display(board[0], all, 1, out, sizeof(out));
    assert_string_equal(out, "gemm@0123456789abcdef");
    /* Beside boards sharing 20 and 16 digits: one past the longest shared. */
    serve_board_display(board[0], all, 4, out, sizeof(out));
    assert_int_equal(strlen(out), strlen("gemm@") + 21);
    serve_board_display(board[1], all, 4, out, sizeof(out));
    assert_int_equal(strlen(out), strlen("gemm@") + 21);
    serve_board_display(board[2], all, 4, out, sizeof(out));
    assert_int_equal(strlen(out), strlen("gemm@") + 17);
    /* Another name's board with the same hash does not lengthen it. */
    serve_board_display(board[3], all, 4, out, sizeof(out));
    assert_int_equal(strlen(out), strlen("other@") + 16);
    /* No two of them display alike; a built-in name is shown as is. */
    char shown[3][SERVE_BOARD_MAX + 1];
    for (int i = 0; i < 3; i++)
        serve_board_display(board[i], all, 4, shown[i], sizeof(shown[i]));
    assert_string_not_equal(shown[0], shown[1]);
    assert_string_not_equal(shown[0], shown[2]);
    assert_string_not_equal(shown[1], shown[2]);
    serve_board_display("saxpy", all, 4, out, sizeof(out));
    assert_string_equal(out, "saxpy");
}

static void test_authorization_parser(void **state)
{
    (void)state;
    char tok[SERVE_TOKEN_MAX];
    struct kiln_err e = KILN_ERR_INIT;
    assert_int_equal(serve_parse_authorization("Bearer kiln_x", false, tok, &e), KILN_OK);
    assert_string_equal(tok, "kiln_x");
    /* Basic: any user, the token as the password, only where allowed.
     * "u:kiln_x" and ":kiln_x" in base64. */
    assert_int_equal(serve_parse_authorization("Basic dTpraWxuX3g=", true, tok, &e), KILN_OK);
    assert_string_equal(tok, "kiln_x");
    assert_int_equal(serve_parse_authorization("Basic OmtpbG5feA==", true, tok, &e), KILN_OK);
    assert_string_equal(tok, "kiln_x");
    assert_int_equal(serve_parse_authorization("Basic dTpraWxuX3g=", false, tok, &e),
                     KILN_E_REJECTED);
    const char *bad[] = {"Bearer ",
                         "Token kiln_x",
                         "Basic",
                         "Basic dTpraWxuX3",
                         "Basic dTpraWxuX3h=", /* non-canonical padding bits */
                         "Basic dTpr=WxuX3g=",
                         "Basic a2lsbl94", /* no colon */
                         "Basic dTpraWxu X3g="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        kiln_err_clear(&e);
        assert_int_equal(serve_parse_authorization(bad[i], true, tok, &e), KILN_E_REJECTED);
        assert_true(e.msg[0] != '\0');
    }
    assert_int_equal(serve_parse_authorization(NULL, true, tok, &e), KILN_E_REJECTED);
    char big[700];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "Bearer ", 7);
    assert_int_equal(serve_parse_authorization(big, true, tok, &e), KILN_E_REJECTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claims_take_turns, db_fixture_setup,
                                        db_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cursors_count_nothing, db_fixture_setup,
                                        db_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_public_names, db_fixture_setup, db_fixture_teardown),
        cmocka_unit_test(test_board_display),
        cmocka_unit_test(test_authorization_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
