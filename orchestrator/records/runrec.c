#include "runrec.h"
#include "json_strict.h"
#include "evaluate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "beneath.h"
#include "fsutil.h"
#include "gpuarch.h"
#include "manifest.h"

/* The number of a run-NNN name (digits only after "run-"), or -1; a number
 * too big for the counter is RUNREC_MAX_RUN + 1, never an overflow. */
static long long run_number(const char *name)
{
    if (strncmp(name, "run-", 4) != 0 || !name[4])
        return -1;
    long long n = 0;
    for (const char *p = name + 4; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + (*p - '0');
        if (n > RUNREC_MAX_RUN)
            return RUNREC_MAX_RUN + 1LL;
    }
    return n;
}

/* Highest NNN among existing run-NNN entries, so allocation starts past it;
 * `name` receives that entry's name. */
static long long highest_run(const char *results_dir, char *name, size_t cap)
{
    DIR *d = opendir(results_dir);
    if (!d)
        return 0;
    long long hi = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        long long n = run_number(de->d_name);
        if (n > hi) {
            hi = n;
            snprintf(name, cap, "%s", de->d_name);
        }
    }
    closedir(d);
    return hi;
}

enum kiln_rc runrec_create(const char *results_dir, struct runrec *rr, struct kiln_err *err)
{
    enum kiln_rc rc = fs_mkdirs(results_dir, err);
    if (rc != KILN_OK)
        return rc;
    char top[256] = "";
    long long first = highest_run(results_dir, top, sizeof(top)) + 1;
    /* mkdir fails with EEXIST when another run took the number: try the next. */
    for (long long n = first; n < first + 10000; n++) {
        if (n > RUNREC_MAX_RUN)
            return kiln_fail(err, KILN_E_USAGE,
                             "%s/%s: run numbers stop at %d and this directory is at the end (or "
                             "past it); move or remove it (kiln gc --keep-last N removes old "
                             "runs) and kiln numbers runs after the highest left",
                             results_dir, top, RUNREC_MAX_RUN);
        if (snprintf(rr->dir, sizeof(rr->dir), "%s/run-%03lld", results_dir, n) >=
            (int)sizeof(rr->dir))
            return kiln_fail(err, KILN_E_USAGE, "results path too long: %s", results_dir);
        if (mkdir(rr->dir, 0755) == 0) {
            rr->number = (int)n;
            return KILN_OK;
        }
        if (errno != EEXIST)
            return kiln_fail_errno(err, KILN_E_IO, "creating %s", rr->dir);
    }
    return kiln_fail(err, KILN_E_LIMIT, "could not allocate a run directory in %s", results_dir);
}

enum kiln_rc runrec_open(const char *run_dir, struct runrec *rr, struct kiln_err *err)
{
    struct stat st;
    if (stat(run_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return kiln_fail(err, KILN_E_NOTFOUND, "%s is not a run directory", run_dir);
    snprintf(rr->dir, sizeof(rr->dir), "%s", run_dir);
    size_t len = strlen(rr->dir);
    while (len > 1 && rr->dir[len - 1] == '/')
        rr->dir[--len] = '\0';
    const char *base = strrchr(rr->dir, '/');
    base = base ? base + 1 : rr->dir;
    if (sscanf(base, "run-%d", &rr->number) != 1)
        rr->number = 0;
    return KILN_OK;
}

enum kiln_rc runrec_path(const struct runrec *rr, const char *rel, char *out, size_t cap,
                         struct kiln_err *err)
{
    if (rel[0] == '/' || strstr(rel, ".."))
        return kiln_fail(err, KILN_E_INTERNAL, "run record path %s escapes the run", rel);
    return fs_join(out, cap, rr->dir, rel, err);
}

enum kiln_rc runrec_write(const struct runrec *rr, const char *rel, const void *data, size_t len,
                          struct kiln_err *err)
{
    /* The MANIFEST (once the run has one) hears of the write first. */
    enum kiln_rc rc;
    if (strncmp(rel, "work/", 5) &&
        (rc = manifest_announce(rr->dir, rel, data, len, err)) != KILN_OK)
        return rc;
    /* Beneath the run, never through a link a forged record planted. */
    return beneath_write_atomic(rr->dir, rel, data, len, err);
}

enum kiln_rc runrec_read(const struct runrec *rr, const char *rel, size_t max, char **out,
                         size_t *len, struct kiln_err *err)
{
    return beneath_read_file(rr->dir, rel, max, out, len, err);
}

enum kiln_rc runrec_dir(const struct runrec *rr, const char *rel, char *out, size_t cap,
                        struct kiln_err *err)
{
    int fd;
    enum kiln_rc rc = beneath_open_dir(rr->dir, rel, 1, &fd, err);
    if (rc == KILN_OK)
        close(fd);
    /* Its users open paths inside it by name: no link may lead out. */
    if (rc == KILN_OK)
        rc = beneath_check_tree(rr->dir, rel, err);
    return rc == KILN_OK ? runrec_path(rr, rel, out, cap, err) : rc;
}

enum kiln_rc runrec_write_json(const struct runrec *rr, const char *rel, const json_t *doc,
                               struct kiln_err *err)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "serializing %s", rel);
    size_t len = strlen(text);
    /* Files end with a newline, as text files should. */
    char *nl = realloc(text, len + 2);
    if (!nl) {
        free(text);
        return kiln_fail(err, KILN_E_NOMEM, "serializing %s", rel);
    }
    nl[len] = '\n';
    nl[len + 1] = '\0';
    enum kiln_rc rc = runrec_write(rr, rel, nl, len + 1, err);
    free(nl);
    return rc;
}

