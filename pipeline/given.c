#include "given.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "given_fs.h"
#include "json_strict.h"
#include "npy.h"
#include "tar_ingest.h"

#define NPY_HEADER_SLACK 65536u /* bytes an .npy may add to its data */
#define MAX_ROOT_DEPTH   3      /* wrapper directories above the sets */

/* ---- names */

/* "CASE-SEED": CASE [a-z0-9_]{1,32}, SEED decimal without leading zeros and
 * below 2^53 (kiln's per-set seeds). */
static bool parse_set_name(const char *name, char *case_name, uint64_t *seed)
{
    const char *dash = strrchr(name, '-');
    size_t cl = dash ? (size_t)(dash - name) : 0;
    if (!dash || cl == 0 || cl > WL_CASE_NAME_MAX)
        return false;
    for (size_t i = 0; i < cl; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    const char *d = dash + 1;
    size_t dl = strlen(d);
    if (dl == 0 || dl > 16 || (d[0] == '0' && dl > 1))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < dl; i++) {
        if (d[i] < '0' || d[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(d[i] - '0');
    }
    if (v >= (1ULL << 53))
        return false;
    memcpy(case_name, name, cl);
    case_name[cl] = '\0';
    *seed = v;
    return true;
}

static int visible_index(const struct workload *wl, const char *name)
{
    for (size_t i = 0; i < wl->ncases; i++)
        if (!strcmp(wl->cases[i].name, name))
            return (int)i;
    return -1;
}

/* ---- the root: where the CASE-SEED directories are */

static bool has_set_dirs(int fd, const struct gfs_names *nl)
{
    char c[WL_CASE_NAME_MAX + 1];
    uint64_t s;
    for (size_t i = 0; i < nl->n; i++)
        if (parse_set_name(nl->v[i], c, &s) && gfs_kind(fd, nl->v[i]) == 'd')
            return true;
    return false;
}

/* A finished run without --keep-inputs has no work/inputs: say so (and how
 * to get the same data) rather than "no input sets". `top` is the run's
 * directory when it holds run.json; its seed is read from there. */
static enum kiln_rc refuse_run_without_inputs(const struct given_inputs *g, int top,
                                              struct kiln_err *err)
{
    if (gfs_kind(top, "run.json") != 'f')
        return KILN_OK;
    int work = openat(top, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char k = work >= 0 ? gfs_kind(work, "inputs") : 0;
    if (work >= 0)
        close(work);
    if (k == 'd')
        return KILN_OK;
    char *text = NULL;
    size_t len = 0;
    json_t *run = NULL;
    struct kiln_err ignore;
    kiln_err_clear(&ignore);
    const struct json_strict_rules rules = {.max_bytes = 1u << 20};
    char seed[48] = "N";
    if (gfs_read(top, "run.json", g->shown, 1u << 20, &text, &len, &ignore) == KILN_OK &&
        json_strict_parse("run.json", text, len, &rules, &run, &ignore) == KILN_OK) {
        json_t *v = json_object_get(json_object_get(run, "seeds"), "inputs");
        if (json_is_integer(v))
            snprintf(seed, sizeof(seed), "%llu", (unsigned long long)json_integer_value(v));
    }
    json_decref(run);
    free(text);
    const char *base = strrchr(g->shown, '/');
    return kiln_fail(err, KILN_E_USAGE,
                     "%s did not keep its inputs (run it with --keep-inputs, or regenerate "
                     "with --seed %s)",
                     base && base[1] ? base + 1 : g->shown, seed);
}

/* Descends from `top` (the user's path) to the directory holding the sets:
 * through work/inputs/ or inputs/, then through single subdirectories. */
static enum kiln_rc resolve_root(struct given_inputs *g, int top, struct kiln_err *err)
{
    int fd = top;
    enum kiln_rc rc = refuse_run_without_inputs(g, top, err);
    if (rc != KILN_OK) {
        close(top);
        return rc;
    }
    const char *hops[][2] = {{"work", "inputs"}, {"inputs", NULL}};
    for (size_t h = 0; h < 2; h++) {
        if (gfs_kind(fd, hops[h][0]) != 'd')
            continue;
        int a = openat(fd, hops[h][0], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (a < 0)
            continue;
        if (!hops[h][1]) {
            close(fd);
            fd = a;
            snprintf(g->shown + strlen(g->shown), sizeof(g->shown) - strlen(g->shown), "/%s",
                     hops[h][0]);
            break;
        }
        if (gfs_kind(a, hops[h][1]) == 'd') {
            int b = openat(a, hops[h][1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            close(a);
            if (b >= 0) {
                close(fd);
                fd = b;
                snprintf(g->shown + strlen(g->shown), sizeof(g->shown) - strlen(g->shown), "/%s/%s",
                         hops[h][0], hops[h][1]);
                break;
            }
        } else {
            close(a);
        }
    }
    for (int depth = 0; rc == KILN_OK; depth++) {
        struct gfs_names nl;
        if ((rc = gfs_list(fd, g->shown, &nl, err)))
            break;
        if (has_set_dirs(fd, &nl)) {
            gfs_names_free(&nl);
            break;
        }
        size_t ndirs = 0, pick = 0;
        for (size_t i = 0; i < nl.n; i++)
            if (strcmp(nl.v[i], "scripts") && gfs_kind(fd, nl.v[i]) == 'd')
                ndirs++, pick = i;
        if (ndirs == 1 && depth < MAX_ROOT_DEPTH) {
            int sub = openat(fd, nl.v[pick], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                rc = kiln_fail_errno(err, KILN_E_REJECTED, "opening %s/%s", g->shown, nl.v[pick]);
            else {
                close(fd);
                fd = sub;
                snprintf(g->shown + strlen(g->shown), sizeof(g->shown) - strlen(g->shown), "/%s",
                         nl.v[pick]);
            }
        } else if (ndirs > 1) {
            rc = kiln_fail(err, KILN_E_USAGE,
                           "%s holds %zu directories and no CASE-SEED sets (the inputs of "
                           "several workloads?): give the one to use, e.g. %s/%s",
                           g->shown, ndirs, g->shown, nl.v[pick]);
        } else {
            rc = kiln_fail(err, KILN_E_NOTFOUND,
                           "no input sets in %s (kiln looks for CASE-SEED/in/TENSOR.npy, the "
                           "layout of a run's work/inputs/)",
                           g->shown);
        }
        gfs_names_free(&nl);
    }
    if (rc != KILN_OK) {
        close(fd);
        return rc;
    }
    g->root_fd = fd;
    return KILN_OK;
}

/* ---- one set */

static void tensor_file(const struct workload *wl, int arg, char *out, size_t cap)
{
    snprintf(out, cap, "%s.npy", wl->args[arg].name);
}

/* in/, ref/: exactly the named tensors of the roles asked for (ref/ may be
 * absent; in/ must hold every input). */
static enum kiln_rc check_tensor_dir(const struct given_inputs *g, int setfd, const char *sub,
                                     bool outputs, const char *shown, struct kiln_err *err)
{
    const struct workload *wl = g->wl;
    int fd;
    enum kiln_rc rc = gfs_open_dir(setfd, sub, shown, &fd, err);
    if (rc != KILN_OK)
        return rc;
    struct gfs_names nl;
    if ((rc = gfs_list(fd, shown, &nl, err))) {
        close(fd);
        return rc;
    }
    for (size_t i = 0; rc == KILN_OK && i < nl.n; i++) {
        bool known = false;
        for (size_t a = 0; a < wl->nargs && !known; a++) {
            const struct wl_arg *w = &wl->args[a];
            bool is_out = w->role != WL_ROLE_IN, is_in = w->role != WL_ROLE_OUT;
            char f[EXPR_IDENT_MAX + 8];
            tensor_file(wl, (int)a, f, sizeof(f));
            known = w->kind == WL_ARG_TENSOR && (outputs ? is_out : is_in) && !strcmp(f, nl.v[i]);
        }
        char k = gfs_kind(fd, nl.v[i]);
        if (!known)
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s/%s: unexpected file (%s/ holds only the signature's %s tensors "
                           "as NAME.npy)",
                           shown, nl.v[i], sub, outputs ? "out/inout" : "in/inout");
        else if (k != 'f')
            rc = kiln_fail(err, KILN_E_REJECTED, "%s/%s is %s", shown, nl.v[i], gfs_kind_word(k));
    }
    gfs_names_free(&nl);
    close(fd);
    return rc;
}

/* The set's entries: in/ and ref/ (their tensors), case.json and ok (files);
 * nothing else. */
static enum kiln_rc check_set_entries(const struct given_inputs *g, int setfd, const char *shown,
                                      const struct gfs_names *nl, struct kiln_err *err)
{
    enum kiln_rc rc = KILN_OK;
    for (size_t i = 0; rc == KILN_OK && i < nl->n; i++) {
        const char *e = nl->v[i];
        char k = gfs_kind(setfd, e), sub[PATH_MAX + 96];
        snprintf(sub, sizeof(sub), "%s/%s", shown, e);
        if (!strcmp(e, "in") || !strcmp(e, "ref"))
            rc = check_tensor_dir(g, setfd, e, !strcmp(e, "ref"), sub, err);
        else if (!strcmp(e, "case.json") || !strcmp(e, "ok")) {
            if (k != 'f')
                rc = kiln_fail(err, KILN_E_REJECTED, "%s is %s", sub, gfs_kind_word(k));
        } else
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s: unexpected entry (a set holds in/, and optionally ref/, "
                           "case.json and ok)",
                           sub);
    }
    return rc;
}

static enum kiln_rc open_set_inputs(int setfd, const struct given_set *s, const char *in_shown,
                                    int *infd, struct kiln_err *err)
{
    if (gfs_kind(setfd, "in") == 0)
        return kiln_fail(err, KILN_E_NOTFOUND, "%s is missing (case %s needs its inputs there)",
                         in_shown, s->wcase->name);
    return gfs_open_dir(setfd, "in", in_shown, infd, err);
}

/* What scanning one set's in/ reads from and digests into. */
struct in_scan {
    const struct workload *wl;
    struct given_set *s;
    struct sha256_ctx *all;
    int infd;
    const char *in_shown;
};

/* Reads in/F into *buf and checks it is an .npy of the signature's shape;
 * every message starts with fshown. The caller frees *buf. */
static enum kiln_rc read_input(int infd, const char *f, const char *fshown,
                               const struct wl_shape *sh, char **buf, size_t *len,
                               struct kiln_err *err)
{
    enum kiln_rc rc =
        gfs_read(infd, f, fshown, (size_t)sh->nbytes + NPY_HEADER_SLACK, buf, len, err);
    struct tensor tt = {0};
    if (rc == KILN_OK)
        rc = npy_read(*buf, *len, (size_t)sh->nbytes, &tt, err);
    if (rc == KILN_OK)
        rc = tensor_check_shape(&tt, f, sh->dtype, sh->ndim, sh->shape, err);
    tensor_free(&tt);
    if (rc != KILN_OK && strncmp(err->msg, fshown, strlen(fshown)) != 0)
        kiln_err_prefix(err, "%s", fshown);
    return rc;
}

/* The cap is the signature's size, so a wider dtype or a bigger shape
 * lands here: say what the signature expects. */
static enum kiln_rc say_signature_size(const struct in_scan *sc, const struct wl_shape *sh,
                                       const char *dims, struct kiln_err *err)
{
    char msg[KILN_ERR_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s", err->msg);
    enum kiln_rc was = err->rc;
    kiln_err_clear(err);
    return kiln_fail(err, was, "%s (the signature says %s is %s %s for case %s)", msg,
                     sc->wl->args[sh->arg].name, tensor_dtype_name(sh->dtype), dims,
                     sc->s->wcase->name);
}

/* The set's digest of the tensor, and the name, length and digest into all. */
static void digest_input(const struct in_scan *sc, const char *f, int arg, const char *buf,
                         size_t len)
{
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, buf, len);
    sha256_final(&c, sc->s->digest[arg]);
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (uint8_t)((uint64_t)len >> (8 * b));
    sha256_update(sc->all, f, strlen(f) + 1);
    sha256_update(sc->all, le, sizeof(le));
    sha256_update(sc->all, sc->s->digest[arg], SHA256_DIGEST_LEN);
}

static enum kiln_rc scan_input(const struct in_scan *sc, const struct wl_shape *sh,
                               struct kiln_err *err)
{
    const struct workload *wl = sc->wl;
    char f[EXPR_IDENT_MAX + 8], fshown[PATH_MAX + 200], *buf = NULL;
    size_t len = 0;
    tensor_file(wl, sh->arg, f, sizeof(f));
    snprintf(fshown, sizeof(fshown), "%s/%s", sc->in_shown, f);
    char dims[160];
    tensor_shape_format(sh->ndim, sh->shape, dims, sizeof(dims));
    if (gfs_kind(sc->infd, f) == 0)
        return kiln_fail(err, KILN_E_NOTFOUND, "%s is missing (case %s needs input %s, %s %s)",
                         fshown, sc->s->wcase->name, wl->args[sh->arg].name,
                         tensor_dtype_name(sh->dtype), dims);
    enum kiln_rc rc = read_input(sc->infd, f, fshown, sh, &buf, &len, err);
    if (rc == KILN_E_LIMIT)
        rc = say_signature_size(sc, sh, dims, err);
    else if (rc == KILN_OK)
        digest_input(sc, f, sh->arg, buf, len);
    free(buf);
    return rc;
}

/* The set's directory: in/ (checked and digested), optional ref/, case.json
 * and ok; nothing else. */
static enum kiln_rc scan_set(struct given_inputs *g, struct given_set *s, struct sha256_ctx *all,
                             struct kiln_err *err)
{
    const struct workload *wl = g->wl;
    char shown[PATH_MAX + 64];
    snprintf(shown, sizeof(shown), "%s/%s", g->shown, s->name);
    int setfd;
    enum kiln_rc rc = gfs_open_dir(g->root_fd, s->name, shown, &setfd, err);
    if (rc != KILN_OK)
        return rc;
    struct gfs_names nl;
    if ((rc = gfs_list(setfd, shown, &nl, err))) {
        close(setfd);
        return rc;
    }
    rc = check_set_entries(g, setfd, shown, &nl, err);
    gfs_names_free(&nl);
    struct wl_shape shapes[WL_MAX_ARGS];
    if (rc == KILN_OK)
        rc = workload_case_shapes(wl, s->wcase, shapes, err);
    char in_shown[PATH_MAX + 96];
    snprintf(in_shown, sizeof(in_shown), "%s/in", shown);
    struct in_scan sc = {.wl = wl, .s = s, .all = all, .infd = -1, .in_shown = in_shown};
    if (rc == KILN_OK)
        rc = open_set_inputs(setfd, s, in_shown, &sc.infd, err);
    sha256_update(all, s->wcase->name, strlen(s->wcase->name) + 1);
    char seed[24];
    snprintf(seed, sizeof(seed), "%llu", (unsigned long long)s->seed);
    sha256_update(all, seed, strlen(seed) + 1);
    for (size_t t = 0; rc == KILN_OK && t < wl->ntensors; t++)
        if (wl->args[shapes[t].arg].role != WL_ROLE_OUT)
            rc = scan_input(&sc, &shapes[t], err);
    if (sc.infd >= 0)
        close(sc.infd);
    close(setfd);
    return rc;
}

static int set_order(const void *a, const void *b)
{
    const struct given_set *x = a, *y = b;
    if (x->wcase != y->wcase)
        return x->wcase < y->wcase ? -1 : 1;
    return x->seed < y->seed ? -1 : x->seed > y->seed;
}

/* The root's entries: CASE-SEED sets of known visible cases and scripts/. */
static enum kiln_rc collect_sets(struct given_inputs *g, unsigned backend, struct kiln_err *err)
{
    const struct workload *wl = g->wl;
    struct gfs_names nl;
    enum kiln_rc rc = gfs_list(g->root_fd, g->shown, &nl, err);
    if (rc != KILN_OK)
        return rc;
    g->sets = calloc(nl.n ? nl.n : 1, sizeof(*g->sets));
    if (!g->sets)
        rc = kiln_fail(err, KILN_E_NOMEM, "input sets");
    for (size_t i = 0; rc == KILN_OK && i < nl.n; i++) {
        const char *e = nl.v[i];
        char cname[WL_CASE_NAME_MAX + 1], k = gfs_kind(g->root_fd, e);
        uint64_t seed;
        if (!strcmp(e, "scripts") && k == 'd')
            continue; /* kiln's copy of the scripts that made them: not used */
        if (k == 'l' || (k != 'd' && k != 'f')) {
            rc = kiln_fail(err, KILN_E_REJECTED, "%s/%s is %s", g->shown, e, gfs_kind_word(k));
            break;
        }
        if (!parse_set_name(e, cname, &seed) || k != 'd') {
            rc = kiln_fail(err, KILN_E_REJECTED,
                           "%s/%s: unexpected entry (expected CASE-SEED directories, e.g. "
                           "%s-1)",
                           g->shown, e, wl->cases[0].name);
            break;
        }
        int ci = visible_index(wl, cname);
        if (ci < 0) {
            /* A fixed held-out case, or one named as the drawn ones are. */
            bool held = workload_case_by_name(wl, cname) ||
                        !strncmp(cname, WL_DRAWN_PREFIX, strlen(WL_DRAWN_PREFIX));
            rc = kiln_fail(err, KILN_E_REJECTED, "%s/%s: the workload has %s case %s", g->shown, e,
                           held ? "a held-out" : "no", cname);
            if (held)
                kiln_err_prefix(err, "held-out inputs are always generated fresh");
            break;
        }
        if (!(wl->cases[ci].backends & backend))
            continue; /* a case of another backend: not used, not read */
        struct given_set *s = &g->sets[g->n++];
        s->wcase = &wl->cases[ci];
        s->seed = seed;
        snprintf(s->name, sizeof(s->name), "%s", e);
    }
    gfs_names_free(&nl);
    if (rc == KILN_OK && g->n)
        qsort(g->sets, g->n, sizeof(*g->sets), set_order);
    return rc;
}

/* Every case of the backend has enough sets, and not too many. */
static enum kiln_rc check_counts(const struct given_inputs *g, unsigned backend, int min_perf_sets,
                                 struct kiln_err *err)
{
    const struct workload *wl = g->wl;
    for (size_t c = 0; c < wl->ncases; c++) {
        const struct wl_case *wc = &wl->cases[c];
        if (!(wc->backends & backend))
            continue;
        int have = 0;
        for (size_t i = 0; i < g->n; i++)
            have += g->sets[i].wcase == wc;
        int need = wc->kind == WL_CASE_PERFORMANCE && min_perf_sets > 1 ? min_perf_sets : 1;
        char first[EXPR_IDENT_MAX + 8] = "?";
        for (size_t a = 0; a < wl->nargs; a++)
            if (wl->args[a].kind == WL_ARG_TENSOR && wl->args[a].role != WL_ROLE_OUT) {
                tensor_file(wl, (int)a, first, sizeof(first));
                break;
            }
        if (have == 0)
            return kiln_fail(err, KILN_E_NOTFOUND,
                             "no input set for case %s (expected %s/%s-SEED/in/%s)", wc->name,
                             g->shown, wc->name, first);
        if (have < need)
            return kiln_fail(err, KILN_E_NOTFOUND,
                             "case %s has %d input set%s, this command needs %d per performance "
                             "case (add %s/%s-SEED/ directories)",
                             wc->name, have, have == 1 ? "" : "s", need, g->shown, wc->name);
        if (have > GIVEN_MAX_SETS)
            return kiln_fail(err, KILN_E_LIMIT, "case %s has %d input sets, at most %d are used",
                             wc->name, have, GIVEN_MAX_SETS);
    }
    return KILN_OK;
}

/* ---- the tarball form */

static enum kiln_rc unpack_tar(struct given_inputs *g, const char *scratch, struct kiln_err *err)
{
    const struct workload *wl = g->wl;
    static const char *const base[] = {"*/in/*.npy", "*/ref/*.npy", "*/case.json", "*/ok",
                                       "scripts/*.py"};
    static const char *const prefix[] = {"", "*/", "*/*/"};
    char pat[15][32];
    const char *pats[15];
    for (size_t p = 0; p < 3; p++)
        for (size_t b = 0; b < 5; b++) {
            snprintf(pat[p * 5 + b], sizeof(pat[0]), "%s%s", prefix[p], base[b]);
            pats[p * 5 + b] = pat[p * 5 + b];
        }
    /* Caps: every visible case at most GIVEN_MAX_SETS times, each file no
     * bigger than the largest tensor (or a script). */
    uint64_t total = 0, biggest = WL_MAX_SCRIPT;
    for (size_t c = 0; c < wl->ncases; c++) {
        struct wl_shape sh[WL_MAX_ARGS];
        struct kiln_err e;
        kiln_err_clear(&e);
        if (workload_case_shapes(wl, &wl->cases[c], sh, &e) != KILN_OK)
            continue;
        for (size_t t = 0; t < wl->ntensors; t++)
            if (sh[t].nbytes + NPY_HEADER_SLACK > biggest)
                biggest = sh[t].nbytes + NPY_HEADER_SLACK;
        total += GIVEN_MAX_SETS * (wl->cases[c].bytes + (wl->ntensors + 2) * NPY_HEADER_SLACK);
    }
    struct tar_rules rules = {.patterns = pats,
                              .n_patterns = 15,
                              .max_file_bytes = (size_t)biggest,
                              .max_total_bytes = (size_t)(total + 2 * WL_MAX_SCRIPT),
                              .max_files = wl->ncases * GIVEN_MAX_SETS * (wl->ntensors + 2) + 4};
    char tmpl[PATH_MAX];
    if (snprintf(tmpl, sizeof(tmpl), "%s/given-tar-XXXXXX", scratch) >= (int)sizeof(tmpl))
        return kiln_fail(err, KILN_E_USAGE, "path too long: %s", scratch);
    if (!mkdtemp(tmpl))
        return kiln_fail_errno(err, KILN_E_IO, "creating a directory in %s", scratch);
    snprintf(g->staging, sizeof(g->staging), "%s", tmpl);
    int fd = open(g->path, O_RDONLY | O_CLOEXEC);
    int dfd = open(g->staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    enum kiln_rc rc = KILN_OK;
    if (fd < 0 || dfd < 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "opening %s", fd < 0 ? g->path : g->staging);
    struct tar_names names = {0};
    if (rc == KILN_OK)
        rc = tar_ingest_to_dir(fd, &rules, dfd, &names, err);
    tar_names_free(&names);
    if (fd >= 0)
        close(fd);
    if (rc == KILN_OK) {
        g->root_fd = -1;
        rc = resolve_root(g, dfd, err); /* takes dfd */
    } else if (dfd >= 0) {
        close(dfd);
    }
    return rc;
}

/* ---- public */

enum kiln_rc given_inputs_open(const char *path, const struct workload *wl, unsigned backend,
                               int min_perf_sets, const char *scratch, struct given_inputs *out,
                               struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    out->root_fd = -1;
    out->wl = wl;
    snprintf(out->path, sizeof(out->path), "%s", path);
    enum kiln_rc rc = KILN_OK;
    struct stat st;
    size_t pl = strlen(path);
    if (stat(path, &st) != 0) {
        rc = kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "cannot open it");
    } else if (S_ISDIR(st.st_mode)) {
        int top = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(out->shown, sizeof(out->shown), "%s", path);
        if (top < 0)
            rc = kiln_fail_errno(err, KILN_E_IO, "cannot open it");
        else
            rc = resolve_root(out, top, err);
    } else if (S_ISREG(st.st_mode) && pl > 4 && !strcmp(path + pl - 4, ".tar")) {
        snprintf(out->shown, sizeof(out->shown), "%s:", path);
        rc = unpack_tar(out, scratch, err); /* messages name members as PATH:/NAME */
    } else {
        rc = kiln_fail(err, KILN_E_USAGE,
                       "not a directory or a .tar file (give a run's directory, its "
                       "work/inputs/, or a plain ustar tarball of that layout; compressed "
                       "tarballs are not read)");
    }
    struct sha256_ctx all;
    sha256_init(&all);
    sha256_update(&all, "kiln-input-cases-v1\n", 20);
    if (rc == KILN_OK)
        rc = collect_sets(out, backend, err);
    if (rc == KILN_OK)
        rc = check_counts(out, backend, min_perf_sets, err);
    for (size_t i = 0; rc == KILN_OK && i < out->n; i++)
        rc = scan_set(out, &out->sets[i], &all, err);
    if (rc == KILN_OK) {
        uint8_t d[SHA256_DIGEST_LEN];
        sha256_final(&all, d);
        sha256_hex(d, out->sha256);
        return KILN_OK;
    }
    sha256_discard(&all);
    kiln_err_prefix(err, "--input-cases %s", path);
    given_inputs_free(out);
    return rc;
}

enum kiln_rc given_inputs_read(const struct given_inputs *g, size_t set, int arg, char **data,
                               size_t *len, struct kiln_err *err)
{
    *data = NULL;
    *len = 0;
    if (set >= g->n || arg < 0 || (size_t)arg >= g->wl->nargs || g->root_fd < 0)
        return kiln_fail(err, KILN_E_INTERNAL, "given_inputs_read: no set %zu argument %d", set,
                         arg);
    const struct given_set *s = &g->sets[set];
    struct wl_shape shapes[WL_MAX_ARGS];
    enum kiln_rc rc = workload_case_shapes(g->wl, s->wcase, shapes, err);
    size_t max = 0;
    for (size_t t = 0; rc == KILN_OK && t < g->wl->ntensors; t++)
        if (shapes[t].arg == arg)
            max = (size_t)shapes[t].nbytes + NPY_HEADER_SLACK;
    char f[EXPR_IDENT_MAX + 8], shown[PATH_MAX + 200];
    tensor_file(g->wl, arg, f, sizeof(f));
    snprintf(shown, sizeof(shown), "%s/%s/in/%s", g->shown, s->name, f);
    int setfd = -1, infd = -1;
    if (rc == KILN_OK)
        rc = gfs_open_dir(g->root_fd, s->name, shown, &setfd, err);
    if (rc == KILN_OK)
        rc = gfs_open_dir(setfd, "in", shown, &infd, err);
    if (rc == KILN_OK)
        rc = gfs_read(infd, f, shown, max, data, len, err);
    if (infd >= 0)
        close(infd);
    if (setfd >= 0)
        close(setfd);
    uint8_t d[SHA256_DIGEST_LEN];
    if (rc == KILN_OK) {
        struct sha256_ctx c;
        sha256_init(&c);
        sha256_update(&c, *data, *len);
        sha256_final(&c, d);
        if (memcmp(d, s->digest[arg], sizeof(d)) != 0) {
            free(*data);
            *data = NULL;
            *len = 0;
            rc = kiln_fail(err, KILN_E_REJECTED, "%s changed after kiln checked it", shown);
        }
    }
    if (rc != KILN_OK)
        kiln_err_prefix(err, "--input-cases %s", g->path);
    return rc;
}

enum kiln_rc given_inputs_export(const struct given_inputs *g, const char *dest,
                                 struct kiln_err *err)
{
    enum kiln_rc rc = fs_mkdirs(dest, err);
    for (size_t i = 0; rc == KILN_OK && i < g->n; i++) {
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof(dir), "%s/%s/in", dest, g->sets[i].name) >= (int)sizeof(dir))
            return kiln_fail(err, KILN_E_USAGE, "path too long: %s", dest);
        rc = fs_mkdirs(dir, err);
        for (size_t a = 0; rc == KILN_OK && a < g->wl->nargs; a++) {
            const struct wl_arg *w = &g->wl->args[a];
            if (w->kind != WL_ARG_TENSOR || w->role == WL_ROLE_OUT)
                continue;
            char f[EXPR_IDENT_MAX + 8], path[PATH_MAX], *data;
            size_t len;
            tensor_file(g->wl, (int)a, f, sizeof(f));
            if ((rc = fs_join(path, sizeof(path), dir, f, err)) ||
                (rc = given_inputs_read(g, i, (int)a, &data, &len, err)))
                break;
            rc = fs_write_atomic(path, data, len, err);
            free(data);
        }
    }
    return rc;
}

void given_inputs_free(struct given_inputs *g)
{
    if (g->root_fd >= 0)
        close(g->root_fd);
    g->root_fd = -1;
    if (g->staging[0]) {
        struct kiln_err ignore;
        kiln_err_clear(&ignore);
        (void)(fs_remove_tree(g->staging, &ignore) == KILN_OK);
        g->staging[0] = '\0';
    }
    free(g->sets);
    g->sets = NULL;
    g->n = 0;
}
