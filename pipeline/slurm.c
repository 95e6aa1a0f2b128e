/*
 * slurm.c - see slurm.h. The parent's side first (job directory, sbatch,
 * polling, the result), then the node's side (slurm_node_exec).
 */
#include "slurm.h"
#include "clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "evaluate.h"
#include "fdio.h"
#include "fsutil.h"
#include "gpuinfo.h"
#include "hostvars.h"
#include "proc.h"
#include "sbspec.h"
#include "slurm_impl.h"

#define SLURM_CMD_TIMEOUT_MS 30000
#define SLURM_POLL_MIN_MS    50
#define SLURM_POLL_MAX_MS    2000
#define SLURM_RESUBMITS      1
#define SLURM_GONE_GRACE_S   10.0 /* a job squeue and scontrol no longer know */

static enum kiln_rc run(void *ctx, const char *what, const struct sandbox_spec *spec, int gpu,
                        int tar_fd, struct sandbox_result *res, char *where, size_t where_cap,
                        struct sbnode_device *dev, struct kiln_err *err);

enum kiln_rc slurm_cmd(char *const argv[], char *out, size_t cap, struct kiln_err *err)
{
    int status = 0;
    enum kiln_rc rc = proc_capture(argv, out, cap, SLURM_CMD_TIMEOUT_MS, &status, err);
    if (rc != KILN_OK)
        return kiln_fail(err, rc, "%s could not be run (is Slurm installed here?)", argv[0]);
    if (status != 0) {
        out[strcspn(out, "\n")] = '\0';
        return kiln_fail(err, KILN_E_CHILD, "%s exited %d: %s", argv[0], status, out);
    }
    return KILN_OK;
}

