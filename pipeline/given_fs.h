/*
 * given_fs.h - the directory walking under given.c: every name is looked up
 * relative to an open directory and never followed (fstatat and openat with
 * AT_SYMLINK_NOFOLLOW / O_NOFOLLOW), reads are regular files only (opened
 * O_NONBLOCK so a FIFO cannot block) and capped, listings are capped and
 * sorted. `shown` names the thing in messages. Internal to given.c.
 */
#ifndef KILN_GIVEN_FS_H
#define KILN_GIVEN_FS_H

#include <stddef.h>

#include "error.h"

struct gfs_names {
    char **v;
    size_t n;
};

/* The entries of directory `fd` but "." and "..", sorted (names_free). */
enum kiln_rc gfs_list(int fd, const char *shown, struct gfs_names *out,
                      struct kiln_err *err) KILN_NODISCARD;
void gfs_names_free(struct gfs_names *nl);

/* 'd' directory, 'f' regular file, 'l' symbolic link, 'o' other, 0 absent. */
char gfs_kind(int fd, const char *name);

/* "a symbolic link", "a directory" or "not a regular file". */
const char *gfs_kind_word(char k);

/* Opens directory `name` in `fd` (O_NOFOLLOW). */
enum kiln_rc gfs_open_dir(int fd, const char *name, const char *shown, int *out,
                          struct kiln_err *err) KILN_NODISCARD;

/* Reads regular file `name` in `fd` of at most `max` bytes (free()). */
enum kiln_rc gfs_read(int fd, const char *name, const char *shown, size_t max, char **out,
                      size_t *len, struct kiln_err *err) KILN_NODISCARD;

#endif
