/*
 * beneath.h - files opened beneath a directory, never through a link.
 *
 * A run record (results/run-NNN) or a cache directory may have been
 * written by someone else: a symlinked `candidates/007` or `verdict.json`
 * would make kiln read or write outside it. Every path here is relative to
 * a trusted directory, and it is resolved one component at a time with
 * O_NOFOLLOW (the effect of openat2's RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS,
 * on any kernel and under seccomp profiles that refuse openat2): an
 * absolute path, an empty, "." or ".." component, or a symlink anywhere
 * below `dir` is refused with KILN_E_REJECTED naming the path. `dir`
 * itself is the caller's (it may be a link the user chose).
 */
#ifndef KILN_BENEATH_H
#define KILN_BENEATH_H

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Reads the regular file dir/rel (at most `max` bytes) into a new
 * NUL-terminated buffer (*out, free()) of *len bytes. KILN_E_NOTFOUND when
 * it does not exist. */
enum kiln_rc beneath_read_file(const char *dir, const char *rel, size_t max, char **out,
                               size_t *len, struct kiln_err *err) KILN_NODISCARD;

/* Atomically replaces dir/rel with `len` bytes of `data` (mode 0644),
 * creating its parent directories beneath `dir` (0755) as needed. A link
 * at rel is replaced, never written through. */
enum kiln_rc beneath_write_atomic(const char *dir, const char *rel, const void *data, size_t len,
                                  struct kiln_err *err) KILN_NODISCARD;

/* Opens the directory dir/rel (created with its parents when `create`) and
 * returns its descriptor in *fd (O_DIRECTORY, close it). */
enum kiln_rc beneath_open_dir(const char *dir, const char *rel, int create, int *fd,
                              struct kiln_err *err) KILN_NODISCARD;

/* KILN_OK when dir/rel is a real directory beneath dir (no link on the
 * way), KILN_E_NOTFOUND when absent, KILN_E_REJECTED otherwise. */
enum kiln_rc beneath_check_dir(const char *dir, const char *rel,
                               struct kiln_err *err) KILN_NODISCARD;

/* KILN_E_REJECTED naming the first symbolic link found anywhere in the tree
 * dir/rel (links are not followed while looking); KILN_OK when none. For
 * trees handed on by path to code that does not open beneath. */
enum kiln_rc beneath_check_tree(const char *dir, const char *rel,
                                struct kiln_err *err) KILN_NODISCARD;

#endif
