/* best.cu / best.c compile on their own (opt_pin.h, issue 35 item 9): the
 * chosen values are written as #defines, not only as the directives'
 * defaults; the file still parses as a candidate with those defaults, and
 * kiln's -D flags still decide when kiln compiles it. The test compiles
 * the written files with cc (and nvcc -cubin where the toolkit is). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "candidate.h"
#include "fsutil.h"
#include "opt_pin.h"

static char *read_workload_file(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", getenv("KILN_DATA_DIR"), rel);
    char *data = NULL;
    size_t len = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(fs_read_file(path, 1u << 20, &data, &len, &e), KILN_OK);
    return data;
}

/* Writes text to a fresh file under $TMPDIR named NAME; its path in out. */
static void write_temp(const char *text, const char *name, char *out, size_t cap)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/kiln-pin.XXXXXX", tmp);
    assert_non_null(mkdtemp(dir));
    snprintf(out, cap, "%s/%s", dir, name);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Runs `CMD 'PATH'` through the shell: its exit status. */
static int sh(const char *cmd, const char *path)
{
    char line[8192];
    snprintf(line, sizeof(line), "%s '%s'", cmd, path);
    return system(line);
}

static void remove_temp(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    (void)sh("rm -rf", dir);
}

static void best_c_compiles_alone(void **state)
{
    (void)state;
    char *src = read_workload_file("workloads/saxpy/kernel.c");
    const int64_t won[] = {8};
    char *best = opt_pin_config(src, strlen(src), KILN_BACKEND_CPU, won, 1);
    assert_non_null(best);
    assert_non_null(strstr(best, "// kiln: tunable UNROLL {1, 2, 4, 8} = 8\n"));
    assert_non_null(strstr(best, "#ifndef UNROLL\n#define UNROLL 8\n#endif\n"));
    /* Still a candidate, its defaults the values that won. */
    struct candidate *c = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    assert_int_equal(candidate_parse(best, strlen(best), KILN_BACKEND_CPU, &c, &e), KILN_OK);
    assert_int_equal(c->tunables[0].def, 8);
    candidate_free(c);
    char path[4200];
    write_temp(best, "best.c", path, sizeof(path));
    /* On its own, and with kiln's -D flag (no redefinition warning). */
    assert_int_equal(sh("cc -std=c11 -Wall -Werror -c -o /dev/null", path), 0);
    assert_int_equal(sh("cc -std=c11 -Wall -Werror -DUNROLL=2 -c -o /dev/null", path), 0);
    /* The file as it was does not: what the pinning fixes. */
    char orig[4200];
    write_temp(src, "kernel.c", orig, sizeof(orig));
    assert_int_not_equal(sh("exec 2>/dev/null; cc -std=c11 -c -o /dev/null", orig), 0);
    remove_temp(path);
    remove_temp(orig);
    free(best);
    free(src);
}

/* The starting kernel kept as best (no configuration): its defaults. */
static void start_kept_pins_defaults(void **state)
{
    (void)state;
    char *src = read_workload_file("workloads/saxpy/kernel.cu");
    char *best = opt_pin_config(src, strlen(src), KILN_BACKEND_CUDA, NULL, 0);
    assert_non_null(best);
    assert_non_null(strstr(best, "#define BLOCK 256\n"));
    assert_non_null(strstr(best, "#define VEC 1\n"));
    /* The #defines come after the directives, before the code. */
    assert_true(strstr(best, "#ifndef BLOCK") > strstr(best, "// kiln: launch saxpy"));
    assert_true(strstr(best, "#ifndef BLOCK") < strstr(best, "extern \"C\""));
    const char *nvcc =
        access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : NULL;
    if (nvcc) {
        char path[4200];
        write_temp(best, "best.cu", path, sizeof(path));
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "%s -cubin -arch=sm_90 -o /dev/null", nvcc);
        assert_int_equal(sh(cmd, path), 0);
        remove_temp(path);
    } else {
        fprintf(stderr, "note: no nvcc at /usr/local/cuda/bin: best.cu not compiled\n");
    }
    free(best);
    free(src);
}

/* Nothing to pin: the source unchanged; a broken one too. */
static void nothing_to_pin(void **state)
{
    (void)state;
    const char *plain = "// kiln: launch k args(n)\nvoid k(long long n) { (void)n; }\n";
    char *out = opt_pin_config(plain, strlen(plain), KILN_BACKEND_CPU, NULL, 0);
    assert_string_equal(out, plain);
    free(out);
    const char *bad = "// kiln: tunable B {1, 2} = 3\n// kiln: launch k args(n)\n";
    out = opt_pin_config(bad, strlen(bad), KILN_BACKEND_CPU, NULL, 0);
    assert_string_equal(out, bad);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(best_c_compiles_alone),
        cmocka_unit_test(start_kept_pins_defaults),
        cmocka_unit_test(nothing_to_pin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
