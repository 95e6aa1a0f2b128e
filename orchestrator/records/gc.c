/*
 * gc.c - `kiln gc`: old runs out of a results directory. Everything is
 * reached through descriptors with O_NOFOLLOW from the results directory
 * down, so a link planted in a run is removed as a link, never followed.
 */
#include "gc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runrec.h"

#define GC_MAX_RUNS 100000 /* run-NNN directories considered at most */

struct gc_run {
    char name[NAME_MAX + 1];
    long number;
    time_t mtime;
};

/* "run-" and at least three digits (runrec_create's run-%03d). */
static bool run_number(const char *name, long *num)
{
    if (strncmp(name, "run-", 4) != 0 || strlen(name + 4) < 3 || strlen(name + 4) > 9)
        return false;
    long v = 0;
    for (const char *p = name + 4; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    *num = v;
    return true;
}

static int by_number(const void *a, const void *b)
{
    long x = ((const struct gc_run *)a)->number, y = ((const struct gc_run *)b)->number;
    return (x > y) - (x < y);
}

/* Measures (and unless `dry`, removes) `name` in directory `parent`:
 * files and links are unlinked, never followed; *bytes gets the disk
 * blocks they held. */
static enum kiln_rc sweep(int parent, const char *name, const char *shown, bool dry,
                          uint64_t *bytes, struct kiln_err *err)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? KILN_OK : kiln_fail_errno(err, KILN_E_IO, "stat %s", shown);
    if (!S_ISDIR(st.st_mode)) {
        if (!dry && unlinkat(parent, name, 0) != 0 && errno != ENOENT)
            return kiln_fail_errno(err, KILN_E_IO, "removing %s", shown);
        *bytes += (uint64_t)st.st_blocks * 512u;
        return KILN_OK;
    }
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return kiln_fail_errno(err, KILN_E_IO, "opening %s", shown);
    }
    /* The names first: removing while reading may skip entries. */
    char **names = NULL;
    size_t n = 0;
    enum kiln_rc rc = KILN_OK;
    struct dirent *de;
    while (rc == KILN_OK && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char **grown = realloc(names, (n + 1) * sizeof(*names));
        char *s = grown ? strdup(de->d_name) : NULL;
        if (grown)
            names = grown;
        if (!s)
            rc = kiln_fail(err, KILN_E_NOMEM, "gc: out of memory listing %s", shown);
        else
            names[n++] = s;
    }
    for (size_t i = 0; i < n; i++) {
        if (rc == KILN_OK) {
            char sub[PATH_MAX];
            snprintf(sub, sizeof(sub), "%s/%s", shown, names[i]);
            rc = sweep(dirfd(d), names[i], sub, dry, bytes, err);
        }
        free(names[i]);
    }
    free(names);
    closedir(d);
    if (rc == KILN_OK && !dry && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        rc = kiln_fail_errno(err, KILN_E_IO, "removing %s", shown);
    if (rc == KILN_OK)
        *bytes += (uint64_t)st.st_blocks * 512u;
    return rc;
}

/* The run-NNN directories of `dfd`, by number; links and other files
 * named run-NNN go to `skipped`. */
static enum kiln_rc list_runs(int dfd, const char *shown, struct gc_run **out, size_t *n,
                              json_t *skipped, struct kiln_err *err)
{
    *out = NULL;
    *n = 0;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return kiln_fail_errno(err, KILN_E_IO, "reading %s", shown);
    }
    enum kiln_rc rc = KILN_OK;
    struct dirent *de;
    long num;
    while (rc == KILN_OK && (de = readdir(d)) != NULL) {
        struct stat st;
        if (!run_number(de->d_name, &num) ||
            fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* not a run: never touched */
        if (!S_ISDIR(st.st_mode)) {
            json_array_append_new(skipped,
                                  json_pack("{s:s, s:s}", "name", de->d_name, "reason",
                                            S_ISLNK(st.st_mode) ? "a symbolic link (not followed)"
                                                                : "not a directory"));
            continue;
        }
        struct gc_run *grown = *n < GC_MAX_RUNS ? realloc(*out, (*n + 1) * sizeof(**out)) : NULL;
        if (!grown) {
            rc = kiln_fail(err, *n < GC_MAX_RUNS ? KILN_E_NOMEM : KILN_E_LIMIT,
                           "gc: more than %d runs in %s, or out of memory", GC_MAX_RUNS, shown);
            break;
        }
        *out = grown;
        snprintf(grown[*n].name, sizeof(grown[*n].name), "%s", de->d_name);
        grown[*n].number = num;
        grown[*n].mtime = st.st_mtime;
        (*n)++;
    }
    closedir(d);
    if (rc == KILN_OK && *n > 1)
        qsort(*out, *n, sizeof(**out), by_number);
    return rc;
}

