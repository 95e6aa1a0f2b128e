/*
 * slurm_array.c - the Slurm runner's batches (slurm.h): steps queued by
 * submit go out as one job array at the first collect; every task of the
 * runner is then polled with one squeue call per round.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "clock.h"
#include "slurm_impl.h"

#define ARRAY_POLL_MIN_MS   100
#define ARRAY_POLL_MAX_MS   2000
#define ARRAY_GONE_GRACE_S  10.0 /* a task neither squeue nor sacct knows */
#define ARRAY_MAX_TASKS     1000 /* tickets out at once */
#define ARRAY_DEFAULT_LIMIT 8

struct slurm_task {
    bool live;   /* a ticket not yet collected or dropped */
    bool queued; /* in kiln's queue, not yet sent to Slurm */
    bool ended;  /* its end is known: `end`, `state` */
    char what[96];
    char jobdir[PATH_MAX];
    long long timeout_ms, tar_bytes;
    bool gpu;
    long job;  /* the array's job id, or the plain job's after a resubmission */
    int index; /* task index in the array; -1 for a plain job */
    int attempt;
    enum slurm_end end;
    char state[32], node[128];
    double gone_since;
};

static void task_id(const struct slurm_task *t, char *buf, size_t cap)
{
    if (t->index >= 0)
        snprintf(buf, cap, "%ld_%d", t->job, t->index);
    else
        snprintf(buf, cap, "%ld", t->job);
}

/* Forgets the table once no ticket is out: no state outlives a batch. */
static void release_if_idle(struct slurm_runner *s)
{
    for (size_t i = 0; i < s->n_tasks; i++)
        if (s->tasks[i].live)
            return;
    free(s->tasks);
    s->tasks = NULL;
    s->n_tasks = 0;
}

enum kiln_rc slurm_batch_submit(void *ctx, const char *what, const struct sandbox_spec *spec,
                                int gpu, long *ticket, struct kiln_err *err)
{
    struct slurm_runner *s = ctx;
    if (s->n_tasks >= ARRAY_MAX_TASKS)
        return kiln_fail(err, KILN_E_LIMIT,
                         "more than %d Slurm steps out at once: collect some first",
                         ARRAY_MAX_TASKS);
    struct slurm_task *grown = realloc(s->tasks, (s->n_tasks + 1) * sizeof(*grown));
    if (!grown)
        return kiln_fail(err, KILN_E_NOMEM, "the Slurm batch");
    s->tasks = grown;
    struct slurm_task *t = &s->tasks[s->n_tasks];
    memset(t, 0, sizeof(*t));
    enum kiln_rc rc = slurm_make_jobdir(s, spec, gpu, t->jobdir, sizeof(t->jobdir), err);
    if (rc != KILN_OK) {
        release_if_idle(s);
        return rc;
    }
    snprintf(t->what, sizeof(t->what), "%s", what);
    t->timeout_ms = spec->limits.timeout_ms;
    t->tar_bytes = spec->limits.tar_bytes;
    t->gpu = gpu >= 0;
    t->index = -1;
    t->live = t->queued = true;
    *ticket = (long)s->n_tasks++;
    return KILN_OK;
}

/* Sends every queued task as one array: SPOOL/<name>-<pid>-<seq>-XXXXXX/<i>
 * links to task i's job directory, which the node finds by
 * SLURM_ARRAY_TASK_ID. */
