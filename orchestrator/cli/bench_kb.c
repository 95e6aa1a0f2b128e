/* bench_kb.c - `kiln bench kernelbench` (bench_kb.h): the problems, the
 * record bench.json, and each step as a kiln process of its own. */
#include "bench_kb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "beneath.h"
#include "clock.h"
#include "fsutil.h"
#include "json_strict.h"

#define BENCH_JSON_MAX (16u << 20)
#define BENCH_VERSION  1

static const char *const STATE_NAMES[] = {
    [BENCH_NEW] = "new",           [BENCH_REFUSED] = "refused",   [BENCH_SKIPPED] = "skipped",
    [BENCH_IMPORTED] = "imported", [BENCH_RUNNING] = "running",   [BENCH_FAILED] = "failed",
    [BENCH_RAN] = "ran",           [BENCH_ARCHIVED] = "archived",
};

const char *bench_state_name(enum bench_state s)
{
    return s <= BENCH_ARCHIVED ? STATE_NAMES[s] : "?";
}

static bool state_parse(const char *s, enum bench_state *out)
{
    for (int i = BENCH_NEW; i <= BENCH_ARCHIVED; i++)
        if (!strcmp(s, STATE_NAMES[i])) {
            *out = (enum bench_state)i;
            return true;
        }
    return false;
}

/* ---- the problems of a level ---- */

static bool stem_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

/* "19_ReLU.py" -> "19_ReLU"; anything outside [A-Za-z0-9_.-] becomes '_'. */
static void make_stem(const char *file, char out[BENCH_STEM_MAX])
{
    size_t n = strlen(file) - 3, k = 0;
    for (size_t i = 0; i < n && k + 1 < BENCH_STEM_MAX - 8; i++)
        out[k++] = stem_char(file[i]) ? file[i] : '_';
    out[k] = '\0';
}

static bool stem_taken(const struct bench *b, const char *stem)
{
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->p[i].stem, stem))
            return true;
    return false;
}

static long leading_number(const char *file)
{
    if (file[0] < '0' || file[0] > '9')
        return -1;
    char *end = NULL;
    long v = strtol(file, &end, 10);
    return v >= 0 && v < 1000000000 ? v : -1;
}

/* By problem number (KernelBench's order: 1, 2, ..., 100), unnumbered last. */
static int by_number(const void *x, const void *y)
{
    const struct bench_problem *a = x, *b = y;
    if (a->number != b->number) {
        if (a->number < 0 || b->number < 0)
            return a->number < 0 ? 1 : -1;
        return a->number < b->number ? -1 : 1;
    }
    return strcmp(a->file, b->file);
}

static bool problem_file(const char *dir, const char *name)
{
    size_t l = strlen(name);
    char path[PATH_MAX];
    struct stat st;
    return l > 3 && l < 256 && !strcmp(name + l - 3, ".py") && name[0] != '.' &&
           snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path) &&
           lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

enum kiln_rc bench_list_level(struct bench *b, struct kiln_err *err)
{
    DIR *d = opendir(b->level);
    if (!d)
        return kiln_fail_errno(err, KILN_E_NOTFOUND, "%s", b->level);
    b->p = calloc(BENCH_MAX_PROBLEMS, sizeof(*b->p));
    enum kiln_rc rc = b->p ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "listing %s", b->level);
    struct dirent *e;
    while (rc == KILN_OK && (e = readdir(d)) != NULL) {
        if (!problem_file(b->level, e->d_name))
            continue;
        if (b->n >= BENCH_MAX_PROBLEMS) {
            rc = kiln_fail(err, KILN_E_LIMIT, "%s: more than %d problems", b->level,
                           BENCH_MAX_PROBLEMS);
            break;
        }
        struct bench_problem *p = &b->p[b->n];
        snprintf(p->file, sizeof(p->file), "%s", e->d_name);
        p->number = leading_number(p->file);
        b->n++;
    }
    closedir(d);
    if (rc == KILN_OK && b->n == 0)
        rc = kiln_fail(err, KILN_E_NOTFOUND, "%s holds no *.py problem files", b->level);
    if (rc != KILN_OK)
        return rc;
    qsort(b->p, b->n, sizeof(*b->p), by_number);
    for (size_t i = 0; i < b->n; i++) {
        char stem[BENCH_STEM_MAX];
        make_stem(b->p[i].file, stem);
        size_t n = b->n;
        b->n = i; /* only the stems before i are taken */
        snprintf(b->p[i].stem, sizeof(b->p[i].stem), "%s", stem);
        for (int k = 2; stem_taken(b, b->p[i].stem); k++)
            snprintf(b->p[i].stem, sizeof(b->p[i].stem), "%s_%d", stem, k);
        b->n = n;
    }
    return KILN_OK;
}

