#include "runarchive.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "envcap.h"
#include "fsutil.h"
#include "kiln_version.h"
#include "manifest.h"
#include "runrec.h"
#include "tar_ingest.h"

const struct runarchive_limits RUNARCHIVE_LIMITS_DEFAULT = {32ull << 30, 200000, 16ull << 30};

#define ARCHIVE_JSON  "ARCHIVE.json"
#define SIG_NAME      MANIFEST_NAME ".sig"
#define MAX_DEPTH     (MANIFEST_PATH_MAX / 2)
#define SIG_MAX_BYTES (64u << 10)

/* ---------------------------------------------------------------- tools */

/* Runs a trusted host tool (ssh-keygen) with stdin from `stdin_path` (NULL:
 * inherited, for a passphrase prompt) and stdout+stderr into `out` (NULL:
 * to our stderr). *status: exit code, 128+N on signal N, -1 not run. */
static enum kiln_rc run_tool(char *const argv[], const char *stdin_path, char *out, size_t cap,
                             int *status, struct kiln_err *err)
{
    int pfd[2] = {-1, -1};
    if (out && pipe2(pfd, O_CLOEXEC) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "pipe for %s", argv[0]);
    pid_t pid = fork();
    if (pid < 0) {
        if (out) {
            close(pfd[0]);
            close(pfd[1]);
        }
        return kiln_fail_errno(err, KILN_E_IO, "fork for %s", argv[0]);
    }
    if (pid == 0) {
        if (stdin_path) {
            int in = open(stdin_path, O_RDONLY);
            if (in < 0 || dup2(in, 0) < 0)
                _exit(126);
        }
        if (out ? (dup2(pfd[1], 1) < 0 || dup2(pfd[1], 2) < 0) : dup2(2, 1) < 0)
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    size_t used = 0;
    if (out) {
        close(pfd[1]);
        char sink[4096];
        for (;;) {
            char *dst = used + 1 < cap ? out + used : sink;
            size_t room = used + 1 < cap ? cap - 1 - used : sizeof(sink);
            ssize_t r = read(pfd[0], dst, room);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            if (dst != sink)
                used += (size_t)r;
        }
        close(pfd[0]);
        out[used] = '\0';
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    if (*status == 127)
        return kiln_fail(err, KILN_E_UNSUPPORTED,
                         "%s is not installed: apt-get install openssh-client", argv[0]);
    return KILN_OK;
}

/* -------------------------------------------------------------- writing */

struct writer {
    struct archive *a;
    char top[64];
    struct manifest m; /* what was written */
};

static enum kiln_rc ar_fail(struct archive *a, struct kiln_err *err, const char *what)
{
    return kiln_fail(err, KILN_E_IO, "writing the archive: %s: %s", what,
                     archive_error_string(a) ? archive_error_string(a) : "unknown error");
}

static enum kiln_rc put_header(struct writer *w, const char *rel, uint64_t size,
                               struct kiln_err *err)
{
    char name[MANIFEST_PATH_MAX + 80];
    snprintf(name, sizeof(name), "%s/%s", w->top, rel);
    struct archive_entry *e = archive_entry_new();
    if (!e)
        return kiln_fail(err, KILN_E_NOMEM, "archive entry");
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, 0, 0); /* the same run gives the same archive */
    int r = archive_write_header(w->a, e);
    archive_entry_free(e);
    return r == ARCHIVE_OK ? KILN_OK : ar_fail(w->a, err, name);
}

static enum kiln_rc put_data(struct writer *w, const char *rel, const void *data, size_t len,
                             struct kiln_err *err)
{
    enum kiln_rc rc = put_header(w, rel, len, err);
    if (rc == KILN_OK && len && archive_write_data(w->a, data, len) != (la_ssize_t)len)
        rc = ar_fail(w->a, err, rel);
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex_of(data, len, hex);
    return rc == KILN_OK ? manifest_put(&w->m, rel, hex, len, err) : rc;
}

/* Copies one file of the run, digesting what it copies; it must still be
 * the file that was verified (`want`). */
static enum kiln_rc put_file(struct writer *w, const char *run_dir,
                             const struct manifest_entry *want, struct kiln_err *err)
{
    char path[PATH_MAX];
    enum kiln_rc rc = fs_join(path, sizeof(path), run_dir, want->path, err);
    if (rc != KILN_OK)
        return rc;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "opening %s", path);
    if ((rc = put_header(w, want->path, want->size, err)) != KILN_OK) {
        close(fd);
        return rc;
    }
    struct sha256_ctx c;
    sha256_init(&c);
    static char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = kiln_fail_errno(err, KILN_E_IO, "reading %s", path);
            break;
        }
        if (r == 0)
            break;
        total += (uint64_t)r;
        if (total > want->size) {
            rc = kiln_fail(err, KILN_E_REJECTED, "%s grew while it was archived", want->path);
            break;
        }
        sha256_update(&c, buf, (size_t)r);
        if (archive_write_data(w->a, buf, (size_t)r) != r) {
            rc = ar_fail(w->a, err, want->path);
            break;
        }
    }
    close(fd);
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 1];
    if (rc != KILN_OK) {
        sha256_discard(&c);
        return rc;
    }
    if (!sha256_final(&c, d))
        return kiln_fail(err, KILN_E_NOMEM, "digest of %s", want->path);
    sha256_hex(d, hex);
    if (total != want->size || strcmp(hex, want->sha256))
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s changed while it was archived: archive the run when nothing "
                         "writes to it",
                         want->path);
    return manifest_put(&w->m, want->path, hex, want->size, err);
}

