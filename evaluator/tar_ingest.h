/*
 * tar_ingest.h - the one reader of the tar streams sandboxes return.
 *
 * The stream is hostile: the tar writer is kiln's sandbox init, but the
 * names and contents come from untrusted code's /out. Ingestion accepts
 * only what the caller expects and rejects the whole stream otherwise:
 *
 *   - plain ustar only, uncompressed: a pax extended header, a pax global
 *     header or a GNU long-name/long-link/sparse header rejects the stream
 *     (they can rename an entry or change its size behind the ustar fields);
 *   - regular files whose name is canonical (components of [A-Za-z0-9._-],
 *     not starting with '.', separated by single '/', no leading or
 *     trailing '/', at most TAR_NAME_MAX bytes) and matches a pattern;
 *   - directory entries are skipped when their name (with its one trailing
 *     '/') is a leading part of some pattern and they carry no data;
 *     any other directory rejects the stream;
 *   - no links (hard or symbolic), devices, FIFOs or sockets;
 *   - no duplicate names;
 *   - at most max_files files, max_file_bytes per file and max_total_bytes
 *     in all, counted as data is actually read (header sizes are only used
 *     to reject early, never to allocate), and a cap on the raw stream.
 *
 * Every rejection returns KILN_E_REJECTED with a message naming the entry:
 * `tar entry "../x": parent-directory component`. A read error on `fd` is
 * KILN_E_IO. On failure nothing is returned to the caller (the out
 * structure is empty) and, for tar_ingest_to_dir, the files and
 * directories this call created are removed again (best effort). The fd is
 * not drained or closed: the caller owns it.
 *
 * Patterns: split on '/', a name matches when it has as many components
 * and each matches; in a pattern component '*' matches one or more
 * characters of [A-Za-z0-9._-] (never a '/'), everything else is literal.
 * The pattern out/STAR/STAR.npy (STAR being '*') matches "out/case0/y.npy"
 * but not "out/y.npy", "out/a/b/y.npy" or "out/case0/.npy".
 */
#ifndef KILN_TAR_INGEST_H
#define KILN_TAR_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TAR_NAME_MAX 255

struct tar_rules {
    const char *const *patterns; /* allowed names, see above */
    size_t n_patterns;
    size_t max_file_bytes;  /* data bytes of one file */
    size_t max_total_bytes; /* data bytes of all files together */
    size_t max_files;       /* regular files (directory entries not counted) */
    /* tar_ingest_to_dir only: accepted files whose name also matches one
     * of these patterns are read through, checked and counted like any
     * other, but not written to the directory: where their data lies in
     * the stream is returned instead (tar_names.spans), so the caller can
     * read or map it from the stream file. NULL/0: none. */
    const char *const *in_stream;
    size_t n_in_stream;
};

/* One accepted file held in memory. data has len bytes plus a NUL after
 * them (so text files can be parsed as strings); data is never NULL. */
struct tar_entry {
    char *name;
    void *data;
    size_t len;
};

/* Accepted files, sorted by name (strcmp order). Owned: tar_contents_free. */
struct tar_contents {
    struct tar_entry *entries;
    size_t n;
};

/* A file left in the stream: its data is bytes [offset, offset + len) of
 * the stream, counted from where `fd` stood when ingestion began. */
struct tar_span {
    char *name;
    uint64_t offset, len;
};

/* Names of the files written by tar_ingest_to_dir, sorted, and the files
 * left in the stream, sorted by name. Owned: tar_names_free. */
struct tar_names {
    char **names;
    size_t n;
    struct tar_span *spans;
    size_t nspans;
};

/* Reads the tar stream on `fd` into memory. */
enum kiln_rc tar_ingest_fd(int fd, const struct tar_rules *rules, struct tar_contents *out,
                           struct kiln_err *err) KILN_NODISCARD;

/*
 * Reads the tar stream on `fd` into the directory `dirfd`, which should be
 * private and empty. Each component is opened with O_NOFOLLOW (directories
 * created 0700 with mkdirat, files 0600 with O_CREAT|O_EXCL), so nothing
 * already in the directory is followed or overwritten.
 */
enum kiln_rc tar_ingest_to_dir(int fd, const struct tar_rules *rules, int dirfd,
                               struct tar_names *out, struct kiln_err *err) KILN_NODISCARD;

/* The entry named `name`, or NULL. */
const struct tar_entry *tar_contents_find(const struct tar_contents *c, const char *name);

/* The span of file `name` left in the stream, or NULL. */
const struct tar_span *tar_names_span(const struct tar_names *n, const char *name);

/* Frees everything in `c` and empties it. Safe on an empty one. */
void tar_contents_free(struct tar_contents *c);

/* Frees everything in `n` and empties it. Safe on an empty one. */
void tar_names_free(struct tar_names *n);

/* 1 when `name` matches `pattern` under the rules above, else 0. Exposed
 * for callers that check names they build themselves and for tests. */
int tar_name_matches(const char *pattern, const char *name);

#endif
