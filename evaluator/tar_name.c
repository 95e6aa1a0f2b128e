/* tar_name.c - canonical tar entry names and pattern matching for
 * tar_ingest (tar_name.h, tar_ingest.h). */
#include "tar_name.h"

#include <stdio.h>
#include <string.h>

static int name_char_ok(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
}

/* NULL when `name` is canonical, else why not (into `why`). A directory
 * name ends in exactly one '/'; a file name never does. */
const char *tar_name_problem(const char *name, int is_dir, char *why, size_t why_size)
{
    size_t len = strlen(name);
    if (len == 0)
        return "empty name";
    if (len > TAR_NAME_MAX)
        return "name longer than 255 bytes";
    if (name[0] == '/')
        return "absolute path";
    if (is_dir) {
        if (name[len - 1] != '/')
            return "directory name without its trailing '/'";
        len--;
    } else if (name[len - 1] == '/') {
        return "file name with a trailing '/'";
    }
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && name[i] != '/') {
            if (!name_char_ok((unsigned char)name[i])) {
                snprintf(why, why_size, "byte 0x%02x is not allowed in names (use [A-Za-z0-9._-])",
                         (unsigned char)name[i]);
                return why;
            }
            continue;
        }
        size_t clen = i - start;
        if (clen == 0)
            return "empty path component ('//' or a leading or doubled '/')";
        if (clen == 2 && name[start] == '.' && name[start + 1] == '.')
            return "parent-directory component";
        if (clen == 1 && name[start] == '.')
            return "'.' component (names are not normalized)";
        if (name[start] == '.')
            return "component starting with '.'";
        start = i + 1;
    }
    return NULL;
}

/* One pattern component against one name component; '*' takes one or
 * more name characters. Patterns are trusted and short, so plain
 * recursion is fine. */
static int component_matches(const char *p, size_t plen, const char *s, size_t slen)
{
    if (plen == 0)
        return slen == 0;
    if (p[0] == '*') {
        for (size_t take = 1; take <= slen; take++) {
            if (!name_char_ok((unsigned char)s[take - 1]))
                return 0;
            if (component_matches(p + 1, plen - 1, s + take, slen - take))
                return 1;
        }
        return 0;
    }
    return slen > 0 && p[0] == s[0] && component_matches(p + 1, plen - 1, s + 1, slen - 1);
}

/* Matches the first components of `name` (nlen bytes, no trailing '/')
 * against `pattern`. *full is set when both ran out together. */
static int prefix_matches(const char *pattern, const char *name, size_t nlen, int *full)
{
    const char *p = pattern, *s = name, *send = name + nlen;
    *full = 0;
    for (;;) {
        const char *pe = strchr(p, '/');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p);
        const char *se = memchr(s, '/', (size_t)(send - s));
        size_t sl = se ? (size_t)(se - s) : (size_t)(send - s);
        if (!component_matches(p, pl, s, sl))
            return 0;
        if (!se) {
            *full = pe == NULL;
            return 1;
        }
        if (!pe)
            return 0; /* the name has more components than the pattern */
        p = pe + 1;
        s = se + 1;
    }
}

int tar_name_matches(const char *pattern, const char *name)
{
    int full;
    return prefix_matches(pattern, name, strlen(name), &full) && full;
}

int tar_name_allowed(const struct tar_rules *rules, const char *name)
{
    for (size_t i = 0; i < rules->n_patterns; i++) {
        if (tar_name_matches(rules->patterns[i], name))
            return 1;
    }
    return 0;
}

/* A directory "a/b/" is expected when "a/b" is a strict leading part of a
 * pattern. */
int tar_dir_allowed(const struct tar_rules *rules, const char *name)
{
    size_t len = strlen(name) - 1; /* drop the trailing '/' */
    for (size_t i = 0; i < rules->n_patterns; i++) {
        int full;
        if (prefix_matches(rules->patterns[i], name, len, &full) && !full)
            return 1;
    }
    return 0;
}

int tar_name_in_stream(const struct tar_rules *rules, const char *name)
{
    for (size_t i = 0; i < rules->n_in_stream; i++) {
        if (tar_name_matches(rules->in_stream[i], name))
            return 1;
    }
    return 0;
}
