#include "inputs.h"
#include "plog.h"

#include "forkpool.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare.h"
#include "gpupeak.h"
#include "fsutil.h"
#include "npy.h"
#include "sbexec.h"
#include "digest.h"
#include "text.h"

#define NPY_HEADER_SLACK 65536u /* bytes an .npy may add to its data */

bool inputs_set_scored(const struct workload *wl, const struct input_set *s)
{
    if (s->wcase->kind != WL_CASE_PERFORMANCE)
        return false;
    if (!s->weak)
        return true;
    for (size_t i = 0; i < wl->naccept_weak; i++)
        if (strcmp(wl->accept_weak[i], s->wcase->name) == 0)
            return true;
    return false;
}

uint64_t inputs_seed(uint64_t base, const char *case_name, int set)
{
    /* FNV-1a over the name, then splitmix64 with the base and set mixed in:
     * stable across hosts and versions, which reproducible runs need. */
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = case_name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    uint64_t z = h ^ base ^ ((uint64_t)set * 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z & ((1ULL << 53) - 1); /* exact in JSON doubles and numpy seeds */
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* case.json's "scalars": every scalar argument's value for the case as
 * the kernel receives it (an expression evaluated, a float32 rounded to
 * float32), so inputs.py and reference.py read it instead of repeating
 * workload.json's `value`. */
static enum kiln_rc case_scalars(const struct workload *wl, const struct wl_case *c, json_t **out,
                                 struct kiln_err *err)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < wl->nargs; i++) {
        const struct wl_arg *a = &wl->args[i];
        if (a->kind != WL_ARG_SCALAR)
            continue;
        json_t *v;
        if (a->type == WL_SCALAR_FLOAT32) {
            v = json_real((double)(float)a->fvalue);
        } else if (a->type == WL_SCALAR_FLOAT64) {
            v = json_real(a->fvalue);
        } else {
            int64_t iv = 0;
            enum kiln_rc rc = workload_case_int_scalar(wl, c, (int)i, &iv, err);
            if (rc != KILN_OK) {
                json_decref(o);
                return rc;
            }
            v = json_integer(iv);
        }
        json_object_set_new(o, a->name, v);
    }
    *out = o;
    return o ? KILN_OK : kiln_fail(err, KILN_E_NOMEM, "writing case.json");
}

static enum kiln_rc write_case_json(const struct workload *wl, const struct wl_case *c,
                                    uint64_t seed, const char *path, struct kiln_err *err)
{
    json_t *scalars = NULL;
    enum kiln_rc src = case_scalars(wl, c, &scalars, err);
    if (src != KILN_OK)
        return src;
    json_t *sizes = json_object();
    for (size_t i = 0; i < wl->nsizes; i++)
        json_object_set_new(sizes, wl->size_names[i], json_integer(c->sizes[i]));
    json_t *doc = json_pack("{s:s, s:I, s:o, s:o}", "case", c->name, "seed", (json_int_t)seed,
                            "sizes", sizes, "scalars", scalars);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!text)
        return kiln_fail(err, KILN_E_NOMEM, "writing case.json");
    enum kiln_rc rc = fs_write_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

/* The scripts that run: the workload's inputs.py, and its reference.py or
 * the given reference. Their digests are part of the cache key. */
struct scripts {
    const char *data[2];
    size_t len[2];
    char sha256[2][SHA256_HEX_LEN + 1];
};

static const char *const SCRIPT_NAMES[2] = {"inputs.py", "reference.py"};

static void scripts_of(const struct inputs_request *req, struct scripts *sc)
{
    const struct workload *wl = req->wl;
    sc->data[0] = wl->files[WL_FILE_INPUTS].data;
    sc->len[0] = wl->files[WL_FILE_INPUTS].len;
    sc->data[1] = req->reference ? req->reference->data : wl->files[WL_FILE_REFERENCE].data;
    sc->len[1] = req->reference ? req->reference->len : wl->files[WL_FILE_REFERENCE].len;
    for (int i = 0; i < 2; i++)
        sha256_hex_of(sc->data[i] ? sc->data[i] : "", sc->data[i] ? sc->len[i] : 0, sc->sha256[i]);
}

/* sha256 of a regular file (never through a final symlink); "" when it
 * cannot be read. Streams: cached tensors can be large. */