/* ---- bench.json ---- */

static json_t *problem_json(const struct bench_problem *p)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "file", p->file, "stem", p->stem,
                     "number", (json_int_t)p->number, "workload", p->workload, "state",
                     bench_state_name(p->state), "reason", p->reason, "run", p->run);
}

static json_t *args_json(const struct bench *b)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < b->nargs; i++)
        json_array_append_new(a, json_string(b->args[i]));
    return a;
}

/* bench.json, atomically, after every step. */
static enum kiln_rc save(const struct bench *b, struct kiln_err *err)
{
    json_t *probs = json_array();
    for (size_t i = 0; probs && i < b->n; i++)
        if (json_array_append_new(probs, problem_json(&b->p[i])) != 0) {
            json_decref(probs);
            probs = NULL;
        }
    json_t *doc = probs ? json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "version",
                                    BENCH_VERSION, "level", b->level, "backend", b->backend,
                                    "proposer", b->proposer, "replay", b->replay, "workloads",
                                    b->workloads, "args", args_json(b), "problems", probs)
                        : NULL;
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "writing %s/bench.json", b->out);
    enum kiln_rc rc = beneath_write_atomic(b->out, "bench.json", text, strlen(text), err);
    free(text);
    return rc;
}

/* A string member of at most cap - 1 bytes into dst. */
static bool take(const json_t *o, const char *key, char *dst, size_t cap)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) >= cap)
        return false;
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return true;
}

static bool plain(const char *s, bool empty_ok)
{
    if (!*s)
        return empty_ok;
    for (; *s; s++)
        if (!stem_char(*s))
            return false;
    return true;
}

/* One recorded problem, checked: names in kiln's charsets, the run where
 * the bench puts it, the file one of the level's. */
static enum kiln_rc read_problem(const struct bench *b, const json_t *o, size_t i,
                                 struct bench_problem *p, struct kiln_err *err)
{
    static const char *const keys[] = {"file",  "stem",   "number", "workload",
                                       "state", "reason", "run",    NULL};
    char state[16], want[sizeof(p->run)];
    const json_t *num = json_object_get(o, "number");
    memset(p, 0, sizeof(*p));
    if (json_strict_keys(o, "bench.json: problems[]", keys, keys, err) != KILN_OK)
        return err->rc;
    bool ok = json_is_object(o) && take(o, "file", p->file, sizeof(p->file)) &&
              take(o, "stem", p->stem, sizeof(p->stem)) &&
              take(o, "workload", p->workload, sizeof(p->workload)) &&
              take(o, "state", state, sizeof(state)) && state_parse(state, &p->state) &&
              take(o, "reason", p->reason, sizeof(p->reason)) &&
              take(o, "run", p->run, sizeof(p->run)) && json_is_integer(num) &&
              problem_file(b->level, p->file) && plain(p->stem, false) && plain(p->workload, true);
    p->number = ok ? (long)json_integer_value(num) : 0;
    snprintf(want, sizeof(want), "runs/%s/run-001", p->stem);
    if (ok && p->run[0] && strcmp(p->run, want) != 0)
        ok = false;
    if (!ok)
        return kiln_fail(err, KILN_E_PARSE,
                         "%s/bench.json: problems[%zu] is not what kiln bench writes (a name "
                         "outside [A-Za-z0-9_.-], an unknown state, or a file no longer in %s)",
                         b->out, i, b->level);
    return KILN_OK;
}