static enum kiln_rc flush(struct slurm_runner *s, struct kiln_err *err)
{
    size_t k = 0;
    long long timeout_ms = 0;
    bool gpu = false;
    for (size_t i = 0; i < s->n_tasks; i++)
        if (s->tasks[i].queued) {
            k++;
            /* One time limit for the array: its longest step's. */
            long long ms = s->tasks[i].timeout_ms > 0 ? s->tasks[i].timeout_ms : 300000;
            timeout_ms = ms > timeout_ms ? ms : timeout_ms;
            gpu = gpu || s->tasks[i].gpu;
        }
    if (k == 0)
        return KILN_OK;
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/%s-%ld-%u-XXXXXX", s->spool,
             s->cfg.job_name ? s->cfg.job_name : "kiln", (long)getpid(), ++s->seq);
    if (!mkdtemp(dir))
        return kiln_fail_errno(err, KILN_E_IO, "spool: making a batch directory in %s", s->spool);
    if (chmod(dir, 0755) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "spool: chmod %s", dir);
    size_t n = 0;
    for (size_t i = 0; i < s->n_tasks; i++) {
        if (!s->tasks[i].queued)
            continue;
        char link_path[PATH_MAX + 16];
        snprintf(link_path, sizeof(link_path), "%s/%zu", dir, n);
        if (symlink(s->tasks[i].jobdir, link_path) != 0)
            return kiln_fail_errno(err, KILN_E_IO, "spool: %s", link_path);
        s->tasks[i].index = (int)n++;
    }
    unsigned limit = s->cfg.array_limit ? s->cfg.array_limit : ARRAY_DEFAULT_LIMIT;
    char array[48], output[PATH_MAX + 32], wrap[2 * PATH_MAX + 96];
    snprintf(array, sizeof(array), "0-%zu%%%u", k - 1, limit);
    snprintf(output, sizeof(output), "%s/%%a/slurm.out", dir);
    snprintf(wrap, sizeof(wrap), "exec '%s' sandbox-exec '%s'/\"$SLURM_ARRAY_TASK_ID\"", s->kiln,
             dir);
    long id = 0;
    enum kiln_rc rc = slurm_sbatch(s, timeout_ms, gpu, output, wrap, array, &id, err);
    if (rc != KILN_OK)
        return rc;
    for (size_t i = 0; i < s->n_tasks; i++)
        if (s->tasks[i].queued) {
            s->tasks[i].queued = false;
            s->tasks[i].job = id;
        }
    if (!s->cfg.quiet)
        fprintf(stderr, "kiln: slurm array job %ld submitted: %zu steps, at most %u at once\n", id,
                k, limit);
    return KILN_OK;
}

static struct slurm_task *find(struct slurm_runner *s, const char *id)
{
    char *end = NULL;
    long job = strtol(id, &end, 10);
    int index = -1;
    if (end && *end == '_')
        index = (int)strtol(end + 1, &end, 10);
    if (!end || *end)
        return NULL; /* "42_[3-7]": pending tasks squeue did not split */
    for (size_t i = 0; i < s->n_tasks; i++) {
        struct slurm_task *t = &s->tasks[i];
        if (t->live && !t->queued && !t->ended && t->job == job && t->index == index)
            return t;
    }
    return NULL;
}

/* Records "ID STATE NODE" lines (squeue -o '%i %T %N', or sacct -P's
 * "ID|STATE|NODE") for the tasks they name; marks them seen. */
static void take_states(struct slurm_runner *s, char *out, char sep, bool *seen)
{
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char id[64] = "", state[32] = "", node[128] = "";
        int got = sep == '|' ? sscanf(line, "%63[^|]|%31[^|]|%127s", id, state, node)
                             : sscanf(line, "%63s %31s %127s", id, state, node);
        if (got < 2)
            continue;
        state[strcspn(state, " ")] = '\0'; /* sacct: "CANCELLED by 0" */
        struct slurm_task *t = find(s, id);
        if (!t)
            continue;
        seen[t - s->tasks] = true;
        snprintf(t->state, sizeof(t->state), "%s", state);
        if (node[0] && strcmp(node, "(null)") != 0 && strcmp(node, "None") != 0)
            snprintf(t->node, sizeof(t->node), "%s", node);
        t->gone_since = 0;
        if ((t->end = slurm_state_end(state)) != SLURM_END_RUNNING)
            t->ended = true;
    }
}

/* The ids of the tasks still out, comma-separated (whole jobs: one array
 * id covers its tasks). */
static size_t job_list(struct slurm_runner *s, char *buf, size_t cap)
{
    size_t o = 0, n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n_tasks; i++) {
        struct slurm_task *t = &s->tasks[i];
        if (!t->live || t->queued || t->ended)
            continue;
        char id[32];
        snprintf(id, sizeof(id), "%ld", t->job);
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++)
            dup = s->tasks[j].live && !s->tasks[j].queued && !s->tasks[j].ended &&
                  s->tasks[j].job == t->job;
        if (dup || o + strlen(id) + 2 >= cap)
            continue;
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "," : "", id);
        n++;
    }
    return n;
}

/* One poll round for every task out: one squeue call, sacct for those it
 * no longer lists, result.json for those neither knows. */