static void file_sha256(const char *path, char hex[SHA256_HEX_LEN + 1])
{
    hex[0] = '\0';
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return;
    }
    struct sha256_ctx c;
    sha256_init(&c);
    static const size_t CHUNK = 1u << 20;
    char *buf = malloc(CHUNK);
    ssize_t r = -1;
    while (buf && ((r = read(fd, buf, CHUNK)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0)
            sha256_update(&c, buf, (size_t)r);
    free(buf);
    close(fd);
    if (r != 0) {
        sha256_discard(&c);
        return;
    }
    uint8_t d[SHA256_DIGEST_LEN];
    sha256_final(&c, d);
    sha256_hex(d, hex);
}

/* Writes the scripts, exactly the bytes that were hashed, every time: a
 * script already in a reused cache directory may have been planted there. */
static enum kiln_rc write_scripts(const struct scripts *sc, const char *dir, struct kiln_err *err)
{
    enum kiln_rc rc = fs_mkdirs(dir, err);
    for (size_t i = 0; rc == KILN_OK && i < 2; i++) {
        char path[PATH_MAX];
        rc = fs_join(path, sizeof(path), dir, SCRIPT_NAMES[i], err);
        if (rc == KILN_OK)
            rc = fs_write_atomic(path, sc->data[i] ? sc->data[i] : "", sc->len[i], err);
    }
    return rc;
}

/* Right before a script runs: it is still the bytes the cache key names. */
static enum kiln_rc check_script(const struct scripts *sc, int i, const char *path,
                                 struct kiln_err *err)
{
    char got[SHA256_HEX_LEN + 1];
    file_sha256(path, got);
    if (strcmp(got, sc->sha256[i]) != 0)
        return kiln_fail(err, KILN_E_REJECTED,
                         "%s does not hold the %s kiln wrote (sha256 %.16s, expected %.16s): "
                         "something else writes into the cache directory; use a private --work "
                         "directory",
                         path, SCRIPT_NAMES[i], got[0] ? got : "unreadable", sc->sha256[i]);
    return KILN_OK;
}

/* The cache directory's name: a hash over the workload's content hash, the
 * digests of the scripts that run (the given reference's when there is
 * one) and the given input cases' digest. */
static void cache_key(const struct inputs_request *req, const struct scripts *sc, char key[17])
{
    const char *h = req->wl->hash[0] ? req->wl->hash : "nohash";
    struct sha256_ctx c;
    sha256_init(&c);
    const char *parts[] = {"kiln-inputs-cache-v2", h, sc->sha256[0], sc->sha256[1],
                           req->given ? req->given->sha256 : "-"};
    for (size_t i = 0; i < 5; i++)
        sha256_update(&c, parts[i], strlen(parts[i]) + 1);
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 1];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    snprintf(key, 17, "%.16s", hex);
}

/* Rules for a script's /out: exactly the tensors of the given roles. */
struct expected {
    const char *patterns[WL_MAX_ARGS];
    char names[WL_MAX_ARGS][80];
    int args[WL_MAX_ARGS];
    size_t n;
    struct tar_rules rules;
};

static void expect_tensors(const struct workload *wl, const struct wl_shape *shapes, bool outputs,
                           struct expected *e)
{
    memset(e, 0, sizeof(*e));
    size_t total = 0, biggest = 0;
    for (size_t t = 0; t < wl->ntensors; t++) {
        const struct wl_arg *a = &wl->args[shapes[t].arg];
        bool is_out = a->role != WL_ROLE_IN, is_in = a->role != WL_ROLE_OUT;
        if (outputs ? !is_out : !is_in)
            continue;
        snprintf(e->names[e->n], sizeof(e->names[e->n]), "%s.npy", a->name);
        e->patterns[e->n] = e->names[e->n];
        e->args[e->n] = (int)t;
        size_t b = (size_t)shapes[t].nbytes + NPY_HEADER_SLACK;
        total += b;
        biggest = b > biggest ? b : biggest;
        e->n++;
    }
    e->rules.patterns = e->patterns;
    e->rules.n_patterns = e->n;
    e->rules.max_file_bytes = biggest;
    e->rules.max_total_bytes = total;
    e->rules.max_files = e->n;
}

/* What the .npy header at `path` declares ("got float64 (3,)"), for a
 * file the signature's size cap refused unread; "" when the header does
 * not parse (its error is the message then). */
static void npy_got(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    enum { HEAD = NPY_MAX_HEADER + 16 };
    char *buf = malloc(HEAD);
    ssize_t n = buf ? read(fd, buf, HEAD) : -1;
    close(fd);
    struct tensor meta = {0};
    size_t off = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (n > 0 && npy_header_parse(buf, (size_t)n, &meta, &off, &e) == KILN_OK) {
        char shape[160];
        tensor_shape_format(meta.ndim, meta.shape, shape, sizeof(shape));
        snprintf(out, cap, "got %s %s", tensor_dtype_name(meta.dtype), shape);
    }
    free(buf);
}

