/*
 * sandbox_loop.c - sandbox_run() of /bin/true in a loop inside one process:
 * the per-candidate cost the evaluation pipeline pays, without the CLI's
 * process start and library loading.
 *
 * usage: sandbox_loop [REPS]   prints median, p10 and p90 in ms
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandbox.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 10 || reps > 100000) {
        fprintf(stderr, "usage: sandbox_loop [REPS >= 10]\n");
        return 2;
    }
    double *ms = calloc((size_t)reps, sizeof(double));
    char *args[] = {"/bin/true", NULL};
    struct sandbox_spec spec;
    memset(&spec, 0, sizeof(spec));
    spec.policy = "compile";
    spec.image = "minimal";
    spec.stdin_fd = -1;
    spec.tar_fd = -1;
    spec.argv = args;
    for (int i = 0; i < reps; i++) {
        struct timespec a, b;
        struct sandbox_result res;
        struct kiln_err err;
        kiln_err_clear(&err);
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (sandbox_run(&spec, &res, &err) != KILN_OK) {
            fprintf(stderr, "sandbox_loop: %s\n", err.msg);
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (res.verdict != SANDBOX_EXITED || res.exit_code != 0) {
            fprintf(stderr, "sandbox_loop: /bin/true did not exit 0\n");
            return 1;
        }
        sandbox_result_free(&res);
        ms[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    }
    qsort(ms, (size_t)reps, sizeof(double), cmp);
    printf("%-22s %10.2f %8.2f %8.2f   (in-process sandbox_run, n=%d)\n", "sandbox_run() loop",
           ms[reps / 2], ms[reps / 10], ms[reps * 9 / 10], reps);
    free(ms);
    return 0;
}