/* The recorded settings must be this invocation's. */
static enum kiln_rc same_settings(const struct bench *b, const json_t *doc, struct kiln_err *err)
{
    static const char *const keys[] = {"level", "backend", "proposer", "replay", "workloads", NULL};
    const char *now[] = {b->level, b->backend, b->proposer, b->replay, b->workloads};
    for (size_t k = 0; keys[k]; k++) {
        const char *was = json_string_value(json_object_get(doc, keys[k]));
        if (!was || strcmp(was, now[k]) != 0)
            return kiln_fail(err, KILN_E_USAGE,
                             "%s was started with another %s (%s, now %s): run the command that "
                             "started it, or give another -o DIR",
                             b->out, keys[k], was ? was : "?", now[k]);
    }
    const json_t *args = json_object_get(doc, "args");
    bool same = json_is_array(args) && json_array_size(args) == b->nargs;
    for (size_t i = 0; same && i < b->nargs; i++)
        same = json_is_string(json_array_get(args, i)) &&
               !strcmp(json_string_value(json_array_get(args, i)), b->args[i]);
    if (!same)
        return kiln_fail(err, KILN_E_USAGE,
                         "%s was started with other kiln optimize options: run the command "
                         "that started it (bench.json \"args\"), or give another -o DIR",
                         b->out);
    return KILN_OK;
}

enum kiln_rc bench_record_parse(struct bench *b, const char *text, size_t len, struct kiln_err *err)
{
    static const char *const keys[] = {"version",   "level", "backend",  "proposer", "replay",
                                       "workloads", "args",  "problems", NULL};
    const struct json_strict_rules rules = {.max_bytes = BENCH_JSON_MAX};
    json_t *doc = NULL;
    enum kiln_rc rc = json_strict_parse("bench.json", text, len, &rules, &doc, err);
    if (rc == KILN_OK)
        rc = json_strict_keys(doc, "bench.json", keys, keys, err);
    if (rc == KILN_OK && json_integer_value(json_object_get(doc, "version")) != BENCH_VERSION)
        rc = kiln_fail(err, KILN_E_UNSUPPORTED,
                       "%s/bench.json has another format version: use the kiln that wrote it",
                       b->out);
    if (rc == KILN_OK)
        rc = same_settings(b, doc, err);
    const json_t *probs = json_object_get(doc, "problems");
    if (rc == KILN_OK && (!json_is_array(probs) || json_array_size(probs) > BENCH_MAX_PROBLEMS))
        rc = kiln_fail(err, KILN_E_PARSE, "%s/bench.json: problems", b->out);
    if (rc == KILN_OK && !(b->p = calloc(BENCH_MAX_PROBLEMS, sizeof(*b->p))))
        rc = kiln_fail(err, KILN_E_NOMEM, "reading %s/bench.json", b->out);
    for (size_t i = 0; rc == KILN_OK && i < json_array_size(probs); i++, b->n++)
        rc = read_problem(b, json_array_get(probs, i), i, &b->p[i], err);
    json_decref(doc);
    return rc;
}

enum kiln_rc bench_open(struct bench *b, struct kiln_err *err)
{
    char *text = NULL;
    size_t len = 0;
    enum kiln_rc rc = fs_mkdirs(b->out, err);
    if (rc == KILN_OK)
        rc = beneath_read_file(b->out, "bench.json", BENCH_JSON_MAX, &text, &len, err);
    if (rc == KILN_OK) {
        rc = bench_record_parse(b, text, len, err);
    } else if (rc == KILN_E_NOTFOUND) {
        kiln_err_clear(err);
        rc = bench_list_level(b, err);
        if (rc == KILN_OK)
            rc = save(b, err);
    }
    free(text);
    return rc;
}