/* Every expected tensor is present and matches the signature. */
static enum kiln_rc check_tensors(const struct workload *wl, const struct wl_shape *shapes,
                                  const struct expected *e, const char *dir, const char *script,
                                  unsigned *weak, char *why, size_t why_len, struct kiln_err *err)
{
    for (size_t i = 0; i < e->n; i++) {
        const struct wl_shape *s = &shapes[e->args[i]];
        char path[PATH_MAX];
        enum kiln_rc rc = fs_join(path, sizeof(path), dir, e->names[i], err);
        if (rc != KILN_OK)
            return rc;
        if (!exists(path))
            return kiln_fail(err, KILN_E_REJECTED, "%s did not write %s", script, e->names[i]);
        /* Mapped, not read: a gigabyte input's shape check touches only its
         * header, and the weak check reads the reference in place. */
        struct npy_map m;
        rc = npy_map_file(path, (size_t)s->nbytes, &m, err);
        if (rc == KILN_E_LIMIT) {
            /* The cap is the signature's size, so a wider dtype or a bigger
             * shape lands here: say what the signature expects. */
            char shape[160], msg[KILN_ERR_MSG_MAX], got[200];
            tensor_shape_format(s->ndim, s->shape, shape, sizeof(shape));
            snprintf(msg, sizeof(msg), "%s", err->msg);
            kiln_err_clear(err);
            npy_got(path, got, sizeof(got));
            if (got[0]) /* what the file holds, then what was expected */
                rc = kiln_fail(err, KILN_E_LIMIT, "%s: %s, the signature says %s %s", e->names[i],
                               got, tensor_dtype_name(s->dtype), shape);
            else
                rc = kiln_fail(err, KILN_E_LIMIT, "%s (the signature says %s is %s %s)", msg,
                               e->names[i], tensor_dtype_name(s->dtype), shape);
        }
        if (rc == KILN_OK)
            rc = tensor_check_shape(&m.t, e->names[i], s->dtype, s->ndim, s->shape, err);
        if (rc == KILN_OK && weak) {
            const struct wl_arg *a = &wl->args[s->arg];
            struct compare_tol tol = workload_tolerance(wl, s->arg);
            char w[200] = "";
            unsigned bits = compare_weak_reference(&m.t, &tol, w, sizeof(w));
            /* Declared math: the tolerance must refuse the precision below it. */
            const char *lower = NULL;
            int lbits = wl->math_declared ? gpu_unit_guard_bits(wl->math, &lower) : 0;
            if (!bits && lbits)
                bits = compare_low_precision_passes(&m.t, &tol, lbits, lower, w, sizeof(w));
            if (bits && !*weak)
                snprintf(why, why_len, "%s: %s", a->name, w);
            *weak |= bits;
        }
        npy_unmap(&m);
        if (rc != KILN_OK) {
            kiln_err_prefix(err, "%s", script);
            return rc;
        }
    }
    return KILN_OK;
}

/* Copies the given inputs of set `gi` into in_dir. */
static enum kiln_rc copy_given(const struct inputs_request *req, size_t gi,
                               const struct wl_shape *shapes, const struct expected *ein,
                               const char *in_dir, struct kiln_err *err)
{
    enum kiln_rc rc = fs_mkdirs(in_dir, err);
    for (size_t i = 0; rc == KILN_OK && i < ein->n; i++) {
        char path[PATH_MAX], *data;
        size_t len;
        int arg = shapes[ein->args[i]].arg;
        if ((rc = fs_join(path, sizeof(path), in_dir, ein->names[i], err)) ||
            (rc = given_inputs_read(req->given, gi, arg, &data, &len, err)))
            break;
        rc = fs_write_atomic(path, data, len, err);
        free(data);
    }
    return rc;
}

/* The first lines of a set's `ok` marker: "sha256 HEX NAME" for case.json
 * and every tensor file, in a fixed order. `ok` holds them, then "weak N"
 * and the weak explanation; a reused set must still match them. *out is
 * heap text (free()); NULL when out of memory. */
static char *set_digests(const char *dir, const struct expected *ein, const struct expected *eout)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    const struct expected *groups[2] = {ein, eout};
    const char *sub[2] = {"in", "ref"};
    char path[PATH_MAX + 200], hex[SHA256_HEX_LEN + 1];
    snprintf(path, sizeof(path), "%s/case.json", dir);
    file_sha256(path, hex);
    fprintf(f, "sha256 %s case.json\n", hex[0] ? hex : "-");
    for (int g = 0; g < 2; g++)
        for (size_t i = 0; i < groups[g]->n; i++) {
            snprintf(path, sizeof(path), "%s/%s/%s", dir, sub[g], groups[g]->names[i]);
            file_sha256(path, hex);
            fprintf(f, "sha256 %s %s/%s\n", hex[0] ? hex : "-", sub[g], groups[g]->names[i]);
        }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* A cached set is reused only when its marker's digests match its files
 * now: a reused --work directory may have been written by someone else. */
