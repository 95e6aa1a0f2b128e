/*
 * runarchive.h - one file that holds a run for later: run-NNN.tar.zst.
 *
 * Layout (plain ustar, zstd-compressed, every entry under run-NNN/):
 *   run-NNN/<the record's files>   everything the run's MANIFEST lists
 *   run-NNN/work/inputs/...        the visible inputs and references, so
 *                                  `kiln replay` runs on the same data
 *   run-NNN/ARCHIVE.json           kiln's version and commit, the command
 *                                  lines, the environment (what the run
 *                                  recorded and what was captured when
 *                                  archiving, each marked)
 *   run-NNN/MANIFEST               size and SHA-256 of every file above
 *   run-NNN/MANIFEST.sig           optional: ssh-keygen -Y sign of MANIFEST
 *                                  (namespace "kiln-archive")
 *
 * Reading an archive is reading hostile data: one reader (runarchive_open)
 * decompresses with a cap, then hands the tar to evaluator/tar_ingest
 * (canonical names, regular files only, no links, no duplicates, counts
 * and sizes capped as data is read) into a fresh private directory, then
 * checks every file against MANIFEST and, when asked, the signature.
 */
#ifndef KILN_RUNARCHIVE_H
#define KILN_RUNARCHIVE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define RUNARCHIVE_SIG_NAMESPACE "kiln-archive"

struct runarchive_limits {
    uint64_t max_tar_bytes; /* decompressed stream */
    size_t max_files;
    size_t max_file_bytes;
};

extern const struct runarchive_limits RUNARCHIVE_LIMITS_DEFAULT; /* 32 GiB, 200000, 16 GiB */

struct runarchive_write_opts {
    const char *run_dir;
    const char *out_path;     /* NULL: run-NNN.tar.zst in the current directory */
    const char *sign_key;     /* NULL: no signature */
    const char *command_line; /* how archive was invoked, recorded */
};

/* Verifies the run's own MANIFEST, then writes the archive (to a temporary
 * name renamed into place, so a crash never leaves half an archive).
 * `written` (PATH_MAX) gets the path. */
enum kiln_rc runarchive_write(const struct runarchive_write_opts *o, char *written,
                              struct kiln_err *err) KILN_NODISCARD;

/* An opened (extracted and verified) archive. */
struct runarchive {
    char root[PATH_MAX]; /* the private directory extracted into */
    char run[PATH_MAX];  /* root/run-NNN */
    size_t nfiles;
    bool signed_ok; /* MANIFEST.sig verified against allowed_signers */
    char signer[128];
};

/* Extracts `path` into a fresh directory under `tmp_parent` (NULL: $TMPDIR
 * or /tmp) and checks it: every file against MANIFEST (changed, missing,
 * extra, renamed named), and with `allowed_signers` the signature (a
 * missing or bad one is an error). KILN_E_REJECTED for anything wrong with
 * the archive; on failure nothing extracted is left. */
enum kiln_rc runarchive_open(const char *path, const char *tmp_parent,
                             const struct runarchive_limits *lim, const char *allowed_signers,
                             struct runarchive *out, struct kiln_err *err) KILN_NODISCARD;

/* The same checks on an archive held in memory (the fuzz target's entry). */
enum kiln_rc runarchive_open_mem(const void *data, size_t len, const char *tmp_parent,
                                 const struct runarchive_limits *lim, struct runarchive *out,
                                 struct kiln_err *err) KILN_NODISCARD;

/* Removes what runarchive_open extracted. Safe on a zeroed value. */
void runarchive_close(struct runarchive *a);

#endif
