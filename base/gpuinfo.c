#include "gpuinfo.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies the value after "Key:" in `text` (trimmed) into `out`. */
static int field(const char *text, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            const char *v = line + klen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t len = strcspn(v, "\n");
            while (len && isspace((unsigned char)v[len - 1]))
                len--;
            if (len >= cap)
                len = cap - 1;
            memcpy(out, v, len);
            out[len] = '\0';
            return 0;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

static int read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

static int by_bus(const void *a, const void *b)
{
    return strcmp(((const struct gpuinfo *)a)->bus_id, ((const struct gpuinfo *)b)->bus_id);
}

enum kiln_rc gpuinfo_list(const char *proc_root, struct gpuinfo *gpus, size_t *n,
                          struct kiln_err *err)
{
    char dir[512];
    *n = 0;
    snprintf(dir, sizeof(dir), "%s/driver/nvidia/gpus", proc_root);
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? KILN_OK : kiln_fail_errno(err, KILN_E_IO, "opening %s", dir);
    struct dirent *de;
    enum kiln_rc rc = KILN_OK;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (*n == GPUINFO_MAX) {
            rc = kiln_fail(err, KILN_E_LIMIT, "more than %d GPUs under %s", GPUINFO_MAX, dir);
            break;
        }
        char path[1024], text[4096], minor[32];
        snprintf(path, sizeof(path), "%s/%s/information", dir, de->d_name);
        if (read_small(path, text, sizeof(text)) != 0) {
            rc = kiln_fail_errno(err, KILN_E_IO, "reading %s", path);
            break;
        }
        struct gpuinfo *g = &gpus[*n];
        memset(g, 0, sizeof(*g));
        snprintf(g->bus_id, sizeof(g->bus_id), "%s", de->d_name);
        if (field(text, "Model", g->model, sizeof(g->model)) != 0)
            snprintf(g->model, sizeof(g->model), "unknown model");
        field(text, "GPU UUID", g->uuid, sizeof(g->uuid));
        char *end = NULL;
        if (field(text, "Device Minor", minor, sizeof(minor)) != 0 ||
            (g->minor = (int)strtol(minor, &end, 10), *end != '\0') || g->minor < 0 ||
            g->minor > 254) {
            rc = kiln_fail(err, KILN_E_PARSE, "%s: no valid 'Device Minor' line", path);
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (rc != KILN_OK) {
        *n = 0;
        return rc;
    }
    qsort(gpus, *n, sizeof(*gpus), by_bus);
    return KILN_OK;
}

enum kiln_rc gpuinfo_driver_version(const char *proc_root, char *out, size_t cap,
                                    struct kiln_err *err)
{
    char path[512], text[1024];
    snprintf(path, sizeof(path), "%s/driver/nvidia/version", proc_root);
    if (read_small(path, text, sizeof(text)) != 0)
        return kiln_fail_errno(err, KILN_E_NOTFOUND, "no NVIDIA driver (%s)", path);
    /* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release ..." */
    const char *p = strstr(text, "  ");
    for (const char *s = text; *s && *s != '\n'; s++) {
        if (isdigit((unsigned char)s[0]) && s > text && s[-1] == ' ' && strchr(s, '.') &&
            strchr(s, '.') < strchr(s, ' ')) {
            p = s;
            break;
        }
    }
    if (!p)
        return kiln_fail(err, KILN_E_PARSE, "%s: no version number", path);
    while (*p == ' ')
        p++;
    size_t len = strcspn(p, " \n");
    if (len >= cap)
        len = cap - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return KILN_OK;
}
