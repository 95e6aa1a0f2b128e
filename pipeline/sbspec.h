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

#include <stdbool.h>

#include "error.h"
#include "gpupeak.h"
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

/* The node's GPU, in result.json when the step had one: what the verdict
 * records (where the candidate ran) and, where the submitting host has no
 * GPU to ask, what the physics floor is computed from (gpupeak.h). As
 * hostile as the rest of the result: a node can lie about it (SECURITY.md). */
struct sbnode_device {
    bool present; /* the node reported a GPU */
    char node[64], model[128], uuid[64], driver[32], bus_id[32];
    bool has_props; /* its properties were probed (kiln-harness-cuda --device-props) */
    struct gpu_props props;
};

/* The device as a JSON object (result.json's "device"; verdict.json's
 * ran_on.device): a new reference, NULL when out of memory. */
struct json_t;
struct json_t *sbnode_device_json(const struct sbnode_device *d);

/* The result, plus where it ran ("node n1, GPU GPU-1234...") and the
 * node's GPU (NULL or !present: none), as JSON. */
enum kiln_rc sbresult_to_json(const struct sandbox_result *res, const char *where,
                              const struct sbnode_device *dev, char **out, struct kiln_err *err);

/* Parses result.json into *res (free with sandbox_result_free), `where` and
 * *dev (dev->present false when the result names no GPU). Strings are
 * bounded and printable; the properties are all there or all absent, each
 * in a plausible range. */
enum kiln_rc sbresult_from_json(const char *text, size_t len, struct sandbox_result *res,
                                char *where, size_t where_cap, struct sbnode_device *dev,
                                struct kiln_err *err);

#endif
