/*
 * error.h - the result codes and error buffer shared by every kiln module.
 *
 * Every fallible function returns an `enum kiln_rc` (KILN_OK on success) and,
 * when it fails, writes one line of detail into a caller-owned `struct
 * kiln_err`. The first failure wins: later calls to kiln_fail() on an error
 * that already holds a message keep the original, which is the one that
 * names the root cause (curl's error buffer works the same way).
 *
 * Codes are numbered and never renumbered or reused: they cross process
 * boundaries (sandbox status pipes, verdict JSON) and, later, the network.
 */
#ifndef KILN_ERROR_H
#define KILN_ERROR_H

#include <stddef.h>

enum kiln_rc {
    KILN_OK = 0,
    KILN_E_USAGE = 1,       /* bad arguments from the user */
    KILN_E_NOMEM = 2,       /* allocation failed */
    KILN_E_IO = 3,          /* a file or pipe operation failed */
    KILN_E_PARSE = 4,       /* malformed input (JSON, .npy, tar, plan) */
    KILN_E_LIMIT = 5,       /* input exceeded a size or count cap */
    KILN_E_SANDBOX = 6,     /* the sandbox could not be set up */
    KILN_E_UNSUPPORTED = 7, /* the host cannot do what was asked */
    KILN_E_REJECTED = 8,    /* untrusted data broke a rule */
    KILN_E_CUDA = 9,        /* a CUDA call failed */
    KILN_E_INTERNAL = 10,   /* a bug in kiln */
    KILN_E_CHILD = 11,      /* a child process failed */
    KILN_E_TIMEOUT = 12,    /* a time limit expired */
    KILN_E_NOTFOUND = 13,   /* a named thing does not exist */
    KILN_E_CANCELLED = 14,  /* stopped on the user's request (SIGINT, SIGTERM) */
    KILN_E_KILLED = 15,     /* a child died of SIGKILL that kiln did not send (the
                               host's OOM killer, an operator, or the child itself) */
};

#define KILN_ERR_MSG_MAX 512

struct kiln_err {
    enum kiln_rc rc;
    char msg[KILN_ERR_MSG_MAX];
};

#define KILN_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define KILN_NODISCARD         __attribute__((warn_unused_result))

/* Short fixed description of a code, e.g. "malformed input". Never NULL. */
const char *kiln_strerror(enum kiln_rc rc);

/* Resets `err` to KILN_OK with an empty message. `err` may be NULL. */
void kiln_err_clear(struct kiln_err *err);

/* Records `rc` and a formatted message in `err` unless it already holds one;
 * returns `rc` so callers can write `return kiln_fail(err, ...)`. */
enum kiln_rc kiln_fail(struct kiln_err *err, enum kiln_rc rc, const char *fmt, ...)
    KILN_PRINTF(3, 4);

/* As kiln_fail, appending ": strerror(errno)" with errno read on entry. */
enum kiln_rc kiln_fail_errno(struct kiln_err *err, enum kiln_rc rc, const char *fmt, ...)
    KILN_PRINTF(3, 4);

/* Prefixes the message already in `err` with context ("loading x: "). */
void kiln_err_prefix(struct kiln_err *err, const char *fmt, ...) KILN_PRINTF(2, 3);

#endif