static void keep(json_t *kept, const char *run, const char *reason)
{
    json_array_append_new(kept, json_pack("{s:s, s:s}", "run", run, "reason", reason));
}

/* One run: kept (and why), or removed (whole or its work/). */
static enum kiln_rc one_run(const struct gc_options *o, int dfd, const char *results,
                            const struct gc_run *g, bool among_last, json_t *rep,
                            struct kiln_err *err)
{
    json_t *kept = json_object_get(rep, "kept");
    char why[160], path[PATH_MAX];
    if (among_last) {
        snprintf(why, sizeof(why), "among the last %d", o->keep_last);
        keep(kept, g->name, why);
        return KILN_OK;
    }
    double age_days = (double)(o->now - (int64_t)g->mtime) / 86400.0;
    if (o->older_than_days >= 0 && age_days < o->older_than_days) {
        snprintf(why, sizeof(why), "modified %.1f days ago (newer than --older-than %g)",
                 age_days < 0 ? 0.0 : age_days, o->older_than_days);
        keep(kept, g->name, why);
        return KILN_OK;
    }
    snprintf(path, sizeof(path), "%s/%s", results, g->name);
    bool live = false;
    int lock = runrec_lock_dir(path, &live); /* held while removing: no resume starts */
    if (live) {
        keep(kept, g->name, "in progress: kiln optimize or kiln resume holds its lock");
        return KILN_OK;
    }
    int rfd = -1;
    struct stat st;
    if (o->inputs_only) {
        rfd = openat(dfd, g->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rfd < 0 || fstatat(rfd, "work", &st, AT_SYMLINK_NOFOLLOW) != 0) {
            keep(kept, g->name, "has no work/ to remove");
            if (rfd >= 0)
                close(rfd);
            if (lock >= 0)
                close(lock);
            return KILN_OK;
        }
    }
    uint64_t bytes = 0;
    char shown[PATH_MAX + 8];
    snprintf(shown, sizeof(shown), "%s%s", path, o->inputs_only ? "/work" : "");
    enum kiln_rc rc = o->inputs_only ? sweep(rfd, "work", shown, o->dry_run, &bytes, err)
                                     : sweep(dfd, g->name, shown, o->dry_run, &bytes, err);
    if (rfd >= 0)
        close(rfd);
    if (lock >= 0)
        close(lock);
    json_array_append_new(json_object_get(rep, "removed"),
                          json_pack("{s:s, s:s, s:I, s:b}", "run", g->name, "what",
                                    o->inputs_only ? "work" : "run", "bytes", (json_int_t)bytes,
                                    "complete", rc == KILN_OK));
    json_t *total = json_object_get(rep, "bytes_freed");
    json_integer_set(total, json_integer_value(total) + (json_int_t)bytes);
    return rc;
}

enum kiln_rc gc_run(const struct gc_options *o, json_t **report, struct kiln_err *err)
{
    *report = NULL;
    const char *results = o->results_dir ? o->results_dir : "results";
    if (o->keep_last < 0 && o->older_than_days < 0)
        return kiln_fail(err, KILN_E_USAGE,
                         "say which runs to remove: --keep-last N, --older-than DAYS, or both");
    int dfd = open(results, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO,
                               "opening the results directory %s", results);
    json_t *rep = json_pack("{s:s, s:b, s:b, s:[], s:[], s:[], s:I}", "results", results, "dry_run",
                            o->dry_run, "inputs_only", o->inputs_only, "removed", "kept", "skipped",
                            "bytes_freed", (json_int_t)0);
    if (!rep) {
        close(dfd);
        return kiln_fail(err, KILN_E_NOMEM, "gc: out of memory");
    }
    struct gc_run *runs = NULL;
    size_t n = 0;
    enum kiln_rc rc = list_runs(dfd, results, &runs, &n, json_object_get(rep, "skipped"), err);
    for (size_t i = 0; rc == KILN_OK && i < n; i++) {
        bool among_last = o->keep_last >= 0 && i + (size_t)o->keep_last >= n;
        rc = one_run(o, dfd, results, &runs[i], among_last, rep, err);
    }
    free(runs);
    close(dfd);
    *report = rep;
    return rc;
}
