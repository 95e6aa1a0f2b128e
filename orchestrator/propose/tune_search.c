/* tune_search.c - successive halving over the valid configurations
 * (tune_search.h). Configurations are numbered in mixed radix (tunable 0
 * varies fastest); the plan holds only those numbers. */
#include "tune_search.h"

#include <stdlib.h>
#include <string.h>

struct ts_entry {
    uint32_t cfg; /* configuration number */
    int rung;
    bool reported, passed;
    double ms;
};

struct tune_search {
    size_t ndims;
    size_t n_values[TUNE_SEARCH_MAX_DIMS];
    size_t space;
    uint32_t *valid; /* configuration numbers that may run, ascending */
    size_t nvalid;
    unsigned eta;
    int short_iter;
    size_t rung_size[TUNE_SEARCH_MAX_RUNGS]; /* planned; a rung may come out smaller */
    size_t nrungs, planned;
    uint32_t *members[TUNE_SEARCH_MAX_RUNGS]; /* decided when the rung starts */
    size_t nmembers[TUNE_SEARCH_MAX_RUNGS];
    bool decided[TUNE_SEARCH_MAX_RUNGS];
    int rung;             /* the rung being proposed */
    size_t next;          /* its next member */
    struct ts_entry *log; /* every proposal, in order */
    size_t nlog, nreported;
};

static void decode(const struct tune_search *s, uint32_t cfg, size_t *idx)
{
    for (size_t d = 0; d < s->ndims; d++) {
        idx[d] = cfg % s->n_values[d];
        cfg /= (uint32_t)s->n_values[d];
    }
}

static uint64_t next_rand(uint64_t *st)
{
    /* xorshift64*: plenty for drawing a sample. */
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 2685821657736338717ULL;
}

/* Evaluations taken by rungs starting at n0: n0, ceil(n0/eta), ... down to
 * the first rung of at most eta (the one timed in full). */
static size_t plan_rungs(size_t n0, unsigned eta, size_t *sizes, size_t *nrungs)
{
    size_t total = 0, n = n0, r = 0;
    for (;;) {
        if (sizes)
            sizes[r] = n;
        total += n;
        r++;
        if (n <= eta || r == TUNE_SEARCH_MAX_RUNGS)
            break;
        n = (n + eta - 1) / eta;
    }
    if (nrungs)
        *nrungs = r;
    return total;
}

/* The request's limits; *space: how many configurations the tunables span. */
static enum kiln_rc check_request(const size_t *n_values, const size_t *default_at, size_t ndims,
                                  const struct tune_search_opts *o, size_t *space,
                                  struct kiln_err *err)
{
    if (ndims > TUNE_SEARCH_MAX_DIMS)
        return kiln_fail(err, KILN_E_LIMIT, "tuner: %zu tunables, at most %d", ndims,
                         TUNE_SEARCH_MAX_DIMS);
    if (o->budget < 1 || o->eta < 2 || o->short_iter < 1)
        return kiln_fail(err, KILN_E_USAGE,
                         "tuner: budget %zu, eta %u, short runs of %d iterations (need >= 1, "
                         ">= 2, >= 1)",
                         o->budget, o->eta, o->short_iter);
    *space = 1;
    for (size_t d = 0; d < ndims; d++) {
        if (n_values[d] == 0 || default_at[d] >= n_values[d])
            return kiln_fail(err, KILN_E_USAGE, "tuner: tunable %zu has no valid default", d);
        if (*space > TUNE_SEARCH_MAX_SPACE / n_values[d])
            return kiln_fail(err, KILN_E_LIMIT,
                             "tuner: the tunables span more than %u configurations; declare "
                             "fewer values, or fewer tunables",
                             TUNE_SEARCH_MAX_SPACE);
        *space *= n_values[d];
    }
    return KILN_OK;
}

/* The configuration number of the defaults. */
static uint32_t default_config(const struct tune_search *s, const size_t *default_at)
{
    uint32_t def = 0, mul = 1;
    for (size_t d = 0; d < s->ndims; d++) {
        def += (uint32_t)default_at[d] * mul;
        mul *= (uint32_t)s->n_values[d];
    }
    return def;
}

