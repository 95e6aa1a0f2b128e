/*
 * tar_name.h - tar_ingest's name rules (internal to tar_ingest.c): what a
 * canonical name is and which names a set of rules expects. See
 * tar_ingest.h for the rules themselves.
 */
#ifndef KILN_TAR_NAME_H
#define KILN_TAR_NAME_H

#include <stddef.h>

#include "tar_ingest.h"

/* NULL when `name` is canonical, else why not (possibly written into
 * `why`). A directory name ends in exactly one '/'; a file name never does. */
const char *tar_name_problem(const char *name, int is_dir, char *why, size_t why_size);

/* 1 when a file `name` matches one of rules->patterns. */
int tar_name_allowed(const struct tar_rules *rules, const char *name);

/* 1 when the directory `name` ("a/b/") is a strict leading part of a pattern. */
int tar_dir_allowed(const struct tar_rules *rules, const char *name);

/* 1 when `name` matches one of rules->in_stream. */
int tar_name_in_stream(const struct tar_rules *rules, const char *name);

#endif
