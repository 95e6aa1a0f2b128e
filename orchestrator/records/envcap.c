#include "envcap.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "gpuinfo.h"
#include "kiln_version.h"
#include "proc.h"

#define UNAVAILABLE  "unavailable"
#define NOT_RECORDED "not recorded"

static const char *const KEYS[] = {"gpu_model",         "gpu_uuid",      "driver",
                                   "cuda_toolkit_kiln", "nvcc",          "cc",
                                   "sm_clock_mhz",      "mem_clock_mhz", "temperature_c",
                                   "persistence_mode",  "host_kernel",   "host_load"};
#define NKEYS (sizeof(KEYS) / sizeof(KEYS[0]))

/* First line of a tool's output that contains `want` (or the first line),
 * trimmed; UNAVAILABLE when it does not run or exits non-zero. */
static void tool_line(char *const argv[], const char *want, char *out, size_t cap)
{
    char buf[4096];
    int status = -1;
    struct kiln_err e;
    kiln_err_clear(&e);
    snprintf(out, cap, UNAVAILABLE);
    if (proc_capture(argv, buf, sizeof(buf), 10000, &status, &e) != KILN_OK || status != 0)
        return;
    const char *line = want ? strstr(buf, want) : buf;
    if (!line)
        line = buf;
    while (line > buf && line[-1] != '\n')
        line--;
    size_t n = strcspn(line, "\r\n");
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    if (n > 0)
        snprintf(out, cap, "%.*s", (int)n, line);
}

/* One CSV field (0-based) of nvidia-smi's answer, trimmed. */
static void csv_field(const char *csv, int k, char *out, size_t cap)
{
    snprintf(out, cap, UNAVAILABLE);
    const char *p = csv;
    for (int i = 0; i < k && p; i++) {
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    if (!p)
        return;
    while (*p == ' ')
        p++;
    size_t n = strcspn(p, ",\r\n");
    while (n > 0 && p[n - 1] == ' ')
        n--;
    if (n > 0 && strncmp(p, "[N/A]", 5) && strncmp(p, "N/A", 3))
        snprintf(out, cap, "%.*s", (int)n, p);
}

/* "1.52 0.98 0.60 on 2 CPUs": /proc/loadavg's 1, 5 and 15 minute
 * averages and the CPUs online, so a reader can weigh them. */
static void host_load(char *out, size_t cap)
{
    double l1, l5, l15;
    FILE *f = fopen("/proc/loadavg", "re");
    int got = f ? fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) : 0;
    if (f)
        fclose(f);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (got == 3)
        snprintf(out, cap, "%.2f %.2f %.2f on %ld CPUs", l1, l5, l15, cpus);
    else
        snprintf(out, cap, UNAVAILABLE);
}

enum kiln_rc envcap_now(int gpu, json_t **out, struct kiln_err *err)
{
    json_t *o = json_object();
    if (!o)
        return kiln_fail(err, KILN_E_NOMEM, "environment: out of memory");
    char v[256];
    struct utsname u;
    json_object_set_new(o, "host_kernel", json_string(uname(&u) == 0 ? u.release : UNAVAILABLE));
    json_object_set_new(o, "cuda_toolkit_kiln", json_string(KILN_CUDA_VERSION));
    host_load(v, sizeof(v));
    json_object_set_new(o, "host_load", json_string(v));
    char *nvcc[] = {"nvcc", "--version", NULL};
    tool_line(nvcc, "release", v, sizeof(v));
    json_object_set_new(o, "nvcc", json_string(v));
    char *cc[] = {"cc", "--version", NULL};
    tool_line(cc, NULL, v, sizeof(v));
    json_object_set_new(o, "cc", json_string(v));
    struct gpuinfo g[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    bool have = gpu >= 0 && gpuinfo_list("/proc", g, &n, &e) == KILN_OK && (size_t)gpu < n;
    json_object_set_new(o, "gpu_model", json_string(have ? g[gpu].model : UNAVAILABLE));
    json_object_set_new(o, "gpu_uuid",
                        json_string(have && g[gpu].uuid[0] ? g[gpu].uuid : UNAVAILABLE));
    char drv[64] = UNAVAILABLE;
    if (gpuinfo_driver_version("/proc", drv, sizeof(drv), &e) != KILN_OK)
        snprintf(drv, sizeof(drv), UNAVAILABLE);
    json_object_set_new(o, "driver", json_string(drv));
    /* Clocks, temperature, persistence: nvidia-smi for the GPU's UUID (else
     * its bus id): nvidia-smi's own numbering may differ from kiln's PCI order. */
    char csv[1024] = "";
    if (have) {
        char id[96], q[] = "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,persistence_mode";
        snprintf(id, sizeof(id), "--id=%s", g[gpu].uuid[0] ? g[gpu].uuid : g[gpu].bus_id);
        char *smi[] = {"nvidia-smi", id, q, "--format=csv,noheader,nounits", NULL};
        tool_line(smi, NULL, csv, sizeof(csv));
    }
    static const char *const smi_keys[] = {"sm_clock_mhz", "mem_clock_mhz", "temperature_c",
                                           "persistence_mode"};
    for (int k = 0; k < 4; k++) {
        if (have && strcmp(csv, UNAVAILABLE))
            csv_field(csv, k, v, sizeof(v));
        else
            snprintf(v, sizeof(v), UNAVAILABLE);
        json_object_set_new(o, smi_keys[k], json_string(v));
    }
    *out = o;
    return KILN_OK;
}

static const char *str_at(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

json_t *envcap_from_run(const json_t *run, const json_t *env)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < NKEYS; i++) {
        const char *v = env ? str_at(env, KEYS[i]) : NULL;
        json_object_set_new(o, KEYS[i], json_string(v ? v : NOT_RECORDED));
    }
    const json_t *gpu = json_object_get(run, "gpu");
    const char *m = str_at(gpu, "model"), *u = str_at(gpu, "uuid"), *d = str_at(gpu, "driver"),
               *cuda = str_at(json_object_get(run, "kiln"), "cuda");
    if (o && m && m[0])
        json_object_set_new(o, "gpu_model", json_string(m));
    if (o && u && u[0])
        json_object_set_new(o, "gpu_uuid", json_string(u));
    if (o && d && d[0])
        json_object_set_new(o, "driver", json_string(d));
    if (o && cuda)
        json_object_set_new(o, "cuda_toolkit_kiln", json_string(cuda));
    return o;
}

static bool known(const char *v)
{
    return v && v[0] && strcmp(v, UNAVAILABLE) && strcmp(v, NOT_RECORDED);
}

size_t envcap_drift(const json_t *a, const json_t *b, char *out, size_t cap)
{
    /* The UUID tells which board; drift is about what changes timing. */
    static const char *const matter[] = {"gpu_model",         "gpu_uuid",      "driver",
                                         "cuda_toolkit_kiln", "nvcc",          "cc",
                                         "sm_clock_mhz",      "mem_clock_mhz", "persistence_mode"};
    size_t n = 0, off = 0;
    if (cap)
        out[0] = '\0';
    for (size_t i = 0; i < sizeof(matter) / sizeof(matter[0]); i++) {
        const char *x = str_at(a, matter[i]), *y = str_at(b, matter[i]);
        if (!known(x) || !known(y) || !strcmp(x, y))
            continue;
        n++;
        if (off < cap)
            off += (size_t)snprintf(out + off, cap - off, "  %s: %s -> %s\n", matter[i], x, y);
    }
    return n;
}