/* work/ minus work/inputs: what the archive leaves out of work/. */
static enum kiln_rc work_skips(const char *run_dir, char ***out, size_t *n, struct kiln_err *err)
{
    *out = NULL;
    *n = 0;
    char wdir[PATH_MAX];
    enum kiln_rc rc = fs_join(wdir, sizeof(wdir), run_dir, "work", err);
    DIR *d = rc == KILN_OK ? opendir(wdir) : NULL;
    if (!d)
        return rc;
    struct dirent *de;
    while (rc == KILN_OK && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "inputs"))
            continue;
        char **grown = realloc(*out, (*n + 1) * sizeof(char *));
        char *s = NULL;
        if (grown)
            *out = grown;
        if (!grown || asprintf(&s, "work/%s", de->d_name) < 0)
            rc = kiln_fail(err, KILN_E_NOMEM, "archive: out of memory");
        else
            (*out)[(*n)++] = s;
    }
    closedir(d);
    return rc;
}

static json_t *read_json_file(const char *dir, const char *rel, size_t max)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (fs_join(path, sizeof(path), dir, rel, &e) != KILN_OK ||
        fs_read_file(path, max, &text, &len, &e) != KILN_OK)
        return NULL;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    free(text);
    return j;
}

static json_t *archive_json(const char *run_dir, const char *top, const char *cmdline)
{
    json_t *run = read_json_file(run_dir, "run.json", 1u << 20);
    json_t *envj = read_json_file(run_dir, "environment.json", 1u << 20);
    int gpu = -1;
    if (run && !strcmp(json_string_value(json_object_get(run, "backend")) ?: "", "cuda"))
        gpu = (int)json_integer_value(json_object_get(run, "gpu_index"));
    json_t *now = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (envcap_now(gpu, &now, &e) != KILN_OK)
        now = json_object();
    time_t t = time(NULL);
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    json_t *doc = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}, s:O, s:O, s:{s:o, s:o}, s:s}", "format",
        "kiln-archive-1", "run", top, "archived_by", "kiln", KILN_VERSION, "revision", KILN_GIT_REV,
        "cuda", KILN_CUDA_VERSION, "command", cmdline ? cmdline : "", "at", when, "run_kiln",
        run && json_object_get(run, "kiln") ? json_object_get(run, "kiln") : json_null(),
        "run_command",
        run && json_object_get(run, "command") ? json_object_get(run, "command") : json_null(),
        "environment", "recorded_by_run", envcap_from_run(run, envj), "captured_at_archive", now,
        "note",
        "recorded_by_run: what the run wrote itself (run.json, environment.json); 'not "
        "recorded' where it wrote nothing. captured_at_archive: this host when the archive "
        "was made, which may not be the host or the moment of the run.");
    json_decref(run);
    json_decref(envj);
    return doc;
}

static enum kiln_rc sign_manifest(const char *key, const char *text, size_t len, char **sig,
                                  size_t *siglen, struct kiln_err *err)
{
    char dir[PATH_MAX], mpath[PATH_MAX + 16], spath[PATH_MAX + 16];
    enum kiln_rc rc = fs_make_tempdir("sign", dir, sizeof(dir), err);
    if (rc != KILN_OK)
        return rc;
    snprintf(mpath, sizeof(mpath), "%s/MANIFEST", dir);
    snprintf(spath, sizeof(spath), "%s/MANIFEST.sig", dir);
    rc = fs_write_atomic(mpath, text, len, err);
    int status = -1;
    char *argv[] = {"ssh-keygen", "-q",        "-Y", "sign",
                    "-f",         (char *)key, "-n", RUNARCHIVE_SIG_NAMESPACE,
                    mpath,        NULL};
    if (rc == KILN_OK)
        rc = run_tool(argv, NULL, NULL, 0, &status, err);
    if (rc == KILN_OK && status != 0)
        rc = kiln_fail(err, KILN_E_USAGE,
                       "ssh-keygen -Y sign with %s failed (exit %d, its message above): give "
                       "--sign an SSH private key file",
                       key, status);
    if (rc == KILN_OK)
        rc = fs_read_file(spath, SIG_MAX_BYTES, sig, siglen, err);
    struct kiln_err ign;
    (void)(fs_remove_tree(dir, &ign) == KILN_OK);
    return rc;
}

