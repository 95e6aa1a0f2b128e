#include "suggest.h"

#include <stdint.h>
#include <string.h>

size_t suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN)
        return SIZE_MAX;
    /* Three rows of the dynamic-programming table: the swap rule looks two
     * rows back. */
    size_t rows[3][SUGGEST_MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (prev[j - 1] + cost < d)
                d = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

void suggest_init(struct suggest *s, const char *word)
{
    s->word = word;
    s->best = NULL;
    s->best_dist = SIZE_MAX;
}

void suggest_consider(struct suggest *s, const char *name)
{
    size_t len = strlen(s->word);
    size_t limit = len / 3 > 1 ? len / 3 : 1;
    size_t d = suggest_distance(s->word, name);
    if (d == 0 || d > limit || d >= s->best_dist)
        return;
    s->best = name;
    s->best_dist = d;
}

const char *suggest_among(const char *word, const char *const *names)
{
    struct suggest s;
    suggest_init(&s, word);
    for (const char *const *n = names; n && *n; n++)
        suggest_consider(&s, *n);
    return s.best;
}
