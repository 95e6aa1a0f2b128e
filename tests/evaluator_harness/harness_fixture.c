#include "harness_fixture.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "npy.h"

int fx_init(struct fx *f)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(f->root, sizeof(f->root), "%s/kiln-hx-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->root))
        return -1;
    snprintf(f->in, sizeof(f->in), "%s/in", f->root);
    snprintf(f->out, sizeof(f->out), "%s/out", f->root);
    if (mkdir(f->in, 0755) || mkdir(f->out, 0755))
        return -1;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void fx_cleanup(struct fx *f)
{
    if (f->root[0])
        nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void add_arg(struct harness_plan *p, const char *name, bool tensor, enum tensor_dtype dt,
                    enum harness_role role, enum harness_scalar type)
{
    struct harness_arg *g = &p->args[p->nargs++];
    snprintf(g->name, sizeof(g->name), "%s", name);
    g->is_tensor = tensor;
    g->dtype = dt;
    g->role = role;
    g->type = type;
}

static void add_case(struct harness_plan *p, const char *name, bool timed, long long n, int nsets)
{
    struct harness_case *c;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (harness_plan_add_case(p, &c, &err) != KILN_OK)
        abort();
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->timed = timed;
    c->value[0].i = n;
    c->value[1].f = 2.5;
    for (int a = 2; a < 5; a++) {
        c->ndim[a] = 1;
        c->shape[a][0] = n;
    }
    uint32_t blocks = (uint32_t)((n + 255) / 256);
    c->dims[0] = (struct harness_dims){{blocks, 1, 1}, {256, 1, 1}, 0};
    c->nsets = nsets;
    for (int s = 0; s < nsets; s++)
        snprintf(c->sets[s], sizeof(c->sets[s]), "s%d", s);
}

void fx_saxpy_plan(struct harness_plan *p, enum harness_backend backend)
{
    harness_plan_init(p);
    p->backend = backend;
    p->warmups = 4;
    p->iterations = 30;
    p->max_iterations = 30;
    add_arg(p, "n", false, DT_INVALID, HR_IN, HS_INT64);
    add_arg(p, "a", false, DT_INVALID, HR_IN, HS_FLOAT32);
    add_arg(p, "x", true, DT_FLOAT32, HR_IN, HS_INT32);
    add_arg(p, "y", true, DT_FLOAT32, HR_IN, HS_INT32);
    add_arg(p, "out", true, DT_FLOAT32, HR_OUT, HS_INT32);
    p->nlaunches = 1;
    snprintf(p->launches[0].kernel, sizeof(p->launches[0].kernel), "saxpy");
    p->launches[0].nargs = 5;
    for (int i = 0; i < 5; i++)
        p->launches[0].args[i] = i;
    add_case(p, "small", false, 1001, 1);
    add_case(p, "perf", true, 4099, 3);
}

float fx_input(const char *case_name, const char *set, char which, long long i)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = case_name; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    for (const char *s = set; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ (unsigned char)which) * 1099511628211ull;
    h ^= (uint64_t)i * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (float)((double)(h % 2000001) / 1000000.0 - 1.0);
}

int fx_write_inputs(struct fx *f, const struct harness_plan *p)
{
    char path[512];
    struct kiln_err err;
    kiln_err_clear(&err);
    snprintf(path, sizeof(path), "%s/cases", f->in);
    mkdir(path, 0755);
    for (int ci = 0; ci < p->ncases; ci++) {
        const struct harness_case *c = &p->cases[ci];
        snprintf(path, sizeof(path), "%s/cases/%s", f->in, c->name);
        mkdir(path, 0755);
        for (int s = 0; s < c->nsets; s++) {
            snprintf(path, sizeof(path), "%s/cases/%s/%s", f->in, c->name, c->sets[s]);
            mkdir(path, 0755);
            for (int a = 0; a < p->nargs; a++) {
                if (!p->args[a].is_tensor || p->args[a].role == HR_OUT)
                    continue;
                struct tensor t;
                if (tensor_alloc(&t, p->args[a].dtype, c->ndim[a], c->shape[a], 1u << 30, &err))
                    return -1;
                for (size_t i = 0; i < t.count; i++)
                    ((float *)t.data)[i] =
                        fx_input(c->name, c->sets[s], p->args[a].name[0], (long long)i);
                snprintf(path, sizeof(path), "%s/cases/%s/%s/%s.npy", f->in, c->name, c->sets[s],
                         p->args[a].name);
                enum kiln_rc rc = npy_write_file(&t, path, &err);
                tensor_free(&t);
                if (rc != KILN_OK)
                    return -1;
            }
        }
    }
    return 0;
}

int fx_run(struct fx *f, const char *harness, const struct harness_plan *p)
{
    return fx_run_limited(f, harness, p, 0);
}

int fx_run_limited(struct fx *f, const char *harness, const struct harness_plan *p,
                   unsigned seconds)
{
    char plan_path[512];
    char *text = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (harness_plan_write(p, &text, &err) != KILN_OK) {
        fprintf(stderr, "fx_run: %s\n", err.msg);
        return -1;
    }
    snprintf(plan_path, sizeof(plan_path), "%s/plan.json", f->in);
    FILE *fp = fopen(plan_path, "w");
    if (!fp) {
        free(text);
        return -1;
    }
    fputs(text, fp);
    fclose(fp);
    free(text);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *argv[] = {(char *)harness, plan_path, "--in", f->in, "--out", f->out, NULL};
        alarm(seconds); /* survives execv: SIGALRM ends a hung harness */
        execv(harness, argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return st;
}

json_t *fx_json(struct fx *f, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", f->out, name);
    json_error_t e;
    return json_load_file(path, JSON_REJECT_DUPLICATES, &e);
}

int fx_output(struct fx *f, const char *case_name, const char *set, const char *tensor,
              struct tensor *t)
{
    char path[512];
    struct kiln_err err;
    kiln_err_clear(&err);
    snprintf(path, sizeof(path), "%s/%s/%s/%s.npy", f->out, case_name, set, tensor);
    return npy_read_file(path, 1u << 30, t, &err) == KILN_OK ? 0 : -1;
}

json_t *fx_case_status(json_t *status, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "cases"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "case")), name) == 0)
            return c;
    }
    return NULL;
}

bool fx_log_contains(struct fx *f, const char *needle)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/log.txt", f->out);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return false;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}