/* The run's files as archived: all of it but work/ (except work/inputs). */
static enum kiln_rc list_run_files(const char *run_dir, struct manifest *files,
                                   struct kiln_err *err)
{
    char **skips = NULL;
    size_t nskips = 0;
    memset(files, 0, sizeof(*files));
    enum kiln_rc rc = work_skips(run_dir, &skips, &nskips, err);
    struct manifest_skip skip = {(const char *const *)skips, nskips};
    if (rc == KILN_OK)
        rc = manifest_scan(run_dir, &skip, files, err);
    for (size_t i = 0; i < nskips; i++)
        free(skips[i]);
    free(skips);
    return rc;
}

/* The archive's top directory (the run's own name) and its file name. */
static enum kiln_rc name_archive(const char *run_dir, const char *out_path, struct writer *w,
                                 char out[PATH_MAX], struct kiln_err *err)
{
    const char *base = strrchr(run_dir, '/');
    base = base ? base + 1 : run_dir;
    if (!manifest_path_ok(base) || strlen(base) >= sizeof(w->top))
        return kiln_fail(err, KILN_E_USAGE,
                         "%s: the run directory's name must be a plain name (like run-001)",
                         run_dir);
    snprintf(w->top, sizeof(w->top), "%s", base);
    if (out_path)
        snprintf(out, PATH_MAX, "%s", out_path);
    else
        snprintf(out, PATH_MAX, "%s.tar.zst", w->top);
    return KILN_OK;
}

/* A zstd-compressed ustar stream into `fd`. w->a is set even on failure. */
static enum kiln_rc start_archive(struct writer *w, int fd, struct kiln_err *err)
{
    w->a = archive_write_new();
    if (!w->a || archive_write_set_format_ustar(w->a) != ARCHIVE_OK ||
        archive_write_add_filter_zstd(w->a) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(w->a, 1) != ARCHIVE_OK ||
        archive_write_open_fd(w->a, fd) != ARCHIVE_OK)
        return w->a ? ar_fail(w->a, err, "zstd-compressed ustar")
                    : kiln_fail(err, KILN_E_NOMEM, "archive");
    return KILN_OK;
}

