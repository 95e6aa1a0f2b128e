#include "tuner.h"

#include <stdlib.h>
#include <string.h>

struct tuner_pending {
    size_t idx[TUNER_MAX_DIMS];
    int is_restart;
};

struct tuner {
    size_t n_dims;
    struct tuner_dim dims[TUNER_MAX_DIMS];
    uint64_t rng;
    double space;    /* number of configurations (as double: may exceed 2^64) */
    size_t *visited; /* n_visited rows of n_dims indices */
    size_t n_visited, cap_visited;
    size_t best[TUNER_MAX_DIMS];
    int have_best;
    size_t center[TUNER_MAX_DIMS]; /* the point the sweep explores around */
    int have_center;
    /* Proposed, not yet reported, oldest first (reports come in proposal
     * order; more than one only when the caller looks ahead: --jobs). */
    struct tuner_pending pending[TUNER_MAX_PENDING];
    size_t n_pending;
    /* Coordinate-descent cursor around the incumbent. */
    size_t dim; /* dimension being explored */
    int step;   /* next neighbour: 0 = idx-1, 1 = idx+1, 2 = done with dim */
    int improved_in_sweep;
    size_t sweep_dims_left;
};

static uint64_t next_rand(struct tuner *t)
{
    /* xorshift64*: plenty for picking restart points. */
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    return t->rng * 2685821657736338717ULL;
}

static int was_visited(const struct tuner *t, const size_t *idx)
{
    for (size_t i = 0; i < t->n_visited; i++)
        if (memcmp(t->visited + i * t->n_dims, idx, t->n_dims * sizeof(size_t)) == 0)
            return 1;
    return 0;
}

enum kiln_rc tuner_mark_visited(struct tuner *t, const size_t *idx, struct kiln_err *err)
{
    for (size_t d = 0; d < t->n_dims; d++)
        if (idx[d] >= t->dims[d].n_values)
            return kiln_fail(err, KILN_E_USAGE, "tunable %zu: value index %zu out of range", d,
                             idx[d]);
    if (was_visited(t, idx))
        return KILN_OK;
    if (t->n_visited == t->cap_visited) {
        size_t ncap = t->cap_visited ? t->cap_visited * 2 : 64;
        size_t *nv = realloc(t->visited, ncap * (t->n_dims ? t->n_dims : 1) * sizeof(size_t));
        if (!nv)
            return kiln_fail(err, KILN_E_NOMEM, "tuner: recording a visited configuration");
        t->visited = nv;
        t->cap_visited = ncap;
    }
    memcpy(t->visited + t->n_visited * t->n_dims, idx, t->n_dims * sizeof(size_t));
    t->n_visited++;
    return KILN_OK;
}

enum kiln_rc tuner_new(const struct tuner_dim *dims, size_t n_dims, uint64_t seed,
                       struct tuner **out, struct kiln_err *err)
{
    *out = NULL;
    if (n_dims > TUNER_MAX_DIMS)
        return kiln_fail(err, KILN_E_LIMIT, "tuner: %zu tunables, at most %d", n_dims,
                         TUNER_MAX_DIMS);
    struct tuner *t = calloc(1, sizeof(*t));
    if (!t)
        return kiln_fail(err, KILN_E_NOMEM, "tuner");
    t->n_dims = n_dims;
    t->space = 1;
    for (size_t d = 0; d < n_dims; d++) {
        if (dims[d].n_values == 0 || dims[d].default_at >= dims[d].n_values) {
            free(t);
            return kiln_fail(err, KILN_E_USAGE, "tuner: tunable %zu has no valid default", d);
        }
        t->dims[d] = dims[d];
        t->space *= (double)dims[d].n_values;
    }
    t->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    t->sweep_dims_left = n_dims;
    *out = t;
    return KILN_OK;
}