/* Keeps the configurations `valid` accepts, before anything is compiled;
 * returns whether the defaults are among them. */
static bool prune(struct tune_search *s, uint32_t def, tune_valid_fn valid, void *ctx)
{
    bool def_valid = false;
    size_t idx[TUNE_SEARCH_MAX_DIMS];
    for (uint32_t c = 0; c < s->space; c++) {
        decode(s, c, idx);
        if (valid && !valid(idx, ctx))
            continue;
        s->valid[s->nvalid++] = c;
        def_valid = def_valid || c == def;
    }
    return def_valid;
}

/* Rung sizes: the largest rung 0 whose halving fits the budget. */
static void plan_rung_sizes(struct tune_search *s, size_t budget)
{
    size_t n0 = s->nvalid < budget ? s->nvalid : budget;
    if (s->nvalid <= budget) {
        s->nrungs = 1;
        s->rung_size[0] = s->nvalid;
        s->planned = s->nvalid;
    } else {
        while (n0 > 1 && plan_rungs(n0, s->eta, NULL, NULL) > budget)
            n0--;
        s->planned = plan_rungs(n0, s->eta, s->rung_size, &s->nrungs);
    }
}

/* Rung 0: the defaults first, then a sample drawn with the seed
 * (a partial Fisher-Yates shuffle of the valid numbers). */
static enum kiln_rc draw_first_rung(struct tune_search *s, uint32_t def, bool def_valid,
                                    uint64_t seed, struct kiln_err *err)
{
    uint32_t *pool = malloc(s->nvalid * sizeof(*pool));
    s->members[0] = malloc(s->rung_size[0] * sizeof(*s->members[0]));
    if (!pool || !s->members[0]) {
        free(pool);
        return kiln_fail(err, KILN_E_NOMEM, "tuner: drawing the first rung");
    }
    size_t np = 0, nm = 0;
    for (size_t i = 0; i < s->nvalid; i++)
        if (!def_valid || s->valid[i] != def)
            pool[np++] = s->valid[i];
    if (def_valid)
        s->members[0][nm++] = def;
    uint64_t st = seed ? seed : 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; nm < s->rung_size[0] && i < np; i++) {
        size_t j = i + (size_t)(next_rand(&st) % (np - i));
        uint32_t t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
        s->members[0][nm++] = pool[i];
    }
    free(pool);
    s->nmembers[0] = nm;
    s->decided[0] = true;
    return KILN_OK;
}

enum kiln_rc tune_search_new(const size_t *n_values, const size_t *default_at, size_t ndims,
                             tune_valid_fn valid, void *ctx, const struct tune_search_opts *o,
                             struct tune_search **out, struct kiln_err *err)
{
    *out = NULL;
    size_t space = 0;
    enum kiln_rc rc = check_request(n_values, default_at, ndims, o, &space, err);
    if (rc != KILN_OK)
        return rc;
    struct tune_search *s = calloc(1, sizeof(*s));
    if (!s || !(s->valid = malloc(space * sizeof(*s->valid))) ||
        !(s->log = calloc(o->budget, sizeof(*s->log)))) {
        tune_search_free(s);
        return kiln_fail(err, KILN_E_NOMEM, "tuner: planning %zu configurations", space);
    }
    s->ndims = ndims;
    memcpy(s->n_values, n_values, ndims * sizeof(*n_values));
    s->space = space;
    s->eta = o->eta;
    s->short_iter = o->short_iter;
    uint32_t def = default_config(s, default_at);
    bool def_valid = prune(s, def, valid, ctx);
    if (s->nvalid == 0) {
        tune_search_free(s);
        return kiln_fail(err, KILN_E_REJECTED,
                         "tuner: none of the %zu configurations meets the candidate's require "
                         "directives and the device's launch limits",
                         space);
    }
    plan_rung_sizes(s, o->budget);
    if ((rc = draw_first_rung(s, def, def_valid, o->seed, err)) != KILN_OK) {
        tune_search_free(s);
        return rc;
    }
    *out = s;
    return KILN_OK;
}

size_t tune_search_space(const struct tune_search *s)
{
    return s->space;
}

size_t tune_search_valid(const struct tune_search *s)
{
    return s->nvalid;
}