static enum kiln_rc put_archive_json(struct writer *w, const char *run_dir, const char *cmdline,
                                     struct kiln_err *err)
{
    json_t *aj = archive_json(run_dir, w->top, cmdline);
    char *ajt = aj ? json_dumps(aj, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(aj);
    enum kiln_rc rc = ajt ? put_data(w, ARCHIVE_JSON, ajt, strlen(ajt), err)
                          : kiln_fail(err, KILN_E_NOMEM, "ARCHIVE.json");
    free(ajt);
    return rc;
}

/* MANIFEST of what was written, then (with a key) its signature. */
static enum kiln_rc put_manifest(struct writer *w, const char *sign_key, struct kiln_err *err)
{
    char *mtext = NULL, *sig = NULL;
    size_t mlen = 0, siglen = 0;
    enum kiln_rc rc = manifest_format(&w->m, &mtext, &mlen, err);
    if (rc == KILN_OK && sign_key)
        rc = sign_manifest(sign_key, mtext, mlen, &sig, &siglen, err);
    if (rc == KILN_OK && (rc = put_header(w, MANIFEST_NAME, mlen, err)) == KILN_OK &&
        archive_write_data(w->a, mtext, mlen) != (la_ssize_t)mlen)
        rc = ar_fail(w->a, err, MANIFEST_NAME);
    if (rc == KILN_OK && sig && (rc = put_header(w, SIG_NAME, siglen, err)) == KILN_OK &&
        archive_write_data(w->a, sig, siglen) != (la_ssize_t)siglen)
        rc = ar_fail(w->a, err, SIG_NAME);
    free(mtext);
    free(sig);
    return rc;
}

/* Closes the stream (always) and the file `fd`; `rc` is how writing went. */
static enum kiln_rc finish_archive(struct writer *w, int fd, const char *tmp, enum kiln_rc rc,
                                   struct kiln_err *err)
{
    if (w->a && archive_write_close(w->a) != ARCHIVE_OK && rc == KILN_OK)
        rc = ar_fail(w->a, err, "finishing");
    if (w->a)
        archive_write_free(w->a);
    if (rc == KILN_OK && fchmod(fd, 0644) != 0) /* as any other file the user writes */
        rc = kiln_fail_errno(err, KILN_E_IO, "chmod %s", tmp);
    if (rc == KILN_OK && fsync(fd) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "fsync %s", tmp);
    close(fd);
    return rc;
}

/* The new name is durable only once its directory is on disk. */
static void sync_parent(const char *out)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", out);
    char *slash = strrchr(parent, '/');
    if (slash)
        *slash = slash == parent ? (slash[1] = '\0', '/') : '\0';
    int dfd = open(slash ? parent : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
}

/* Gives the finished temporary file `tmp` its name `out` (removing `tmp`
 * whatever happened); `rc` is how writing went. */
static enum kiln_rc publish(const char *tmp, const char *out, enum kiln_rc rc, char *written,
                            struct kiln_err *err)
{
    /* link() never replaces: an existing archive is not overwritten. */
    if (rc == KILN_OK && link(tmp, out) != 0)
        rc = errno == EEXIST ? kiln_fail(err, KILN_E_USAGE,
                                         "%s already exists: remove it or choose another name "
                                         "with -o",
                                         out)
                             : kiln_fail_errno(err, KILN_E_IO, "linking %s to %s", tmp, out);
    unlink(tmp);
    if (rc == KILN_OK) {
        sync_parent(out);
        snprintf(written, PATH_MAX, "%s", out);
    }
    return rc;
}

/* Writes the run's files, ARCHIVE.json and MANIFEST (signed with a key)
 * into `fd`, the temporary file `tmp`; `files` is what was verified. */
static enum kiln_rc write_archive(const struct runarchive_write_opts *o, const char *run_dir,
                                  const struct manifest *files, struct writer *w, int fd,
                                  const char *tmp, struct kiln_err *err)
{
    enum kiln_rc rc = start_archive(w, fd, err);
    for (size_t i = 0; rc == KILN_OK && i < files->n; i++)
        rc = put_file(w, run_dir, &files->e[i], err);
    if (rc == KILN_OK)
        rc = put_archive_json(w, run_dir, o->command_line, err);
    if (rc == KILN_OK)
        rc = put_manifest(w, o->sign_key, err);
    return finish_archive(w, fd, tmp, rc, err);
}

enum kiln_rc runarchive_write(const struct runarchive_write_opts *o, char *written,
                              struct kiln_err *err)
{
    struct runrec rr;
    enum kiln_rc rc = runrec_open(o->run_dir, &rr, err);
    if (rc != KILN_OK)
        return rc;
    /* The record must be intact before it is sealed: nothing tolerated. */
    if ((rc = runrec_manifest_check(&rr, (size_t)-1, NULL, err)) != KILN_OK) {
        kiln_err_prefix(err, "not archiving %s", rr.dir);
        return rc;
    }
    struct writer w;
    memset(&w, 0, sizeof(w));
    char out[PATH_MAX];
    if ((rc = name_archive(rr.dir, o->out_path, &w, out, err)) != KILN_OK)
        return rc;
    struct manifest files;
    if ((rc = list_run_files(rr.dir, &files, err)) != KILN_OK)
        return rc;
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", out);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        manifest_free(&files);
        return kiln_fail_errno(err, KILN_E_IO, "creating %s", tmp);
    }
    rc = write_archive(o, rr.dir, &files, &w, fd, tmp, err);
    rc = publish(tmp, out, rc, written, err);
    manifest_free(&files);
    manifest_free(&w.m);
    return rc;
}

/* -------------------------------------------------------------- reading */

/* Decompresses the zstd stream into `tfd`, at most `bound` bytes (what the
 * survey found the tar to hold, with its end blocks and padding). */
static enum kiln_rc decompress(struct archive *a, int tfd, uint64_t bound, struct kiln_err *err)
{
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    if (r != ARCHIVE_OK)
        return kiln_fail(err, KILN_E_REJECTED, "not a readable archive: %s",
                         archive_error_string(a) ? archive_error_string(a) : "empty");
    if (archive_filter_count(a) < 2 || archive_filter_code(a, 0) != ARCHIVE_FILTER_ZSTD)
        return kiln_fail(err, KILN_E_REJECTED,
                         "not a zstd-compressed archive (kiln archives are .tar.zst)");
    static char buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        la_ssize_t n = archive_read_data(a, buf, sizeof(buf));
        if (n == 0)
            break;
        if (n < 0)
            return kiln_fail(err, KILN_E_REJECTED,
                             "the archive is truncated or corrupt after %llu bytes of tar: %s",
                             (unsigned long long)total,
                             archive_error_string(a) ? archive_error_string(a) : "zstd error");
        total += (uint64_t)n;
        if (total > bound)
            return kiln_fail(err, KILN_E_REJECTED,
                             "the archive's stream goes on past the end of its tar (%llu bytes "
                             "with padding): not a kiln archive",
                             (unsigned long long)bound);
        const char *p = buf;
        for (size_t left = (size_t)n; left > 0;) {
            ssize_t wn = write(tfd, p, left);
            if (wn < 0 && errno == EINTR)
                continue;
            if (wn < 0)
                return kiln_fail_errno(err, KILN_E_IO, "writing the unpacked archive");
            p += wn;
            left -= (size_t)wn;
        }
    }
    if (lseek(tfd, 0, SEEK_SET) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "rewinding the unpacked archive");
    return KILN_OK;
}