void bench_free(struct bench *b)
{
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

/* ---- steps: kiln processes ---- */

/* Runs kiln-full with `argv` (argv[0] "kiln"), stdout into out_path and
 * stderr into err_path (the same file when equal), stdin /dev/null, in a
 * process group of its own, so a Ctrl-C reaches it once: forwarded by the
 * bench. It gets SIGTERM when the bench dies (kiln optimize then stops
 * where kiln resume continues). Returns its exit status, 128 + N when
 * killed by signal N, -1 when it could not start (err says why). */
static int run_kiln(const char *out_path, const char *err_path, char *const argv[],
                    const volatile sig_atomic_t *stop, struct kiln_err *err)
{
    char self[PATH_MAX];
    if (fs_self_path(true, self, sizeof(self) - sizeof("/kiln-full"), err) != KILN_OK)
        return -1;
    strcat(self, "/kiln-full");
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        kiln_fail_errno(err, KILN_E_IO, "fork");
        return -1;
    }
    if (pid == 0) {
        /* Its own group, so a Ctrl-C reaches it once (forwarded), and its
         * stop signals at their default even when the bench ignores them:
         * kiln then installs its own handler (cli_catch_stop). */
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
            _exit(127);
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int er = strcmp(out_path, err_path)
                     ? open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                     : out;
        if (in < 0 || out < 0 || er < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(er, 2) < 0)
            _exit(127);
        execv(self, argv);
        dprintf(2, "kiln bench: cannot run %s: %s\n", self, strerror(errno));
        _exit(127);
    }
    bool forwarded = false;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            kiln_fail_errno(err, KILN_E_CHILD, "waiting for %s %s", argv[0], argv[1]);
            return -1;
        }
        if (stop && *stop && !forwarded) {
            kill(pid, SIGINT); /* once: a second would take the default action */
            forwarded = true;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The last non-empty line of a log, printable, for a reason. */
static void last_line(const char *path, char *out, size_t cap)
{
    char buf[4096];
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    size_t k = 0;
    for (; *line && k + 1 < cap; line++)
        out[k++] = (*line >= 0x20 && *line < 0x7f) ? *line : '?';
    out[k] = '\0';
}

/* OUT/<dir><name><tail>: dir is "" or ends in '/'. */
static void path_in(const struct bench *b, char *out, size_t cap, const char *dir, const char *name,
                    const char *tail)
{
    snprintf(out, cap, "%s/%s%s%s", b->out, dir, name, tail);
}

/* kiln's exit status for a stop (SIGINT, SIGTERM): 130, 143. */
static bool stopped(int status, const struct bench_run_opts *o)
{
    return status == 130 || status == 143 || (o->stop && *o->stop);
}

/* Whether dir/rel is there (beneath dir, no link followed): reading at
 * most one byte says it without reading it. */
static bool exists_beneath(const char *dir, const char *rel)
{
    char *text = NULL;
    size_t len = 0;
    struct kiln_err e = KILN_ERR_INIT;
    enum kiln_rc rc = beneath_read_file(dir, rel, 1, &text, &len, &e);
    free(text);
    return rc != KILN_E_NOTFOUND;
}

/* The latest run of an earlier bench (--replay) that recorded model
 * replies for `stem`: REPLAY/runs/<stem>/run-NNN; false when none. */
static bool replay_run(const struct bench *b, const char *stem, char *out, size_t cap)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/runs/%s", b->replay, stem);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    long best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char rel[320];
        char *end = NULL;
        long n = strncmp(e->d_name, "run-", 4) == 0 ? strtol(e->d_name + 4, &end, 10) : -1;
        if (n < 1 || n > 99999 || !end || *end)
            continue;
        snprintf(rel, sizeof(rel), "%s/candidates/001/exchange.json", e->d_name);
        if (n > best && exists_beneath(dir, rel))
            best = n;
    }
    closedir(d);
    if (best < 0)
        return false;
    snprintf(out, cap, "%s/run-%03ld", dir, best);
    return true;
}

/* Until the importer lists the cpu backend itself (issue #37's importer
 * half), a cpu bench adds it to the imported workload.json: the workload's
 * scripts already run on the CPU; only the listing is missing. */
