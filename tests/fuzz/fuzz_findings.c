/* libFuzzer target: the --tuner-run parsers (tuner_findings.h) on arbitrary
 * bytes. The first byte picks the document (run.json, history.json,
 * summary.json, verdict.json's config, profile.json); what a parser accepts
 * must be names and numbers in the ranges tuner_findings.h promises. */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tuner_findings.h"

static void check_ident(const char *s)
{
    if (!s[0] || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        abort();
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            abort();
}

static void check_id(const char *s)
{
    size_t n = strlen(s);
    if (n < 3 || n > 6 || strspn(s, "0123456789") != n)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    struct kiln_err err = {0};
    switch (data[0] % 5) {
    case 0: {
        struct findings_run r;
        if (tuner_findings_parse_run("run.json", buf, len, &r, &err) == KILN_OK) {
            check_ident(r.backend);
            check_ident(r.proposer);
            if (!r.workload[0] || strcspn(r.workload, "/ \n") != strlen(r.workload))
                abort();
        }
        break;
    }
    case 1: {
        struct findings_config top[FINDINGS_TOP];
        size_t ntop, passed;
        if (tuner_findings_parse_history("history.json", buf, len, top, &ntop, &passed, &err) ==
            KILN_OK) {
            if (ntop > FINDINGS_TOP || ntop > passed)
                abort();
            for (size_t i = 0; i < ntop; i++) {
                check_id(top[i].candidate);
                if (!isfinite(top[i].geomean_ms) || top[i].geomean_ms <= 0 ||
                    (i && top[i - 1].geomean_ms > top[i].geomean_ms))
                    abort();
            }
        }
        break;
    }
    case 2: {
        char best[8];
        if (tuner_findings_parse_summary("summary.json", buf, len, best, &err) == KILN_OK &&
            best[0] && strcmp(best, "start") != 0)
            check_id(best);
        break;
    }
    case 3: {
        static struct findings_config c;
        if (tuner_findings_parse_config("verdict.json", buf, len, &c, &err) == KILN_OK) {
            if (c.n > FINDINGS_MAX_CONFIG)
                abort();
            for (size_t i = 0; i < c.n; i++) {
                check_ident(c.names[i]);
                if (c.values[i] > FINDINGS_VALUE_MAX || c.values[i] < -FINDINGS_VALUE_MAX)
                    abort();
            }
        }
        break;
    }
    default: {
        static struct findings_profile p;
        if (tuner_findings_parse_profile("profile.json", buf, len, &p, &err) == KILN_OK && p.ok) {
            if (p.report.nkernels > NCU_CSV_MAX_KERNELS || p.launches < 0)
                abort();
            for (size_t i = 0; i < p.report.nkernels; i++) {
                check_ident(p.report.kernels[i].name);
                for (int m = 0; m < NCU_METRIC_COUNT; m++)
                    if (p.report.kernels[i].have[m] && (!isfinite(p.report.kernels[i].value[m]) ||
                                                        p.report.kernels[i].value[m] < 0))
                        abort();
            }
        }
        break;
    }
    }
    return 0;
}