/* Next unvisited neighbour of the incumbent along the coordinate cursor. */
static int next_neighbour(struct tuner *t, size_t *idx)
{
    while (t->sweep_dims_left > 0) {
        size_t d = t->dim;
        while (t->step < 2) {
            int s = t->step++;
            size_t v = t->center[d];
            if (s == 0 && v == 0)
                continue;
            if (s == 1 && v + 1 >= t->dims[d].n_values)
                continue;
            memcpy(idx, t->center, t->n_dims * sizeof(size_t));
            idx[d] = s == 0 ? v - 1 : v + 1;
            if (!was_visited(t, idx))
                return 1;
        }
        t->dim = (t->dim + 1) % t->n_dims;
        t->step = 0;
        t->sweep_dims_left--;
    }
    return 0;
}

static int random_unvisited(struct tuner *t, size_t *idx)
{
    if ((double)t->n_visited >= t->space)
        return 0;
    /* Random probes first; fall back to a scan when the space is nearly full. */
    for (int tries = 0; tries < 256; tries++) {
        for (size_t d = 0; d < t->n_dims; d++)
            idx[d] = (size_t)(next_rand(t) % t->dims[d].n_values);
        if (!was_visited(t, idx))
            return 1;
    }
    memset(idx, 0, t->n_dims * sizeof(size_t));
    for (;;) {
        if (!was_visited(t, idx))
            return 1;
        size_t d = 0;
        while (d < t->n_dims && ++idx[d] == t->dims[d].n_values)
            idx[d++] = 0;
        if (d == t->n_dims)
            return 0;
    }
}

enum kiln_rc tuner_next(struct tuner *t, size_t *idx, struct kiln_err *err)
{
    if (t->n_pending == TUNER_MAX_PENDING)
        return kiln_fail(err, KILN_E_LIMIT,
                         "tuner: %d configurations proposed and not reported (at most %d "
                         "candidates in flight)",
                         TUNER_MAX_PENDING, TUNER_MAX_PENDING);
    int restart = 0;
    if (t->n_visited == 0) {
        for (size_t d = 0; d < t->n_dims; d++)
            idx[d] = t->dims[d].default_at;
    } else if (!t->have_center || !next_neighbour(t, idx)) {
        /* Nothing passed yet, or a full sweep found nothing: restart at random. */
        if (!random_unvisited(t, idx))
            return kiln_fail(err, KILN_E_NOTFOUND, "every tunable configuration was tried");
        restart = 1;
    }
    enum kiln_rc rc = tuner_mark_visited(t, idx, err);
    if (rc != KILN_OK)
        return rc;
    struct tuner_pending *p = &t->pending[t->n_pending++];
    memcpy(p->idx, idx, t->n_dims * sizeof(size_t));
    p->is_restart = restart || t->n_visited == 1;
    return KILN_OK;
}

void tuner_report(struct tuner *t, enum tuner_outcome outcome)
{
    if (t->n_pending == 0)
        return;
    struct tuner_pending p = t->pending[0];
    memmove(&t->pending[0], &t->pending[1], (t->n_pending - 1) * sizeof(t->pending[0]));
    t->n_pending--;
    if (outcome == TUNER_FAILED)
        return;
    int better = !t->have_best || outcome == TUNER_BETTER;
    if (better) {
        memcpy(t->best, p.idx, t->n_dims * sizeof(size_t));
        t->have_best = 1;
    }
    /* Sweep around a new incumbent, or around a restart point that passed
     * (moving from there only on a global improvement). */
    if (better || p.is_restart) {
        memcpy(t->center, p.idx, t->n_dims * sizeof(size_t));
        t->have_center = 1;
        t->sweep_dims_left = t->n_dims;
        t->dim = 0;
        t->step = 0;
    }
}

const size_t *tuner_best(const struct tuner *t)
{
    return t->have_best ? t->best : NULL;
}

void tuner_free(struct tuner *t)
{
    if (!t)
        return;
    free(t->visited);
    free(t);
}
