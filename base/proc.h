/*
 * proc.h - run a trusted helper program (nvcc --version, python3 -c ...)
 * outside any sandbox and capture its output. Only for kiln's own probes:
 * untrusted code goes through sandbox_run().
 */
#ifndef KILN_PROC_H
#define KILN_PROC_H

#include <stddef.h>

#include "error.h"

/*
 * Runs argv[0] (looked up in PATH) with stdout and stderr captured into
 * `out` (NUL-terminated, at most cap-1 bytes kept, the rest drained). Kills
 * the child after `timeout_ms`. *exit_status gets the exit code, or 128+N
 * when killed by signal N. Fails only when the program could not be run.
 */
enum kiln_rc proc_capture(char *const argv[], char *out, size_t cap, int timeout_ms,
                          int *exit_status, struct kiln_err *err) KILN_NODISCARD;

#endif
