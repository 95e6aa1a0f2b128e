#include "pyfind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

static const char probe[] = "import sys, numpy\n"
                            "print(sys.executable)\n"
                            "print(sys.prefix)\n"
                            "print(sys.base_prefix)\n"
                            "print(sys.version.split()[0])\n"
                            "print(numpy.__version__)\n";

/* Splits the next line of *s into dst; returns 0 when a non-empty line was there. */
static int take_line(char **s, char *dst, size_t cap)
{
    size_t len = strcspn(*s, "\n");
    if (len == 0 || len >= cap)
        return -1;
    memcpy(dst, *s, len);
    dst[len] = '\0';
    *s += len + ((*s)[len] == '\n');
    return 0;
}

static int try_python(const char *path, struct pyfind *out)
{
    if (access(path, X_OK) != 0)
        return -1;
    char buf[8192];
    int st = -1;
    struct kiln_err e;
    kiln_err_clear(&e);
    char *argv[] = {(char *)path, "-I", "-c", (char *)probe, NULL};
    if (proc_capture(argv, buf, sizeof(buf), 20000, &st, &e) != KILN_OK || st != 0)
        return -1;
    char *s = buf;
    snprintf(out->path, sizeof(out->path), "%s", path);
    if (take_line(&s, out->executable, sizeof(out->executable)) ||
        take_line(&s, out->prefix, sizeof(out->prefix)) ||
        take_line(&s, out->base_prefix, sizeof(out->base_prefix)) ||
        take_line(&s, out->python_version, sizeof(out->python_version)) ||
        take_line(&s, out->numpy_version, sizeof(out->numpy_version)))
        return -1;
    return 0;
}

enum kiln_rc pyfind_numpy(struct pyfind *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    const char *env = getenv("KILN_PYTHON");
    if (env && *env) {
        if (try_python(env, out) == 0)
            return KILN_OK;
        return kiln_fail(err, KILN_E_NOTFOUND, "KILN_PYTHON=%s does not run or cannot import numpy",
                         env);
    }
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof(dirs), "%s", path ? path : "");
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char cand[PATH_MAX];
        snprintf(cand, sizeof(cand), "%s/python3", d);
        if (try_python(cand, out) == 0)
            return KILN_OK;
    }
    if (try_python("/usr/bin/python3", out) == 0)
        return KILN_OK;
    return kiln_fail(err, KILN_E_NOTFOUND,
                     "no python3 that imports numpy (tried KILN_PYTHON, "
                     "PATH, /usr/bin/python3)");
}
