/*
 * suggest.h - "did you mean": the closest of a set of known names to one a
 * user mistyped (a command, a flag, a workload, a JSON key).
 *
 * Closeness is the optimal-string-alignment distance (Levenshtein plus the
 * swap of two adjacent characters, the commonest typo). A name is offered
 * only when its distance is at most max(1, strlen(word) / 3), so short words
 * get one edit and nothing far off is ever suggested.
 *
 *   struct suggest s;
 *   suggest_init(&s, typed);
 *   for (each known name) suggest_consider(&s, name);
 *   if (s.best) ... "did you mean '%s'?", s.best
 *
 * `best` points at the caller's string; ties keep the first one considered.
 * No allocation; words longer than SUGGEST_MAX_LEN are never matched.
 */
#ifndef KILN_SUGGEST_H
#define KILN_SUGGEST_H

#include <stddef.h>

#define SUGGEST_MAX_LEN 64

struct suggest {
    const char *word; /* what the user typed */
    const char *best; /* the closest acceptable name so far, or NULL */
    size_t best_dist;
};

/* The optimal-string-alignment distance between a and b, or SIZE_MAX when
 * either is longer than SUGGEST_MAX_LEN. */
size_t suggest_distance(const char *a, const char *b);

void suggest_init(struct suggest *s, const char *word);

/* Takes `name` as s->best if it is within the threshold and closer than the
 * best so far. An exact match is not a suggestion and is skipped. */
void suggest_consider(struct suggest *s, const char *name);

/* The closest of the NULL-terminated `names` to `word`, or NULL. */
const char *suggest_among(const char *word, const char *const *names);

#endif
