/* eval_junit.c - one evaluation as JUnit XML (eval_junit.h). */
#include <stdbool.h>
#include <string.h>

#include "eval_junit.h"
#include "kiln_version.h"
#include "strbuf.h"
#include "text.h"

/* Text from untrusted sources (details quote the compiler and the
 * candidate): control characters escaped first, since XML 1.0 cannot hold
 * most of them even as character references. */
static void put_text(struct strbuf *sb, const char *s)
{
    char esc[VERDICT_SUMMARY_MAX * 4];
    strbuf_put_escaped(sb, text_escape_control(esc, sizeof(esc), s ? s : ""));
}

/* A status the candidate reached by running to the end and being wrong is
 * a failure; one that stopped it from being judged is an error. */
static bool status_is_failure(enum verdict_status s)
{
    return s == VERDICT_WRONG_ANSWER || s == VERDICT_IMPOSSIBLE_TIMING ||
           s == VERDICT_INCONSISTENT_TIMING;
}

struct suite_count {
    size_t tests, failures, errors;
    double time_s;
    bool detail_written; /* the verdict's detail went into one element's body */
};

/* A message attribute: the first line of `text`, at most 200 characters
 * (attributes lose newlines; the whole text goes in the element's body). */
static void put_message(struct strbuf *sb, const char *text)
{
    char line[201];
    size_t n = strcspn(text, "\n");
    snprintf(line, sizeof(line), "%.*s", (int)(n < 200 ? n : 200), text);
    put_text(sb, line);
}

/* One <testcase>: `problem` NULL for a pass; `body` (NULL: none) the whole
 * text under the failure or error element. */
static void put_case(struct strbuf *sb, const char *workload, const char *name, double time_s,
                     bool failure, const char *problem, const char *body, struct suite_count *n)
{
    strbuf_puts(sb, "    <testcase classname=\"");
    put_text(sb, workload);
    strbuf_puts(sb, "\" name=\"");
    put_text(sb, name);
    strbuf_printf(sb, "\" time=\"%.6f\"", time_s);
    n->tests++;
    n->time_s += time_s;
    if (!problem) {
        strbuf_puts(sb, "/>\n");
        return;
    }
    const char *tag = failure ? "failure" : "error";
    *(failure ? &n->failures : &n->errors) += 1;
    strbuf_printf(sb, ">\n      <%s message=\"", tag);
    put_message(sb, problem);
    if (body && body[0]) {
        strbuf_puts(sb, "\">");
        put_text(sb, body);
        strbuf_printf(sb, "</%s>\n    </testcase>\n", tag);
    } else {
        strbuf_puts(sb, "\"/>\n    </testcase>\n");
    }
}

/* The verdict's detail (it may quote the whole compiler output) goes into
 * the body of the first element that needs it, and nowhere else. */
static const char *detail_once(const struct verdict *v, struct suite_count *n)
{
    if (n->detail_written || !v->detail[0])
        return NULL;
    n->detail_written = true;
    return v->detail;
}

/* A visible case: every input set the verdict has of it must be correct;
 * one the verdict does not have was not reached (compile error, crash, an
 * earlier wrong answer). */
static void visible_case(struct strbuf *sb, const char *workload, const char *name,
                         const struct verdict *v, struct suite_count *n)
{
    double time_s = 0;
    const struct verdict_case *bad = NULL;
    size_t seen = 0;
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (strcmp(c->name, name) != 0)
            continue;
        seen++;
        if (c->timed) /* the measured runs: n samples of mean ms */
            time_s += c->timing.mean * (double)c->timing.n / 1000.0;
        if (!c->correct && !bad)
            bad = c;
    }
    char msg[VERDICT_DETAIL_MAX + 64];
    bool failure = status_is_failure(v->status);
    if (bad) {
        snprintf(msg, sizeof(msg), "set %d: %s", bad->set, bad->detail[0] ? bad->detail : "wrong");
        put_case(sb, workload, name, time_s, failure, msg, msg, n);
    } else if (!seen && v->status != VERDICT_PASS) {
        /* Not reached: after a wrong answer (the evaluation stops at the
         * first, correctness cases first) a failure like the held-out
         * check's; after a crash or a compile error an error. */
        const char *body = detail_once(v, n);
        snprintf(msg, sizeof(msg), "not run: %s%s", verdict_status_name(v->status),
                 body ? "" : " (the detail is in the first element that says why)");
        put_case(sb, workload, name, time_s, failure, body ? body : msg, body, n);
    } else {
        put_case(sb, workload, name, time_s, false, NULL, NULL, n);
    }
}

