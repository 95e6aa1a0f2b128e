/* opt_pin.c - best.cu / best.c pinned to a configuration (opt_pin.h). */
#include "opt_pin.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "strbuf.h"

/* The start of line `n` (1-based) of `s`, or NULL past its end. */
static const char *line_start(const char *s, int n)
{
    for (int l = 1; l < n && s; l++) {
        s = strchr(s, '\n');
        s = s ? s + 1 : NULL;
    }
    return s;
}

/* Where the #defines go: the first line that is neither blank nor a `//`
 * comment (the file's description and its directives come first). */
static size_t defines_at(const char *s)
{
    const char *l = s;
    while (*l) {
        const char *p = l + strspn(l, " \t");
        if (*p != '\n' && strncmp(p, "//", 2) != 0)
            break;
        const char *nl = strchr(l, '\n');
        if (!nl)
            return strlen(s);
        l = nl + 1;
    }
    return (size_t)(l - s);
}

/* src with each directive's default replaced (what follows its last '='). */
static void rewrite_defaults(const char *src, const struct candidate *c, const int64_t *v,
                             struct strbuf *sb)
{
    const char *at = src;
    for (size_t t = 0; t < c->ntunables; t++) {
        const char *line = line_start(src, c->tunables[t].line);
        if (!line || line < at)
            continue;
        const char *eol = line + strcspn(line, "\n"), *eq = NULL;
        for (const char *q = line; q < eol; q++)
            if (*q == '=')
                eq = q;
        if (!eq)
            continue;
        strbuf_append(sb, at, (size_t)(eq - at));
        strbuf_printf(sb, "= %" PRId64, v[t]);
        at = eol;
    }
    strbuf_puts(sb, at);
}

char *opt_pin_config(const char *src, size_t len, enum kiln_backend b, const int64_t *config,
                     size_t ncfg)
{
    char *text = strndup(src, len);
    struct candidate *c = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    if (!text || candidate_parse(text, strlen(text), b, &c, &e) != KILN_OK || c->ntunables == 0) {
        candidate_free(c);
        return text;
    }
    int64_t v[CAND_MAX_TUNABLES];
    candidate_default_config(c, v);
    for (size_t t = 0; t < c->ntunables && t < ncfg; t++)
        v[t] = config[t];
    struct strbuf body, out;
    strbuf_init(&body);
    strbuf_init(&out);
    rewrite_defaults(text, c, v, &body);
    char *pinned = NULL;
    if (!body.oom && body.data) {
        size_t head = defines_at(body.data);
        strbuf_append(&out, body.data, head);
        strbuf_puts(&out, "/* The configuration kiln chose, so that this file compiles on its own "
                          "(kiln passes\n * the same values as -D flags: the directives' "
                          "defaults above). */\n");
        for (size_t t = 0; t < c->ntunables; t++)
            strbuf_printf(&out, "#ifndef %s\n#define %s %" PRId64 "\n#endif\n", c->tunables[t].name,
                          c->tunables[t].name, v[t]);
        strbuf_puts(&out, "\n");
        strbuf_puts(&out, body.data + head);
        if (strbuf_finish(&out, &pinned, &e) != KILN_OK)
            pinned = NULL;
    } else {
        strbuf_free(&out);
    }
    strbuf_free(&body);
    candidate_free(c);
    free(text);
    return pinned;
}
