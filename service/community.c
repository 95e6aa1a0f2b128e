/* community.c - a community workload submitted as a tarball: parsed in
 * memory by the strict tar reader kiln uses for sandbox output
 * (tar_ingest.h), its workload.json by the strict workload parser, then
 * stored by content hash under DATA/community/. Nothing here runs its
 * scripts: the worker checks the workload (wlcheck.h) before judging. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdio.h"
#include "fsutil.h"
#include "service.h"
#include "tar_ingest.h"
#include "workload.h"

/* The workload's files as they sit in the tarball and in its directory. */
static const char *const wl_files[SERVE_COMMUNITY_FILES] = {
    "workload.json", "inputs.py", "reference.py", "kernel.cu", "kernel.c"};

static const char *const patterns[] = {"workload/workload.json",
                                       "workload/inputs.py",
                                       "workload/reference.py",
                                       "workload/kernel.cu",
                                       "workload/kernel.c",
                                       "candidate.cu",
                                       "candidate.c"};

static const char layout[] =
    "a community submission is a ustar tarball of workload/workload.json, "
    "workload/inputs.py, workload/reference.py, optionally workload/kernel.cu "
    "and/or kernel.c (starting kernels) and the candidate, candidate.cu or candidate.c";

static void steal(struct tar_contents *t, const char *name, char **data, size_t *len)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->entries[i].name, name))
            continue;
        *data = t->entries[i].data;
        *len = t->entries[i].len;
        t->entries[i].data = NULL;
        return;
    }
}

static enum kiln_rc read_tar(const void *tar, size_t len, struct tar_contents *t,
                             struct kiln_err *err)
{
    int fd = memfd_create("kiln-community", MFD_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "memfd_create");
    enum kiln_rc rc = fd_write_all(fd, tar, len, err, "writing the tarball to a memfd");
    if (rc == KILN_OK && lseek(fd, 0, SEEK_SET) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "writing the tarball to a memfd");
    struct tar_rules rules = {.patterns = patterns,
                              .n_patterns = sizeof(patterns) / sizeof(*patterns),
                              .max_file_bytes = WL_MAX_JSON,
                              .max_total_bytes = SERVE_TAR_MAX,
                              .max_files = sizeof(patterns) / sizeof(*patterns)};
    if (rc == KILN_OK)
        rc = tar_ingest_fd(fd, &rules, t, err);
    close(fd);
    if (rc == KILN_E_REJECTED)
        kiln_err_prefix(err, "the tarball");
    return rc;
}

enum kiln_rc serve_parse_community(const void *tar, size_t len, struct serve_community *out,
                                   struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (len > SERVE_TAR_MAX)
        return kiln_fail(err, KILN_E_LIMIT, "the tarball has %zu bytes, more than the %u allowed",
                         len, SERVE_TAR_MAX);
    struct tar_contents t;
    enum kiln_rc rc = read_tar(tar, len, &t, err);
    if (rc != KILN_OK)
        return rc;
    char name[64];
    for (size_t i = 0; i < SERVE_COMMUNITY_FILES; i++) {
        snprintf(name, sizeof(name), "workload/%s", wl_files[i]);
        out->files[i].name = wl_files[i];
        steal(&t, name, &out->files[i].data, &out->files[i].len);
    }
    char *cu = NULL, *c = NULL;
    size_t cu_len = 0, c_len = 0;
    steal(&t, "candidate.cu", &cu, &cu_len);
    steal(&t, "candidate.c", &c, &c_len);
    tar_contents_free(&t);
    if (cu && c) {
        free(cu);
        free(c);
        rc = kiln_fail(err, KILN_E_PARSE,
                       "the tarball must hold exactly one of candidate.cu and "
                       "candidate.c (the candidate to judge)");
        goto fail;
    }
    /* Owned by out from here: serve_community_free releases it on any failure. */
    out->source = cu ? cu : c;
    out->source_len = cu ? cu_len : c_len;
    for (size_t i = 0; i < 3; i++)
        if (!out->files[i].data) {
            rc = kiln_fail(err, KILN_E_PARSE, "the tarball has no workload/%s: %s", wl_files[i],
                           layout);
            goto fail;
        }
    if (!out->source) {
        rc = kiln_fail(err, KILN_E_PARSE,
                       "the tarball must hold exactly one of candidate.cu and "
                       "candidate.c (the candidate to judge)");
        goto fail;
    }
    snprintf(out->backend, sizeof(out->backend), "%s", cu ? "cuda" : "cpu");
    const char *cand = cu ? "candidate.cu" : "candidate.c";
    if (out->source_len == 0 || out->source_len > SERVE_SOURCE_MAX) {
        rc = kiln_fail(err, out->source_len ? KILN_E_LIMIT : KILN_E_PARSE,
                       "%s has %zu bytes: the candidate must have 1 to %u", cand, out->source_len,
                       SERVE_SOURCE_MAX);
        goto fail;
    }
    if (memchr(out->source, '\0', out->source_len)) {
        rc = kiln_fail(err, KILN_E_PARSE, "%s contains a NUL byte", cand);
        goto fail;
    }
    /* The strict parser names the field: "workload/workload.json: cases[2]...". */
    struct workload *w = NULL;
    rc = workload_parse_json(out->files[0].data, out->files[0].len, "workload", &w, err);
    if (rc != KILN_OK) {
        if (rc != KILN_E_NOMEM && rc != KILN_E_LIMIT)
            rc = KILN_E_PARSE;
        goto fail;
    }
    snprintf(out->name, sizeof(out->name), "%s", w->name);
    unsigned b = kiln_backend_from_name(out->backend);
    /* The starting kernels are optional (workloads/README.md): a candidate
     * is judged against the reference, never against a start. */
    if (!(w->backends & b))
        rc = kiln_fail(err, KILN_E_PARSE,
                       "%s is a %s candidate, but workload/workload.json: backends does not list "
                       "\"%s\"",
                       cand, out->backend, out->backend);
    workload_free(w);
    if (rc == KILN_OK)
        return KILN_OK;
fail:
    serve_community_free(out);
    return rc;
}