size_t tune_search_planned(const struct tune_search *s)
{
    return s->planned;
}

size_t tune_search_rungs(const struct tune_search *s)
{
    return s->nrungs;
}

/* Order for promotion (passing entries only): faster, then proposed earlier. */
static int entry_cmp(const void *a, const void *b)
{
    const struct ts_entry *x = *(const struct ts_entry *const *)a;
    const struct ts_entry *y = *(const struct ts_entry *const *)b;
    if (x->ms != y->ms)
        return x->ms < y->ms ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Rung r's members: the fastest passing reports of rung r - 1 so far. */
static enum kiln_rc decide_rung(struct tune_search *s, int r, struct kiln_err *err)
{
    const struct ts_entry **ok = malloc((s->nlog ? s->nlog : 1) * sizeof(*ok));
    s->members[r] = malloc(s->rung_size[r] * sizeof(*s->members[r]));
    if (!ok || !s->members[r]) {
        free(ok);
        return kiln_fail(err, KILN_E_NOMEM, "tuner: choosing rung %d", r);
    }
    size_t n = 0;
    for (size_t i = 0; i < s->nlog; i++)
        if (s->log[i].rung == r - 1 && s->log[i].reported && s->log[i].passed)
            ok[n++] = &s->log[i];
    qsort(ok, n, sizeof(*ok), entry_cmp);
    size_t keep = n < s->rung_size[r] ? n : s->rung_size[r];
    for (size_t i = 0; i < keep; i++)
        s->members[r][i] = ok[i]->cfg;
    s->nmembers[r] = keep;
    s->decided[r] = true;
    free(ok);
    return KILN_OK;
}

enum kiln_rc tune_search_next(struct tune_search *s, size_t *idx, int *rung, int *iterations,
                              struct kiln_err *err)
{
    while ((size_t)s->rung < s->nrungs) {
        if (!s->decided[s->rung]) {
            /* A rung is drawn from all of the previous one: while some of it
             * is still out (kiln optimize --jobs), the caller waits, so the
             * search is the same for every --jobs. */
            if (s->nreported < s->nlog)
                return kiln_fail(err, KILN_E_LIMIT,
                                 "the tuner waits for %zu reports before choosing rung %d",
                                 s->nlog - s->nreported, s->rung);
            enum kiln_rc rc = decide_rung(s, s->rung, err);
            if (rc != KILN_OK)
                return rc;
        }
        if (s->next < s->nmembers[s->rung])
            break;
        s->rung++;
        s->next = 0;
    }
    if ((size_t)s->rung >= s->nrungs || s->nlog >= s->planned)
        return kiln_fail(err, KILN_E_NOTFOUND,
                         "the tuner's search is done (%zu configurations timed in %zu rungs, of "
                         "%zu valid)",
                         s->nlog, s->nrungs, s->nvalid);
    struct ts_entry *e = &s->log[s->nlog++];
    e->cfg = s->members[s->rung][s->next++];
    e->rung = s->rung;
    decode(s, e->cfg, idx);
    *rung = s->rung;
    *iterations = (size_t)s->rung + 1 == s->nrungs ? 0 : s->short_iter;
    return KILN_OK;
}

void tune_search_report(struct tune_search *s, bool passed, double ms)
{
    if (s->nreported >= s->nlog)
        return;
    struct ts_entry *e = &s->log[s->nreported++];
    e->reported = true;
    e->passed = passed && ms > 0;
    e->ms = ms;
}

bool tune_search_best(const struct tune_search *s, size_t *idx, double *ms)
{
    const struct ts_entry *best = NULL;
    for (size_t i = 0; i < s->nreported; i++) {
        const struct ts_entry *e = &s->log[i];
        if (!e->passed)
            continue;
        if (!best || e->rung > best->rung || (e->rung == best->rung && e->ms < best->ms))
            best = e;
    }
    if (!best)
        return false;
    if (ms)
        *ms = best->ms;
    decode(s, best->cfg, idx);
    return true;
}

void tune_search_free(struct tune_search *s)
{
    if (!s)
        return;
    for (size_t r = 0; r < TUNE_SEARCH_MAX_RUNGS; r++)
        free(s->members[r]);
    free(s->valid);
    free(s->log);
    free(s);
}