static enum kiln_rc allow_cpu(const char *wl_dir, struct kiln_err *err)
{
    char *text = NULL;
    size_t len = 0;
    enum kiln_rc rc = beneath_read_file(wl_dir, "workload.json", 256u << 10, &text, &len, err);
    const struct json_strict_rules rules = {.max_bytes = 256u << 10};
    json_t *doc = NULL;
    if (rc == KILN_OK)
        rc = json_strict_parse("workload.json", text, len, &rules, &doc, err);
    free(text);
    json_t *backends = doc ? json_object_get(doc, "backends") : NULL;
    bool has = false;
    for (size_t i = 0; json_is_array(backends) && i < json_array_size(backends); i++)
        has = has || !strcmp(json_string_value(json_array_get(backends, i)) ?: "", "cpu");
    char *out = NULL;
    if (rc == KILN_OK && json_is_array(backends) && !has) {
        json_array_append_new(backends, json_string("cpu"));
        out = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        rc = out ? beneath_write_atomic(wl_dir, "workload.json", out, strlen(out), err)
                 : kiln_fail(err, KILN_E_NOMEM, "%s/workload.json", wl_dir);
    }
    free(out);
    json_decref(doc);
    return rc;
}

/* The workload's name: `key` of the JSON document at json_path (the
 * import's --json row: "workload"; a workload.json: "name"). */
static void imported_name(const char *json_path, const char *key, struct bench_problem *p)
{
    char *text = NULL;
    size_t len = 0;
    struct kiln_err e = KILN_ERR_INIT;
    const struct json_strict_rules rules = {.max_bytes = 1u << 20};
    json_t *doc = NULL;
    if (fs_read_file(json_path, 1u << 20, &text, &len, &e) == KILN_OK &&
        json_strict_parse("kiln import --json", text, len, &rules, &doc, &e) == KILN_OK)
        take(doc, key, p->workload, sizeof(p->workload));
    if (!plain(p->workload, false))
        snprintf(p->workload, sizeof(p->workload), "%s", "kb");
    json_decref(doc);
    free(text);
}

/* import: workloads/<stem>, or refused with the importer's reason. */
static enum kiln_rc step_import(struct bench *b, struct bench_problem *p,
                                const struct bench_run_opts *o, struct kiln_err *err)
{
    char file[PATH_MAX], wl[PATH_MAX], out[PATH_MAX], log[PATH_MAX];
    snprintf(file, sizeof(file), "%s/%s", b->level, p->file);
    path_in(b, wl, sizeof(wl), "workloads/", p->stem, "");
    path_in(b, out, sizeof(out), "logs/", p->stem, "-import.json");
    path_in(b, log, sizeof(log), "logs/", p->stem, "-import.log");
    enum kiln_rc rc = fs_remove_tree(wl, err); /* a half-written one from a stop */
    if (rc != KILN_OK)
        return rc;
    char *argv[] = {"kiln", "import", "kernelbench", file, "-o", wl, "--no-check", "--json", NULL};
    int st = run_kiln(out, log, argv, o->stop, err);
    if (st < 0)
        return err->rc;
    if (stopped(st, o))
        return kiln_fail(err, KILN_E_CANCELLED, "stopped while importing %s", p->file);
    if (st != 0) {
        p->state = BENCH_REFUSED;
        last_line(log, p->reason, sizeof(p->reason));
        return KILN_OK;
    }
    imported_name(out, "workload", p);
    if (!strcmp(b->backend, "cpu") && (rc = allow_cpu(wl, err)) != KILN_OK)
        return rc;
    p->state = BENCH_IMPORTED;
    return KILN_OK;
}

/* --workloads: the problem's workload from an earlier import
 * (DIR/<stem>/), copied file by file (beneath DIR, no link followed), its
 * name read from its workload.json; refused when there is none. */