enum kiln_rc runrec_read_json(const struct runrec *rr, const char *rel, size_t max, json_t **out,
                              struct kiln_err *err)
{
    *out = NULL;
    char *text;
    size_t len;
    enum kiln_rc rc = runrec_read(rr, rel, max, &text, &len, err);
    if (rc != KILN_OK)
        return rc;
    char what[PATH_MAX + 64];
    snprintf(what, sizeof(what), "%s/%s", rr->dir, rel);
    const struct json_strict_rules rules = {.max_bytes = max, .any_top = true};
    rc = json_strict_parse(what, text, len, &rules, out, err);
    free(text);
    return rc;
}

enum kiln_rc runrec_check_version(const json_t *doc, const char *what, int newest,
                                  struct kiln_err *err)
{
    const json_t *v = json_object_get(doc, "version");
    if (!v)
        return KILN_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 1)
        return kiln_fail(err, KILN_E_PARSE, "%s: \"version\" must be an integer >= 1", what);
    if (json_integer_value(v) > newest)
        return kiln_fail(err, KILN_E_UNSUPPORTED,
                         "%s has format version %lld, newer than this kiln reads (%d): use a "
                         "newer kiln",
                         what, (long long)json_integer_value(v), newest);
    return KILN_OK;
}

enum kiln_rc runrec_check_versions(const json_t *run, const json_t *history, const json_t *env,
                                   struct kiln_err *err)
{
    enum kiln_rc rc = runrec_check_version(run, "run.json", RUNREC_RUN_VERSION, err);
    for (size_t i = 0; rc == KILN_OK && i < json_array_size(history); i++)
        rc = runrec_check_version(json_array_get(history, i), "history.json entry",
                                  RUNREC_HISTORY_VERSION, err);
    if (rc == KILN_OK && env)
        rc = runrec_check_version(env, "environment.json", RUNREC_ENVIRONMENT_VERSION, err);
    return rc;
}

/* Opens work/lock beneath `dir` without following a link (created when
 * `create`); -1 when it is absent or refused. */
static int open_lock(const char *dir, bool create, struct kiln_err *err)
{
    int wfd = -1;
    if (beneath_open_dir(dir, "work", create, &wfd, err) != KILN_OK)
        return -1;
    int fd = openat(wfd, "lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd < 0)
        kiln_fail_errno(err, KILN_E_IO, "opening %s/%s", dir, RUNREC_LOCK);
    close(wfd);
    return fd;
}

enum kiln_rc runrec_lock(const struct runrec *rr, int *fd, struct kiln_err *err)
{
    *fd = open_lock(rr->dir, true, err);
    if (*fd < 0)
        return err->rc ? err->rc : KILN_E_IO;
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
        return KILN_OK;
    int e = errno;
    close(*fd);
    *fd = -1;
    if (e == EWOULDBLOCK)
        return kiln_fail(err, KILN_E_USAGE,
                         "%s is in progress: another kiln optimize or kiln resume holds its "
                         "lock (%s); wait for it to finish or stop it first",
                         rr->dir, RUNREC_LOCK);
    errno = e;
    return kiln_fail_errno(err, KILN_E_IO, "locking %s/%s", rr->dir, RUNREC_LOCK);
}

int runrec_lock_dir(const char *dir, bool *in_progress)
{
    *in_progress = false;
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    int fd = open_lock(dir, false, &ignore);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    *in_progress = true; /* held, or cannot tell: either way not free */
    close(fd);
    return -1;
}

void runrec_target_arch(const json_t *run, char out[GPUARCH_NAME_MAX])
{
    const char *a = json_string_value(json_object_get(json_object_get(run, "target"), "arch"));
    const char *b = json_string_value(json_object_get(run, "backend"));
    int cc = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (a && gpuarch_parse(a, &cc, &e) == KILN_OK)
        gpuarch_name(cc, out);
    else if (b && !strcmp(b, "cuda"))
        gpuarch_name(GPUARCH_DEFAULT, out);
    else
        out[0] = '\0';
}

void runrec_timing_rule(const json_t *run, bool *adaptive, double *target_rse, double *budget_ms)
{
    const json_t *timed = json_object_get(run, "timed_runs");
    const char *rule = json_string_value(json_object_get(timed, "rule"));
    *adaptive = rule && !strcmp(rule, "adaptive");
    *target_rse = *adaptive ? json_number_value(json_object_get(timed, "target_rse")) : 0;
    *budget_ms = *adaptive ? json_number_value(json_object_get(timed, "budget_ms")) : 0;
}

void runrec_timed_runs(const json_t *run, int *warmups, int *iterations)
{
    const json_t *timed = json_object_get(run, "timed_runs");
    if (json_is_object(timed)) {
        int wu = (int)json_integer_value(json_object_get(timed, "warmups"));
        *warmups = wu == 0 ? EVAL_NO_WARMUPS : wu;
        *iterations = (int)json_integer_value(json_object_get(timed, "iterations"));
        return;
    }
    *warmups = (int)json_integer_value(json_object_get(run, "warmups"));
    *iterations = (int)json_integer_value(json_object_get(run, "iterations"));
}

bool runrec_compiler(const json_t *run, enum compile_tool *tool)
{
    const char *name = json_string_value(json_object_get(run, "compiler"));
    *tool = COMPILE_NVCC;
    if (!json_object_get(run, "compiler") || (name && strcmp(name, "cc") == 0))
        return true;
    return compile_tool_from_name(name, tool);
}