static enum kiln_rc check_signature(const struct runarchive *ar, const char *allowed,
                                    struct runarchive *out, struct kiln_err *err)
{
    char mpath[PATH_MAX + 16], spath[PATH_MAX + 16], who[1024];
    snprintf(mpath, sizeof(mpath), "%s/%s", ar->run, MANIFEST_NAME);
    snprintf(spath, sizeof(spath), "%s/%s", ar->run, SIG_NAME);
    struct stat st;
    if (lstat(spath, &st) != 0 || !S_ISREG(st.st_mode))
        return kiln_fail(err, KILN_E_REJECTED,
                         "the archive has no MANIFEST.sig, but --allowed-signers asks for a "
                         "signature: archive with --sign KEY");
    if (st.st_size > (off_t)SIG_MAX_BYTES)
        return kiln_fail(err, KILN_E_REJECTED, "MANIFEST.sig is larger than %u bytes",
                         SIG_MAX_BYTES);
    int status = -1;
    char *find[] = {"ssh-keygen", "-Y", "find-principals", "-s",
                    spath,        "-f", (char *)allowed,   NULL};
    enum kiln_rc rc = run_tool(find, NULL, who, sizeof(who), &status, err);
    if (rc != KILN_OK)
        return rc;
    who[strcspn(who, "\r\n")] = '\0';
    if (status != 0 || !who[0])
        return kiln_fail(err, KILN_E_REJECTED,
                         "MANIFEST.sig was not made by any key in %s (ssh-keygen -Y "
                         "find-principals: %s)",
                         allowed, who[0] ? who : "no principal");
    char out_text[1024];
    char *verify[] = {"ssh-keygen",
                      "-Y",
                      "verify",
                      "-f",
                      (char *)allowed,
                      "-I",
                      who,
                      "-n",
                      RUNARCHIVE_SIG_NAMESPACE,
                      "-s",
                      spath,
                      NULL};
    rc = run_tool(verify, mpath, out_text, sizeof(out_text), &status, err);
    if (rc != KILN_OK)
        return rc;
    if (status != 0) {
        out_text[strcspn(out_text, "\r\n")] = '\0';
        return kiln_fail(err, KILN_E_REJECTED,
                         "the signature does not match MANIFEST (ssh-keygen -Y verify: %s)",
                         out_text);
    }
    out->signed_ok = true;
    snprintf(out->signer, sizeof(out->signer), "%s", who);
    return KILN_OK;
}

/* Where the archive comes from; read twice (survey, then extraction). */
struct source {
    int fd; /* -1: data/len */
    const void *data;
    size_t len;
};

/* A fresh reader of `src`: the tar format (the survey) or the raw stream. */
static struct archive *reader_open(const struct source *src, bool tar, struct kiln_err *err)
{
    struct archive *a = archive_read_new();
    if (!a || archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
        (tar ? archive_read_support_format_tar(a) : archive_read_support_format_raw(a)) !=
            ARCHIVE_OK) {
        if (a)
            archive_read_free(a);
        kiln_fail(err, KILN_E_UNSUPPORTED, "libarchive without zstd support");
        return NULL;
    }
    int r;
    if (src->fd < 0) {
        r = archive_read_open_memory(a, src->data, src->len);
    } else if (lseek(src->fd, 0, SEEK_SET) != 0) {
        archive_read_free(a);
        kiln_fail_errno(err, KILN_E_USAGE, "the archive must be a regular file (read twice)");
        return NULL;
    } else {
        r = archive_read_open_fd(a, src->fd, 1 << 16);
    }
    if (r != ARCHIVE_OK) {
        kiln_fail(err, KILN_E_REJECTED, "not a readable archive: %s",
                  archive_error_string(a) ? archive_error_string(a) : "?");
        archive_read_free(a);
        return NULL;
    }
    return a;
}