static bool reuse_cached(const struct inputs_request *req, struct input_set *s, const char *ok,
                         const struct expected *ein, const struct expected *eout)
{
    char *text = NULL, *want = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    bool good = false;
    if (fs_read_file(ok, 64u << 10, &text, &len, &e) == KILN_OK &&
        (want = set_digests(s->dir, ein, eout)) != NULL) {
        size_t wl = strlen(want);
        int consumed = 0;
        if (len >= wl && memcmp(text, want, wl) == 0 && !strstr(want, "sha256 - ") &&
            sscanf(text + wl, "weak %u\n%n", &s->weak, &consumed) == 1 && consumed > 0) {
            text_copy_utf8(s->weak_why, sizeof(s->weak_why), text + wl + consumed);
            good = true;
        }
    }
    if (!good && req->verbose)
        plog_printf(req->log,
                    "kiln: cached inputs of case %s set %d do not match the digests recorded with "
                    "them: computing them again\n",
                    s->wcase->name, s->set);
    free(text);
    free(want);
    return good;
}

/* One set being built: its tensors' shapes, the files expected in in/ and
 * ref/, and the paths the steps read and write. */
struct set_build {
    const struct inputs_request *req;
    const struct scripts *sc;
    struct input_set *s;
    struct wl_shape shapes[WL_MAX_ARGS];
    struct expected ein, eout;
    char ok[PATH_MAX], in_dir[PATH_MAX], ref_dir[PATH_MAX], case_json[PATH_MAX];
    char inputs_py[PATH_MAX], reference_py[PATH_MAX];
};

/* The rate at which a reference is assumed to work through cost.flops:
 * about a fifth of netlib BLAS's float64 rate on one idle core of the
 * development host (4096^3 in 51 s), so a loaded 2-core host still makes it. */
#define SCRIPT_FLOPS_PER_S 5e8

static long long online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* What one script may use (workloads/README.md, "Script limits"). Memory:
 * 4x the bytes it reads and writes (numpy's copies, float64 widening, the
 * files in /out, charged to the same cgroup), or the workload's
 * scripts.memory_per_byte times the case's tensor bytes (at most 3/4 of the
 * host's memory), plus python and torch themselves. Wall time: 120 s, 40 ms per MiB, and for a
 * reference the case's cost.flops at SCRIPT_FLOPS_PER_S (a float64 matrix product of 4096^3 takes a
 * minute on one idle core): a reference's time scales with its case, so a check that passes on an
 * idle host passes on a loaded one. CPU time: that wall time on every CPU, since RLIMIT_CPU counts
 * all of a process's threads and torch runs several. */
void inputs_script_limits(const struct workload *wl, const struct wl_case *c, long long io_bytes,
                          bool reference, long long timeout_ms, struct sandbox_limits *l)
{
    long long mem = 4 * io_bytes;
    if (reference && wl->script_memory_per_byte > 0 &&
        (long long)c->bytes <= LLONG_MAX / 2 / wl->script_memory_per_byte) {
        /* What a workload declares, up to 3/4 of this host's memory: a
         * stranger's workload.json cannot ask the cgroup for more. */
        long long want = (long long)c->bytes * wl->script_memory_per_byte;
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        long long cap = pages > 0 && page > 0 ? (long long)pages / 4 * 3 * page : want;
        want = want < cap ? want : cap;
        mem = mem > want ? mem : want;
    }
    l->memory_bytes = mem + WL_SCRIPT_MEMORY_BASE;
    if (timeout_ms <= 0) {
        double s = 120.0 + (double)io_bytes / (1 << 20) * 0.040;
        if (reference && c->cost_flops > 0)
            s += (double)c->cost_flops / SCRIPT_FLOPS_PER_S;
        timeout_ms = s > 86400.0 ? 86400000LL : (long long)(s * 1000.0);
    }
    l->timeout_ms = timeout_ms;
    l->cpu_s = (timeout_ms / 1000 + 1) * online_cpus();
}