enum slurm_end slurm_state_end(const char *st)
{
    static const char *const done[] = {"COMPLETED", "FAILED", "OUT_OF_MEMORY", NULL};
    static const char *const lost[] = {"NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "REVOKED", NULL};
    for (const char *const *p = done; *p; p++)
        if (!strcmp(st, *p))
            return SLURM_END_DONE;
    for (const char *const *p = lost; *p; p++)
        if (!strcmp(st, *p))
            return SLURM_END_LOST;
    if (!strcmp(st, "TIMEOUT") || !strcmp(st, "DEADLINE"))
        return SLURM_END_TIMEOUT;
    if (!strcmp(st, "CANCELLED"))
        return SLURM_END_CANCELLED;
    return SLURM_END_RUNNING;
}

enum kiln_rc slurm_runner_init(struct slurm_runner *s, const struct slurm_config *cfg,
                               struct kiln_err *err)
{
    memset(s, 0, sizeof(*s));
    s->cfg = *cfg;
    if (!cfg->spool || !*cfg->spool)
        return kiln_fail(err, KILN_E_USAGE,
                         "--executor slurm needs --spool DIR, a directory the nodes share");
    if (!realpath(cfg->spool, s->spool))
        return kiln_fail_errno(err, KILN_E_NOTFOUND, "--spool %s", cfg->spool);
    if (access(s->spool, W_OK | X_OK) != 0)
        return kiln_fail_errno(err, KILN_E_USAGE, "--spool %s is not a writable directory",
                               s->spool);
    if (strchr(s->spool, '\'') || strchr(s->spool, '\n'))
        return kiln_fail(err, KILN_E_USAGE, "--spool %s: a quote or newline in the path", s->spool);
    const char *k = cfg->node_kiln;
    char self[PATH_MAX];
    if (!k) {
        enum kiln_rc rc = fs_self_path(false, self, sizeof(self), err);
        if (rc != KILN_OK)
            return rc;
        k = self;
    }
    if (strlen(k) >= sizeof(s->kiln) || strchr(k, '\'') || strchr(k, '\n'))
        return kiln_fail(err, KILN_E_USAGE, "--slurm-kiln %s: not a usable path", k);
    snprintf(s->kiln, sizeof(s->kiln), "%s", k);
    char out[512];
    char *argv[] = {"sbatch", "--version", NULL};
    if (slurm_cmd(argv, out, sizeof(out), err) != KILN_OK) {
        kiln_err_prefix(err, "--executor slurm");
        return err->rc;
    }
    s->runner.name = "slurm";
    s->runner.run = run;
    s->runner.ctx = s;
    s->runner.submit = slurm_batch_submit;
    s->runner.collect = slurm_batch_collect;
    s->runner.drop = slurm_batch_drop;
    return KILN_OK;
}

/* ---- the job directory ---- */

/* Places src at dst: a hard link where the file system allows it (the spool
 * and kiln's work directory are often the same), else a copy. Directories
 * are walked. Modes are set so the node's unprivileged sandbox can read. */
static enum kiln_rc place(const char *src, const char *dst, int depth, struct kiln_err *err)
{
    struct stat st;
    if (lstat(src, &st) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "spool: %s", src);
    if (S_ISDIR(st.st_mode)) {
        if (depth > 8)
            return kiln_fail(err, KILN_E_LIMIT, "spool: %s nests too deep", src);
        if (mkdir(dst, 0755) != 0 && errno != EEXIST)
            return kiln_fail_errno(err, KILN_E_IO, "spool: mkdir %s", dst);
        DIR *d = opendir(src);
        if (!d)
            return kiln_fail_errno(err, KILN_E_IO, "spool: %s", src);
        enum kiln_rc rc = KILN_OK;
        struct dirent *e;
        while (rc == KILN_OK && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char a[PATH_MAX], b[PATH_MAX];
            if ((rc = fs_join(a, sizeof(a), src, e->d_name, err)) == KILN_OK &&
                (rc = fs_join(b, sizeof(b), dst, e->d_name, err)) == KILN_OK)
                rc = place(a, b, depth + 1, err);
        }
        closedir(d);
        return rc;
    }
    if (!S_ISREG(st.st_mode))
        return kiln_fail(err, KILN_E_REJECTED, "spool: %s is neither a file nor a directory", src);
    mode_t mode = (st.st_mode & 0111) ? 0755 : 0644;
    if (link(src, dst) == 0)
        return chmod(dst, mode) == 0 ? KILN_OK
                                     : kiln_fail_errno(err, KILN_E_IO, "spool: chmod %s", dst);
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return kiln_fail_errno(err, KILN_E_IO, "spool: %s", src);
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (out < 0) {
        close(in);
        return kiln_fail_errno(err, KILN_E_IO, "spool: %s", dst);
    }
    enum kiln_rc rc = fd_copy_all(in, out, -1, err, "spool: copying %s", src);
    close(in);
    if (close(out) != 0 && rc == KILN_OK)
        rc = kiln_fail_errno(err, KILN_E_IO, "spool: writing %s", dst);
    return rc;
}

enum kiln_rc slurm_make_jobdir(struct slurm_runner *s, const struct sandbox_spec *spec, int gpu,
                               char *jobdir, size_t cap, struct kiln_err *err)
{
    snprintf(jobdir, cap, "%s/%s-%ld-%u-XXXXXX", s->spool,
             s->cfg.job_name ? s->cfg.job_name : "kiln", (long)getpid(), ++s->seq);
    if (!mkdtemp(jobdir))
        return kiln_fail_errno(err, KILN_E_IO, "spool: making a job directory in %s", s->spool);
    /* The node's sandbox binds these as an unprivileged uid. */
    if (chmod(jobdir, 0755) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "spool: chmod %s", jobdir);
    char in_dir[PATH_MAX];
    enum kiln_rc rc = fs_join(in_dir, sizeof(in_dir), jobdir, "in", err);
    if (rc)
        return rc;
    if (mkdir(in_dir, 0755) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "spool: mkdir %s", in_dir);
    struct sandbox_input inputs[SBSPEC_MAX_INPUTS];
    char paths[SBSPEC_MAX_INPUTS][PATH_MAX];
    if (spec->n_inputs > SBSPEC_MAX_INPUTS)
        return kiln_fail(err, KILN_E_LIMIT, "spool: more than %d inputs", SBSPEC_MAX_INPUTS);
    for (size_t i = 0; i < spec->n_inputs; i++) {
        if ((rc = fs_join(paths[i], sizeof(paths[i]), in_dir, spec->inputs[i].name, err)) ||
            (rc = place(spec->inputs[i].host_path, paths[i], 0, err)))
            return rc;
        inputs[i].name = spec->inputs[i].name;
        inputs[i].host_path = paths[i];
    }
    struct sandbox_spec remote = *spec;
    remote.inputs = inputs;
    char *text = NULL, path[PATH_MAX];
    if ((rc = sbspec_to_json(&remote, gpu, &text, err)) ||
        (rc = fs_join(path, sizeof(path), jobdir, "spec.json", err)) ||
        (rc = fs_write_atomic(path, text, strlen(text), err))) {
        free(text);
        return rc;
    }
    free(text);
    return KILN_OK;
}

/* ---- submission and polling ---- */

enum kiln_rc slurm_sbatch(struct slurm_runner *s, long long timeout_ms, bool gpu,
                          const char *output_path, const char *wrap, const char *array, long *id,
                          struct kiln_err *err)
{
    char name[160], output[PATH_MAX + 16], gres[96], time_arg[32], arr[48];
    char part[128], acct[128];
    snprintf(name, sizeof(name), "--job-name=%s", s->cfg.job_name ? s->cfg.job_name : "kiln");
    snprintf(output, sizeof(output), "--output=%s", output_path);
    /* The sandbox's own wall-clock limit plus room to start and copy. */
    long long ms = timeout_ms > 0 ? timeout_ms : 300000;
    snprintf(time_arg, sizeof(time_arg), "--time=%lld", (ms + 120000 + 59999) / 60000);
    char *argv[16];
    int n = 0;
    argv[n++] = "sbatch";
    argv[n++] = "--parsable";
    argv[n++] = name;
    argv[n++] = output;
    argv[n++] = time_arg;
    if (array) {
        snprintf(arr, sizeof(arr), "--array=%s", array);
        argv[n++] = arr;
    }
    const char *g = s->cfg.gres ? s->cfg.gres : gpu ? "gpu:1" : NULL;
    if (g && *g) {
        snprintf(gres, sizeof(gres), "--gres=%s", g);
        argv[n++] = gres;
    }
    if (s->cfg.partition) {
        snprintf(part, sizeof(part), "--partition=%s", s->cfg.partition);
        argv[n++] = part;
    }
    if (s->cfg.account) {
        snprintf(acct, sizeof(acct), "--account=%s", s->cfg.account);
        argv[n++] = acct;
    }
    argv[n++] = "--wrap";
    argv[n++] = (char *)wrap;
    argv[n] = NULL;
    char out[1024];
    if (slurm_cmd(argv, out, sizeof(out), err) != KILN_OK) {
        kiln_err_prefix(err, "the job was refused");
        return err->rc;
    }
    char *end = NULL;
    errno = 0;
    *id = strtol(out, &end, 10);
    if (errno || *id <= 0 || !end || (*end && *end != ';' && *end != '\n'))
        return kiln_fail(err, KILN_E_PARSE, "sbatch --parsable printed '%.80s', not a job id", out);
    return KILN_OK;
}

enum kiln_rc slurm_submit_one(struct slurm_runner *s, long long timeout_ms, bool gpu,
                              const char *jobdir, long *id, struct kiln_err *err)
{
    char output[PATH_MAX + 16], wrap[2 * PATH_MAX + 64];
    snprintf(output, sizeof(output), "%s/slurm.out", jobdir);
    snprintf(wrap, sizeof(wrap), "exec '%s' sandbox-exec '%s'", s->kiln, jobdir);
    return slurm_sbatch(s, timeout_ms, gpu, output, wrap, NULL, id, err);
}

/* The job's state word and node: squeue while it is listed (-t all keeps
 * finished jobs until MinJobAge), else scontrol; "" when neither knows. */
static void job_state(long id, char *state, size_t cap, char *node, size_t ncap)
{
    char ids[32], out[1024];
    struct kiln_err e;
    kiln_err_clear(&e);
    state[0] = node[0] = '\0';
    snprintf(ids, sizeof(ids), "%ld", id);
    char *sq[] = {"squeue", "-h", "-t", "all", "-j", ids, "-o", "%T %N", NULL};
    if (slurm_cmd(sq, out, sizeof(out), &e) == KILN_OK && out[0]) {
        sscanf(out, "%31s %127s", state, node);
        (void)cap;
        (void)ncap;
        return;
    }
    kiln_err_clear(&e);
    char *sc[] = {"scontrol", "-o", "show", "job", ids, NULL};
    if (slurm_cmd(sc, out, sizeof(out), &e) != KILN_OK)
        return;
    const char *p = strstr(out, "JobState=");
    if (p)
        sscanf(p + 9, "%31s", state);
    p = strstr(out, " NodeList=");
    if (p)
        sscanf(p + 10, "%127s", node);
}

void slurm_cancel(const char *ids)
{
    char out[256];
    struct kiln_err e;
    kiln_err_clear(&e);
    char *argv[] = {"scancel", (char *)ids, NULL};
    (void)slurm_cmd(argv, out, sizeof(out), &e);
}

enum kiln_rc slurm_cancel_named(const char *name, struct kiln_err *err)
{
    char out[512], arg[200];
    if (!name[0] || strlen(name) > sizeof(arg) - 16)
        return kiln_fail(err, KILN_E_USAGE, "slurm: cannot cancel jobs named '%.60s'", name);
    snprintf(arg, sizeof(arg), "--name=%s", name);
    char *argv[] = {"scancel", "--me", arg, NULL};
    return slurm_cmd(argv, out, sizeof(out), err);
}

/* Waits for job `id` to end; *end says how. KILN_E_CANCELLED on a cancel. */
static enum kiln_rc wait_job(struct slurm_runner *s, long id, const char *jobdir,
                             enum slurm_end *end, char *state, char *node, struct kiln_err *err)
{
    int delay = SLURM_POLL_MIN_MS;
    double gone_since = 0;
    char result[PATH_MAX];
    snprintf(result, sizeof(result), "%s/result.json", jobdir);
    for (;;) {
        if (s->cfg.cancel && *s->cfg.cancel) {
            char ids[32];
            snprintf(ids, sizeof(ids), "%ld", id);
            slurm_cancel(ids);
            return kiln_fail(err, KILN_E_CANCELLED, "slurm job %ld cancelled (scancel %ld)", id,
                             id);
        }
        char node_now[128];
        job_state(id, state, 32, node_now, sizeof(node_now));
        if (node_now[0] && strcmp(node_now, "(null)") != 0)
            snprintf(node, 128, "%s", node_now);
        if (state[0]) {
            gone_since = 0;
            if ((*end = slurm_state_end(state)) != SLURM_END_RUNNING)
                return KILN_OK;
        } else {
            /* Neither squeue nor scontrol knows it: finished long ago, or
             * the controller lost it. The result file decides. */
            if (access(result, F_OK) == 0) {
                snprintf(state, 32, "COMPLETED");
                *end = SLURM_END_DONE;
                return KILN_OK;
            }
            if (gone_since == 0)
                gone_since = clock_mono_s();
            else if (clock_mono_s() - gone_since > SLURM_GONE_GRACE_S) {
                snprintf(state, 32, "UNKNOWN");
                *end = SLURM_END_LOST;
                return KILN_OK;
            }
        }
        clock_sleep_ms(delay);
        delay = delay * 2 > SLURM_POLL_MAX_MS ? SLURM_POLL_MAX_MS : delay * 2;
    }
}

void slurm_output_tail(const char *jobdir, char *buf, size_t cap)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    buf[0] = '\0';
    snprintf(path, sizeof(path), "%s/slurm.out", jobdir);
    if (fs_read_file(path, 1u << 20, &text, &len, &e) != KILN_OK)
        return;
    const char *t = len > 300 ? text + len - 300 : text;
    size_t o = 0;
    for (; *t && o + 1 < cap; t++)
        buf[o++] = (*t >= 0x20 && *t < 0x7f) ? *t : ' ';
    buf[o] = '\0';
    free(text);
}

