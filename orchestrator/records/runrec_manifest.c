/* runrec_manifest.c - a run record's MANIFEST: kept up to date as the run
 * goes (runrec.h) and checked by `kiln resume`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "manifest.h"
#include "runrec.h"

static const char *const SKIP_PATHS[] = {"work"};
static const struct manifest_skip SKIP = {SKIP_PATHS, 1};

enum kiln_rc runrec_commit_json(const struct runrec *rr, const char *rel, const json_t *doc,
                                struct kiln_err *err)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "serializing %s", rel);
    size_t len = strlen(text);
    char *nl = realloc(text, len + 2); /* the same bytes runrec_write_json writes */
    if (!nl) {
        free(text);
        return kiln_fail(err, KILN_E_NOMEM, "serializing %s", rel);
    }
    nl[len] = '\n';
    nl[len + 1] = '\0';
    /* Scan and announce, then write: a crash between the two leaves `rel`
     * with either its listed or its announced digest. */
    enum kiln_rc rc = manifest_write_dir(rr->dir, &SKIP, rel, nl, len + 1, err);
    if (rc == KILN_OK)
        rc = runrec_write(rr, rel, nl, len + 1, err);
    free(nl);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "recording %s", rel);
    return rc;
}

struct in_flight {
    size_t finished, n;
};

/* candidates/NNN/<a file kiln writes for a candidate>, NNN > finished. */
static bool candidate_in_flight(const char *path, void *ctx)
{
    struct in_flight *f = ctx;
    static const char *const files[] = {"exchange.json", "candidate.cu", "candidate.c",
                                        "verdict.json",  "compile.log",  "compile.json",
                                        "timings.json",  "status.json",  "log.txt",
                                        "profile.json",  "cut.txt"};
    const char *p = path + 11;
    if (strncmp(path, "candidates/", 11) || p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9' ||
        p[2] < '0' || p[2] > '9' || p[3] != '/')
        return false;
    size_t id = (size_t)(p[0] - '0') * 100 + (size_t)(p[1] - '0') * 10 + (size_t)(p[2] - '0');
    if (id <= f->finished)
        return false;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (!strcmp(p + 4, files[i])) {
            f->n++;
            return true;
        }
    return false;
}

enum kiln_rc runrec_manifest_check(const struct runrec *rr, size_t finished, size_t *in_flight,
                                   struct kiln_err *err)
{
    struct in_flight f = {finished, 0};
    struct manifest_diff diff;
    enum kiln_rc rc = manifest_check_dir(rr->dir, &SKIP, candidate_in_flight, &f, &diff, err);
    if (rc == KILN_E_NOTFOUND)
        kiln_err_prefix(err,
                        "%s has no MANIFEST, so its files cannot be verified (a run made before "
                        "kiln kept one, or MANIFEST was removed): start the run again",
                        rr->dir);
    else if (rc == KILN_E_REJECTED)
        kiln_err_prefix(err, "refusing to trust the record: restore the files from a copy "
                             "(kiln verify checks an archive) or start the run again");
    if (in_flight)
        *in_flight = f.n;
    return rc;
}
