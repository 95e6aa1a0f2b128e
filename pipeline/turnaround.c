/* turnaround.c - the turnaround breakdown as JSON and as one line. */
#include "turnaround.h"

#include <stdio.h>

struct part {
    const char *name;
    double value;
    bool from_harness;
    bool aggregate; /* a sum of other parts: in the JSON, not the line */
};

/* In the order the work happens. */
static size_t parts(const struct eval_turnaround *t, struct part *p)
{
    size_t n = 0;
    p[n++] = (struct part){"compile", t->compile, false, false};
    p[n++] = (struct part){"sandbox", t->sandbox, false, false};
    p[n++] = (struct part){"context", t->context, true, false};
    p[n++] = (struct part){"layout", t->layout, true, false};
    p[n++] = (struct part){"read", t->read, true, false};
    p[n++] = (struct part){"upload", t->upload, true, false};
    p[n++] = (struct part){"correctness", t->correctness, true, false};
    p[n++] = (struct part){"timing", t->timing, true, false};
    p[n++] = (struct part){"outputs", t->outputs, true, false};
    p[n++] = (struct part){"harness", t->harness, true, true};
    p[n++] = (struct part){"tar", t->tar, false, false};
    p[n++] = (struct part){"ingest", t->ingest, false, false};
    p[n++] = (struct part){"run", t->run, false, true};
    p[n++] = (struct part){"verify", t->verify, false, false};
    p[n++] = (struct part){"total", t->total, false, false};
    return n;
}

#define NPARTS 15

json_t *eval_turnaround_json(const struct eval_turnaround *t)
{
    struct part p[NPARTS];
    size_t n = parts(t, p);
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
    size_t n = parts(t, p), used = 0;
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++) {
        if ((p[i].from_harness && !t->harness_phases) || p[i].aggregate)
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s %.3f s", used ? ", " : "", p[i].name,
                         p[i].value);
        if (w < 0)
            return;
        used += (size_t)w;
    }
}