static enum kiln_rc poll_round(struct slurm_runner *s, struct kiln_err *err)
{
    char ids[4096];
    if (job_list(s, ids, sizeof(ids)) == 0)
        return KILN_OK;
    size_t cap = 1u << 16;
    char *out = malloc(cap);
    bool *seen = calloc(s->n_tasks, sizeof(*seen));
    if (!out || !seen) {
        free(out);
        free(seen);
        return kiln_fail(err, KILN_E_NOMEM, "polling Slurm");
    }
    struct kiln_err e;
    kiln_err_clear(&e);
    char *sq[] = {"squeue", "-h", "-r", "-t", "all", "-j", ids, "-o", "%i %T %N", NULL};
    if (slurm_cmd(sq, out, cap, &e) == KILN_OK)
        take_states(s, out, ' ', seen);
    bool missing = false;
    for (size_t i = 0; i < s->n_tasks; i++)
        missing =
            missing || (s->tasks[i].live && !s->tasks[i].queued && !s->tasks[i].ended && !seen[i]);
    kiln_err_clear(&e);
    char *sa[] = {"sacct", "-n", "-P", "-X", "-j", ids, "-o", "JobID,State,NodeList", NULL};
    if (missing && slurm_cmd(sa, out, cap, &e) == KILN_OK)
        take_states(s, out, '|', seen);
    for (size_t i = 0; i < s->n_tasks; i++) {
        struct slurm_task *t = &s->tasks[i];
        if (!t->live || t->queued || t->ended || seen[i])
            continue;
        /* Finished long ago, or the controller lost it: the result decides. */
        char result[PATH_MAX + 16];
        snprintf(result, sizeof(result), "%s/result.json", t->jobdir);
        if (access(result, F_OK) == 0) {
            snprintf(t->state, sizeof(t->state), "COMPLETED");
            t->end = SLURM_END_DONE;
            t->ended = true;
        } else if (t->gone_since == 0) {
            t->gone_since = clock_mono_s();
        } else if (clock_mono_s() - t->gone_since > ARRAY_GONE_GRACE_S) {
            snprintf(t->state, sizeof(t->state), "UNKNOWN");
            t->end = SLURM_END_LOST;
            t->ended = true;
        }
    }
    free(out);
    free(seen);
    return KILN_OK;
}

/* A task that ended without a result (node failure, preemption, killed) is
 * sent again once, alone, into the same job directory. */
static enum kiln_rc maybe_resubmit(struct slurm_runner *s, struct slurm_task *t,
                                   struct kiln_err *err)
{
    char result[PATH_MAX + 16];
    snprintf(result, sizeof(result), "%s/result.json", t->jobdir);
    bool have_result = access(result, F_OK) == 0;
    /* Ended without a result, or cancelled by someone other than kiln (an
     * admin's scancel, a signal sent with --full): as a plain job would be. */
    bool cancelling = s->cfg.cancel && *s->cfg.cancel;
    if ((t->end == SLURM_END_DONE && !have_result) ||
        (t->end == SLURM_END_CANCELLED && !cancelling))
        t->end = SLURM_END_LOST;
    if (t->end != SLURM_END_LOST || t->attempt > 0)
        return KILN_OK;
    char id[48], tail[320];
    task_id(t, id, sizeof(id));
    slurm_output_tail(t->jobdir, tail, sizeof(tail));
    if (!s->cfg.quiet)
        fprintf(stderr,
                "kiln: %s: slurm task %s ended %s on %s before it finished%s%s; resubmitting "
                "once\n",
                t->what, id, t->state, t->node[0] ? t->node : "no node", tail[0] ? ": " : "", tail);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/stream.tar", t->jobdir);
    (void)unlink(path);
    snprintf(path, sizeof(path), "%s/slurm.out", t->jobdir);
    (void)unlink(path);
    long job = 0;
    enum kiln_rc rc = slurm_submit_one(s, t->timeout_ms, t->gpu, t->jobdir, &job, err);
    if (rc != KILN_OK)
        return rc;
    t->attempt++;
    t->job = job;
    t->index = -1;
    t->ended = false;
    t->end = SLURM_END_RUNNING;
    t->state[0] = '\0';
    t->gone_since = 0;
    return KILN_OK;
}

