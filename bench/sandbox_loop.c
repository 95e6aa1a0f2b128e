/*
 * sandbox_loop.c - sandbox_run() of /bin/true in a loop inside one process:
 * the per-candidate cost the evaluation pipeline, a tuner or the service
 * pays, without the CLI's process start and library loading. The image's
 * placeholder values come from pipeline/hostvars.h, as in sbexec_run().
 *
 * usage: sandbox_loop [REPS [POLICY [IMAGE [-- CMD ARGS...]]]]
 * prints median, p10 and p90 in ms (defaults: 200, compile, the policy's
 * own image). With a CMD (bench/sandbox gives bubblewrap), each sandbox_run
 * alternates with one fork+exec+wait of CMD, so both see the same machine
 * load, and a second line gives CMD's figures and the ratio of medians.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* fork, exec argv, wait: milliseconds, or -1 when it did not exit 0. */
static double run_cmd(char **argv)
{
    double a = now_ms();
    pid_t p = fork();
    if (p == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
        return -1;
    return now_ms() - a;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    const char *policy = argc > 2 ? argv[2] : "compile";
    const char *image = argc > 3 && strcmp(argv[3], "--") ? argv[3] : policy;
    char **cmd = NULL;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--") && i + 1 < argc)
            cmd = argv + i + 1;
    if (reps < 10 || reps > 100000) {
        fprintf(stderr, "usage: sandbox_loop [REPS >= 10 [POLICY [IMAGE]]]\n");
        return 2;
    }
    double *ms = calloc((size_t)reps, sizeof(double));
    double *cms = calloc((size_t)reps, sizeof(double));
    struct hostvars *hv = calloc(1, sizeof(*hv));
    if (!ms || !cms || !hv) {
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
        if (cmd && i > 0 && (cms[i - 1] = run_cmd(cmd)) < 0) {
            fprintf(stderr, "sandbox_loop: %s failed\n", cmd[0]);
            return 1;
        }
    }
    qsort(ms, (size_t)reps, sizeof(double), cmp);
    printf("%-8s %-8s %10.2f %8.2f %8.2f   (in-process sandbox_run, n=%d; first run %.1f ms)\n",
           policy, image, ms[reps / 2], ms[reps / 10], ms[reps * 9 / 10], reps, first);
    if (cmd) {
        qsort(cms, (size_t)reps, sizeof(double), cmp);
        printf("%-17s %10.2f %8.2f %8.2f   (%s, interleaved; sandbox_run / it: %.2f)\n", "cmd",
               cms[reps / 2], cms[reps / 10], cms[reps * 9 / 10], cmd[0],
               ms[reps / 2] / cms[reps / 2]);
    }
    free(ms);
    free(cms);
    free(hv);
    return 0;
}
