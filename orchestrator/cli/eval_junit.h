/*
 * eval_junit.h - `kiln eval --junit FILE`: one evaluation as JUnit XML that
 * Jenkins' junit-10.xsd accepts (tests/junit/README.md names the schema).
 *
 * <testsuites> holds one <testsuite> per workload; it has one <testcase>
 * per visible case of the backend (classname = workload, name = case name)
 * and one named "held_out" for the held-out check, whatever happened: a
 * compile error makes every one an <error>, the count stays the same.
 * <failure> is a wrong result (wrong answer, impossible or inconsistent
 * timing); <error> is a candidate that could not be judged to the end
 * (compile error, crash, timeout, limit, sandbox violation, rejected
 * output). A case's time is the sum of its measured runs, in seconds; the
 * suite's (and testsuites') time is the whole evaluation's wall time. A
 * message attribute is one line (at most 200 characters); the whole text
 * is the element's body, and the verdict's detail (which may quote all of
 * the compiler's output) is written once, in the first element needing it.
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