static enum kiln_rc run_script(const struct inputs_request *req, const struct set_build *b,
                               bool reference, const char *what, const struct sandbox_input *in,
                               size_t n_in, char *const *argv, struct kiln_err *err)
{
    const struct expected *e = reference ? &b->eout : &b->ein;
    struct sbexec_step step = {
        .what = what, .rules = &e->rules, .out_dir = reference ? b->ref_dir : b->in_dir};
    step.spec.policy = "script";
    step.spec.image = "script";
    step.spec.inputs = in;
    step.spec.n_inputs = n_in;
    step.gpu = -1;
    step.spec.argv = argv;
    step.spec.stdin_fd = -1;
    long long io = (long long)e->rules.max_total_bytes;
    if (reference)
        io += (long long)b->ein.rules.max_total_bytes;
    inputs_script_limits(req->wl, b->s->wcase, io, reference, req->script_timeout_ms,
                         &step.spec.limits);
    /* /out must hold the tensors; the tar of them is barely larger. */
    step.spec.limits.out_bytes = (long long)e->rules.max_total_bytes + (1 << 20);
    step.spec.limits.tar_bytes = (long long)e->rules.max_total_bytes + (1 << 20);
    step.spec.limits.fsize_bytes = (long long)e->rules.max_file_bytes + (1 << 20);
    struct sbexec_result res;
    enum kiln_rc rc = sbexec_run(&step, &res, err);
    if (rc == KILN_OK && !res.exited_ok) {
        char d[900];
        sbexec_describe(&res, d, sizeof(d));
        /* A timeout, and a SIGKILL kiln did not send (a limit kiln enforces
         * is SANDBOX_LIMIT), are told apart: either can be the host's doing
         * (load, its OOM killer, an operator), not the script's. */
        enum kiln_rc why = res.sb.verdict == SANDBOX_TIMEOUT ? KILN_E_TIMEOUT
                           : res.sb.verdict == SANDBOX_SIGNALED && res.sb.signal == SIGKILL
                               ? KILN_E_KILLED
                               : KILN_E_CHILD;
        rc = kiln_fail(err, why, "%s failed: %s", what, d);
    }
    sbexec_result_free(&res);
    return rc;
}

static enum kiln_rc set_paths(struct set_build *b, struct kiln_err *err)
{
    const char *dir = b->s->dir;
    enum kiln_rc rc;
    if ((rc = fs_join(b->ok, sizeof(b->ok), dir, "ok", err)) ||
        (rc = fs_join(b->in_dir, sizeof(b->in_dir), dir, "in", err)) ||
        (rc = fs_join(b->ref_dir, sizeof(b->ref_dir), dir, "ref", err)) ||
        (rc = fs_join(b->case_json, sizeof(b->case_json), dir, "case.json", err)))
        return rc;
    return KILN_OK;
}

/* An incomplete or altered set is rebuilt from scratch. */
static enum kiln_rc start_afresh(struct set_build *b, struct kiln_err *err)
{
    struct input_set *s = b->s;
    s->weak = 0;
    s->weak_why[0] = '\0';
    enum kiln_rc rc;
    if ((rc = fs_remove_tree(s->dir, err)) || (rc = fs_mkdirs(s->dir, err)) ||
        (rc = write_case_json(b->req->wl, s->wcase, s->seed, b->case_json, err)))
        return rc;
    return KILN_OK;
}

static enum kiln_rc copy_given_inputs(const struct set_build *b, size_t gi, struct kiln_err *err)
{
    enum kiln_rc rc = copy_given(b->req, gi, b->shapes, &b->ein, b->in_dir, err);
    /* Checked when given; checked again as copied, like generated ones. */
    if (rc == KILN_OK)
        rc = check_tensors(b->req->wl, b->shapes, &b->ein, b->in_dir, "--input-cases", NULL, NULL,
                           0, err);
    return rc;
}

static enum kiln_rc generate_inputs(const struct set_build *b, struct kiln_err *err)
{
    const struct input_set *s = b->s;
    char what[160];
    snprintf(what, sizeof(what), "inputs.py (case %s, seed %llu)", s->wcase->name,
             (unsigned long long)s->seed);
    struct sandbox_input in1[] = {{b->inputs_py, "inputs.py"}, {b->case_json, "case.json"}};
    char *argv1[] = {"python3", "/in/inputs.py", "/in/case.json", "/out", NULL};
    enum kiln_rc rc = check_script(b->sc, 0, b->inputs_py, err);
    if (rc == KILN_OK)
        rc = run_script(b->req, b, false, what, in1, 2, argv1, err);
    if (rc == KILN_OK)
        rc = check_tensors(b->req->wl, b->shapes, &b->ein, b->in_dir, "inputs.py", NULL, NULL, 0,
                           err);
    return rc;
}

/* Runs the reference on the set's inputs into ref/; it sets the set's
 * weak flags. */
static enum kiln_rc compute_reference(struct set_build *b, struct kiln_err *err)
{
    const struct inputs_request *req = b->req;
    struct input_set *s = b->s;
    const char *ref_name = req->reference ? "the --reference script" : "reference.py";
    struct sandbox_input in2[2 + WL_MAX_ARGS];
    char paths[WL_MAX_ARGS][PATH_MAX];
    size_t n2 = 0;
    in2[n2++] = (struct sandbox_input){b->reference_py, "reference.py"};
    in2[n2++] = (struct sandbox_input){b->case_json, "case.json"};
    enum kiln_rc rc;
    for (size_t i = 0; i < b->ein.n; i++) {
        if ((rc = fs_join(paths[i], sizeof(paths[i]), b->in_dir, b->ein.names[i], err)))
            return rc;
        in2[n2++] = (struct sandbox_input){paths[i], b->ein.names[i]};
    }
    char what[160];
    snprintf(what, sizeof(what), "%s (case %s, seed %llu)", ref_name, s->wcase->name,
             (unsigned long long)s->seed);
    char *argv2[] = {"python3", "/in/reference.py", "/in/case.json", "/in", "/out", NULL};
    rc = check_script(b->sc, 1, b->reference_py, err);
    if (rc == KILN_OK)
        rc = run_script(req, b, true, what, in2, n2, argv2, err);
    if (rc == KILN_OK)
        rc = check_tensors(req->wl, b->shapes, &b->eout, b->ref_dir, ref_name, &s->weak,
                           s->weak_why, sizeof(s->weak_why), err);
    return rc;
}

