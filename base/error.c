#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *kiln_strerror(enum kiln_rc rc)
{
    /* No default: the compiler flags a code missing here. */
    switch (rc) {
    case KILN_OK:
        return "no error";
    case KILN_E_USAGE:
        return "usage error";
    case KILN_E_NOMEM:
        return "out of memory";
    case KILN_E_IO:
        return "input/output error";
    case KILN_E_PARSE:
        return "malformed input";
    case KILN_E_LIMIT:
        return "limit exceeded";
    case KILN_E_SANDBOX:
        return "sandbox set-up failed";
    case KILN_E_UNSUPPORTED:
        return "not supported on this host";
    case KILN_E_REJECTED:
        return "rejected untrusted data";
    case KILN_E_CUDA:
        return "CUDA error";
    case KILN_E_INTERNAL:
        return "internal error";
    case KILN_E_CHILD:
        return "child process failed";
    case KILN_E_TIMEOUT:
        return "timed out";
    case KILN_E_NOTFOUND:
        return "not found";
    case KILN_E_CANCELLED:
        return "cancelled";
    case KILN_E_KILLED:
        return "killed by SIGKILL";
    }
    return "unknown error code";
}

void kiln_err_clear(struct kiln_err *err)
{
    if (!err)
        return;
    err->rc = KILN_OK;
    err->msg[0] = '\0';
}

/* Whether `err` can be what kiln_err_clear() or a failure left: a known
 * code and a message that ends in its buffer. Stack garbage mostly is not;
 * the code is read as bytes, never as an enum holding a stray value. */
static int err_is_sound(const struct kiln_err *err)
{
    unsigned code;
    _Static_assert(sizeof(code) == sizeof(err->rc), "enum kiln_rc is not an unsigned int");
    memcpy(&code, &err->rc, sizeof(code));
    return code <= KILN_RC_LAST && memchr(err->msg, '\0', sizeof(err->msg)) != NULL;
}

/* An error never cleared holds no earlier failure: made empty, so the
 * failure at hand is recorded and no garbage is read as a message. */
static void err_repair(struct kiln_err *err)
{
    if (!err_is_sound(err))
        kiln_err_clear(err);
}

__attribute__((format(printf, 4, 0))) static enum kiln_rc
fail_v(struct kiln_err *err, enum kiln_rc rc, int errnum, const char *fmt, va_list ap)
{
    if (!err)
        return rc;
    err_repair(err);
    if (err->msg[0] != '\0')
        return rc;
    err->rc = rc;
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    if (n < 0)
        err->msg[0] = '\0';
    if (errnum != 0 && n >= 0 && (size_t)n < sizeof(err->msg))
        snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(errnum));
    return rc;
}

enum kiln_rc kiln_fail(struct kiln_err *err, enum kiln_rc rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, rc, 0, fmt, ap);
    va_end(ap);
    return rc;
}

enum kiln_rc kiln_fail_errno(struct kiln_err *err, enum kiln_rc rc, const char *fmt, ...)
{
    int errnum = errno;
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, rc, errnum, fmt, ap);
    va_end(ap);
    return rc;
}

void kiln_err_prefix(struct kiln_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    err_repair(err);
    char prefix[KILN_ERR_MSG_MAX];
    char old[KILN_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
}
