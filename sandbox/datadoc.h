/*
 * datadoc.h - the JSON files kiln reads by name from its data directory
 * (images/<name>.json, policies/<name>.json): one opening for both, so a
 * name is checked, a file read and parsed, and a failure worded, the same
 * way for each. The data directory is the caller's (sandbox_data_dir():
 * KILN_DATA_DIR, else beside the binary).
 */
#ifndef KILN_SANDBOX_DATADOC_H
#define KILN_SANDBOX_DATADOC_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

struct datadoc_kind {
    const char *noun;        /* "image": in messages */
    const char *folder;      /* "images": under the data directory */
    size_t max_bytes;        /* the file's size cap */
    const char *const *keys; /* the top-level keys allowed; NULL-terminated */
};

/* Checks `name` (1-31 of a-z, 0-9, '-', '_': it becomes a file name), sets
 * `path` to <data_dir>/<folder>/<name>.json, reads it (at most max_bytes)
 * and parses it strictly with only kind->keys at the top. On success *doc
 * is the document (json_decref it) and, when `text` is not NULL, *text and
 * *len the file's bytes (free them). On failure nothing is taken and the
 * message names the file and, when it cannot be read, where the known ones
 * are. */
enum kiln_rc datadoc_load(const struct datadoc_kind *kind, const char *data_dir, const char *name,
                          char *path, size_t cap, json_t **doc, char **text, size_t *len,
                          struct kiln_err *err);

#endif
