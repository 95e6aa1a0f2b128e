/*
 * interrupt.h - the user's "stop" (one Ctrl-C, SIGTERM) as something every
 * wait in kiln's process tree sees at once. The stop handler
 * (cli_catch_stop) raises it; sandbox_run() polls it beside its pipes and
 * ends the sandboxed program within a poll round (KILN_E_CANCELLED), and
 * refuses to start one once it is raised. It is a pipe whose read end
 * becomes readable and stays so (nobody reads it): a fork()ed worker
 * (input generation, compile workers) shares it, so its sandboxes stop
 * too, also when the signal reached kiln alone (kill PID, not the process
 * group).
 *
 * Process-wide on purpose: a signal is, and a handler can reach nothing
 * but static storage. Without interrupt_init (the service, tests), nothing
 * is ever raised and every function is a no-op.
 */
#ifndef KILN_INTERRUPT_H
#define KILN_INTERRUPT_H

#include <stdbool.h>

#include "error.h"

/* Creates the pipe (once; later calls do nothing). Its ends are
 * close-on-exec: no sandboxed program inherits them. */
enum kiln_rc interrupt_init(struct kiln_err *err) KILN_NODISCARD;

/* Raises the stop: async-signal-safe (one write(2)); idempotent. */
void interrupt_raise(void);

/* The read end to poll for POLLIN, or -1 before interrupt_init. */
int interrupt_fd(void);

/* The stop was raised (by this process or the one it was forked from). */
bool interrupt_raised(void);

#endif
