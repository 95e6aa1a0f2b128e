/*
 * eval_junit.h - `kiln eval --junit FILE`: one evaluation as JUnit XML that
 * Jenkins' junit-10.xsd accepts (tests/junit/README.md names the schema).
 *
 * <testsuites> holds one <testsuite> per workload; it has one <testcase>
 * per visible case of the backend (classname = workload, name = case name)
 * and one named "held_out" for the held-out check, whatever happened. Each
 * case says what became of it, in its own words: passed; a <failure> (a
 * wrong result: wrong answer, impossible or inconsistent timing) or an
 * <error> (it could not be judged to the end: crash, timeout, limit,
 * sandbox violation, rejected output) whose message is about that case
 * ("case n2 (set 0): ..."); or <skipped> when it never ran ("not run: the
 * evaluation stopped at case n1 (wrong_answer)"), never a failure. A
 * problem no case carries (a compile error: nothing ran; impossible timing
 * of cases that were all correct) gets a <testcase> of its own first,
 * named after the stage that ended the evaluation ("compile"), with the
 * verdict's whole detail (all of the compiler's output) as its body. A
 * case's time is the sum of its measured runs, in seconds; the suite's (and
 * testsuites') time is the whole evaluation's wall time; the suite counts
 * its skipped cases. A message attribute is one line (at most 200
 * characters); the whole text is the element's body.
 */
#ifndef KILN_EVAL_JUNIT_H
#define KILN_EVAL_JUNIT_H

#include "error.h"
#include "evaluate.h"
#include "workload.h"

/* What the report says about where it came from (its <properties>). */
struct eval_junit_info {
    const char *candidate;        /* the path as given */
    const char *candidate_sha256; /* of the bytes judged */
    const char *device;           /* "cpu" or "NVIDIA H200 GPU-... driver 580.1" */
    enum kiln_backend backend;
    double wall_s; /* the evaluation's wall time (turnaround total); 0: the cases' sum */
};

/* The document as text (*out, free()); `held` is NULL when the held-out
 * check did not run (the candidate failed first). */
enum kiln_rc eval_junit_text(const struct workload *wl, const struct eval_junit_info *info,
                             const struct eval_outcome *visible, const struct eval_outcome *held,
                             char **out, struct kiln_err *err) KILN_NODISCARD;

#endif
