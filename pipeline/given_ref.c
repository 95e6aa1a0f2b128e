/* given_ref.c - the --reference script and the JSON that records where
 * given data came from (given.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "given.h"

enum kiln_rc given_reference_load(const char *path, struct given_reference *out,
                                  struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    static const char takes[] = "--reference takes one python script with the contract of a "
                                "workload's reference.py (workloads/README.md)";
    struct stat st;
    size_t pl = strlen(path);
    if (stat(path, &st) != 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_USAGE,
                               "--reference %s: cannot open it", path);
    if (S_ISDIR(st.st_mode))
        return kiln_fail(err, KILN_E_USAGE,
                         "--reference %s is a directory: %s; a directory of expected outputs "
                         "is not supported",
                         path, takes);
    if (!S_ISREG(st.st_mode) || pl < 4 || strcmp(path + pl - 3, ".py") != 0)
        return kiln_fail(err, KILN_E_USAGE, "--reference %s is not a .py file: %s", path, takes);
    snprintf(out->path, sizeof(out->path), "%s", path);
    /* The user's own path may be a symlink; the file it names is read
     * without following anything further. */
    char real[PATH_MAX];
    enum kiln_rc rc = realpath(path, real)
                          ? fs_read_file(real, WL_MAX_SCRIPT, &out->data, &out->len, err)
                          : kiln_fail_errno(err, KILN_E_USAGE, "cannot resolve it");
    if (rc == KILN_OK && out->len == 0)
        rc = kiln_fail(err, KILN_E_USAGE, "--reference %s is empty: %s", path, takes);
    if (rc == KILN_OK && memchr(out->data, '\0', out->len))
        rc = kiln_fail(err, KILN_E_USAGE, "--reference %s is binary, not python text: %s", path,
                       takes);
    if (rc != KILN_OK) {
        if (err->rc != KILN_E_USAGE) {
            kiln_err_prefix(err, "--reference %s", path);
            err->rc = KILN_E_USAGE;
        }
        given_reference_free(out);
        return KILN_E_USAGE;
    }
    sha256_hex_of(out->data, out->len, out->sha256);
    return KILN_OK;
}

void given_reference_free(struct given_reference *r)
{
    free(r->data);
    r->data = NULL;
    r->len = 0;
}

json_t *given_source_json(const char *path, const char *sha256)
{
    if (!path)
        return json_null();
    return json_pack("{s:s, s:s}", "path", path, "sha256", sha256 ? sha256 : "");
}
