#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "runrec.h"

static char root[256];

static int setup(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    return fs_make_tempdir("runrec", root, sizeof(root), &e) == KILN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    struct kiln_err e;
    kiln_err_clear(&e);
    return fs_remove_tree(root, &e) == KILN_OK ? 0 : -1;
}

/* Eight processes allocate at once: every number is distinct. */
static void concurrent_runs_never_collide(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    for (int i = 0; i < 8; i++) {
        if (fork() == 0) {
            struct runrec rr;
            struct kiln_err e;
            kiln_err_clear(&e);
            int n = runrec_create(root, &rr, &e) == KILN_OK ? rr.number : -1;
            if (write(fds[1], &n, sizeof(n)) != sizeof(n))
                _exit(1);
            _exit(0);
        }
    }
    close(fds[1]);
    int seen[9] = {0}, n, count = 0;
    while (read(fds[0], &n, sizeof(n)) == sizeof(n)) {
        assert_true(n >= 1 && n <= 8);
        assert_int_equal(seen[n], 0);
        seen[n] = 1;
        count++;
    }
    close(fds[0]);
    while (wait(NULL) > 0)
        ;
    assert_int_equal(count, 8);
}

static void json_round_trip_and_escape_check(void **state)
{
    (void)state;
    struct runrec rr;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(runrec_create(root, &rr, &e), KILN_OK);
    assert_int_equal(rr.number, 1);
    json_t *doc = json_pack("{s:i, s:s}", "iteration", 3, "stage", "compile");
    assert_int_equal(runrec_write_json(&rr, "candidates/001/verdict.json", doc, &e), KILN_OK);
    json_decref(doc);
    json_t *back = NULL;
    assert_int_equal(runrec_read_json(&rr, "candidates/001/verdict.json", 1 << 20, &back, &e),
                     KILN_OK);
    assert_int_equal(json_integer_value(json_object_get(back, "iteration")), 3);
    json_decref(back);
    assert_int_equal(runrec_write(&rr, "../evil", "x", 1, &e), KILN_E_REJECTED);
    kiln_err_clear(&e);
    assert_int_equal(runrec_read_json(&rr, "absent.json", 100, &back, &e), KILN_E_NOTFOUND);
    struct runrec again;
    kiln_err_clear(&e);
    assert_int_equal(runrec_open(rr.dir, &again, &e), KILN_OK);
    assert_int_equal(again.number, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(concurrent_runs_never_collide, setup, teardown),
        cmocka_unit_test_setup_teardown(json_round_trip_and_escape_check, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