enum kiln_rc slurm_fetch(long long tar_bytes, const char *jobdir, int tar_fd,
                         struct sandbox_result *res, char *where, size_t where_cap,
                         struct sbnode_device *dev, struct kiln_err *err)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/result.json", jobdir);
    enum kiln_rc rc = fs_read_file(path, SBRESULT_MAX_BYTES, &text, &len, err);
    if (rc)
        return rc;
    rc = sbresult_from_json(text, len, res, where, where_cap, dev, err);
    free(text);
    if (rc)
        return rc;
    snprintf(path, sizeof(path), "%s/stream.tar", jobdir);
    int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return kiln_fail_errno(err, KILN_E_IO, "slurm: %s", path);
    long long cap = tar_bytes > 0 ? tar_bytes : (1ll << 30);
    rc = fd_copy_all(in, tar_fd, cap, err, "slurm: the job's tar stream (at most %lld bytes)", cap);
    close(in);
    return rc;
}

static enum kiln_rc run(void *ctx, const char *what, const struct sandbox_spec *spec, int gpu,
                        int tar_fd, struct sandbox_result *res, char *where, size_t where_cap,
                        struct sbnode_device *dev, struct kiln_err *err)
{
    struct slurm_runner *s = ctx;
    enum kiln_rc rc = KILN_OK;
    for (int attempt = 0; attempt <= SLURM_RESUBMITS; attempt++) {
        char jobdir[PATH_MAX], state[32] = "", node[128] = "", tail[320];
        long id = 0;
        enum slurm_end end = SLURM_END_RUNNING;
        if ((rc = slurm_make_jobdir(s, spec, gpu, jobdir, sizeof(jobdir), err)) ||
            (rc = slurm_submit_one(s, spec->limits.timeout_ms, gpu >= 0, jobdir, &id, err)))
            break;
        if (!s->cfg.quiet)
            fprintf(stderr, "kiln: %s: slurm job %ld submitted\n", what, id);
        if ((rc = wait_job(s, id, jobdir, &end, state, node, err)))
            break;
        char rpath[PATH_MAX];
        snprintf(rpath, sizeof(rpath), "%s/result.json", jobdir);
        bool have_result = access(rpath, F_OK) == 0;
        if (end == SLURM_END_TIMEOUT) {
            rc = kiln_fail(err, KILN_E_TIMEOUT, "slurm job %ld hit its time limit (%s on %s)", id,
                           state, node[0] ? node : "no node");
            break;
        }
        if (have_result && end == SLURM_END_DONE) {
            char node_where[200] = "";
            rc = slurm_fetch(spec->limits.tar_bytes, jobdir, tar_fd, res, node_where,
                             sizeof(node_where), dev, err);
            if (rc == KILN_OK)
                snprintf(where, where_cap, "slurm job %ld, %s", id, node_where);
            break;
        }
        slurm_output_tail(jobdir, tail, sizeof(tail));
        if (end == SLURM_END_DONE && !have_result) {
            /* The job ran and ended without a result: the node's kiln
             * failed (its output says why) or the job was killed. */
            end = SLURM_END_LOST;
        }
        if (attempt < SLURM_RESUBMITS) {
            if (!s->cfg.quiet)
                fprintf(stderr,
                        "kiln: %s: slurm job %ld ended %s on %s before it finished%s%s; "
                        "resubmitting once\n",
                        what, id, state, node[0] ? node : "no node", tail[0] ? ": " : "", tail);
            continue;
        }
        rc = kiln_fail(err, KILN_E_CHILD,
                       "slurm job %ld ended %s on %s without a result, after one resubmission%s%s",
                       id, state, node[0] ? node : "no node", tail[0] ? ": " : "", tail);
    }
    return rc;
}

