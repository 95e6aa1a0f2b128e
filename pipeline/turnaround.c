/* turnaround.c - the turnaround breakdown as JSON and as one line. */
#include "turnaround.h"

#include <stdio.h>
#include <string.h>

struct part {
    const char *name;
    double value;
    bool from_harness;
    bool aggregate; /* a sum of other parts (or total): in the JSON, not the line */
    bool session;   /* kiln eval's session work: left out of the line when 0 */
};

/* In the order the work happens; `other` is filled by the caller. */
static size_t parts(const struct eval_turnaround *t, struct part *p)
{
    size_t n = 0;
    p[n++] = (struct part){"compile", t->compile, false, false, false};
    p[n++] = (struct part){"inputs", t->inputs, false, false, true};
    p[n++] = (struct part){"start", t->start, false, false, true};
    p[n++] = (struct part){"baseline", t->baseline, false, false, true};
    p[n++] = (struct part){"sandbox", t->sandbox, false, false, false};
    p[n++] = (struct part){"context", t->context, true, false, false};
    p[n++] = (struct part){"layout", t->layout, true, false, false};
    p[n++] = (struct part){"read", t->read, true, false, false};
    p[n++] = (struct part){"upload", t->upload, true, false, false};
    p[n++] = (struct part){"correctness", t->correctness, true, false, false};
    p[n++] = (struct part){"timing", t->timing, true, false, false};
    p[n++] = (struct part){"outputs", t->outputs, true, false, false};
    p[n++] = (struct part){"harness", t->harness, true, true, false};
    p[n++] = (struct part){"tar", t->tar, false, false, false};
    p[n++] = (struct part){"ingest", t->ingest, false, false, false};
    p[n++] = (struct part){"run", t->run, false, true, false};
    p[n++] = (struct part){"verify", t->verify, false, false, false};
    p[n++] = (struct part){"held_out", t->held_out, false, false, true};
    p[n++] = (struct part){"other", 0, false, false, false};
    p[n++] = (struct part){"total", t->total, false, true, false};
    return n;
}

#define NPARTS 20

double eval_turnaround_other(const struct eval_turnaround *t)
{
    struct part p[NPARTS];
    size_t n = parts(t, p);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        if (!p[i].aggregate && !(p[i].from_harness && !t->harness_phases))
            sum += p[i].value;
    return t->total > sum ? t->total - sum : 0;
}

static size_t parts_with_other(const struct eval_turnaround *t, struct part *p)
{
    size_t n = parts(t, p);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].name, "other"))
            p[i].value = eval_turnaround_other(t);
    return n;
}

json_t *eval_turnaround_json(const struct eval_turnaround *t)
{
    struct part p[NPARTS];
    size_t n = parts_with_other(t, p);
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++) {
        json_t *v = p[i].from_harness && !t->harness_phases ? json_null() : json_real(p[i].value);
        if (json_object_set_new(o, p[i].name, v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

void eval_turnaround_line(const struct eval_turnaround *t, char *buf, size_t cap)
{
    struct part p[NPARTS];
    size_t n = parts_with_other(t, p), used = 0;
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++) {
        bool is_total = !strcmp(p[i].name, "total");
        if ((p[i].from_harness && !t->harness_phases) || (p[i].aggregate && !is_total) ||
            (p[i].session && p[i].value == 0))
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s %.3f s", used ? ", " : "", p[i].name,
                         p[i].value);
        if (w < 0)
            return;
        used += (size_t)w;
    }
}
