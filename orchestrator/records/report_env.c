/* report_env.c - the report's environment block: where and how the run
 * was made (run.json, environment.json). */
#include <stdio.h>
#include <string.h>

#include "report_impl.h"

/* environment.json's keys, as the page names them. */
static const struct {
    const char *key, *name;
    int gpu; /* the GPU's: "unavailable" on the cpu backend, so not shown */
} env_keys[] = {
    {"gpu_model", "GPU", 1},
    {"gpu_uuid", "GPU UUID", 1},
    {"driver", "driver", 1},
    {"sm_clock_mhz", "SM clock (MHz)", 1},
    {"mem_clock_mhz", "memory clock (MHz)", 1},
    {"temperature_c", "temperature (\u00b0C)", 1},
    {"persistence_mode", "persistence mode", 1},
    {"host_kernel", "host kernel", 0},
    {"cuda_toolkit_kiln", "CUDA toolkit (kiln)", 0},
    {"nvcc", "nvcc", 0},
    {"cc", "cc", 0},
};

/* A value of environment.json: strings as they are, numbers printed. */
static void env_value(struct strbuf *sb, const json_t *v)
{
    if (json_is_string(v))
        rpt_text(sb, json_string_value(v), 300);
    else if (json_is_integer(v))
        strbuf_printf(sb, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        strbuf_printf(sb, "%g", json_real_value(v));
    else
        strbuf_puts(sb, "-");
}

/* Shell-safe characters: an argument made of them needs no quotes. */
static int plain_arg(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@%", *s))
            return 0;
    return 1;
}

/* run.json "command" as one line a shell would read back (POSIX quotes). */
static void command_line(struct strbuf *sb, const json_t *cmd)
{
    struct strbuf plain;
    strbuf_init(&plain);
    strbuf_puts(&plain, "kiln");
    for (size_t i = 0; i < json_array_size(cmd) && i < 256; i++) {
        const char *a = json_string_value(json_array_get(cmd, i));
        a = a ? a : "";
        strbuf_puts(&plain, " ");
        if (plain_arg(a)) {
            strbuf_puts(&plain, a);
            continue;
        }
        strbuf_puts(&plain, "'");
        for (const char *p = a; *p; p++)
            if (*p == '\'')
                strbuf_puts(&plain, "'\\''");
            else
                strbuf_append(&plain, p, 1);
        strbuf_puts(&plain, "'");
    }
    rpt_text(sb, plain.data ? plain.data : "", 4000);
    strbuf_free(&plain);
}

static void run_row(struct strbuf *sb, const char *name, const char *value)
{
    strbuf_printf(sb, "<tr><th>%s</th><td colspan=\"2\">", name);
    rpt_text(sb, *value ? value : "-", 300);
    strbuf_puts(sb, "</td></tr>\n");
}

void rpt_environment(struct strbuf *sb, const struct report_run *r)
{
    const json_t *run = r->run, *kiln = json_object_get(r->run, "kiln");
    const json_t *before = json_object_get(r->environment, "before_timing");
    const json_t *after = json_object_get(r->environment, "after_timing");
    strbuf_puts(sb, "<section id=\"environment\"><h2>Environment</h2>\n");
    if (!json_is_object(run) && !json_is_object(r->environment)) {
        strbuf_puts(sb, "<p>run.json and environment.json are missing from this record.</p>"
                        "</section>\n");
        return;
    }
    strbuf_puts(sb, "<table class=\"kv\"><colgroup><col style=\"width:15em\"><col><col>"
                    "</colgroup>\n<tr><th>command line</th><td colspan=\"2\" class=\"mono\">");
    if (json_is_array(json_object_get(run, "command")))
        command_line(sb, json_object_get(run, "command"));
    else
        strbuf_puts(sb, "-");
    strbuf_puts(sb, "</td></tr>\n");
    run_row(sb, "started", rpt_str(run, "started"));
    run_row(sb, "host", rpt_str(run, "host"));
    char t[160];
    snprintf(t, sizeof(t), "%.40s (git %.40s), built with CUDA %.40s", rpt_str(kiln, "version"),
             rpt_str(kiln, "revision"), rpt_str(kiln, "cuda"));
    run_row(sb, "kiln", t);
    /* run.json's "compiler" is the cuda backend's (--compiler, nvcc by
     * default); the cpu backend always compiles with cc. */
    const char *backend = rpt_str(run, "backend");
    snprintf(t, sizeof(t), "%.20s, compiler %.20s, proposer %.40s", backend,
             strcmp(backend, "cpu") == 0 ? "cc" : rpt_str(run, "compiler"),
             rpt_str(run, "proposer"));
    run_row(sb, "backend", t);
    const json_t *tr = json_object_get(run, "timed_runs");
    if (json_is_object(tr)) {
        snprintf(t, sizeof(t), "%lld warmups, %lld timed iterations per case",
                 (long long)json_integer_value(json_object_get(tr, "warmups")),
                 (long long)json_integer_value(json_object_get(tr, "iterations")));
        run_row(sb, "timing", t);
    }
    if (json_is_object(before) || json_is_object(after)) {
        strbuf_puts(sb, "<tr><th></th><th>before timing</th><th>after timing</th></tr>\n");
        int cpu = strcmp(backend, "cpu") == 0;
        if (cpu)
            strbuf_puts(sb,
                        "<tr><th>GPU</th><td colspan=\"2\">none used (cpu backend)</td></tr>\n");
        for (size_t i = 0; i < sizeof(env_keys) / sizeof(*env_keys); i++) {
            if (cpu && env_keys[i].gpu)
                continue;
            strbuf_printf(sb, "<tr><th>%s</th><td>", env_keys[i].name);
            env_value(sb, json_object_get(before, env_keys[i].key));
            strbuf_puts(sb, "</td><td>");
            env_value(sb, json_object_get(after, env_keys[i].key));
            strbuf_puts(sb, "</td></tr>\n");
        }
    }
    strbuf_puts(sb, "</table></section>\n");
}
