/* libFuzzer target: report_html and report_heatmap_svg on an arbitrary run
 * record, given as one JSON object {"summary", "history", "run",
 * "environment", "verdicts", "best"} (what kiln report reads from a run
 * directory, which may come from anyone). Whatever it holds, the output
 * has no script element and no control character but \n and \t: record
 * text is escaped, never markup. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_output(const char *out)
{
    if (strstr(out, "<script") || strstr(out, "<img"))
        abort();
    for (const unsigned char *p = (const unsigned char *)out; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    json_error_t je;
    json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return 0;
    struct report_run r = {
        json_object_get(doc, "summary"),  json_object_get(doc, "history"),
        json_object_get(doc, "run"),      json_object_get(doc, "environment"),
        json_object_get(doc, "verdicts"), json_string_value(json_object_get(doc, "best")),
    };
    struct kiln_err err;
    kiln_err_clear(&err);
    char *out = NULL;
    if (report_heatmap_svg(&r, &out, &err) == KILN_OK) {
        check_output(out);
        free(out);
        out = NULL;
        if (report_html(&r, &out, &err) != KILN_OK)
            abort(); /* the heatmap was fine: so is the page */
        check_output(out);
        free(out);
    }
    json_decref(doc);
    return 0;
}
