/* proposer_impl.h - what proposer implementations share (not a public API). */
#ifndef KILN_PROPOSER_IMPL_H
#define KILN_PROPOSER_IMPL_H

#include "proposer.h"

struct proposer_ops {
    const char *name;
    enum kiln_rc (*propose)(struct proposer *p, const struct opt_state *st, struct proposal *out,
                            struct kiln_err *err);
    void (*feedback)(struct proposer *p, const struct proposal *prop, bool passed, bool improved,
                     double geomean_ms);
    void (*destroy)(struct proposer *p);
    /* Proposals depend only on earlier proposals and feedback (never on a
     * verdict not yet fed back, the clock or the outside world): it may
     * propose ahead (--jobs), and resume re-proposes finished candidates
     * to rebuild its state. */
    bool lookahead;
    /* How many proposals it will make in all, when it knows (the tuner's
     * plan); NULL: it does not (the budget is the bound). */
    size_t (*planned)(const struct proposer *p);
};

struct proposer {
    const struct proposer_ops *ops;
};

void proposal_from_content(const char *content, size_t len, enum kiln_backend backend,
                           struct proposal *out);

#endif
