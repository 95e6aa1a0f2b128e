/* wlgen_prompt.c - what the model is told when it writes a workload. The
 * formats come from kiln's own documents (workloads/README.md,
 * evaluator/CANDIDATE.md) and the built-in saxpy, read from the data
 * directory, so the prompt never drifts from what the loader enforces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "strbuf.h"
#include "wlgen.h"

#define DOC_MAX      (64u << 10) /* bytes of one of kiln's documents */
#define PREVIOUS_MAX (24u << 10) /* bytes of the previous answer quoted */

static const char system_prompt[] =
    "You write benchmark workloads for kiln, a tool that optimizes kernels and judges every "
    "candidate kernel against a reference. A workload is a kernel signature with input "
    "cases (workload.json), an input generator and a reference in Python 3 with numpy "
    "(inputs.py, reference.py), and a simple, correct starting kernel. kiln runs your "
    "scripts in a sandbox (no network, numpy only, time and memory limits), checks every "
    "tensor they write against the signature, and uses your reference as the oracle for "
    "every kernel, so the reference must be exactly right: plain numpy, in float64 where "
    "precision matters. Reply with exactly one JSON object: {\"workload_json\": the text of "
    "workload.json, \"inputs_py\": the text of inputs.py, \"reference_py\": the text of "
    "reference.py, \"kernel_cu\": the text of kernel.cu or null, \"kernel_c\": the text of "
    "kernel.c or null, \"rationale\": a few sentences on how the reference decides what is "
    "right}. Each file is a JSON string holding the whole file.";

const char *wlgen_system_prompt(void)
{
    return system_prompt;
}

