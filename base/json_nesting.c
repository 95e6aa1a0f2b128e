/*
 * json_nesting.c - see json_nesting.h.
 */
#include "json_nesting.h"

bool json_nesting_ok(const char *s, size_t len, int max, size_t *at)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max) {
                if (at)
                    *at = i;
                return false;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return true;
}
