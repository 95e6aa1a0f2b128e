/*
 * manifest.h - MANIFEST: every file of a run record (or of an archived run)
 * with its size and SHA-256, so a changed, missing, extra or renamed file
 * is found and named before anything in the record is trusted.
 *
 * Format (text, one file per line, sorted by path in strcmp order):
 *   kiln-manifest 1
 *   <sha256 hex> <size> <path>
 *   ...
 *   next <sha256 hex> <size> <path>      (at most one, optional)
 * A `next` line is a write-ahead note: the listed file was about to be
 * replaced atomically with content of that digest (history.json after a
 * candidate). A file that has either its listed digest or its `next` one
 * is intact, so a crash between the two renames never makes a run
 * unresumable. Paths are relative, canonical ('/'-separated components of
 * [A-Za-z0-9._-] (what an archive can carry), not starting with '.', at most
 * 255 bytes) and unique.
 * The text is parsed as untrusted (manifest_parse: size and count limits,
 * every field checked).
 *
 * A MANIFEST without a signature defends against accidents and careless
 * edits, not against someone who can rewrite the files and the MANIFEST
 * together: SECURITY.md says what the optional signature adds.
 */
#ifndef KILN_MANIFEST_H
#define KILN_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "error.h"

#define MANIFEST_NAME      "MANIFEST"
#define MANIFEST_MAX_BYTES (32u << 20)
#define MANIFEST_MAX_FILES 200000u
#define MANIFEST_PATH_MAX  255
#define MANIFEST_FILE_MAX  (64ull << 30) /* bytes of one file */

struct manifest_entry {
    char *path; /* owned */
    char sha256[SHA256_HEX_LEN + 1];
    uint64_t size;
};

struct manifest {
    struct manifest_entry *e; /* owned, sorted by path */
    size_t n, cap;
    struct manifest_entry next; /* path NULL: none */
};

/* What manifest_scan leaves out: paths equal to one of `skip` or under it
 * ("work" skips work/ and everything below). */
struct manifest_skip {
    const char *const *paths;
    size_t n;
};

/* Every regular file under `dir` (except MANIFEST, MANIFEST.sig and the
 * skipped paths), digested. A symbolic link, a special file or a name
 * that is not canonical is KILN_E_REJECTED naming it. */
enum kiln_rc manifest_scan(const char *dir, const struct manifest_skip *skip, struct manifest *out,
                           struct kiln_err *err) KILN_NODISCARD;

/* The text of `m` (malloc'd, NUL-terminated). */
enum kiln_rc manifest_format(const struct manifest *m, char **text, size_t *len,
                             struct kiln_err *err) KILN_NODISCARD;

/* Parses untrusted MANIFEST text; on failure `out` is empty and the
 * message names the line. */
enum kiln_rc manifest_parse(const char *text, size_t len, struct manifest *out,
                            struct kiln_err *err) KILN_NODISCARD;

/* The entry for `path`, or NULL. */
const struct manifest_entry *manifest_find(const struct manifest *m, const char *path);

/* Adds an entry (keeps the order; replaces an entry of the same path). */
enum kiln_rc manifest_put(struct manifest *m, const char *path, const char *sha256, uint64_t size,
                          struct kiln_err *err) KILN_NODISCARD;

void manifest_free(struct manifest *m);

/* What manifest_compare found. `tolerate(path, ctx)`, when given, says
 * which extra files are allowed (they are counted in n_tolerated). */
struct manifest_diff {
    size_t n_problems, n_tolerated;
    char report[2048]; /* one problem a line: "changed: x", "missing: y", ... */
};

/* Compares what is on disk (`have`, from manifest_scan) against what was
 * recorded (`want`): changed, missing, extra and renamed (a missing file
 * whose digest an extra file has) files are named. */
void manifest_compare(const struct manifest *want, const struct manifest *have,
                      bool (*tolerate)(const char *path, void *ctx), void *ctx,
                      struct manifest_diff *out);

/* True when `path` is canonical in the sense above. */
bool manifest_path_ok(const char *path);

/* Scans `dir` and writes `dir`/MANIFEST atomically. With `next_rel`, the
 * `next` line announces that `next_rel` is about to get `next_data`. */
enum kiln_rc manifest_write_dir(const char *dir, const struct manifest_skip *skip,
                                const char *next_rel, const void *next_data, size_t next_len,
                                struct kiln_err *err) KILN_NODISCARD;

/* Announces in `dir`/MANIFEST that `rel` is about to be replaced with
 * `data` (its `next` line), after folding the previous announcement in: the
 * file it named joins the entries when it has the announced digest (its
 * write completed), else stays as listed. No MANIFEST: nothing to do. One
 * atomic MANIFEST write per file write, and no rescan. */
enum kiln_rc manifest_announce(const char *dir, const char *rel, const void *data, size_t len,
                               struct kiln_err *err) KILN_NODISCARD;

/* Reads `dir`/MANIFEST (KILN_E_NOTFOUND when absent), scans `dir` and
 * compares; KILN_E_REJECTED with the problems named when they differ. */
enum kiln_rc manifest_check_dir(const char *dir, const struct manifest_skip *skip,
                                bool (*tolerate)(const char *path, void *ctx), void *ctx,
                                struct manifest_diff *diff, struct kiln_err *err) KILN_NODISCARD;

#endif