/* Bytes free to this user in the filesystem of `dir`; UINT64_MAX unknown. */
static uint64_t free_bytes(const char *dir)
{
    struct statvfs vs;
    if (statvfs(dir, &vs) != 0)
        return UINT64_MAX;
    return (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
}

/* One tar entry as its header declares it. */
struct declared {
    char *name;
    uint64_t size;
    bool dir;
};

/* Bytes of tar entries MANIFEST does not account for (an extra file, one
 * grown) let through to the full check, which names them: changed, extra,
 * renamed. Past that, the survey refuses at the entry. */
#define UNDECLARED_MAX (1u << 20)

struct survey {
    struct declared *e;
    size_t n, cap;
    char *manifest; /* TOP/MANIFEST's text */
    size_t manifest_len;
    uint64_t tar_bytes; /* headers, data and padding as declared, with the end blocks */
};

static void survey_free(struct survey *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->e[i].name);
    free(s->e);
    free(s->manifest);
    memset(s, 0, sizeof(*s));
}

static enum kiln_rc survey_entry(struct archive *a, struct archive_entry *ae, struct survey *s,
                                 const struct runarchive_limits *lim, uint64_t room,
                                 const char *root, struct kiln_err *err)
{
    const char *name = archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "";
    int64_t sz = archive_entry_size_is_set(ae) ? archive_entry_size(ae) : 0;
    uint64_t size = sz > 0 ? (uint64_t)sz : 0;
    if (s->n >= lim->max_files)
        return kiln_fail(err, KILN_E_LIMIT, "the archive holds more than %zu entries",
                         lim->max_files);
    if (size > lim->max_file_bytes)
        return kiln_fail(err, KILN_E_LIMIT,
                         "tar entry \"%.255s\" declares %llu bytes, more than "
                         "%zu",
                         name, (unsigned long long)size, lim->max_file_bytes);
    s->tar_bytes += 512 + (size + 511) / 512 * 512;
    /* The stream lands twice: unpacked into a temporary file, then its
     * files into the directory. Said before a byte of it is written. */
    if (s->tar_bytes > lim->max_tar_bytes || (room != UINT64_MAX && s->tar_bytes > room / 2))
        return kiln_fail(
            err, KILN_E_LIMIT,
            "tar entry \"%.255s\" (%llu bytes) brings the archive to %llu bytes of "
            "tar, more than %s (%llu bytes): free space in %s (or set TMPDIR), or "
            "not a kiln archive",
            name, (unsigned long long)size, (unsigned long long)s->tar_bytes,
            s->tar_bytes > lim->max_tar_bytes ? "kiln's limit" : "half of the free space",
            (unsigned long long)(s->tar_bytes > lim->max_tar_bytes ? lim->max_tar_bytes : room / 2),
            root);
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct declared *grown = realloc(s->e, cap * sizeof(*grown));
        if (!grown)
            return kiln_fail(err, KILN_E_NOMEM, "archive: out of memory");
        s->e = grown;
        s->cap = cap;
    }
    s->e[s->n] = (struct declared){strdup(name), size, archive_entry_filetype(ae) == AE_IFDIR};
    if (!s->e[s->n].name)
        return kiln_fail(err, KILN_E_NOMEM, "archive: out of memory");
    s->n++;
    const char *slash = strchr(name, '/');
    if (!slash || strcmp(slash + 1, MANIFEST_NAME) != 0 || s->manifest)
        return archive_read_data_skip(a) == ARCHIVE_OK
                   ? KILN_OK
                   : kiln_fail(err, KILN_E_REJECTED, "the archive is truncated or corrupt: %s",
                               archive_error_string(a) ? archive_error_string(a) : "?");
    if (size > MANIFEST_MAX_BYTES)
        return kiln_fail(err, KILN_E_LIMIT, "%s is larger than %u bytes", name, MANIFEST_MAX_BYTES);
    s->manifest = malloc(size + 1);
    if (!s->manifest)
        return kiln_fail(err, KILN_E_NOMEM, "archive: out of memory");
    la_ssize_t got = archive_read_data(a, s->manifest, size);
    if (got != (la_ssize_t)size)
        return kiln_fail(err, KILN_E_REJECTED, "%s is truncated", name);
    s->manifest_len = size;
    return KILN_OK;
}

/* Pass one, nothing written: the tar's headers as declared, each bounded by
 * kiln's limits and the free space as it comes, then every entry's size
 * against what the archive's MANIFEST declares for it. A zstd stream of
 * zeros (an empty tar followed by gigabytes) stops here at once. */
