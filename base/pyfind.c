#include "pyfind.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "proc.h"

/* Finds numpy without importing it: the import alone takes about 0.1 s
 * (most of a script sandbox's start before the memo below), finding the
 * package a few ms. The version comes from its metadata directory's name
 * (numpy-1.24.2.dist-info or .egg-info). A numpy that is present but
 * broken fails inside the sandbox with its own error; kiln doctor's
 * script-sandbox check does the real import. */
static const char probe[] =
    "import sys, os, importlib.util\n"
    "s = importlib.util.find_spec('numpy')\n"
    "if s is None or not s.origin: sys.exit(1)\n"
    "d = os.path.dirname(os.path.dirname(s.origin))\n"
    "v = [n[6:].split('.dist-info')[0].split('.egg-info')[0] for n in sorted(os.listdir(d))\n"
    "     if n.startswith('numpy-') and n.endswith(('.dist-info', '.egg-info'))]\n"
    "print(sys.executable)\n"
    "print(sys.prefix)\n"
    "print(sys.base_prefix)\n"
    "print(sys.version.split()[0])\n"
    "print(v[-1] if v else 'unknown')\n";

/* Splits the next line of *s into dst; returns 0 when a non-empty line was there. */
static int take_line(char **s, char *dst, size_t cap)
{
    size_t len = strcspn(*s, "\n");
    if (len == 0 || len >= cap)
        return -1;
    memcpy(dst, *s, len);
    dst[len] = '\0';
    *s += len + ((*s)[len] == '\n');
    return 0;
}

static int try_python(const char *path, struct pyfind *out)
{
    if (access(path, X_OK) != 0)
        return -1;
    char buf[8192];
    int st = -1;
    struct kiln_err e;
    kiln_err_clear(&e);
    char *argv[] = {(char *)path, "-I", "-c", (char *)probe, NULL};
    if (proc_capture(argv, buf, sizeof(buf), 20000, &st, &e) != KILN_OK || st != 0)
        return -1;
    char *s = buf;
    snprintf(out->path, sizeof(out->path), "%s", path);
    if (take_line(&s, out->executable, sizeof(out->executable)) ||
        take_line(&s, out->prefix, sizeof(out->prefix)) ||
        take_line(&s, out->base_prefix, sizeof(out->base_prefix)) ||
        take_line(&s, out->python_version, sizeof(out->python_version)) ||
        take_line(&s, out->numpy_version, sizeof(out->numpy_version)))
        return -1;
    return 0;
}

/* The candidates, in the order they are tried: $KILN_PYTHON alone when
 * set, else every python3 on PATH, then /usr/bin/python3. */
#define PYFIND_MAX_CANDS 64

struct cands {
    char path[PYFIND_MAX_CANDS][PATH_MAX];
    struct stat st[PYFIND_MAX_CANDS]; /* st_ino 0: absent */
    size_t n;
    int explicit_env;
};

static void list_cands(struct cands *c)
{
    c->n = 0;
    const char *env = getenv("KILN_PYTHON");
    c->explicit_env = env && *env;
    if (c->explicit_env) {
        snprintf(c->path[c->n++], PATH_MAX, "%s", env);
    } else {
        const char *path = getenv("PATH");
        char dirs[4096];
        snprintf(dirs, sizeof(dirs), "%s", path ? path : "");
        char *save = NULL;
        for (char *d = strtok_r(dirs, ":", &save); d && c->n < PYFIND_MAX_CANDS - 1;
             d = strtok_r(NULL, ":", &save))
            snprintf(c->path[c->n++], PATH_MAX, "%s/python3", d);
        snprintf(c->path[c->n++], PATH_MAX, "/usr/bin/python3");
    }
    for (size_t i = 0; i < c->n; i++)
        if (stat(c->path[i], &c->st[i]) < 0)
            memset(&c->st[i], 0, sizeof(c->st[i]));
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec &&
           a->st_mode == b->st_mode;
}

/* Probing runs python (about 0.1 s) and every script sandbox needs its
 * answer: remembered per process, keyed on what the search would see:
 * the same candidate paths, each the same file (device, inode, size,
 * mtime, ctime, mode) or still absent. Any change probes again. A memo,
 * not state: a hit returns exactly what probing would. Failures are not
 * remembered. */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cands *memo_cands;
static struct pyfind memo_found;

static int memo_hit(const struct cands *c, struct pyfind *out)
{
    if (!memo_cands || memo_cands->n != c->n || memo_cands->explicit_env != c->explicit_env)
        return 0;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(memo_cands->path[i], c->path[i]) || !same_file(&memo_cands->st[i], &c->st[i]))
            return 0;
    *out = memo_found;
    return 1;
}