/* Cancels every task still out: the whole arrays and the plain jobs. */
static void cancel_all(struct slurm_runner *s)
{
    char ids[4096];
    if (job_list(s, ids, sizeof(ids)) > 0)
        for (char *save = NULL, *id = strtok_r(ids, ",", &save); id;
             id = strtok_r(NULL, ",", &save))
            slurm_cancel(id);
    for (size_t i = 0; i < s->n_tasks; i++) {
        struct slurm_task *t = &s->tasks[i];
        if (t->live && !t->ended) {
            t->queued = false;
            t->ended = true;
            t->end = SLURM_END_CANCELLED;
            snprintf(t->state, sizeof(t->state), "CANCELLED");
        }
    }
}

/* What the ended task gives: its result and stream, or a named failure. */
static enum kiln_rc finish(struct slurm_task *t, int tar_fd, struct sandbox_result *res,
                           char *where, size_t where_cap, struct sbnode_device *dev,
                           struct kiln_err *err)
{
    char id[48], tail[320];
    task_id(t, id, sizeof(id));
    const char *node = t->node[0] ? t->node : "no node";
    if (t->end == SLURM_END_CANCELLED)
        return kiln_fail(err, KILN_E_CANCELLED, "slurm task %s cancelled (%s)", id, t->state);
    if (t->end == SLURM_END_TIMEOUT)
        return kiln_fail(err, KILN_E_TIMEOUT, "slurm task %s hit its time limit (%s on %s)", id,
                         t->state, node);
    if (t->end == SLURM_END_DONE) {
        char node_where[200] = "";
        enum kiln_rc rc = slurm_fetch(t->tar_bytes, t->jobdir, tar_fd, res, node_where,
                                      sizeof(node_where), dev, err);
        if (rc == KILN_OK)
            snprintf(where, where_cap, "slurm job %s, %s", id, node_where);
        return rc;
    }
    slurm_output_tail(t->jobdir, tail, sizeof(tail));
    return kiln_fail(err, KILN_E_CHILD,
                     "slurm task %s ended %s on %s without a result, after one resubmission%s%s",
                     id, t->state, node, tail[0] ? ": " : "", tail);
}

enum kiln_rc slurm_batch_collect(void *ctx, long ticket, int tar_fd, struct sandbox_result *res,
                                 char *where, size_t where_cap, struct sbnode_device *dev,
                                 struct kiln_err *err)
{
    struct slurm_runner *s = ctx;
    if (ticket < 0 || (size_t)ticket >= s->n_tasks || !s->tasks[ticket].live)
        return kiln_fail(err, KILN_E_INTERNAL, "slurm: no batch ticket %ld", ticket);
    enum kiln_rc rc = flush(s, err);
    int delay = ARRAY_POLL_MIN_MS;
    while (rc == KILN_OK) {
        struct slurm_task *t = &s->tasks[ticket];
        if (s->cfg.cancel && *s->cfg.cancel) {
            cancel_all(s);
            break;
        }
        if (t->ended && (rc = maybe_resubmit(s, t, err)) == KILN_OK && t->ended)
            break;
        if (rc == KILN_OK && (rc = poll_round(s, err)) == KILN_OK) {
            /* The others' losses are resubmitted now, not when collected. */
            for (size_t i = 0; rc == KILN_OK && i < s->n_tasks; i++)
                if ((long)i != ticket && s->tasks[i].live && s->tasks[i].ended)
                    rc = maybe_resubmit(s, &s->tasks[i], err);
            if (rc == KILN_OK && !s->tasks[ticket].ended) {
                clock_sleep_ms(delay);
                delay = delay * 2 > ARRAY_POLL_MAX_MS ? ARRAY_POLL_MAX_MS : delay * 2;
            }
        }
    }
    if (rc == KILN_OK)
        rc = finish(&s->tasks[ticket], tar_fd, res, where, where_cap, dev, err);
    s->tasks[ticket].live = false;
    release_if_idle(s);
    return rc;
}

void slurm_batch_drop(void *ctx, long ticket)
{
    struct slurm_runner *s = ctx;
    if (ticket < 0 || (size_t)ticket >= s->n_tasks || !s->tasks[ticket].live)
        return;
    struct slurm_task *t = &s->tasks[ticket];
    if (!t->queued && !t->ended) {
        char id[48];
        task_id(t, id, sizeof(id));
        slurm_cancel(id);
    }
    t->live = false;
    release_if_idle(s);
}