/* The `ok` mark, written last: the set's digests, "weak N" and why. */
static enum kiln_rc write_mark(const struct set_build *b, struct kiln_err *err)
{
    const struct input_set *s = b->s;
    char *digests = set_digests(s->dir, &b->ein, &b->eout);
    if (!digests)
        return kiln_fail(err, KILN_E_NOMEM, "digests of case %s set %d", s->wcase->name, s->set);
    size_t dl = strlen(digests);
    char *mark = malloc(dl + 400);
    if (!mark) {
        free(digests);
        return kiln_fail(err, KILN_E_NOMEM, "digests of case %s set %d", s->wcase->name, s->set);
    }
    memcpy(mark, digests, dl);
    int n = snprintf(mark + dl, 400, "weak %u\n%s", s->weak, s->weak_why);
    free(digests);
    enum kiln_rc rc = fs_write_atomic(b->ok, mark, dl + ((size_t)n < 400 ? (size_t)n : 399), err);
    free(mark);
    return rc;
}

/* Builds one set: its inputs from inputs.py, or from given set `gi` when
 * the request has given inputs; then its reference. */
static enum kiln_rc prepare_set(const struct inputs_request *req, const struct scripts *sc,
                                const char *scripts, size_t gi, struct input_set *s,
                                struct kiln_err *err)
{
    struct set_build b = {.req = req, .sc = sc, .s = s};
    enum kiln_rc rc = workload_case_shapes(req->wl, s->wcase, b.shapes, err);
    if (rc != KILN_OK)
        return rc;
    expect_tensors(req->wl, b.shapes, false, &b.ein);
    expect_tensors(req->wl, b.shapes, true, &b.eout);
    if ((rc = set_paths(&b, err)))
        return rc;
    /* Cached: the weak flags the first computation recorded, once the
     * files are checked against their digests. */
    if (exists(b.ok) && reuse_cached(req, s, b.ok, &b.ein, &b.eout))
        return KILN_OK;
    if ((rc = start_afresh(&b, err)) ||
        (rc = fs_join(b.inputs_py, sizeof(b.inputs_py), scripts, "inputs.py", err)) ||
        (rc = fs_join(b.reference_py, sizeof(b.reference_py), scripts, "reference.py", err)))
        return rc;
    if (req->verbose)
        plog_printf(req->log, "kiln: %s for case %s set %d\n",
                    req->given ? "copying the given inputs and computing the reference"
                               : "generating inputs and reference",
                    s->wcase->name, s->set);
    rc = req->given ? copy_given_inputs(&b, gi, err) : generate_inputs(&b, err);
    if (rc == KILN_OK)
        rc = compute_reference(&b, err);
    if (rc == KILN_OK)
        rc = write_mark(&b, err);
    return rc;
}

/* A set's estimated peak memory while its scripts run: numpy's arrays (the
 * reference may widen them to float64) plus the files in /out. */
static enum kiln_rc set_cost(const struct workload *wl, const struct wl_case *c, long long *cost,
                             struct kiln_err *err)
{
    struct wl_shape shapes[WL_MAX_ARGS];
    enum kiln_rc rc = workload_case_shapes(wl, c, shapes, err);
    if (rc != KILN_OK)
        return rc;
    long long bytes = 0;
    for (size_t t = 0; t < wl->ntensors; t++)
        bytes += (long long)shapes[t].nbytes;
    /* The reference's float64 copies and intermediates, where declared. */
    long long per = wl->script_memory_per_byte > 3 ? wl->script_memory_per_byte : 3;
    *cost = per * bytes + (512ll << 20);
    return KILN_OK;
}

/* Sets generated at a time: the request's, else $KILN_INPUT_JOBS (1 ..
 * INPUTS_MAX_JOBS: a shared host's share, or 1 to compare with parallel
 * runs), else the CPUs, at most INPUTS_MAX_JOBS. */
