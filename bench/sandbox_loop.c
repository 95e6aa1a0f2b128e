/*
 * sandbox_loop.c - sandbox_run() of /bin/true in a loop inside one process:
 * the per-candidate cost the evaluation pipeline, a tuner or the service
 * pays, without the CLI's process start and library loading. The image's
 * placeholder values come from pipeline/hostvars.h, as in sbexec_run().
 *
 * usage: sandbox_loop [REPS [POLICY [IMAGE]]]   prints median, p10 and p90 in ms
 * (defaults: 200, compile, the policy's own image)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostvars.h"
#include "sandbox.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    const char *policy = argc > 2 ? argv[2] : "compile";
    const char *image = argc > 3 ? argv[3] : policy;
    if (reps < 10 || reps > 100000) {
        fprintf(stderr, "usage: sandbox_loop [REPS >= 10 [POLICY [IMAGE]]]\n");
        return 2;
    }
    double *ms = calloc((size_t)reps, sizeof(double));
    struct hostvars *hv = calloc(1, sizeof(*hv));
    if (!ms || !hv) {
        fprintf(stderr, "sandbox_loop: out of memory\n");
        return 1;
    }
    char *args[] = {"/bin/true", NULL};
    struct sandbox_spec spec;
    memset(&spec, 0, sizeof(spec));
    spec.policy = policy;
    spec.image = image;
    spec.stdin_fd = -1;
    spec.tar_fd = -1;
    spec.argv = args;
    double first = 0;
    for (int i = 0; i < reps + 1; i++) {
        struct sandbox_result res;
        struct kiln_err err;
        kiln_err_clear(&err);
        double a = now_ms();
        /* As sbexec_run() does for every step: the image's host values. */
        if (hostvars_for_image(NULL, image, hv, &err) != KILN_OK) {
            fprintf(stderr, "sandbox_loop: %s\n", err.msg);
            return 1;
        }
        spec.vars = hv->vars;
        if (sandbox_run(&spec, &res, &err) != KILN_OK) {
            fprintf(stderr, "sandbox_loop: %s\n", err.msg);
            return 1;
        }
        double b = now_ms();
        if (res.verdict != SANDBOX_EXITED || res.exit_code != 0) {
            fprintf(stderr, "sandbox_loop: /bin/true did not exit 0\n");
            return 1;
        }
        sandbox_result_free(&res);
        /* The first run pays the once-per-process work (the python probe,
         * compiling the policy): reported apart. */
        if (i == 0)
            first = b - a;
        else
            ms[i - 1] = b - a;
    }
    qsort(ms, (size_t)reps, sizeof(double), cmp);
    printf("%-8s %-8s %10.2f %8.2f %8.2f   (in-process sandbox_run, n=%d; first run %.1f ms)\n",
           policy, image, ms[reps / 2], ms[reps / 10], ms[reps * 9 / 10], reps, first);
    free(ms);
    free(hv);
    return 0;
}
