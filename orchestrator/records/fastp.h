/*
 * fastp.h - KernelBench's fast_p over several workloads (`kiln summarize`):
 * the fraction of problems whose result is correct AND faster than the
 * reference by more than p. fast_0 is the correctness rate, fast_1 the
 * fraction faster than the reference.
 *
 * One problem is one kiln optimize run, read from its summary.json (an
 * untrusted file: fastp_summary_parse is its one reader here, with a size
 * cap and a fuzz target). Correct = a best candidate that passed every
 * check, the held-out one included ("best" not null); speedup =
 * best.speedup_vs_reference (geometric means over the performance cases).
 *
 * Against torch, as KernelBench reports it: where the run timed the torch
 * baseline of an imported problem (summary.json "baseline": {"kind":
 * "torch", "geomean_ms", "compile": {"geomean_ms"}}), the speedup vs torch
 * eager is eager's geomean over best.geomean_ms, and vs torch.compile
 * likewise (both geometric means over the same performance cases).
 */
#ifndef KILN_FASTP_H
#define KILN_FASTP_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define FASTP_SUMMARY_MAX_BYTES (64u << 20) /* as kiln report reads it */
#define FASTP_NAME_MAX          64

/* The newest summary.json format kiln reads (results/README.md: absent in
 * older runs, read as 1). */
#define SUMMARY_VERSION 2

struct fastp_problem {
    char workload[FASTP_NAME_MAX]; /* [a-z0-9_], from summary.json */
    char best[FASTP_NAME_MAX];     /* the best candidate's id; "" when none passed */
    int version;                   /* summary.json's format version */
    bool correct;
    double speedup;    /* best over the reference; 0: unknown (no reference timed) */
    double best_ms;    /* best.geomean_ms; 0: unknown */
    double eager_ms;   /* the torch baseline's eager geomean; 0: none timed */
    double compile_ms; /* its torch.compile geomean; 0: none timed */
};

/* What a speedup is measured against. */
enum fastp_vs { FASTP_VS_REFERENCE, FASTP_VS_EAGER, FASTP_VS_COMPILE };

/* Reads one summary.json (`len` bytes of `buf`). Refuses a version newer
 * than SUMMARY_VERSION (KILN_E_UNSUPPORTED: "use a newer kiln"), and a
 * document whose keys used here have the wrong type (KILN_E_PARSE). */
enum kiln_rc fastp_summary_parse(const void *buf, size_t len, struct fastp_problem *out,
                                 struct kiln_err *err) KILN_NODISCARD;

/* fast_p over `n` problems: correct and speedup > p (for p = 0, correct
 * alone: an unknown speedup still counts). An unknown speedup never counts
 * for p > 0. 0 when n is 0. fastp_fraction is fastp_fraction_vs against
 * the reference. */
double fastp_fraction(const struct fastp_problem *probs, size_t n, double p);
double fastp_fraction_vs(const struct fastp_problem *probs, size_t n, double p, enum fastp_vs vs);

/* Problem p's speedup against `vs`; 0 when unknown (not correct, or no
 * time on one side). */
double fastp_speedup(const struct fastp_problem *p, enum fastp_vs vs);

/* How many of the problems have a time against `vs`. */
size_t fastp_timed(const struct fastp_problem *probs, size_t n, enum fastp_vs vs);

#endif
