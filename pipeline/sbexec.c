#include "sbexec.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "hostvars.h"

/* The stream goes to an unnamed file next to its destination, so a big
 * /out never sits in memory and nothing is left behind on a crash. */
static enum kiln_rc open_stream(const struct sbexec_step *step, struct sbexec_result *res, int *tfd,
                                struct kiln_err *err)
{
    memset(res, 0, sizeof(*res));
    enum kiln_rc rc = fs_mkdirs(step->out_dir, err);
    if (rc != KILN_OK)
        return rc;
    *tfd = open(step->out_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (*tfd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "%s: temporary file in %s", step->what,
                               step->out_dir);
    return KILN_OK;
}

static enum kiln_rc ingest(const struct sbexec_step *step, int tfd, double t0, enum kiln_rc rc,
                           struct sbexec_result *res, struct kiln_err *err);

enum kiln_rc sbexec_run(const struct sbexec_step *step, struct sbexec_result *res,
                        struct kiln_err *err)
{
    int tfd = -1;
    enum kiln_rc rc = open_stream(step, res, &tfd, err);
    if (rc != KILN_OK)
        return rc;
    struct sandbox_spec spec = step->spec;
    spec.tar_fd = tfd;
    double t0 = clock_mono_s();
    if (step->runner) {
        /* The host that runs it resolves its own paths and GPU nodes. */
        rc = step->runner->run(step->runner->ctx, step->what, &spec, step->gpu, tfd, &res->sb,
                               res->where, sizeof(res->where), &res->device, err);
    } else {
        /* The host's paths and the GPU's nodes: the sandbox knows neither. */
        struct hostvars *hv = calloc(1, sizeof(*hv));
        if (!hv)
            rc = kiln_fail(err, KILN_E_NOMEM, "out of memory");
        if (rc == KILN_OK && !spec.vars &&
            (rc = hostvars_for_image(spec.data_dir, spec.image ? spec.image : spec.policy, hv,
                                     err)) == KILN_OK)
            spec.vars = hv->vars;
        if (rc == KILN_OK && !spec.devices && (rc = hostvars_gpu(step->gpu, hv, err)) == KILN_OK)
            spec.devices = hv->devices;
        if (rc == KILN_OK)
            rc = sandbox_run(&spec, &res->sb, err);
        free(hv);
    }
    return ingest(step, tfd, t0, rc, res, err);
}

bool sbexec_can_batch(const struct sbexec_runner *r)
{
    return r && r->submit && r->collect && r->drop;
}

enum kiln_rc sbexec_submit(const struct sbexec_step *step, long *ticket, struct kiln_err *err)
{
    if (!sbexec_can_batch(step->runner))
        return kiln_fail(err, KILN_E_INTERNAL, "%s: the runner takes no batches", step->what);
    struct sandbox_spec spec = step->spec;
    spec.tar_fd = -1;
    enum kiln_rc rc =
        step->runner->submit(step->runner->ctx, step->what, &spec, step->gpu, ticket, err);
    if (rc != KILN_OK)
        kiln_err_prefix(err, "%s", step->what);
    return rc;
}

enum kiln_rc sbexec_collect(const struct sbexec_step *step, long ticket, struct sbexec_result *res,
                            struct kiln_err *err)
{
    int tfd = -1;
    enum kiln_rc rc = open_stream(step, res, &tfd, err);
    if (rc != KILN_OK) {
        step->runner->drop(step->runner->ctx, ticket);
        return rc;
    }
    double t0 = clock_mono_s();
    rc = step->runner->collect(step->runner->ctx, ticket, tfd, &res->sb, res->where,
                               sizeof(res->where), &res->device, err);
    return ingest(step, tfd, t0, rc, res, err);
}

void sbexec_drop(const struct sbexec_step *step, long ticket)
{
    step->runner->drop(step->runner->ctx, ticket);
}

/* The rest of a run once the result and stream are in: the same strict
 * tar_ingest for every runner. */
static enum kiln_rc ingest(const struct sbexec_step *step, int tfd, double t0, enum kiln_rc rc,
                           struct sbexec_result *res, struct kiln_err *err)
{
    res->sandbox_s = clock_mono_s() - t0;
    if (rc != KILN_OK) {
        close(tfd);
        kiln_err_prefix(err, "%s", step->what);
        return rc;
    }
    sandbox_verdict_line(&res->sb, res->line, sizeof(res->line));
    res->exited_ok = res->sb.verdict == SANDBOX_EXITED && res->sb.exit_code == 0;
    if (lseek(tfd, 0, SEEK_SET) != 0) {
        close(tfd);
        return kiln_fail_errno(err, KILN_E_IO, "%s: rewinding the tar stream", step->what);
    }
    int dfd = open(step->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        close(tfd);
        return kiln_fail_errno(err, KILN_E_IO, "opening %s", step->out_dir);
    }
    t0 = clock_mono_s();
    rc = tar_ingest_to_dir(tfd, step->rules, dfd, &res->files, err);
    res->ingest_s = clock_mono_s() - t0;
    /* Ingested files are created 0600; later sandboxes read them as an
     * unprivileged uid, so make them world-readable. The directories above
     * stay private (mkdtemp 0700), so no other host user can reach them. */
    for (size_t i = 0; rc == KILN_OK && i < res->files.n; i++)
        if (fchmodat(dfd, res->files.names[i], 0644, 0) != 0)
            rc = kiln_fail_errno(err, KILN_E_IO, "chmod %s/%s", step->out_dir, res->files.names[i]);
    close(dfd);
    if (rc == KILN_OK && step->keep_stream) {
        res->stream_fd = tfd;
        res->has_stream = true;
    } else {
        close(tfd);
    }
    if (rc != KILN_OK)
        kiln_err_prefix(err, "%s returned a tarball kiln rejects", step->what);
    return rc;
}

void sbexec_result_free(struct sbexec_result *res)
{
    sandbox_result_free(&res->sb);
    tar_names_free(&res->files);
    if (res->has_stream)
        close(res->stream_fd);
    res->has_stream = false;
}

void sbexec_describe(const struct sbexec_result *res, char *buf, size_t cap)
{
    const char *e = res->sb.err.data ? res->sb.err.data : "";
    size_t len = strlen(e);
    /* The end of stderr is where Python and compilers put the cause. */
    const char *tail = len > 600 ? e + len - 600 : e;
    snprintf(buf, cap, "%s%s%s", res->line, *tail ? "; stderr: " : "", tail);
}
