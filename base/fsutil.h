/*
 * fsutil.h - file helpers with kiln's durability and safety rules: reads
 * are size-capped and never follow a final symlink; writes are atomic
 * (temporary file in the same directory, fsync, rename, fsync of the
 * directory), so a crash leaves the old file or the new one, never half.
 */
#ifndef KILN_FSUTIL_H
#define KILN_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Reads a whole regular file (O_NOFOLLOW) of at most `max` bytes into a new
 * NUL-terminated buffer (*out, free()) of *len bytes (NUL not counted). */
enum kiln_rc fs_read_file(const char *path, size_t max, char **out, size_t *len,
                          struct kiln_err *err) KILN_NODISCARD;

/* Atomically replaces `path` with `len` bytes of `data` (mode 0644). */
enum kiln_rc fs_write_atomic(const char *path, const void *data, size_t len,
                             struct kiln_err *err) KILN_NODISCARD;

/* mkdir -p with mode 0755; existing directories are fine. */
enum kiln_rc fs_mkdirs(const char *path, struct kiln_err *err) KILN_NODISCARD;

/* rm -rf of a directory tree kiln created (never follows symlinks). */
enum kiln_rc fs_remove_tree(const char *path, struct kiln_err *err) KILN_NODISCARD;

/* Creates a fresh private directory under $TMPDIR (or /tmp) named
 * kiln-TAG-XXXXXX with mode 0700; writes its path into out. */
enum kiln_rc fs_make_tempdir(const char *tag, char *out, size_t cap,
                             struct kiln_err *err) KILN_NODISCARD;

/* Path join with truncation check: "a" + "b" -> "a/b". */
enum kiln_rc fs_join(char *out, size_t cap, const char *a, const char *b,
                     struct kiln_err *err) KILN_NODISCARD;

/* The directory of this user's records kept across processes (the python
 * probe's answer, compiled policies): $XDG_RUNTIME_DIR/kiln, /run/kiln for
 * root; created 0755 when missing. Returns it opened (O_DIRECTORY,
 * O_NOFOLLOW) only when it belongs to the effective user and nobody else
 * can write it; -1 otherwise (another user without XDG_RUNTIME_DIR too):
 * then there are no such records. */
int fs_runtime_dir(void);

/* Record `name` of fs_runtime_dir(), read whole (malloc'd, *len bytes) only
 * when it is a regular file (not a link) of the effective user that nobody
 * else can write, of min..max bytes, and when max_age_s > 0 modified less
 * than that many seconds ago; NULL otherwise (no record: recompute). */
char *fs_runtime_read(const char *name, size_t min, size_t max, long max_age_s, size_t *len);

/* Writes `parts` as record `name` of fs_runtime_dir(), mode 0600, through
 * a temporary file renamed over it, so a reader sees a whole record or
 * none. Best effort: a record is a cache, its absence only costs time. */
struct iovec;
void fs_runtime_write(const char *name, const struct iovec *parts, int nparts);

/* The running kiln's own executable (/proc/self/exe), or with `dir` its
 * directory, where the harnesses, kiln-full and docs.db are installed. */
enum kiln_rc fs_self_path(bool dir, char *out, size_t cap, struct kiln_err *err) KILN_NODISCARD;

/* Directory holding policies/, images/ and workloads/: $KILN_DATA_DIR if
 * set, else the source tree kiln was built from. */
const char *fs_data_dir(void);

#endif