static enum kiln_rc step_copy(struct bench *b, struct bench_problem *p, struct kiln_err *err)
{
    static const char *const files[] = {"workload.json", "inputs.py", "reference.py", "kernel.cu",
                                        "kernel.c"};
    char src[PATH_MAX], dst[PATH_MAX];
    snprintf(src, sizeof(src), "%s/%s", b->workloads, p->stem);
    path_in(b, dst, sizeof(dst), "workloads/", p->stem, "");
    enum kiln_rc rc = fs_remove_tree(dst, err);
    if (rc == KILN_OK)
        rc = fs_mkdirs(dst, err);
    for (size_t i = 0; rc == KILN_OK && i < sizeof(files) / sizeof(files[0]); i++) {
        char *text = NULL;
        size_t len = 0;
        rc = beneath_read_file(src, files[i], 1u << 20, &text, &len, err);
        if (rc == KILN_OK) {
            rc = beneath_write_atomic(dst, files[i], text, len, err);
        } else if (rc == KILN_E_NOTFOUND && i > 0) { /* only workload.json is required */
            rc = KILN_OK;
            kiln_err_clear(err);
        }
        free(text);
    }
    if (rc == KILN_E_NOTFOUND || rc == KILN_E_REJECTED) {
        p->state = BENCH_REFUSED;
        snprintf(p->reason, sizeof(p->reason), "--workloads: %s", err->msg);
        kiln_err_clear(err);
        return KILN_OK;
    }
    char json[PATH_MAX + 32];
    snprintf(json, sizeof(json), "%s/workload.json", dst);
    if (rc == KILN_OK)
        imported_name(json, "name", p);
    if (rc == KILN_OK && !strcmp(b->backend, "cpu"))
        rc = allow_cpu(dst, err);
    if (rc == KILN_OK)
        p->state = BENCH_IMPORTED;
    return rc;
}

/* The kiln optimize (or resume) command line of problem p. */
static size_t run_argv(const struct bench *b, const struct bench_problem *p, bool resume,
                       char bufs[4][PATH_MAX], char *argv[BENCH_MAX_ARGS + 16])
{
    size_t n = 0;
    argv[n++] = "kiln";
    path_in(b, bufs[0], PATH_MAX, "", p->run, "");
    path_in(b, bufs[1], PATH_MAX, "workloads/", p->stem, "");
    path_in(b, bufs[2], PATH_MAX, "runs/", p->stem, "");
    if (resume) {
        argv[n++] = "resume";
        argv[n++] = bufs[0];
        for (size_t i = 0; i + 1 < b->nargs; i++)
            if (!strcmp(b->args[i], "--base-url")) { /* the key goes only where told */
                argv[n++] = b->args[i];
                argv[n++] = b->args[i + 1];
            }
    } else {
        char *head[] = {"optimize",         bufs[1],      "--results",        bufs[2], "--backend",
                        (char *)b->backend, "--proposer", (char *)b->proposer};
        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
            argv[n++] = head[i];
        if (replay_run(b, p->stem, bufs[3], PATH_MAX)) {
            argv[n++] = "--replay";
            argv[n++] = bufs[3];
        }
        for (size_t i = 0; i < b->nargs; i++)
            argv[n++] = b->args[i];
    }
    argv[n] = NULL;
    return n;
}

/* run: kiln optimize, or kiln resume of a run a stop cut short. */
static enum kiln_rc step_run(struct bench *b, struct bench_problem *p,
                             const struct bench_run_opts *o, struct kiln_err *err)
{
    char bufs[4][PATH_MAX], *argv[BENCH_MAX_ARGS + 16], log[PATH_MAX];
    snprintf(p->run, sizeof(p->run), "runs/%s/run-001", p->stem);
    bool resume = beneath_check_dir(b->out, p->run, err) == KILN_OK;
    kiln_err_clear(err);
    p->state = BENCH_RUNNING;
    enum kiln_rc rc = save(b, err);
    if (rc != KILN_OK)
        return rc;
    run_argv(b, p, resume, bufs, argv);
    path_in(b, log, sizeof(log), "logs/", p->stem, resume ? "-resume.log" : "-run.log");
    int st = run_kiln(log, log, argv, o->stop, err);
    if (st < 0)
        return err->rc;
    if (stopped(st, o))
        return kiln_fail(err, KILN_E_CANCELLED, "stopped while running %s (%s continues it)",
                         p->file, p->run);
    char rel[sizeof(p->run) + 16];
    snprintf(rel, sizeof(rel), "%s/summary.json", p->run);
    if (st == 0 && exists_beneath(b->out, rel)) {
        p->state = BENCH_RAN;
    } else {
        p->state = BENCH_FAILED;
        last_line(log, p->reason, sizeof(p->reason));
    }
    return KILN_OK;
}