void serve_community_free(struct serve_community *c)
{
    for (size_t i = 0; i < SERVE_COMMUNITY_FILES; i++) {
        free(c->files[i].data);
        c->files[i].data = NULL;
    }
    free(c->source);
    c->source = NULL;
}

enum kiln_rc serve_store_community(const char *data, const struct serve_community *c, char *dir,
                                   size_t dir_cap, char board[SERVE_BOARD_MAX + 1],
                                   struct kiln_err *err)
{
    char root[PATH_MAX], tmp[PATH_MAX + 32], p[PATH_MAX + 64];
    snprintf(root, sizeof(root), "%s/community", data);
    enum kiln_rc rc = fs_mkdirs(root, err);
    if (rc != KILN_OK)
        return rc;
    snprintf(tmp, sizeof(tmp), "%s/.tmp-XXXXXX", root);
    if (!mkdtemp(tmp))
        return kiln_fail_errno(err, KILN_E_IO, "cannot create a directory in %s", root);
    for (size_t i = 0; rc == KILN_OK && i < SERVE_COMMUNITY_FILES; i++) {
        if (!c->files[i].data)
            continue;
        snprintf(p, sizeof(p), "%s/%s", tmp, c->files[i].name);
        rc = fs_write_atomic(p, c->files[i].data, c->files[i].len, err);
    }
    /* workload_load is the full check of the files (all of them, not only
     * workload.json) and gives the content hash that names the directory. */
    struct workload *w = NULL;
    if (rc == KILN_OK && (rc = workload_load(tmp, &w, err)) != KILN_OK) {
        if (rc != KILN_E_NOMEM && rc != KILN_E_IO)
            rc = KILN_E_PARSE;
        /* Its messages name the temporary directory; the client knows it as workload/. */
        char *m = strstr(err->msg, tmp);
        if (m) {
            char rest[KILN_ERR_MSG_MAX];
            snprintf(rest, sizeof(rest), "%s", m + strlen(tmp));
            snprintf(m, sizeof(err->msg) - (size_t)(m - err->msg), "workload%s", rest);
        }
    }
    if (rc == KILN_OK) {
        snprintf(dir, dir_cap, "%s/%s", root, w->hash);
        snprintf(board, SERVE_BOARD_MAX + 1, "%s@%s", w->name, w->hash);
        /* The same content is stored once; a directory of that hash already
         * holds exactly these files. */
        if (rename(tmp, dir) == 0)
            tmp[0] = '\0';
        else if (errno != EEXIST && errno != ENOTEMPTY)
            rc = kiln_fail_errno(err, KILN_E_IO, "rename %s to %s", tmp, dir);
    }
    workload_free(w);
    struct kiln_err e2 = {0};
    if (tmp[0] && fs_remove_tree(tmp, &e2) != KILN_OK)
        fprintf(stderr, "kiln serve: %s\n", e2.msg);
    return rc;
}

void serve_board_display(const char *board, const char *const *others, size_t n, char *out,
                         size_t cap)
{
    const char *at = strchr(board, '@');
    if (!at) {
        snprintf(out, cap, "%s", board);
        return;
    }
    size_t name_len = (size_t)(at - board) + 1, hash_len = strlen(at + 1),
           shown = SERVE_BOARD_SHOWN;
    /* One digit past the longest prefix another board of the name shares
     * with this one: two boards never display alike, whatever their
     * hashes (a 48-bit prefix was once made to collide in 15 s). */
    for (size_t i = 0; i < n; i++) {
        const char *o = others[i];
        if (!o || strcmp(o, board) == 0 || strncmp(o, board, name_len) != 0)
            continue;
        size_t k = 0;
        while (at[1 + k] && at[1 + k] == o[name_len + k])
            k++;
        if (k + 1 > shown)
            shown = k + 1;
    }
    if (shown > hash_len)
        shown = hash_len;
    snprintf(out, cap, "%.*s%.*s", (int)name_len, board, (int)shown, at + 1);
}