static enum kiln_rc input_jobs(const struct inputs_request *req, int *jobs, struct kiln_err *err)
{
    *jobs = req->jobs;
    if (*jobs > 0)
        return KILN_OK;
    *jobs = forkpool_default_jobs(INPUTS_MAX_JOBS);
    const char *env = getenv("KILN_INPUT_JOBS");
    if (!env || !*env)
        return KILN_OK;
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno || *end || v < 1 || v > INPUTS_MAX_JOBS)
        return kiln_fail(err, KILN_E_USAGE,
                         "KILN_INPUT_JOBS=%.40s: expected a number of sets at a time, 1 to %d "
                         "(or unset it: as many as there are CPUs)",
                         env, INPUTS_MAX_JOBS);
    *jobs = (int)v;
    return KILN_OK;
}

struct prepare_job {
    const struct inputs_request *req;
    const struct scripts *sc;
    const char *scripts;
    struct input_set *sets;
    const size_t *order; /* pool task i builds set order[i] */
};

static enum kiln_rc prepare_job_run(size_t i, void *arg, struct kiln_err *err)
{
    struct prepare_job *j = arg;
    size_t k = j->order[i];
    /* Set k is the given set k when the inputs were given (given.h order). */
    return prepare_set(j->req, j->sc, j->scripts, j->req->given ? k : 0, &j->sets[k], err);
}

/* The order the pool starts the sets in: the cheapest set first, as a
 * smoke test (a broken script fails there in a second, and its error is
 * the one reported), then the others costliest first, ties in set order.
 * The big performance cases come last in a workload's list; started last,
 * one of them would run alone at the end while the other cores idle. A
 * pure function of the costs, so the error reported (the first failing
 * task's in this order, forkpool.h) does not depend on timing. */