/* The memo across processes: `kiln sandbox --policy script` is a process
 * per sandbox, and the probe (python's start; a pyenv shim's is 0.1-0.3 s)
 * was most of it (issue 20). One record, pyfind.memo, in a directory only
 * this user can write: $XDG_RUNTIME_DIR/kiln, or /run/kiln for root;
 * without one, every process probes. The key is the in-process memo's
 * (each candidate's path and identity) plus the working directory and the
 * whole environment, which a wrapper script such as a pyenv shim may
 * consult; what a wrapper reads from other files is not in the key, so a
 * record is used for at most PYFIND_DISK_TTL_S. The found interpreter must
 * still be the same file. Only this user can have written the record (the
 * directory and the file are checked: owned by us, writable by nobody
 * else, a regular file, no symlink), the same trust as $KILN_PYTHON;
 * anything unexpected is a miss, and failing to write it is not an error. */
#define PYFIND_DISK_TTL_S 600
#define PYFIND_DISK_MAGIC "kilnpy1"

struct disk_memo {
    char magic[8];
    uint64_t key;
    uint64_t exe_ident; /* identity of found.executable */
    struct pyfind found;
};

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t ident_hash(uint64_t h, const struct stat *st)
{
    const long long v[] = {(long long)st->st_dev,          (long long)st->st_ino,
                           (long long)st->st_size,         (long long)st->st_mtim.tv_sec,
                           (long long)st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
                           (long long)st->st_ctim.tv_nsec, (long long)st->st_mode};
    return fnv(h, v, sizeof(v));
}

extern char **environ;

static uint64_t disk_key(const struct cands *c)
{
    uint64_t h = fnv(0xcbf29ce484222325ULL, &c->explicit_env, sizeof(c->explicit_env));
    for (size_t i = 0; i < c->n; i++)
        h = ident_hash(fnv(h, c->path[i], strlen(c->path[i]) + 1), &c->st[i]);
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)))
        h = fnv(h, cwd, strlen(cwd) + 1);
    for (char **e = environ; e && *e; e++)
        h = fnv(h, *e, strlen(*e) + 1);
    return h;
}

static int strings_ok(const struct pyfind *f)
{
    return memchr(f->path, 0, sizeof(f->path)) && memchr(f->executable, 0, sizeof(f->executable)) &&
           memchr(f->prefix, 0, sizeof(f->prefix)) &&
           memchr(f->base_prefix, 0, sizeof(f->base_prefix)) &&
           memchr(f->python_version, 0, sizeof(f->python_version)) &&
           memchr(f->numpy_version, 0, sizeof(f->numpy_version));
}

static int disk_hit(uint64_t key, struct pyfind *out)
{
    size_t len = 0;
    struct disk_memo *m = (struct disk_memo *)fs_runtime_read("pyfind.memo", sizeof(*m), sizeof(*m),
                                                              PYFIND_DISK_TTL_S, &len);
    struct stat exe;
    int ok = m && !memcmp(m->magic, PYFIND_DISK_MAGIC, sizeof(m->magic)) && m->key == key &&
             strings_ok(&m->found) && stat(m->found.executable, &exe) == 0 &&
             ident_hash(0, &exe) == m->exe_ident;
    if (ok)
        *out = m->found;
    free(m);
    return ok;
}

static void disk_store(uint64_t key, const struct pyfind *found)
{
    struct stat exe;
    struct disk_memo *m = calloc(1, sizeof(*m));
    if (m && stat(found->executable, &exe) == 0) {
        memcpy(m->magic, PYFIND_DISK_MAGIC, sizeof(m->magic));
        m->key = key;
        m->exe_ident = ident_hash(0, &exe);
        m->found = *found;
        struct iovec part = {.iov_base = m, .iov_len = sizeof(*m)};
        fs_runtime_write("pyfind.memo", &part, 1);
    }
    free(m);
}

/* Makes (c, found) the in-process memo; takes c. */
static void remember(struct cands *c, const struct pyfind *found)
{
    pthread_mutex_lock(&memo_lock);
    free(memo_cands);
    memo_cands = c;
    memo_found = *found;
    pthread_mutex_unlock(&memo_lock);
}

enum kiln_rc pyfind_numpy(struct pyfind *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    struct cands *c = malloc(sizeof(*c));
    if (!c)
        return kiln_fail(err, KILN_E_NOMEM, "out of memory");
    list_cands(c);
    pthread_mutex_lock(&memo_lock);
    int hit = memo_hit(c, out);
    pthread_mutex_unlock(&memo_lock);
    if (hit) {
        free(c);
        return KILN_OK;
    }
    uint64_t key = disk_key(c);
    if (disk_hit(key, out)) {
        remember(c, out);
        return KILN_OK;
    }
    int found = 0;
    for (size_t i = 0; i < c->n && !found; i++)
        found = c->st[i].st_ino && try_python(c->path[i], out) == 0;
    if (!found) {
        memset(out, 0, sizeof(*out));
        enum kiln_rc rc =
            c->explicit_env
                ? kiln_fail(err, KILN_E_NOTFOUND,
                            "KILN_PYTHON=%s does not run or cannot import numpy", c->path[0])
                : kiln_fail(err, KILN_E_NOTFOUND,
                            "no python3 that imports numpy (tried KILN_PYTHON, PATH, "
                            "/usr/bin/python3)");
        free(c);
        return rc;
    }
    disk_store(key, out);
    remember(c, out);
    return KILN_OK;
}