static enum kiln_rc survey_archive(const struct source *src, const struct runarchive_limits *lim,
                                   const char *root, struct survey *s, struct kiln_err *err)
{
    memset(s, 0, sizeof(*s));
    struct archive *a = reader_open(src, true, err);
    if (!a)
        return err->rc;
    uint64_t room = free_bytes(root);
    enum kiln_rc rc = KILN_OK;
    struct archive_entry *ae;
    int r;
    while (rc == KILN_OK && (r = archive_read_next_header(a, &ae)) == ARCHIVE_OK)
        rc = survey_entry(a, ae, s, lim, room, root, err);
    if (rc == KILN_OK && r != ARCHIVE_EOF)
        rc = kiln_fail(err, KILN_E_REJECTED, "not a readable archive: %s",
                       archive_error_string(a) ? archive_error_string(a) : "?");
    archive_read_free(a);
    s->tar_bytes += 1024; /* the two end blocks */
    if (rc == KILN_OK && !s->manifest)
        rc = kiln_fail(err, KILN_E_REJECTED, "the archive has no MANIFEST: not a kiln archive");
    struct manifest m;
    memset(&m, 0, sizeof(m));
    if (rc == KILN_OK)
        rc = manifest_parse(s->manifest, s->manifest_len, &m, err);
    uint64_t undeclared = 0;
    for (size_t i = 0; rc == KILN_OK && i < s->n; i++) {
        const char *slash = strchr(s->e[i].name, '/');
        const char *rel = slash ? slash + 1 : "";
        if (!strcmp(rel, MANIFEST_NAME) || !strcmp(rel, SIG_NAME) || !rel[0] || s->e[i].dir)
            continue;
        const struct manifest_entry *me = manifest_find(&m, rel);
        uint64_t over = me && me->size >= s->e[i].size ? 0 : s->e[i].size - (me ? me->size : 0);
        undeclared += over;
        if (undeclared > UNDECLARED_MAX)
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "tar entry \"%.255s\" declares %llu bytes, but MANIFEST %s: the "
                           "archive was changed after it was sealed (not extracted)",
                           s->e[i].name, (unsigned long long)s->e[i].size,
                           me ? "declares fewer" : "does not list it");
    }
    manifest_free(&m);
    return rc;
}

static enum kiln_rc make_root(const char *parent, char *out, size_t cap, struct kiln_err *err)
{
    if (!parent)
        return fs_make_tempdir("archive", out, cap, err);
    if (snprintf(out, cap, "%s/kiln-archive-XXXXXX", parent) >= (int)cap)
        return kiln_fail(err, KILN_E_USAGE, "temporary path too long: %s", parent);
    if (!mkdtemp(out))
        return kiln_fail_errno(err, KILN_E_IO, "creating a directory in %s", parent);
    return KILN_OK;
}

/* How many bytes of tar the archive may unpack to, from a survey of it
 * that writes nothing. */
static enum kiln_rc survey_bound(const struct source *src, const struct runarchive_limits *lim,
                                 const char *root, uint64_t *bound, struct kiln_err *err)
{
    struct survey sv;
    enum kiln_rc rc = survey_archive(src, lim, root, &sv, err);
    /* Room for the tar's end: a tar writer pads to its record size. */
    *bound = sv.tar_bytes + 20 * 512;
    survey_free(&sv);
    return rc;
}

/* Patterns for any depth up to MANIFEST's: top/x, top/x/y, ... */
static enum kiln_rc depth_patterns(char *pats[MAX_DEPTH], size_t *np, struct kiln_err *err)
{
    *np = 0;
    for (size_t d = 2; d <= 18 && *np < MAX_DEPTH; d++) {
        pats[*np] = malloc(2 * d);
        if (!pats[*np])
            return kiln_fail(err, KILN_E_NOMEM, "archive: out of memory");
        for (size_t k = 0; k < d; k++)
            memcpy(pats[*np] + 2 * k, k + 1 < d ? "*/" : "*", k + 1 < d ? 2 : 2);
        (*np)++;
    }
    return KILN_OK;
}

/* Unpacks the tar in `tfd` into the directory `dfd`, within kiln's limits
 * and `bound`. */
static enum kiln_rc ingest_tar(int tfd, int dfd, const struct runarchive_limits *lim,
                               uint64_t bound, struct tar_names *names, struct kiln_err *err)
{
    char *pats[MAX_DEPTH];
    size_t np = 0;
    enum kiln_rc rc = depth_patterns(pats, &np, err);
    struct tar_rules rules = {.patterns = (const char *const *)pats,
                              .n_patterns = np,
                              .max_file_bytes = lim->max_file_bytes,
                              .max_total_bytes =
                                  (size_t)(bound < lim->max_tar_bytes ? bound : lim->max_tar_bytes),
                              .max_files = lim->max_files};
    if (rc == KILN_OK)
        rc = tar_ingest_to_dir(tfd, &rules, dfd, names, err);
    for (size_t i = 0; i < np; i++)
        free(pats[i]);
    return rc;
}

/* Pass two: the zstd stream into a temporary file in `root` (at most
 * `bound` bytes), then its files into `root`. */
