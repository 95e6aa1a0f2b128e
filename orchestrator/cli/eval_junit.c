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
    size_t tests, failures, errors, skipped;
    double time_s;
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

/* What became of one <testcase>. */
enum case_outcome { CASE_PASS, CASE_FAILURE, CASE_ERROR, CASE_SKIPPED };

/* One <testcase>: `message` NULL for a pass; `body` (NULL: none) the whole
 * text under the failure, error or skipped element. */
static void put_case(struct strbuf *sb, const char *workload, const char *name, double time_s,
                     enum case_outcome how, const char *message, const char *body,
                     struct suite_count *n)
{
    strbuf_puts(sb, "    <testcase classname=\"");
    put_text(sb, workload);
    strbuf_puts(sb, "\" name=\"");
    put_text(sb, name);
    strbuf_printf(sb, "\" time=\"%.6f\"", time_s);
    n->tests++;
    n->time_s += time_s;
    if (how == CASE_PASS || !message) {
        strbuf_puts(sb, "/>\n");
        return;
    }
    static const char *const tags[] = {"", "failure", "error", "skipped"};
    size_t *count[] = {NULL, &n->failures, &n->errors, &n->skipped};
    const char *tag = tags[how];
    *count[how] += 1;
    strbuf_printf(sb, ">\n      <%s message=\"", tag);
    put_message(sb, message);
    if (body && body[0]) {
        strbuf_puts(sb, "\">");
        put_text(sb, body);
        strbuf_printf(sb, "</%s>\n    </testcase>\n", tag);
    } else {
        strbuf_puts(sb, "\"/>\n    </testcase>\n");
    }
}

/* A wrong result is a failure; a candidate that could not be judged to the
 * end (compile error, crash, timeout, limit, sandbox) is an error. */
static enum case_outcome problem_of(enum verdict_status s)
{
    return status_is_failure(s) ? CASE_FAILURE : CASE_ERROR;
}

/* A set the harness never ran: evaluate.c's mark_unreported gives it one
 * "-" output saying "skipped" (the harness stopped before it) or "no
 * status reported" (it died first). The case that stopped it says why. */
static bool set_not_run(const struct verdict_case *c)
{
    return !c->correct && c->noutputs == 1 && !strcmp(c->outputs[0].name, "-") &&
           (!strcmp(c->detail, "skipped") || !strcmp(c->detail, "no status reported"));
}

/* The verdict's detail when it is about case `name` ("case n1 (set 0):
 * ...", "case big: signal 11 ..."), else NULL. */
static const char *detail_about(const struct verdict *v, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(v->detail, "case ", 5) || strncmp(v->detail + 5, name, n) ||
        (v->detail[5 + n] != ':' && v->detail[5 + n] != ' '))
        return NULL;
    return v->detail;
}

/* What the run of one visible case gave: the sets it has in the verdict,
 * those that ran, the first wrong one, the measured time. */
struct case_sets {
    size_t seen, ran;
    const struct verdict_case *bad;
    double time_s;
};

static struct case_sets sets_of(const struct verdict *v, const char *name)
{
    struct case_sets cs = {0};
    for (size_t i = 0; i < v->ncases; i++) {
        const struct verdict_case *c = &v->cases[i];
        if (strcmp(c->name, name) != 0)
            continue;
        cs.seen++;
        if (set_not_run(c))
            continue;
        cs.ran++;
        if (c->timed) /* the measured runs: n samples of mean ms */
            cs.time_s += c->timing.mean * (double)c->timing.n / 1000.0;
        if (!c->correct && !cs.bad)
            cs.bad = c;
    }
    return cs;
}

/* Why the cases that did not run did not: where the evaluation stopped. */
static void stopped_at(const struct eval_outcome *o, char *dst, size_t cap)
{
    const struct verdict *v = &o->v;
    char who[VERDICT_NAME_MAX + 8] = "";
    if (!strncmp(v->detail, "case ", 5))
        snprintf(who, sizeof(who), "%.*s", (int)strcspn(v->detail + 5, " :"), v->detail + 5);
    if (who[0])
        snprintf(dst, cap, "not run: the evaluation stopped at case %s (%s)", who,
                 verdict_status_name(v->status));
    else
        snprintf(dst, cap, "not run: the evaluation stopped at stage %s (%s)", o->stage,
                 verdict_status_name(v->status));
}

