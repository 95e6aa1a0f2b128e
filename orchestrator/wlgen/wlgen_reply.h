/*
 * wlgen_reply.h - the strict parser of a model's generated workload: the
 * answer `kiln optimize --description` asks for (wlgen.h).
 *
 * The answer is untrusted (a model that was asked nicely). It must be one
 * JSON object, optionally in a single ```json fence (llm_reply_object):
 *
 *   {"workload_json": "<text of workload.json>",
 *    "inputs_py": "<text of inputs.py>", "reference_py": "<text of reference.py>",
 *    "kernel_cu": "<text of kernel.cu>" or null, "kernel_c": "<text of kernel.c>" or null,
 *    "rationale": "<a few sentences>"}
 *
 * Every key is required except that kernel_cu and kernel_c may be null or
 * absent (at least one must be a non-empty string); no other key is allowed.
 * Each file must be a non-empty string without NULs, at most the cap the
 * workload loader applies to that file (workload.h: workload.json 256 KiB,
 * scripts and kernels 1 MiB); the rationale at most 4 KiB. The files are
 * not otherwise checked here: the workload loader and `kiln workload check`
 * judge them like any workload from a stranger.
 *
 * Ownership: the struct owns every pointer it holds; wlgen_reply_free()
 * releases them (safe on a zeroed struct). On failure it is left zeroed and
 * err says what to fix, in words that can be fed back to the model.
 */
#ifndef KILN_WLGEN_REPLY_H
#define KILN_WLGEN_REPLY_H

#include <stddef.h>

#include "error.h"
#include "workload.h"

#define WLGEN_RATIONALE_MAX (4u * 1024u)

struct wlgen_reply {
    char *files[WL_FILE_COUNT]; /* by enum wl_file; NULL: not given (kernels only) */
    size_t lens[WL_FILE_COUNT];
    char *rationale;
};

/* Parses the assistant message content (`len` bytes, need not be
 * NUL-terminated). Errors: KILN_E_PARSE (not JSON), KILN_E_LIMIT (too big),
 * KILN_E_REJECTED (valid JSON, wrong shape). */
enum kiln_rc wlgen_reply_parse(const char *content, size_t len, struct wlgen_reply *out,
                               struct kiln_err *err) KILN_NODISCARD;

void wlgen_reply_free(struct wlgen_reply *r);

/* The JSON Schema of the answer (strict structured output), as JSON text. */
const char *wlgen_reply_schema(void);

#endif
