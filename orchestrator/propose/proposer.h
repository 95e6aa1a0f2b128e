/*
 * proposer.h - where candidates come from. One interface, three kinds:
 *   tune    the embedded tuner: searches the starting kernel's tunables
 *           (tune_search.h), offline, no key needed;
 *   llm     an OpenAI-compatible chat model (llm.h), prompted with the
 *           workload, the best so far and how every attempt ended;
 *   replay  the model replies recorded in an earlier run, re-parsed with the
 *           same strict parsers, so a run reproduces without a model.
 *
 * Lifecycle: proposer_new_* -> (propose -> [evaluate] -> feedback)* -> free.
 * A proposal whose `invalid` is set is a failed candidate (a bad model
 * reply): the loop records it with that reason and feeds it back.
 */
#ifndef KILN_PROPOSER_H
#define KILN_PROPOSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "evaluate.h"
#include "llm.h"

#define OPT_MAX_CONFIG 64

/* What one earlier iteration did, as the proposers see it. */
struct opt_attempt {
    char id[8];
    const char *source; /* borrowed; may be NULL for an invalid proposal */
    size_t len;
    int64_t config[OPT_MAX_CONFIG];
    size_t nconfig;
    bool has_config;
    enum verdict_status status;
    char stage[16];
    char reason[512];
    char note[256];    /* what the proposer tried ("BLOCK=256 ITEMS=2", a rationale) */
    double geomean_ms; /* 0 when it did not pass */
    bool improved;
    char feedback[1024]; /* diagnostics, resources, timings: for the next prompt */
};

struct opt_state {
    const struct workload *wl;
    enum kiln_backend backend;
    const char *start_source;
    size_t start_len;
    const struct opt_attempt *best; /* NULL before anything passed */
    const struct opt_attempt *history;
    size_t nhistory;
    const struct eval_outcome *reference; /* the starting kernel's outcome */
    int iteration, max_iterations;
    const char *profile; /* --profile: Nsight Compute metrics of the current best, or NULL */
    const char *docs;    /* --docs: the retrieved passages' prompt block (docs_prompt.h), or NULL */
    /* --tuner-run: an earlier tuner run's findings, kiln's own text
     * (tuner_findings.h); NULL: the tuned attempts of this run's history */
    const char *findings;
    /* The hardware the candidates run on, one line (hwdesc.h), or NULL */
    const char *hardware;
};

struct proposal {
    char *source; /* owned */
    size_t len;
    int64_t config[OPT_MAX_CONFIG];
    size_t nconfig;
    bool has_config; /* tunable values chosen by the proposer */
    char note[512];  /* what was tried, in a line */
    char *exchange;  /* llm/replay: JSON record of the model exchange (no key) */
    long prompt_tokens, completion_tokens;
    double cost_usd;
    char invalid[600]; /* non-empty: a failed candidate before compilation */
    int iterations;    /* timing iterations for this one (a short run); 0: the session's */
};

void proposal_free(struct proposal *p);

struct proposer;

/* Returns KILN_E_NOTFOUND when it has nothing more to propose. */
enum kiln_rc proposer_propose(struct proposer *p, const struct opt_state *st, struct proposal *out,
                              struct kiln_err *err) KILN_NODISCARD;

/* How the last proposal ended; `improved` is judged beyond noise;
 * `geomean_ms` its time (0 when it did not pass). */
void proposer_feedback(struct proposer *p, const struct proposal *prop, bool passed, bool improved,
                       double geomean_ms);

const char *proposer_name(const struct proposer *p);

/* Whether it may be asked for several proposals before the feedback on the
 * first (`kiln optimize --jobs`): tune and replay yes (the tuner hands out
 * distinct untried configurations; replay's replies are recorded), llm no
 * (each prompt needs every earlier verdict). Reports still come in
 * proposal order. */
bool proposer_looks_ahead(const struct proposer *p);

/* How many proposals it will make in all (the tuner: its plan's
 * evaluations, e.g. 4 for saxpy's 4 configurations whatever the budget);
 * 0 when it cannot say (llm, replay: the budget is the bound). */
size_t proposer_planned(const struct proposer *p);

void proposer_free(struct proposer *p);

/* The embedded tuner (tune_search.h): successive halving over the starting
 * kernel's valid configurations, `budget` evaluations at most (0: 40).
 * Configurations that break a `require` on the target device `limits`
 * (NULL: the H200's) or whose launch plan exceeds its limits for a case of
 * `wl` (NULL: not checked) are never proposed. */
enum kiln_rc proposer_new_tune(const char *start_source, size_t len, const struct workload *wl,
                               const struct device_limits *limits, enum kiln_backend backend,
                               uint64_t seed, size_t budget, struct proposer **out,
                               struct kiln_err *err) KILN_NODISCARD;

struct llm_settings {
    struct llm_config cfg;
    char api_key[512]; /* never recorded */
};

enum kiln_rc proposer_new_llm(const struct llm_settings *s, struct proposer **out,
                              struct kiln_err *err) KILN_NODISCARD;

struct docs_index;
/* `kiln optimize --docs K`: each prompt of llm proposer `p` carries the `k`
 * (1..DOCS_K_MAX) passages of `ix` that best match the state (docs_prompt.h),
 * and each exchange record names them ("docs"). Takes `ix` (also on failure). */
enum kiln_rc proposer_llm_set_docs(struct proposer *p, struct docs_index *ix, int k,
                                   struct kiln_err *err) KILN_NODISCARD;

/* Replays the exchanges recorded in `run_dir`/candidates/NNN/exchange.json. */
enum kiln_rc proposer_new_replay(const char *run_dir, struct proposer **out,
                                 struct kiln_err *err) KILN_NODISCARD;

/* The user prompt an LLM would get for `st` (exposed for tests). */
char *proposer_build_prompt(const struct opt_state *st);

#endif