/* A visible case: passed when every set it ran is correct; its own
 * failure or error when one is not (the verdict's detail when it names
 * this case, else the set's); skipped when none of it ran. Returns true
 * when it carries the verdict's problem. */
static bool visible_case(struct strbuf *sb, const char *workload, const char *name,
                         const struct eval_outcome *o, struct suite_count *n)
{
    const struct verdict *v = &o->v;
    struct case_sets cs = sets_of(v, name);
    char msg[VERDICT_DETAIL_MAX + 64];
    if (cs.bad) {
        const char *own = detail_about(v, name);
        if (!own) {
            snprintf(msg, sizeof(msg), "case %s (set %d): %s", name, cs.bad->set,
                     cs.bad->detail[0] ? cs.bad->detail : "wrong");
            own = msg;
        }
        put_case(sb, workload, name, cs.time_s, problem_of(v->status), own, own, n);
        return true;
    }
    if (!cs.ran && v->status != VERDICT_PASS) {
        stopped_at(o, msg, sizeof(msg));
        put_case(sb, workload, name, 0, CASE_SKIPPED, msg, NULL, n);
        return false;
    }
    put_case(sb, workload, name, cs.time_s, CASE_PASS, NULL, NULL, n);
    return false;
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

/* The held-out check: its own verdict when it ran, else skipped and why. */
static void held_out_case(struct strbuf *sb, const char *workload, const struct verdict *v,
                          const struct eval_outcome *held, struct suite_count *n)
{
    char msg[VERDICT_DETAIL_MAX + 64];
    if (held && held->v.status == VERDICT_PASS) {
        put_case(sb, workload, "held_out", measured_s(&held->v), CASE_PASS, NULL, NULL, n);
        return;
    }
    if (held) {
        snprintf(msg, sizeof(msg), "%s: %s", verdict_status_name(held->v.status), held->v.detail);
        put_case(sb, workload, "held_out", measured_s(&held->v), problem_of(held->v.status), msg,
                 msg, n);
        return;
    }
    snprintf(msg, sizeof(msg), "not run: the visible cases did not pass (%s)",
             verdict_status_name(v->status));
    put_case(sb, workload, "held_out", 0, CASE_SKIPPED, msg, NULL, n);
}

/* A problem no case carries (a compile error: nothing ran; a harness that
 * died before any case; impossible timing of cases that were all correct)
 * gets a <testcase> of its own, named after the stage that ended it, with
 * the whole detail (all of the compiler's output) as its body. */
static void stage_case(struct strbuf *sb, const char *workload, const struct eval_outcome *o,
                       struct suite_count *n)
{
    char msg[VERDICT_DETAIL_MAX + 64];
    snprintf(msg, sizeof(msg), "%s: %s", verdict_status_name(o->v.status), o->v.detail);
    put_case(sb, workload, o->stage[0] ? o->stage : "evaluation", 0, problem_of(o->v.status), msg,
             o->v.detail, n);
}

/* Every <testcase>: the stage's when no case carries the problem, each
 * visible case of the backend, and the held-out check. */
static void put_cases(struct strbuf *sb, const struct workload *wl,
                      const struct eval_junit_info *info, const struct eval_outcome *visible,
                      const struct eval_outcome *held, struct suite_count *n)
{
    struct strbuf cases;
    strbuf_init(&cases);
    bool carried = false;
    for (size_t i = 0; i < wl->ncases; i++)
        if (wl->cases[i].backends & info->backend)
            carried |= visible_case(&cases, wl->name, wl->cases[i].name, visible, n);
    held_out_case(&cases, wl->name, &visible->v, held, n);
    carried |= held && held->v.status != VERDICT_PASS;
    if (visible->v.status != VERDICT_PASS && !carried)
        stage_case(sb, wl->name, visible, n);
    strbuf_append(sb, cases.data ? cases.data : "", cases.len);
    sb->oom |= cases.oom;
    strbuf_free(&cases);
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
    put_cases(&cases, wl, info, visible, held, &n);

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
    strbuf_printf(&sb,
                  "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" "
                  "time=\"%.6f\">\n",
                  n.tests, n.failures, n.errors, n.skipped, wall);
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
