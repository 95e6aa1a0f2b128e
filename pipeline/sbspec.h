/*
 * sbspec.h - a sandbox step as a document, for running it elsewhere (a
 * Slurm node): the spec going out (spec.json) and the result coming back
 * (result.json). The node's kiln runs the same sandbox_run() with the same
 * policies and images; only the description crosses the file system.
 *
 * Both documents are read with json_strict (size cap, known keys, types and
 * ranges checked): the spool directory is shared with the cluster, so what
 * is in it is treated as hostile. Strings in a parsed spec or result live
 * in the struct that holds them; free it with the matching _free.
 */
#ifndef KILN_SBSPEC_H
#define KILN_SBSPEC_H

#include "error.h"
#include "sandbox.h"

#define SBSPEC_MAX_BYTES   (256u * 1024)
#define SBSPEC_MAX_ARGS    64
#define SBSPEC_MAX_INPUTS  16
#define SBRESULT_MAX_BYTES (4u << 20)

/* A spec parsed from JSON: `spec` points into the arrays below. */
struct sbspec_doc {
    struct sandbox_spec spec;
    char *policy, *image, *cwd;
    struct sandbox_input inputs[SBSPEC_MAX_INPUTS];
    char *input_paths[SBSPEC_MAX_INPUTS], *input_names[SBSPEC_MAX_INPUTS];
    char *argv[SBSPEC_MAX_ARGS + 1], *env[SBSPEC_MAX_ARGS + 1];
    int wants_gpu; /* the spec had a GPU: the node picks which (its allocation) */
};

/* The spec as JSON text (malloc'd), with `gpu` >= 0 meaning "give it a
 * GPU". tar_fd, stdin_fd, data_dir, vars and devices do not travel: the
 * node resolves its own. Input host paths are written as given. */
enum kiln_rc sbspec_to_json(const struct sandbox_spec *spec, int gpu, char **out,
                            struct kiln_err *err);

enum kiln_rc sbspec_from_json(const char *text, size_t len, struct sbspec_doc *doc,
                              struct kiln_err *err);
void sbspec_doc_free(struct sbspec_doc *doc);

/* The result, plus where it ran ("node n1, GPU GPU-1234..."), as JSON. */
enum kiln_rc sbresult_to_json(const struct sandbox_result *res, const char *where, char **out,
                              struct kiln_err *err);

/* Parses result.json into *res (free with sandbox_result_free) and `where`. */
enum kiln_rc sbresult_from_json(const char *text, size_t len, struct sandbox_result *res,
                                char *where, size_t where_cap, struct kiln_err *err);

#endif
