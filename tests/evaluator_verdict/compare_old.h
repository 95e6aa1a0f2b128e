/* compare_old.h - the pre-fast-path comparison, for test_compare_equiv. */
#ifndef KILN_TEST_COMPARE_OLD_H
#define KILN_TEST_COMPARE_OLD_H

#include "compare.h"

struct compare_tol old_compare_default_tol(enum tensor_dtype dt);
enum kiln_rc old_compare_tensors(const struct tensor *out, const struct tensor *ref,
                                 const struct compare_tol *tol, struct compare_report *rep,
                                 struct kiln_err *err);
unsigned old_compare_weak_reference(const struct tensor *ref, const struct compare_tol *tol,
                                    char *why, size_t why_len);

#endif
