/* datadoc.c - see datadoc.h. */
#include "datadoc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "json_strict.h"

static bool valid_name(const char *s)
{
    if (!*s || strlen(s) > 31)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
            return false;
    return true;
}

enum kiln_rc datadoc_load(const struct datadoc_kind *kind, const char *data_dir, const char *name,
                          char *path, size_t cap, json_t **doc, char **text, size_t *len,
                          struct kiln_err *err)
{
    *doc = NULL;
    if (!valid_name(name))
        return kiln_fail(err, KILN_E_USAGE,
                         "%s name '%s' is invalid: use lowercase letters, digits and '-'",
                         kind->noun, name);
    snprintf(path, cap, "%s/%s/%s.json", data_dir, kind->folder, name);
    char *bytes = NULL;
    size_t n = 0;
    if (fs_read_file(path, kind->max_bytes, &bytes, &n, err) != KILN_OK) {
        kiln_err_prefix(err, "%s %s (ls %s/%s for the known ones)", kind->noun, name, data_dir,
                        kind->folder);
        return err->rc;
    }
    const struct json_strict_rules rules = {.max_bytes = kind->max_bytes};
    enum kiln_rc rc = json_strict_parse(path, bytes, n, &rules, doc, err);
    if (rc == KILN_OK && (rc = json_strict_keys(*doc, path, kind->keys, NULL, err)) != KILN_OK) {
        json_decref(*doc);
        *doc = NULL;
    }
    if (rc == KILN_OK && text) {
        *text = bytes;
        *len = n;
        return KILN_OK;
    }
    free(bytes);
    return rc;
}
