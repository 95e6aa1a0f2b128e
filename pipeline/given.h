/*
 * given.h - data the user gives in place of the workload's own: input cases
 * (`--input-cases PATH`) and a reference script (`--reference FILE`), so
 * that runs can be compared on identical data (workloads/README.md, "Given
 * input cases and references").
 *
 * Input cases are untrusted. PATH is a directory or a plain ustar `.tar`
 * with the layout kiln writes for a session's inputs: CASE-SEED/in/T.npy for
 * every input tensor T of every visible case (CASE-SEED/ref/, case.json, ok
 * and scripts/ are allowed and ignored). A run directory, a `--work`
 * directory or an inputs cache may be given as-is: the root is found by
 * descending through work/inputs/ or inputs/ and through a single
 * subdirectory (the content hash). A tarball is unpacked by tar_ingest with
 * size caps into a private directory; both forms are then scanned the same
 * way: nothing is followed (every component opened with O_NOFOLLOW), only
 * directories and regular files with the expected names are allowed, every
 * .npy is parsed by npy_read against the case's signature (dtype, shape,
 * byte cap). Each visible case of the backend needs at least one set (a
 * performance case at least `min_perf_sets`) and at most GIVEN_MAX_SETS;
 * the seed of a set is the one in its directory name. Held-out cases are
 * never taken from the given data.
 *
 * The content digest (`sha256`) is SHA-256 over "kiln-input-cases-v1\n" and,
 * per used set in workload case order then ascending seed, the case name,
 * NUL, the seed in decimal, NUL, then per input tensor in signature order
 * its file name, NUL, its length as 8 little-endian bytes and the SHA-256
 * of its bytes. A directory and a tarball of it have the same digest.
 *
 * The reference script is one python file (`.py`, at most 1 MiB, text)
 * with the contract of the workload's reference.py.
 *
 * Lifecycle: given_inputs_open -> given_inputs_read / given_inputs_export
 * -> given_inputs_free; given_reference_load -> given_reference_free.
 */
#ifndef KILN_GIVEN_H
#define KILN_GIVEN_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "harness_plan.h"
#include "digest.h"
#include "workload.h"

#define GIVEN_MAX_SETS HARNESS_PLAN_MAX_SETS /* input sets per case */

struct given_set {
    const struct wl_case *wcase;      /* a visible case of the workload */
    uint64_t seed;                    /* from the directory name */
    char name[WL_CASE_NAME_MAX + 24]; /* "CASE-SEED" */
    /* SHA-256 of each input tensor's file, indexed by signature argument */
    uint8_t digest[WL_MAX_ARGS][SHA256_DIGEST_LEN];
};

struct given_inputs {
    char path[PATH_MAX];    /* as the user gave it */
    char shown[PATH_MAX];   /* the resolved root as messages name it */
    int root_fd;            /* the resolved root (-1 when closed) */
    char staging[PATH_MAX]; /* tarball form: the private unpack directory */
    const struct workload *wl;
    struct given_set *sets; /* workload case order, then ascending seed */
    size_t n;
    char sha256[SHA256_HEX_LEN + 1];
};

struct given_reference {
    char path[PATH_MAX]; /* as the user gave it */
    char *data;          /* NUL-terminated */
    size_t len;
    char sha256[SHA256_HEX_LEN + 1];
};

/* Opens and checks the input cases at `path` for the visible cases of `wl`
 * that run on `backend`. `scratch` is a directory kiln owns; a tarball is
 * unpacked below it (removed again by given_inputs_free). `wl` must outlive
 * `out`. Errors start with "--input-cases PATH: " and name the set and
 * file; missing data is KILN_E_NOTFOUND, bad data KILN_E_REJECTED or
 * KILN_E_LIMIT. */
enum kiln_rc given_inputs_open(const char *path, const struct workload *wl, unsigned backend,
                               int min_perf_sets, const char *scratch, struct given_inputs *out,
                               struct kiln_err *err) KILN_NODISCARD;

/* Reads input tensor `arg` (a signature index) of set `set` again, checking
 * that it still has the digest it had when opened. *data: free(). */
enum kiln_rc given_inputs_read(const struct given_inputs *g, size_t set, int arg, char **data,
                               size_t *len, struct kiln_err *err) KILN_NODISCARD;

/* Writes the checked inputs as DEST/CASE-SEED/in/T.npy (DEST is created;
 * the layout given_inputs_open reads, with nothing else). */
enum kiln_rc given_inputs_export(const struct given_inputs *g, const char *dest,
                                 struct kiln_err *err) KILN_NODISCARD;

/* Closes the root, removes the staging directory and frees the sets; path,
 * shown and sha256 stay readable. Safe on a zeroed (root_fd -1) or already
 * freed one. */
void given_inputs_free(struct given_inputs *g);

/* Loads the reference script at `path`. Anything but a readable python file
 * of at most WL_MAX_SCRIPT bytes of text is KILN_E_USAGE (KILN_E_NOTFOUND
 * when it does not exist), with a message saying what --reference takes. */
enum kiln_rc given_reference_load(const char *path, struct given_reference *out,
                                  struct kiln_err *err) KILN_NODISCARD;

void given_reference_free(struct given_reference *r);

/* {"path": PATH, "sha256": HEX}, or JSON null when `path` is NULL: how
 * run.json, summary.json and verdicts say where data came from. */
json_t *given_source_json(const char *path, const char *sha256);

#endif
