/*
 * error.h - the result codes and error buffer shared by every kiln module.
 *
 * Every fallible function returns an `enum kiln_rc` (KILN_OK on success) and,
 * when it fails, writes one line of detail into a caller-owned `struct
 * kiln_err`. The first failure wins: later calls to kiln_fail() on an error
 * that already holds a message keep the original, which is the one that
 * names the root cause (curl's error buffer works the same way).
 *
 * So an error must start empty: declare it `= KILN_ERR_INIT` (or call
 * kiln_err_clear() before use). Two checks back that up. GCC 11 and later
 * refuse to build a direct kiln_fail(&e, ...) on an `e` never initialised
 * (the access attribute below, under -Werror). At run time, an error whose
 * code is none of these or whose message is not terminated holds no
 * earlier failure (it is garbage), so kiln_fail() records over it instead
 * of keeping it. An uninitialised error that happens to look valid (a
 * stale one left in the same stack slot) is beyond both: valgrind or MSan.
 *
 * Codes are numbered and never renumbered or reused: they cross process
 * boundaries (sandbox status pipes, verdict JSON) and, later, the network.
 *
 * Which convention where (#28). kiln_rc and a kiln_err everywhere a failure
 * is reported: the trusted parent and any process that starts from main()
 * (the harness, workers, the CLI). Three exceptions, each for a reason:
 * - Code that runs in a child forked from kiln before it execs (setup and
 *   init, sandbox_child.c, sandbox_fs.c, cgroup_join_self) keeps a plain
 *   errno-style int and ends with an `enum sb_exit` status: after fork in a
 *   possibly threaded parent only async-signal-safe calls are sure to work,
 *   and it reports a failed step through the status pipe, not a kiln_err.
 *   Primitives it shares with the parent come in two forms: the bare one
 *   named for its convention (fd_write_all_errno, 0 or -1 with errno) and a
 *   kiln_rc one for the parent (fd_write_all).
 * - A lookup whose miss is not a failure returns `bool`, named for what
 *   true means (policy_disk_found: a usable cached record; a miss compiles).
 * - A best-effort step whose failure nobody reports (a cache write, a log
 *   line) may call the bare primitive and ignore it.
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

/* The highest code: move it when adding one (test_error checks). */
#define KILN_RC_LAST KILN_E_KILLED

#define KILN_ERR_MSG_MAX 512

struct kiln_err {
    enum kiln_rc rc;
    char msg[KILN_ERR_MSG_MAX];
};

/* An empty error, as kiln_err_clear() leaves one. */
/* clang-format off */
#define KILN_ERR_INIT {.rc = KILN_OK, .msg = ""}
/* clang-format on */

#define KILN_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define KILN_NODISCARD         __attribute__((warn_unused_result))
/* Says the function reads *err: GCC warns when it is uninitialised. */
#if defined(__GNUC__) && __GNUC__ >= 11 && !defined(__clang__) && !defined(__CUDACC__)
#define KILN_READS_ERR(arg) __attribute__((access(read_write, arg)))
#else
#define KILN_READS_ERR(arg)
#endif

/* Short fixed description of a code, e.g. "malformed input". Never NULL. */
const char *kiln_strerror(enum kiln_rc rc);

/* Resets `err` to KILN_OK with an empty message. `err` may be NULL. */
void kiln_err_clear(struct kiln_err *err);

/* Records `rc` and a formatted message in `err` unless it already holds one;
 * returns `rc` so callers can write `return kiln_fail(err, ...)`. */
enum kiln_rc kiln_fail(struct kiln_err *err, enum kiln_rc rc, const char *fmt, ...)
    KILN_PRINTF(3, 4) KILN_READS_ERR(1);

/* As kiln_fail, appending ": strerror(errno)" with errno read on entry. */
enum kiln_rc kiln_fail_errno(struct kiln_err *err, enum kiln_rc rc, const char *fmt, ...)
    KILN_PRINTF(3, 4) KILN_READS_ERR(1);

/* Prefixes the message already in `err` with context ("loading x: "). */
void kiln_err_prefix(struct kiln_err *err, const char *fmt, ...) KILN_PRINTF(2, 3)
    KILN_READS_ERR(1);

#endif