/* Appends one of kiln's own files (data directory), fenced. */
static enum kiln_rc put_doc(struct strbuf *sb, const char *rel, const char *title,
                            struct kiln_err *err)
{
    char path[4096];
    char *text = NULL;
    size_t len = 0;
    enum kiln_rc rc = fs_join(path, sizeof(path), fs_data_dir(), rel, err);
    if (rc == KILN_OK)
        rc = fs_read_file(path, DOC_MAX, &text, &len, err);
    if (rc != KILN_OK) {
        kiln_err_prefix(err,
                        "reading kiln's %s for the workload prompt (set KILN_DATA_DIR to "
                        "kiln's source tree)",
                        rel);
        return rc;
    }
    strbuf_printf(sb, "--- %s ---\n", title);
    strbuf_append(sb, text, len);
    if (len && text[len - 1] != '\n')
        strbuf_puts(sb, "\n");
    strbuf_puts(sb, "--- end ---\n");
    free(text);
    return KILN_OK;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* Appends at most `max` bytes of untrusted text (a script's output, a cut
 * answer) as valid UTF-8 without control characters but newline and tab:
 * anything else becomes '?', so the request can always be encoded. */
static void put_clean(struct strbuf *sb, const char *text, size_t max)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t n = strlen(text), i = 0;
    while (i < n && i < max) {
        size_t k = utf8_len(s + i, n - i);
        if (k == 0 || i + k > max || (k == 1 && s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') ||
            s[i] == 0x7f) {
            strbuf_puts(sb, "?");
            i += k ? k : 1;
            continue;
        }
        strbuf_append(sb, text + i, k);
        i += k;
    }
}

static void put_rules(struct strbuf *sb, enum kiln_backend backend)
{
    bool cpu = backend == KILN_BACKEND_CPU;
    strbuf_printf(sb,
                  "This run uses the %s backend: set \"backends\": [\"%s\"] in workload.json and "
                  "send %s (and %s null).\n\n",
                  kiln_backend_name(backend), kiln_backend_name(backend),
                  cpu ? "kernel_c" : "kernel_cu", cpu ? "kernel_cu" : "kernel_c");
    strbuf_puts(sb, "Rules:\n");
    strbuf_puts(sb, "- Cases: a few small correctness cases with awkward sizes (1, primes, sizes "
                    "that are no multiple of any block size), at least one performance case, and "
                    "held-out cases whose sizes no visible case has.\n");
    if (cpu)
        strbuf_puts(sb, "- Size the performance cases for one CPU core: about 1 to 16 MB of "
                        "tensors each, so that the starting kernel takes milliseconds, not "
                        "seconds.\n");
    else
        strbuf_puts(sb, "- Size the performance cases for a data-centre GPU: about 64 MB to "
                        "1 GB of tensors each.\n");
    strbuf_puts(
        sb, "- inputs.py: random data from numpy.random.default_rng(seed) with the seed of "
            "case.json, exactly the dtype and shape of the signature, one <name>.npy per in and "
            "inout tensor and nothing else. Never constants or zeros.\n"
            "- reference.py: reads the inputs, computes in float64 where it matters, writes one "
            "<name>.npy per out and inout tensor with the signature's dtype and shape, nothing "
            "else.\n"
            "- The outputs must depend on the inputs: a constant, all-zero or tiny reference is "
            "flagged weak, and a weak performance case fails the check.\n"
            "- tolerance: per output tensor, loose enough for a correct float32 kernel, tight "
            "enough that float16 arithmetic fails.\n"
            "- cost: the fewest bytes any kernel must move and the flops, per case.\n"
            "- The starting kernel is a straightforward, correct implementation: the baseline "
            "later kernels must beat. Declare tunables where they are natural.\n"
            "- Scalars: case.json's \"scalars\" holds each scalar argument's value for the "
            "case as the kernel receives it (case[\"scalars\"][\"a\"]): read fixed values "
            "(\"value\") from there instead of repeating the constant in the scripts.\n"
            "- kiln adds \"provenance\": \"model-generated\" to workload.json itself.\n\n");
}

char *wlgen_build_prompt(const char *description, enum kiln_backend backend, const char *problems,
                         const char *previous, struct kiln_err *err)
{
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_puts(&sb, "Write a kiln workload for this task:\n\n");
    put_clean(&sb, description, WLGEN_DESC_MAX);
    strbuf_puts(&sb, "\n\n");
    put_rules(&sb, backend);
    bool cpu = backend == KILN_BACKEND_CPU;
    enum kiln_rc rc = put_doc(&sb, "workloads/README.md", "the workload format", err);
    if (rc == KILN_OK)
        rc = put_doc(&sb, "evaluator/CANDIDATE.md", "the kernel format", err);
    if (rc == KILN_OK) {
        strbuf_puts(&sb, "\nAn example: kiln's built-in saxpy workload (it lists both "
                         "backends; yours lists only this run's).\n");
        rc = put_doc(&sb, "workloads/saxpy/workload.json", "workload.json", err);
    }
    if (rc == KILN_OK)
        rc = put_doc(&sb, "workloads/saxpy/inputs.py", "inputs.py", err);
    if (rc == KILN_OK)
        rc = put_doc(&sb, "workloads/saxpy/reference.py", "reference.py", err);
    if (rc == KILN_OK)
        rc = put_doc(&sb, cpu ? "workloads/saxpy/kernel.c" : "workloads/saxpy/kernel.cu",
                     cpu ? "kernel.c" : "kernel.cu", err);
    if (rc != KILN_OK) {
        strbuf_free(&sb);
        return NULL;
    }
    if (problems) {
        strbuf_puts(&sb, "\nYour previous answer was rejected. The problems kiln found:\n");
        put_clean(&sb, problems, PREVIOUS_MAX);
        if (previous) {
            strbuf_puts(&sb, "\nYour previous answer was:\n```\n");
            put_clean(&sb, previous, PREVIOUS_MAX);
            strbuf_puts(&sb, strlen(previous) > PREVIOUS_MAX ? "\n[... cut]\n```\n" : "\n```\n");
        }
        strbuf_puts(&sb, "Fix every problem and send the whole answer again.\n");
    }
    char *out = NULL;
    return strbuf_finish(&sb, &out, err) == KILN_OK ? out : NULL;
}
