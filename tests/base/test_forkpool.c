#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forkpool.h"

struct ctx {
    char dir[64];
    int fail_a, fail_b, die; /* task indices, -1: none */
};

static void mark(const struct ctx *c, size_t i, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%zu", c->dir, i);
}

/* Leaves a file per task (its result, as inputs.c leaves `ok`); holds a
 * directory as a lock while it runs to detect overlapping tasks. */
static enum kiln_rc task(size_t i, void *arg, struct kiln_err *err)
{
    struct ctx *c = arg;
    char lock[96], path[96];
    snprintf(lock, sizeof(lock), "%s/lock", c->dir);
    bool exclusive = mkdir(lock, 0700) == 0;
    usleep(20000);
    if (exclusive)
        rmdir(lock);
    if ((int)i == c->die)
        raise(SIGKILL);
    if ((int)i == c->fail_a || (int)i == c->fail_b)
        return kiln_fail(err, KILN_E_CHILD, "task %zu failed", i);
    mark(c, i, path, sizeof(path));
    FILE *f = fopen(path, "w");
    if (!f)
        return kiln_fail_errno(err, KILN_E_IO, "%s", path);
    fprintf(f, "%s", exclusive ? "alone" : "overlapped");
    fclose(f);
    return KILN_OK;
}

static struct ctx *ctx_new(void)
{
    struct ctx *c = calloc(1, sizeof(*c));
    snprintf(c->dir, sizeof(c->dir), "/tmp/kiln-forkpool-XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    c->fail_a = c->fail_b = c->die = -1;
    return c;
}

static bool done(const struct ctx *c, size_t i, const char *what)
{
    char path[96], buf[16] = "";
    mark(c, i, path, sizeof(path));
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    return !what || strcmp(buf, what) == 0;
}

static void ctx_free(struct ctx *c)
{
    rmdir(c->dir);
    free(c);
}

static void every_task_runs(void **state)
{
    (void)state;
    struct ctx *c = ctx_new();
    struct kiln_err e;
    kiln_err_clear(&e);
    struct forkpool_opts o = {.jobs = 3};
    assert_int_equal(forkpool_run(7, task, c, &o, &e), KILN_OK);
    for (size_t i = 0; i < 7; i++)
        assert_true(done(c, i, NULL));
    ctx_free(c);
}

static void lowest_failure_is_reported(void **state)
{
    (void)state;
    struct ctx *c = ctx_new();
    c->fail_a = 2;
    c->fail_b = 1;
    struct kiln_err e;
    kiln_err_clear(&e);
    struct forkpool_opts o = {.jobs = 4};
    assert_int_equal(forkpool_run(4, task, c, &o, &e), KILN_E_CHILD);
    assert_string_equal(e.msg, "task 1 failed");
    for (size_t i = 0; i < 4; i++)
        done(c, i, NULL);
    ctx_free(c);
}

static void killed_worker_is_named(void **state)
{
    (void)state;
    struct ctx *c = ctx_new();
    c->die = 1;
    struct kiln_err e;
    kiln_err_clear(&e);
    struct forkpool_opts o = {.jobs = 2};
    assert_int_equal(forkpool_run(2, task, c, &o, &e), KILN_E_CHILD);
    assert_non_null(strstr(e.msg, "task 1 was killed by signal 9"));
    assert_true(done(c, 0, NULL));
    ctx_free(c);
}

static void one_job_stops_at_the_first_failure(void **state)
{
    (void)state;
    struct ctx *c = ctx_new();
    c->fail_a = 1;
    struct kiln_err e;
    kiln_err_clear(&e);
    struct forkpool_opts o = {.jobs = 1};
    assert_int_equal(forkpool_run(3, task, c, &o, &e), KILN_E_CHILD);
    assert_true(done(c, 0, "alone"));
    assert_false(done(c, 2, NULL));
    ctx_free(c);
}

static void memory_budget_serializes(void **state)
{
    (void)state;
    struct ctx *c = ctx_new();
    long long cost[5] = {6, 6, 6, 6, 6};
    struct kiln_err e;
    kiln_err_clear(&e);
    struct forkpool_opts o = {.jobs = 5, .cost = cost, .budget = 10};
    assert_int_equal(forkpool_run(5, task, c, &o, &e), KILN_OK);
    for (size_t i = 0; i < 5; i++)
        assert_true(done(c, i, "alone"));
    ctx_free(c);
}

/* The pool reaps its own workers only: another child of the caller (kiln
 * optimize --jobs runs compile workers while inputs are generated) stays
 * for its owner to wait for. It has ended before the pool starts, so a
 * waitpid(-1) in the pool would take it first. */
static void other_children_are_left_alone(void **state)
{
    (void)state;
    pid_t other = fork();
    assert_true(other >= 0);
    if (other == 0)
        _exit(7);
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)other, &si, WEXITED | WNOWAIT), 0);
    struct ctx *c = ctx_new();
    struct kiln_err e;
    kiln_err_clear(&e);
    struct forkpool_opts o = {.jobs = 2};
    assert_int_equal(forkpool_run(4, task, c, &o, &e), KILN_OK);
    for (size_t i = 0; i < 4; i++)
        assert_true(done(c, i, NULL));
    int st = 0;
    assert_int_equal(waitpid(other, &st, 0), other);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    ctx_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_task_runs),
        cmocka_unit_test(lowest_failure_is_reported),
        cmocka_unit_test(killed_worker_is_named),
        cmocka_unit_test(one_job_stops_at_the_first_failure),
        cmocka_unit_test(memory_budget_serializes),
        cmocka_unit_test(other_children_are_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
