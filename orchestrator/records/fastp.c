/* fastp.c - fast_p over several runs' summary.json (fastp.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fastp.h"
#include "json_strict.h"

/* A workload or candidate name as kiln writes them; anything else is not
 * from kiln and is refused rather than printed. */
static bool plain_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= FASTP_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return false;
    return true;
}

static enum kiln_rc get_name(const json_t *o, const char *key, char *dst, struct kiln_err *err)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s || !plain_name(s))
        return kiln_fail(err, KILN_E_PARSE,
                         "summary.json: \"%s\" must be a name of 1..%d letters, digits, _ . -", key,
                         FASTP_NAME_MAX - 1);
    snprintf(dst, FASTP_NAME_MAX, "%s", s);
    return KILN_OK;
}

/* A number > 0, or null / absent / 0 (older runs wrote 0 for "none")
 * meaning unknown: *out 0. `what` names it in the message. */
static enum kiln_rc get_positive(const json_t *o, const char *key, const char *what, double *out,
                                 struct kiln_err *err)
{
    const json_t *v = json_object_get(o, key);
    *out = 0;
    if (!v || json_is_null(v))
        return KILN_OK;
    double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || x < 0)
        return kiln_fail(err, KILN_E_PARSE, "summary.json: %s must be a number >= 0 or null", what);
    *out = x;
    return KILN_OK;
}

/* "baseline": absent, null, or an object; only a torch baseline's
 * geomeans are read (another kind is no torch time). */
static enum kiln_rc get_torch(const json_t *doc, struct fastp_problem *out, struct kiln_err *err)
{
    const json_t *b = json_object_get(doc, "baseline");
    if (!b || json_is_null(b))
        return KILN_OK;
    if (!json_is_object(b))
        return kiln_fail(err, KILN_E_PARSE, "summary.json: \"baseline\" must be an object or null");
    const json_t *kind = json_object_get(b, "kind");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "torch") != 0)
        return KILN_OK;
    const json_t *c = json_object_get(b, "compile");
    if (c && !json_is_null(c) && !json_is_object(c))
        return kiln_fail(err, KILN_E_PARSE,
                         "summary.json: baseline.compile must be an object or null");
    enum kiln_rc rc = get_positive(b, "geomean_ms", "baseline.geomean_ms", &out->eager_ms, err);
    if (rc == KILN_OK && json_is_object(c))
        rc = get_positive(c, "geomean_ms", "baseline.compile.geomean_ms", &out->compile_ms, err);
    return rc;
}

enum kiln_rc fastp_summary_parse(const void *buf, size_t len, struct fastp_problem *out,
                                 struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    const struct json_strict_rules rules = {.max_bytes = FASTP_SUMMARY_MAX_BYTES};
    json_t *doc = NULL;
    enum kiln_rc rc = json_strict_parse("summary.json", buf, len, &rules, &doc, err);
    if (rc != KILN_OK)
        return rc;
    const json_t *ver = json_object_get(doc, "version");
    out->version = 1; /* written before summary.json had a version */
    if (ver && (!json_is_integer(ver) || json_integer_value(ver) < 1)) {
        rc = kiln_fail(err, KILN_E_PARSE, "summary.json: \"version\" must be an integer >= 1");
        goto done;
    }
    if (ver && json_integer_value(ver) > SUMMARY_VERSION) {
        rc = kiln_fail(err, KILN_E_UNSUPPORTED,
                       "summary.json has format version %lld, newer than this kiln reads (%d): "
                       "use a newer kiln",
                       (long long)json_integer_value(ver), SUMMARY_VERSION);
        goto done;
    }
    if (ver)
        out->version = (int)json_integer_value(ver);
    if ((rc = get_name(doc, "workload", out->workload, err)) != KILN_OK ||
        (rc = get_torch(doc, out, err)) != KILN_OK)
        goto done;
    const json_t *best = json_object_get(doc, "best");
    if (!best || json_is_null(best))
        goto done; /* no candidate passed every check: not correct */
    if (!json_is_object(best)) {
        rc = kiln_fail(err, KILN_E_PARSE, "summary.json: \"best\" must be an object or null");
        goto done;
    }
    if ((rc = get_name(best, "candidate", out->best, err)) != KILN_OK ||
        (rc = get_positive(best, "speedup_vs_reference", "best.speedup_vs_reference", &out->speedup,
                           err)) != KILN_OK ||
        (rc = get_positive(best, "geomean_ms", "best.geomean_ms", &out->best_ms, err)) != KILN_OK)
        goto done;
    out->correct = true;
done:
    json_decref(doc);
    return rc;
}

/* a / b, or 0 when either is unknown or the ratio is not a finite number. */
static double ratio(double a, double b)
{
    double r = a > 0 && b > 0 ? a / b : 0;
    return isfinite(r) ? r : 0;
}

double fastp_speedup(const struct fastp_problem *p, enum fastp_vs vs)
{
    if (!p->correct)
        return 0;
    switch (vs) {
    case FASTP_VS_EAGER:
        return ratio(p->eager_ms, p->best_ms);
    case FASTP_VS_COMPILE:
        return ratio(p->compile_ms, p->best_ms);
    case FASTP_VS_REFERENCE:
        break;
    }
    return p->speedup;
}

double fastp_fraction_vs(const struct fastp_problem *probs, size_t n, double p, enum fastp_vs vs)
{
    if (n == 0)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += probs[i].correct && (p <= 0 || fastp_speedup(&probs[i], vs) > p);
    return (double)k / (double)n;
}

double fastp_fraction(const struct fastp_problem *probs, size_t n, double p)
{
    return fastp_fraction_vs(probs, n, p, FASTP_VS_REFERENCE);
}

size_t fastp_timed(const struct fastp_problem *probs, size_t n, enum fastp_vs vs)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (vs == FASTP_VS_EAGER     ? probs[i].eager_ms
              : vs == FASTP_VS_COMPILE ? probs[i].compile_ms
                                       : probs[i].speedup) > 0;
    return k;
}
