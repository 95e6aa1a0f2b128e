#include "wlgen_reply.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_reply.h"

#define KEYS "workload_json, inputs_py, reference_py, kernel_cu, kernel_c and rationale"

/* The reply's keys, the workload file each one is, and the loader's cap. */
static const struct {
    const char *key;
    enum wl_file file;
    size_t max;
    bool optional; /* may be null or absent */
} fields[] = {
    {"workload_json", WL_FILE_JSON, WL_MAX_JSON, false},
    {"inputs_py", WL_FILE_INPUTS, WL_MAX_SCRIPT, false},
    {"reference_py", WL_FILE_REFERENCE, WL_MAX_SCRIPT, false},
    {"kernel_cu", WL_FILE_KERNEL_CU, WL_MAX_KERNEL, true},
    {"kernel_c", WL_FILE_KERNEL_C, WL_MAX_KERNEL, true},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

const char *wlgen_reply_schema(void)
{
    return "{\"type\":\"object\",\"properties\":{"
           "\"workload_json\":{\"type\":\"string\",\"description\":\"the text of "
           "workload.json\"},"
           "\"inputs_py\":{\"type\":\"string\",\"description\":\"the text of inputs.py\"},"
           "\"reference_py\":{\"type\":\"string\",\"description\":\"the text of "
           "reference.py\"},"
           "\"kernel_cu\":{\"type\":[\"string\",\"null\"],\"description\":\"the starting CUDA "
           "kernel (kernel.cu), null when cuda is not a backend\"},"
           "\"kernel_c\":{\"type\":[\"string\",\"null\"],\"description\":\"the starting C "
           "kernel (kernel.c), null when cpu is not a backend\"},"
           "\"rationale\":{\"type\":\"string\",\"description\":\"how the reference decides "
           "what is right, in a few sentences\"}},"
           "\"required\":[\"workload_json\",\"inputs_py\",\"reference_py\",\"kernel_cu\","
           "\"kernel_c\",\"rationale\"],\"additionalProperties\":false}";
}

void wlgen_reply_free(struct wlgen_reply *r)
{
    if (!r)
        return;
    for (int f = 0; f < WL_FILE_COUNT; f++)
        free(r->files[f]);
    free(r->rationale);
    memset(r, 0, sizeof(*r));
}

static enum kiln_rc check_keys(json_t *root, struct kiln_err *err)
{
    char snip[256];
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        bool known = strcmp(key, "rationale") == 0;
        for (size_t i = 0; i < NFIELDS && !known; i++)
            known = strcmp(key, fields[i].key) == 0;
        if (!known)
            return kiln_fail(err, KILN_E_REJECTED,
                             "reply has the unknown key %s; the only keys allowed are " KEYS,
                             llm_snippet(key, strlen(key), snip, sizeof(snip)));
    }
    for (size_t i = 0; i < NFIELDS; i++)
        if (!fields[i].optional && !json_object_get(root, fields[i].key))
            return kiln_fail(err, KILN_E_REJECTED, "reply is missing the required key \"%s\"",
                             fields[i].key);
    if (!json_object_get(root, "rationale"))
        return kiln_fail(err, KILN_E_REJECTED, "reply is missing the required key \"rationale\"");
    return KILN_OK;
}

enum kiln_rc wlgen_reply_parse(const char *content, size_t len, struct wlgen_reply *out,
                               struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *root = NULL;
    enum kiln_rc rc = llm_reply_object(content, len, KEYS, &root, err);
    if (rc != KILN_OK)
        return rc;
    rc = check_keys(root, err);
    int kernels = 0;
    for (size_t i = 0; rc == KILN_OK && i < NFIELDS; i++) {
        json_t *v = json_object_get(root, fields[i].key);
        if (fields[i].optional && (!v || json_is_null(v)))
            continue;
        if (!json_is_string(v)) {
            rc = kiln_fail(err, KILN_E_REJECTED, "reply key \"%s\" must be a JSON string%s",
                           fields[i].key,
                           fields[i].optional ? " or null" : " (the file's text, not an object)");
            break;
        }
        enum wl_file f = fields[i].file;
        rc = llm_reply_string(root, fields[i].key, fields[i].max, &out->files[f], &out->lens[f],
                              err);
        if (rc == KILN_OK && out->lens[f] == 0)
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "reply key \"%s\" is empty: send the file's text%s", fields[i].key,
                           fields[i].optional ? ", or null when its backend is not used" : "");
        kernels += fields[i].optional;
    }
    if (rc == KILN_OK && kernels == 0)
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "reply has neither kernel_cu nor kernel_c: send the starting kernel of "
                       "each backend the workload lists");
    if (rc == KILN_OK)
        rc = llm_reply_string(root, "rationale", WLGEN_RATIONALE_MAX, &out->rationale, NULL, err);
    json_decref(root);
    if (rc != KILN_OK)
        wlgen_reply_free(out);
    return rc;
}
