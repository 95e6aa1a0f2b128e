/* tune_configs WORKLOAD_DIR [N SEED]: prints, one per line as NAME=V ...,
 * the configurations of the workload's kernel.cu that the embedded tuner may
 * propose (its require directives and the H200 launch limits for every case
 * applied, as `kiln optimize` does); with N, a sample of N drawn with SEED
 * (the defaults always first), then as many more as it takes for the sample
 * to hold every value of every tunable. The kernel checks (kernels_nvcc.sh,
 * kernels_emu.sh) compile and run what this prints. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuarch.h"
#include "proposer.h"
#include "workload.h"

/* True when `line` (NAME=V NAME=V ...) holds a NAME=V that none of
 * printed[0 .. n) holds. */
static bool has_new_value(const char *line, char *const *printed, size_t n)
{
    for (const char *t = line; *t;) {
        size_t len = strcspn(t, " ");
        bool seen = false;
        for (size_t i = 0; i < n && !seen; i++)
            for (const char *u = printed[i]; *u && !seen;) {
                size_t ulen = strcspn(u, " ");
                seen = ulen == len && memcmp(u, t, len) == 0;
                u += ulen + (u[ulen] == ' ');
            }
        if (!seen)
            return true;
        t += len + (t[len] == ' ');
    }
    return false;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: tune_configs WORKLOAD_DIR [N SEED]\n");
        return 2;
    }
    struct kiln_err e;
    kiln_err_clear(&e);
    struct workload *wl = NULL;
    struct proposer *p = NULL;
    enum kiln_rc rc = workload_load(argv[1], &wl, &e);
    /* A budget larger than any space: one rung holding every valid configuration. */
    /* $KILN_TUNE_ARCH (sm_75, ...): that architecture's table limits, as
     * a session targeting it without a GPU to ask uses; else the H200's. */
    struct device_limits lim = DEVICE_LIMITS_H200;
    const char *arch = getenv("KILN_TUNE_ARCH");
    int cc = 0;
    if (rc == KILN_OK && arch && *arch && (rc = gpuarch_parse(arch, &cc, &e)) == KILN_OK)
        (void)devlimits_for_arch(cc, &lim);
    if (rc == KILN_OK)
        rc = proposer_new_tune(wl->files[WL_FILE_KERNEL_CU].data, wl->files[WL_FILE_KERNEL_CU].len,
                               wl, &lim, KILN_BACKEND_CUDA, 1, (size_t)1 << 20, &p, &e);
    size_t n = 0, cap = 1024;
    char **lines = malloc(cap * sizeof(*lines));
    if (!lines)
        rc = KILN_E_NOMEM;
    struct opt_state st = {.wl = wl, .backend = KILN_BACKEND_CUDA};
    while (rc == KILN_OK) {
        struct proposal prop;
        rc = proposer_propose(p, &st, &prop, &e);
        if (rc != KILN_OK)
            break;
        proposer_feedback(p, &prop, true, false, 1.0);
        if (n == cap) {
            char **nl = realloc(lines, 2 * cap * sizeof(*lines));
            if (!nl) {
                proposal_free(&prop);
                rc = KILN_E_NOMEM;
                break;
            }
            lines = nl;
            cap *= 2;
        }
        lines[n++] = strdup(prop.note);
        proposal_free(&prop);
    }
    if (rc == KILN_E_NOTFOUND)
        rc = KILN_OK;
    if (rc == KILN_OK) {
        size_t want = argc == 4 ? (size_t)strtoull(argv[2], NULL, 10) : n;
        unsigned long long st64 = argc == 4 ? strtoull(argv[3], NULL, 10) : 1;
        /* lines[0] is the defaults; then a seeded partial shuffle of the rest. */
        for (size_t i = 1; i < n && i < want; i++) {
            st64 = st64 * 6364136223846793005ULL + 1442695040888963407ULL;
            size_t j = i + (size_t)((st64 >> 33) % (n - i));
            char *t = lines[i];
            lines[i] = lines[j];
            lines[j] = t;
        }
        /* Then, so that a sample exercises every value of every tunable,
         * the shuffled rest is walked again and each line that holds a
         * NAME=V not yet printed is printed too (beyond N if need be). */
        for (size_t i = 0; i < n && i < want; i++)
            printf("%s\n", lines[i]);
        for (size_t i = want, done = want < n ? want : n; i < n; i++)
            if (has_new_value(lines[i], lines, done)) {
                printf("%s\n", lines[i]);
                char *t = lines[done];
                lines[done++] = lines[i];
                lines[i] = t;
            }
    } else {
        fprintf(stderr, "tune_configs: %s: %s\n", argv[1], e.msg);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    proposer_free(p);
    workload_free(wl);
    return rc == KILN_OK ? 0 : 1;
}