/* archive: archives/<stem>.tar.zst; a failure is noted, not fatal. */
static enum kiln_rc step_archive(struct bench *b, struct bench_problem *p,
                                 const struct bench_run_opts *o, struct kiln_err *err)
{
    char run[PATH_MAX], dst[PATH_MAX], log[PATH_MAX];
    path_in(b, run, sizeof(run), "", p->run, "");
    path_in(b, dst, sizeof(dst), "archives/", p->stem, ".tar.zst");
    path_in(b, log, sizeof(log), "logs/", p->stem, "-archive.log");
    char *argv[] = {"kiln", "archive", run, "-o", dst, NULL};
    unlink(dst); /* kiln archive does not overwrite; a stop may have left one */
    int st = run_kiln(log, log, argv, o->stop, err);
    if (st < 0)
        return err->rc;
    if (stopped(st, o))
        return kiln_fail(err, KILN_E_CANCELLED, "stopped while archiving %s", p->run);
    if (st == 0)
        p->state = BENCH_ARCHIVED;
    else
        last_line(log, p->reason, sizeof(p->reason));
    return KILN_OK;
}

/* Takes problem p one step further; *again when there is a next step. */
static enum kiln_rc step(struct bench *b, struct bench_problem *p, const struct bench_run_opts *o,
                         bool *again, struct kiln_err *err)
{
    char ignore[PATH_MAX];
    *again = false;
    switch (p->state) {
    case BENCH_NEW:
        if (!strcmp(b->proposer, "replay") && !replay_run(b, p->stem, ignore, sizeof(ignore))) {
            p->state = BENCH_SKIPPED;
            snprintf(p->reason, sizeof(p->reason), "no recorded model replies for it in %s",
                     b->replay);
            return KILN_OK;
        }
        *again = true;
        return b->workloads[0] ? step_copy(b, p, err) : step_import(b, p, o, err);
    case BENCH_IMPORTED:
    case BENCH_RUNNING:
        *again = true;
        return step_run(b, p, o, err);
    case BENCH_RAN:
        return o->archive ? step_archive(b, p, o, err) : KILN_OK;
    case BENCH_REFUSED:
    case BENCH_SKIPPED:
    case BENCH_FAILED:
    case BENCH_ARCHIVED:
        break;
    }
    return KILN_OK;
}

static void progress(const struct bench_run_opts *o, size_t i, size_t n,
                     const struct bench_problem *p)
{
    if (!o->quiet)
        fprintf(stderr, "kiln bench: [%zu/%zu] %s: %s%s%s\n", i + 1, n, p->file,
                bench_state_name(p->state), p->reason[0] ? ": " : "", p->reason);
}

enum kiln_rc bench_run(struct bench *b, const struct bench_run_opts *o, bool *complete,
                       struct kiln_err *err)
{
    char dir[PATH_MAX];
    double t0 = clock_mono_s();
    *complete = false;
    path_in(b, dir, sizeof(dir), "", "logs", "");
    enum kiln_rc rc = fs_mkdirs(dir, err);
    path_in(b, dir, sizeof(dir), "", "archives", "");
    if (rc == KILN_OK)
        rc = fs_mkdirs(dir, err);
    for (size_t i = 0; rc == KILN_OK && i < b->n; i++) {
        struct bench_problem *p = &b->p[i];
        bool again = true, worked = false;
        while (rc == KILN_OK && again) {
            if (o->stop && *o->stop)
                return kiln_fail(err, KILN_E_CANCELLED, "stopped before %s", p->file);
            if (o->time_budget_s > 0 && clock_mono_s() - t0 > o->time_budget_s)
                return KILN_OK; /* *complete stays false: the same command goes on */
            enum bench_state before = p->state;
            rc = step(b, p, o, &again, err);
            worked = worked || p->state != before;
            if (p->state != before) {
                enum kiln_rc src = save(b, err);
                rc = rc == KILN_OK ? src : rc;
            }
        }
        if (worked)
            progress(o, i, b->n, p);
    }
    *complete = rc == KILN_OK;
    return rc;
}