/* The measured runs of every timed case of `v`, in seconds. */
static double measured_s(const struct verdict *v)
{
    double s = 0;
    for (size_t i = 0; i < v->ncases; i++)
        if (v->cases[i].timed)
            s += v->cases[i].timing.mean * (double)v->cases[i].timing.n / 1000.0;
    return s;
}

/* The held-out check: its own verdict when it ran, else why it did not. */
static void held_out_case(struct strbuf *sb, const char *workload, const struct verdict *v,
                          const struct eval_outcome *held, struct suite_count *n)
{
    char msg[VERDICT_DETAIL_MAX + 64];
    if (held && held->v.status == VERDICT_PASS) {
        put_case(sb, workload, "held_out", measured_s(&held->v), false, NULL, NULL, n);
        return;
    }
    if (held) {
        snprintf(msg, sizeof(msg), "%s: %s", verdict_status_name(held->v.status), held->v.detail);
        put_case(sb, workload, "held_out", measured_s(&held->v), status_is_failure(held->v.status),
                 msg, msg, n);
        return;
    }
    const char *body = detail_once(v, n);
    snprintf(msg, sizeof(msg), "not run: the visible cases did not pass (%s)",
             verdict_status_name(v->status));
    put_case(sb, workload, "held_out", 0, status_is_failure(v->status), msg, body, n);
}

static void put_property(struct strbuf *sb, const char *name, const char *value)
{
    strbuf_printf(sb, "      <property name=\"%s\" value=\"", name);
    put_text(sb, value);
    strbuf_puts(sb, "\"/>\n");
}

enum kiln_rc eval_junit_text(const struct workload *wl, const struct eval_junit_info *info,
                             const struct eval_outcome *visible, const struct eval_outcome *held,
                             char **out, struct kiln_err *err)
{
    *out = NULL;
    const struct verdict *v = &visible->v;
    struct suite_count n = {0};
    struct strbuf cases;
    strbuf_init(&cases);
    for (size_t i = 0; i < wl->ncases; i++)
        if (wl->cases[i].backends & info->backend)
            visible_case(&cases, wl->name, wl->cases[i].name, v, &n);
    held_out_case(&cases, wl->name, v, held, &n);

    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_puts(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    /* The suites' time is the evaluation's wall time (inputs, start,
     * baseline, compile, runs, held-out check); a case's, its measured runs. */
    double wall = info->wall_s > 0 ? info->wall_s : n.time_s;
    strbuf_printf(&sb,
                  "<testsuites name=\"kiln eval\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
                  "time=\"%.6f\">\n",
                  n.tests, n.failures, n.errors, wall);
    strbuf_puts(&sb, "  <testsuite name=\"");
    put_text(&sb, wl->name);
    strbuf_printf(&sb, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" time=\"%.6f\">\n", n.tests,
                  n.failures, n.errors, wall);
    strbuf_puts(&sb, "    <properties>\n");
    put_property(&sb, "candidate", info->candidate);
    put_property(&sb, "candidate_sha256", info->candidate_sha256);
    put_property(&sb, "workload_sha256", wl->hash);
    put_property(&sb, "backend", kiln_backend_name(info->backend));
    put_property(&sb, "device", info->device);
    put_property(&sb, "kiln_version", KILN_VERSION " (git " KILN_GIT_REV ")");
    put_property(&sb, "status", verdict_status_name(v->status));
    strbuf_puts(&sb, "    </properties>\n");
    strbuf_append(&sb, cases.data ? cases.data : "", cases.len);
    sb.oom |= cases.oom;
    strbuf_free(&cases);
    strbuf_puts(&sb, "    <system-out>");
    put_text(&sb, v->summary);
    strbuf_puts(&sb, "</system-out>\n  </testsuite>\n</testsuites>\n");
    return strbuf_finish(&sb, out, err);
}