static enum kiln_rc unpack(const struct source *src, const struct runarchive_limits *lim,
                           uint64_t bound, const char *root, struct tar_names *names,
                           struct kiln_err *err)
{
    struct archive *a = reader_open(src, false, err);
    if (!a)
        return err->rc;
    enum kiln_rc rc = KILN_OK;
    int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int tfd = dfd < 0 ? -1 : openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (dfd < 0 || tfd < 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "a temporary file in %s", root);
    if (rc == KILN_OK)
        rc = decompress(a, tfd, bound, err);
    archive_read_free(a);
    if (rc == KILN_OK)
        rc = ingest_tar(tfd, dfd, lim, bound, names, err);
    if (tfd >= 0)
        close(tfd);
    if (dfd >= 0)
        close(dfd);
    return rc;
}

/* One top directory holds everything: that is the run. */
static enum kiln_rc locate_run(const struct tar_names *names, struct runarchive *out,
                               struct kiln_err *err)
{
    if (names->n == 0)
        return kiln_fail(err, KILN_E_REJECTED, "the archive holds no files");
    size_t tl = strcspn(names->names[0], "/");
    for (size_t i = 0; i < names->n; i++)
        if (strncmp(names->names[i], names->names[0], tl + 1))
            return kiln_fail(err, KILN_E_REJECTED,
                             "tar entry \"%s\" is outside %.*s/: a kiln archive holds one run",
                             names->names[i], (int)tl, names->names[0]);
    out->nfiles = names->n;
    if (snprintf(out->run, sizeof(out->run), "%s/%.*s", out->root, (int)tl, names->names[0]) >=
        (int)sizeof(out->run))
        return kiln_fail(err, KILN_E_USAGE, "temporary path too long");
    return KILN_OK;
}

/* Every file as MANIFEST says, and ARCHIVE.json there. */
static enum kiln_rc check_run(const struct runarchive *out, struct kiln_err *err)
{
    struct manifest_diff diff;
    enum kiln_rc rc = manifest_check_dir(out->run, NULL, NULL, NULL, &diff, err);
    if (rc == KILN_E_NOTFOUND) {
        kiln_err_clear(err);
        return kiln_fail(err, KILN_E_REJECTED, "the archive has no MANIFEST: not a kiln archive");
    }
    size_t n = strlen(out->run);
    if (rc != KILN_OK && !strncmp(err->msg, out->run, n)) {
        /* Named as the archive holds it (run-007), not by the temporary
         * directory it was unpacked into, which is gone when this is read. */
        char msg[KILN_ERR_MSG_MAX];
        const char *name = strrchr(out->run, '/');
        snprintf(msg, sizeof(msg), "%s%s", name ? name + 1 : out->run, err->msg + n);
        kiln_err_clear(err);
        return kiln_fail(err, rc, "%s", msg);
    }
    if (rc != KILN_OK)
        return rc;
    char p[PATH_MAX + 16];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", out->run, ARCHIVE_JSON);
    if (lstat(p, &st) != 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "the archive has no ARCHIVE.json: not a kiln archive");
    return KILN_OK;
}

static enum kiln_rc open_common(const struct source *src, const char *tmp_parent,
                                const struct runarchive_limits *lim, const char *allowed,
                                struct runarchive *out, struct kiln_err *err)
{
    if (!lim)
        lim = &RUNARCHIVE_LIMITS_DEFAULT;
    enum kiln_rc rc = make_root(tmp_parent, out->root, sizeof(out->root), err);
    if (rc != KILN_OK)
        return rc;
    uint64_t bound = 0;
    struct tar_names names;
    memset(&names, 0, sizeof(names));
    rc = survey_bound(src, lim, out->root, &bound, err);
    if (rc == KILN_OK)
        rc = unpack(src, lim, bound, out->root, &names, err);
    if (rc == KILN_OK)
        rc = locate_run(&names, out, err);
    tar_names_free(&names);
    if (rc == KILN_OK)
        rc = check_run(out, err);
    if (rc == KILN_OK && allowed)
        rc = check_signature(out, allowed, out, err);
    if (rc != KILN_OK)
        runarchive_close(out);
    return rc;
}

enum kiln_rc runarchive_open(const char *path, const char *tmp_parent,
                             const struct runarchive_limits *lim, const char *allowed_signers,
                             struct runarchive *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "opening %s",
                               path);
    struct source src = {fd, NULL, 0};
    enum kiln_rc rc = open_common(&src, tmp_parent, lim, allowed_signers, out, err);
    close(fd);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "%s", path);
    return rc;
}

enum kiln_rc runarchive_open_mem(const void *data, size_t len, const char *tmp_parent,
                                 const struct runarchive_limits *lim, struct runarchive *out,
                                 struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    struct source src = {-1, data, len};
    return open_common(&src, tmp_parent, lim, NULL, out, err);
}

void runarchive_close(struct runarchive *a)
{
    if (a->root[0]) {
        struct kiln_err ign;
        (void)(fs_remove_tree(a->root, &ign) == KILN_OK);
    }
    memset(a, 0, sizeof(*a));
}
