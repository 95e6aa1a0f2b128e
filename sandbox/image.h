/*
 * image.h - what a sandbox sees of the host, read from JSON files in
 * <data_dir>/images/ (format: images/README.md): read-only host paths, the
 * environment (built from scratch) and the working directory.
 *
 * Host-specific paths are placeholders "@name@" whose values the caller
 * gives ("name=value" strings, sandbox_spec.vars): a bind "@name@" binds
 * that path (its real path, and the given spelling when it differs); an
 * "@name@" inside an env value is replaced by the caller's value, else by
 * the image's "defaults". The sandbox knows no placeholder by name: which
 * ones exist is between images/<name>.json and their callers (images/README.md).
 * Optional paths that are absent, or placeholders without a value, are
 * skipped and listed. image_load() fills a caller-owned struct that
 * image_free() releases.
 */
#ifndef KILN_SANDBOX_IMAGE_H
#define KILN_SANDBOX_IMAGE_H

#include <limits.h>
#include <stddef.h>

#include "error.h"

#define IMAGE_MAX_BYTES (64 * 1024)
#define IMAGE_MAX_BINDS 32
#define IMAGE_MAX_ENV   32

struct image_bind {
    char path[PATH_MAX]; /* host path, also the path inside */
    char link[PATH_MAX]; /* non-empty: recreate as a symlink to this instead */
};

struct sandbox_image {
    char name[32];
    struct image_bind binds[IMAGE_MAX_BINDS];
    size_t n_binds;
    char *env[IMAGE_MAX_ENV + 1]; /* "NAME=VALUE", NULL-terminated, owned */
    size_t n_env;
    char cwd[256];
    char skipped[1024]; /* "path (absent); ..." */
};

enum kiln_rc image_load(const char *data_dir, const char *name, char *const *vars,
                        struct sandbox_image *im, struct kiln_err *err) KILN_NODISCARD;

/* The placeholder names image `name` uses, space-separated ("cuda ncu"), so
 * a caller can work out only the values it needs. */
enum kiln_rc image_placeholders(const char *data_dir, const char *name, char *names, size_t cap,
                                struct kiln_err *err) KILN_NODISCARD;

void image_free(struct sandbox_image *im);

#endif