/* ---- the node's side ---- */

/* Which GPU of this node the job was given: Slurm's allocation, not the
 * index the parent used on its own host. */
static int allocated_gpu(void)
{
    const char *v = getenv("SLURM_JOB_GPUS");
    if (!v || !*v)
        v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v || !*v)
        return 0;
    char *end = NULL;
    long g = strtol(v, &end, 10);
    return end != v && g >= 0 && g < GPUINFO_MAX ? (int)g : 0;
}

/* The GPU the job was given, as this node sees it: the driver's names and
 * the properties the physics floor needs, from this node's own
 * kiln-harness-cuda --device-props (outside any sandbox: no candidate code
 * runs). What cannot be learned is left out, not guessed. */
static void node_device(int gpu, const char *host, struct sbnode_device *d)
{
    struct gpuinfo gpus[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (gpuinfo_list("/proc", gpus, &n, &e) != KILN_OK || (size_t)gpu >= n)
        return;
    d->present = true;
    snprintf(d->node, sizeof(d->node), "%s", host);
    snprintf(d->model, sizeof(d->model), "%s", gpus[gpu].model);
    snprintf(d->uuid, sizeof(d->uuid), "%s", gpus[gpu].uuid);
    snprintf(d->bus_id, sizeof(d->bus_id), "%s", gpus[gpu].bus_id);
    if (gpuinfo_driver_version("/proc", d->driver, sizeof(d->driver), &e) != KILN_OK)
        d->driver[0] = '\0';
    char harness[PATH_MAX], text[1024];
    int status = -1;
    kiln_err_clear(&e);
    if (eval_harness_path(KILN_BACKEND_CUDA, harness, sizeof(harness), &e) != KILN_OK)
        return;
    char *argv[] = {harness, "--device-props", gpus[gpu].bus_id, NULL};
    struct device_limits lim;
    if (proc_capture(argv, text, sizeof(text), 30000, &status, &e) == KILN_OK && status == 0 &&
        devprobe_parse(text, &d->props, &lim, &e) == KILN_OK)
        d->has_props = true;
}

enum kiln_rc slurm_node_exec(const char *jobdir, struct kiln_err *err)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    enum kiln_rc rc;
    if ((rc = fs_join(path, sizeof(path), jobdir, "spec.json", err)) ||
        (rc = fs_read_file(path, SBSPEC_MAX_BYTES, &text, &len, err)))
        return rc;
    struct sbspec_doc doc;
    rc = sbspec_from_json(text, len, &doc, err);
    free(text);
    if (rc)
        return rc;
    char where[200], host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    snprintf(where, sizeof(where), "node %s", host);
    /* This node's own paths and, when asked, the GPU Slurm gave the job. */
    struct hostvars *hv = calloc(1, sizeof(*hv));
    int gpu = doc.wants_gpu ? allocated_gpu() : -1;
    if (!hv)
        rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
    if (rc == KILN_OK &&
        (rc = hostvars_for_image(NULL, doc.spec.image ? doc.spec.image : doc.spec.policy, hv,
                                 err)) == KILN_OK &&
        (rc = hostvars_gpu(gpu, hv, err)) == KILN_OK) {
        doc.spec.vars = hv->vars;
        doc.spec.devices = hv->devices;
    }
    if (rc != KILN_OK) {
        free(hv);
        sbspec_doc_free(&doc);
        return rc;
    }
    struct sbnode_device dev;
    memset(&dev, 0, sizeof(dev));
    if (gpu >= 0) {
        node_device(gpu, host, &dev);
        if (dev.present)
            snprintf(where, sizeof(where), "node %s, GPU %d %s %s", host, gpu, dev.model, dev.uuid);
    }
    snprintf(path, sizeof(path), "%s/stream.tar", jobdir);
    int tfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (tfd < 0) {
        free(hv);
        sbspec_doc_free(&doc);
        return kiln_fail_errno(err, KILN_E_IO, "%s", path);
    }
    doc.spec.tar_fd = tfd;
    struct sandbox_result res;
    memset(&res, 0, sizeof(res));
    rc = sandbox_run(&doc.spec, &res, err);
    if (close(tfd) != 0 && rc == KILN_OK)
        rc = kiln_fail_errno(err, KILN_E_IO, "writing %s", path);
    sbspec_doc_free(&doc);
    free(hv);
    char *out = NULL;
    if (rc == KILN_OK && (rc = sbresult_to_json(&res, where, &dev, &out, err)) == KILN_OK &&
        (rc = fs_join(path, sizeof(path), jobdir, "result.json", err)) == KILN_OK)
        rc = fs_write_atomic(path, out, strlen(out), err);
    free(out);
    sandbox_result_free(&res);
    return rc;
}
