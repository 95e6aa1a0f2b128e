/*
 * harness_fixture.h - what the harness tests share: a temporary /in + /out
 * layout, a saxpy plan, deterministic inputs, running a harness binary and
 * reading back what it wrote.
 */
#ifndef KILN_TEST_HARNESS_FIXTURE_H
#define KILN_TEST_HARNESS_FIXTURE_H

#include <jansson.h>
#include <stdbool.h>

#include "harness_plan.h"
#include "tensor.h"

struct fx {
    char root[256];
    char in[300];
    char out[300];
};

/* Creates root/in and root/out under $TMPDIR. Returns 0 on success. */
int fx_init(struct fx *f);
/* Removes the whole tree. */
void fx_cleanup(struct fx *f);

/* The saxpy plan (n, a, x, y, out) with one correctness case "small"
 * (n = 1001, 1 set) and one timed case "perf" (n = 4099, 3 sets). */
void fx_saxpy_plan(struct harness_plan *p, enum harness_backend backend);

/* Input value i of tensor `which` ('x' or 'y') in case/set: deterministic. */
float fx_input(const char *case_name, const char *set, char which, long long i);

/* Writes every case's x and y for every set under in/cases/. */
int fx_write_inputs(struct fx *f, const struct harness_plan *p);

/* Writes in/plan.json and runs `harness` on it; returns the wait status. */
int fx_run(struct fx *f, const char *harness, const struct harness_plan *p);

/* As fx_run, killing the harness with SIGALRM after `seconds` (0: never). */
int fx_run_limited(struct fx *f, const char *harness, const struct harness_plan *p,
                   unsigned seconds);

/* Parses out/NAME (NULL if missing or malformed). */
json_t *fx_json(struct fx *f, const char *name);

/* Reads out/CASE/SET/TENSOR.npy into `t`; 0 on success. */
int fx_output(struct fx *f, const char *case_name, const char *set, const char *tensor,
              struct tensor *t);

/* The status.json entry of case `name`, or NULL. */
json_t *fx_case_status(json_t *status, const char *name);

/* True when out/log.txt contains `needle`. */
bool fx_log_contains(struct fx *f, const char *needle);

#endif
