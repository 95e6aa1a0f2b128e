/*
 * replay.h - `kiln replay` and `kiln compare`: does a run still hold?
 *
 * replay re-runs every candidate of an archived run on the archived inputs
 * (the archive's workload/, work/inputs/ and given/ copies, its seed and
 * timing options), through the same session functions as `kiln eval`, and
 * compares with what the run recorded. compare does the same comparison
 * between two recorded runs (directories or archives), candidate by
 * candidate, paired by what was run, never by number: the same backend,
 * compiler, source (SHA-256) and configuration (every tunable's value, the
 * defines it was compiled with; kiln's other flags follow from backend and
 * compiler), the same number first among equals. A candidate with no such
 * partner is listed as unpaired and not judged: two different kernels are
 * never called SLOW or FAST against each other. replay pairs each recorded
 * candidate with its re-run only when the re-run is that kernel (the
 * recorded configuration could be applied).
 *
 * Per candidate: the verdict's status must be equal. Per performance case
 * (every input set's raw samples pooled): perfcmp's SAME / FAST / SLOW /
 * AMBIGUOUS, clock-normalised when both sides recorded the SM clock at
 * timing. Environment drift (GPU model or board, driver, toolkit,
 * compiler, clocks) is printed before any timing is judged.
 */
#ifndef KILN_REPLAY_H
#define KILN_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* --csv: one header row, then one row per candidate and case (a
 * candidate with no timed case: one row, case fields empty). */
enum replay_format { REPLAY_TEXT, REPLAY_JSON, REPLAY_MARKDOWN, REPLAY_CSV };

/* The format version of the --json document of replay and compare. */
#define REPLAY_JSON_VERSION 1

struct replay_opts {
    const char *allowed_signers; /* archives: require a signature from these keys */
    int gpu;                     /* replay: -1 means the run's own GPU index */
    enum replay_format format;
    bool quiet;
};

/* What was found, for the exit status. */
struct replay_result {
    size_t candidates; /* pairs judged */
    size_t verdicts_changed, slow, fast, same, ambiguous;
    size_t unpaired; /* candidates with no run of the same kernel on the other side */
    size_t drift;    /* environment keys that differ */
    /* The two sides compiled for different GPU architectures: verdicts are
     * compared, timings are not (not_compared pairs). */
    bool arch_changed;
    size_t not_compared;
};

enum kiln_rc replay_archive(const char *archive, const struct replay_opts *o,
                            struct replay_result *res, struct kiln_err *err) KILN_NODISCARD;

/* `a` and `b`: run directories (their MANIFEST is checked when they have
 * one) or .tar.zst archives (opened and checked). `b` is judged against `a`. */
enum kiln_rc replay_compare(const char *a, const char *b, const struct replay_opts *o,
                            struct replay_result *res, struct kiln_err *err) KILN_NODISCARD;

#endif