static void smoke_then_costliest(const long long *cost, size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && cost[order[j - 1]] < cost[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    if (n < 2)
        return;
    size_t first = n - 1; /* the cheapest set that comes first in set order */
    while (first > 0 && cost[order[first - 1]] == cost[order[n - 1]])
        first--;
    size_t smoke = order[first];
    memmove(order + 1, order, first * sizeof(*order));
    order[0] = smoke;
}

/* Reads back the weak flags a worker recorded in set s's `ok` mark: the
 * line "weak N" after the digest lines, then the explanation. The worker
 * wrote the mark, or checked it against the files' digests, in this call,
 * so the files are not digested again here (they can be gigabytes). */
static enum kiln_rc read_mark(struct input_set *s, struct kiln_err *err)
{
    char ok[PATH_MAX], *text = NULL;
    size_t len = 0;
    enum kiln_rc rc = fs_join(ok, sizeof(ok), s->dir, "ok", err);
    if (rc == KILN_OK)
        rc = fs_read_file(ok, 64u << 10, &text, &len, err);
    if (rc != KILN_OK)
        return rc;
    const char *p = text;
    while (strncmp(p, "sha256 ", 7) == 0 && strchr(p, '\n'))
        p = strchr(p, '\n') + 1;
    int consumed = 0;
    if (sscanf(p, "weak %u\n%n", &s->weak, &consumed) == 1 && consumed > 0) {
        text_copy_utf8(s->weak_why, sizeof(s->weak_why), p + consumed);
    } else {
        rc = kiln_fail(err, KILN_E_REJECTED,
                       "%s changed while its set was prepared (no \"weak\" line): something else "
                       "writes into the cache directory; use a private --work directory",
                       ok);
    }
    free(text);
    return rc;
}

/* The cases the request draws sets from: its own, else the workload's
 * held-out or visible ones. */
static void request_cases(const struct inputs_request *req, const struct wl_case **cases,
                          size_t *ncases)
{
    const struct workload *wl = req->wl;
    *cases = req->cases ? req->cases : req->held_out ? wl->held_out : wl->cases;
    *ncases = req->cases ? req->ncases : req->held_out ? wl->nheld_out : wl->ncases;
}

/* Room for every set: the given ones, or each case's for this backend. */
static enum kiln_rc alloc_sets(const struct inputs_request *req, const struct wl_case *cases,
                               size_t ncases, struct input_sets *out, struct kiln_err *err)
{
    const struct workload *wl = req->wl;
    /* Held-out inputs always come fresh from inputs.py and the secret seed:
     * given data can never stand in for them. */
    if (req->held_out && req->given)
        return kiln_fail(err, KILN_E_INTERNAL, "given input cases never replace held-out ones");
    if (req->given && req->given->wl != wl)
        return kiln_fail(err, KILN_E_INTERNAL, "given input cases of another workload object");
    size_t cap = req->given ? req->given->n : 0;
    for (size_t i = 0; !req->given && i < ncases; i++)
        if (cases[i].backends & req->backend)
            cap += cases[i].kind == WL_CASE_PERFORMANCE ? (size_t)req->perf_sets : 1;
    if (cap == 0)
        return kiln_fail(err, KILN_E_USAGE, "workload %s has no %s cases for this backend",
                         wl->name, req->held_out ? "held-out" : "visible");
    out->sets = calloc(cap, sizeof(*out->sets));
    if (!out->sets)
        return kiln_fail(err, KILN_E_NOMEM, "input sets");
    return KILN_OK;
}

/* The given sets, their seeds, in case order (given.h). */
static void lay_out_given(const struct inputs_request *req, const char *base,
                          struct input_sets *out)
{
    for (size_t i = 0; i < req->given->n; i++) {
        const struct given_set *g = &req->given->sets[i];
        struct input_set *s = &out->sets[out->n++];
        s->wcase = g->wcase;
        s->set = out->n > 1 && s[-1].wcase == g->wcase ? s[-1].set + 1 : 0;
        s->seed = g->seed;
        snprintf(s->dir, sizeof(s->dir), "%s/%s-%llu", base, g->wcase->name,
                 (unsigned long long)s->seed);
    }
}

/* Each case's sets for this backend, seeded from the request's seed. */
static void lay_out_generated(const struct inputs_request *req, const struct wl_case *cases,
                              size_t ncases, const char *base, struct input_sets *out)
{
    for (size_t i = 0; i < ncases; i++) {
        if (!(cases[i].backends & req->backend))
            continue;
        int sets = cases[i].kind == WL_CASE_PERFORMANCE ? req->perf_sets : 1;
        for (int k = 0; k < sets; k++) {
            struct input_set *s = &out->sets[out->n++];
            s->wcase = &cases[i];
            s->set = k;
            s->seed = inputs_seed(req->seed, cases[i].name, k);
            snprintf(s->dir, sizeof(s->dir), "%s/%s-%llu", base, cases[i].name,
                     (unsigned long long)s->seed);
        }
    }
}

/* Builds every set in parallel workers, within a memory budget. */
static enum kiln_rc prepare_in_pool(const struct inputs_request *req, const struct scripts *sc,
                                    const char *scripts, struct input_sets *out,
                                    struct kiln_err *err)
{
    long long *cost = calloc(out->n, sizeof(*cost));
    long long *pool_cost = calloc(out->n, sizeof(*pool_cost));
    size_t *order = calloc(out->n, sizeof(*order));
    enum kiln_rc rc = KILN_OK;
    if (!cost || !pool_cost || !order)
        rc = kiln_fail(err, KILN_E_NOMEM, "input sets");
    for (size_t i = 0; rc == KILN_OK && i < out->n; i++)
        rc = set_cost(req->wl, out->sets[i].wcase, &cost[i], err);
    int jobs = 1;
    if (rc == KILN_OK)
        rc = input_jobs(req, &jobs, err);
    if (rc == KILN_OK) {
        smoke_then_costliest(cost, out->n, order);
        for (size_t i = 0; i < out->n; i++)
            pool_cost[i] = cost[order[i]];
        struct prepare_job job = {req, sc, scripts, out->sets, order};
        struct forkpool_opts fo = {
            .jobs = jobs, .cost = pool_cost, .budget = forkpool_memory_budget(4ll << 30)};
        rc = forkpool_run(out->n, prepare_job_run, &job, &fo, err);
    }
    free(cost);
    free(pool_cost);
    free(order);
    return rc;
}

enum kiln_rc inputs_prepare(const struct inputs_request *req, struct input_sets *out,
                            struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    const struct wl_case *cases;
    size_t ncases;
    request_cases(req, &cases, &ncases);
    enum kiln_rc rc = alloc_sets(req, cases, ncases, out, err);
    if (rc != KILN_OK)
        return rc;
    char base[PATH_MAX], scripts[PATH_MAX], key[17];
    struct scripts sc;
    scripts_of(req, &sc);
    cache_key(req, &sc, key);
    snprintf(base, sizeof(base), "%s/%s", req->cache_dir, key);
    rc = fs_join(scripts, sizeof(scripts), base, "scripts", err);
    if (rc == KILN_OK)
        rc = write_scripts(&sc, scripts, err);
    if (rc == KILN_OK) {
        if (req->given)
            lay_out_given(req, base, out);
        else
            lay_out_generated(req, cases, ncases, base, out);
        if (req->layout_only)
            return KILN_OK;
        /* The sets are independent: generate them in parallel workers,
         * then read every set's weak flags (its `ok` mark) back here, in
         * set order. */
        rc = prepare_in_pool(req, &sc, scripts, out, err);
    }
    for (size_t i = 0; rc == KILN_OK && i < out->n; i++)
        rc = read_mark(&out->sets[i], err);
    if (rc != KILN_OK)
        input_sets_free(out);
    return rc;
}

void input_sets_free(struct input_sets *s)
{
    free(s->sets);
    s->sets = NULL;
    s->n = 0;
}
