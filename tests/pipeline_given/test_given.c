/* Unit tests of given.h: the directory reader of --input-cases (layouts,
 * seeds, order, digest, hostile trees) and the --reference loader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "given.h"
#include "npy.h"

/* x float32 [n] in, y int8 [n, 2] inout, out float32 [n]; c1 (n 2), p1 (n 4). */
static const char wl_json[] =
    "{\"name\": \"fz\", \"description\": \"t\", \"sizes\": [\"n\"],"
    " \"signature\": ["
    "  {\"name\": \"n\", \"kind\": \"scalar\", \"type\": \"int64\", \"expr\": \"n\"},"
    "  {\"name\": \"x\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"], "
    "\"role\": "
    "\"in\"},"
    "  {\"name\": \"y\", \"kind\": \"tensor\", \"dtype\": \"int8\", \"shape\": [\"n\", \"2\"], "
    "\"role\": \"inout\"},"
    "  {\"name\": \"out\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"], "
    "\"role\": \"out\"}],"
    " \"cases\": [{\"name\": \"c1\", \"kind\": \"correctness\", \"sizes\": {\"n\": 2}},"
    "            {\"name\": \"p1\", \"kind\": \"performance\", \"sizes\": {\"n\": 4}}],"
    " \"held_out\": [{\"name\": \"h\", \"sizes\": {\"n\": 3}}],"
    " \"tolerance\": {}, \"cost\": {\"bytes\": \"4*n\", \"flops\": \"n\"}, \"backends\": "
    "[\"cpu\"]}";

static struct workload *wl;
static char root[256], path[512];
static struct kiln_err err;

static const char *at(const char *rel)
{
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    return path;
}

/* rename(2) of two paths under root. */
static int move(const char *from, const char *to)
{
    char a[512], b[512];
    snprintf(a, sizeof(a), "%s/%s", root, from);
    snprintf(b, sizeof(b), "%s/%s", root, to);
    return rename(a, b);
}

static void mkdirs(const char *rel)
{
    assert_int_equal(fs_mkdirs(at(rel), &err), KILN_OK);
}

/* DIR/in/x.npy and DIR/in/y.npy for n, filled with `fill`. */
static void write_set(const char *dir, int n, int fill)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "%s/in", dir);
    mkdirs(rel);
    struct tensor t;
    int64_t shape[2] = {n, 2};
    assert_int_equal(tensor_alloc(&t, DT_FLOAT32, 1, shape, 1 << 20, &err), KILN_OK);
    memset(t.data, fill, t.nbytes);
    snprintf(rel, sizeof(rel), "%s/in/x.npy", dir);
    assert_int_equal(npy_write_file(&t, at(rel), &err), KILN_OK);
    tensor_free(&t);
    assert_int_equal(tensor_alloc(&t, DT_INT8, 2, shape, 1 << 20, &err), KILN_OK);
    memset(t.data, fill + 1, t.nbytes);
    snprintf(rel, sizeof(rel), "%s/in/y.npy", dir);
    assert_int_equal(npy_write_file(&t, at(rel), &err), KILN_OK);
    tensor_free(&t);
}

static int setup(void **state)
{
    (void)state;
    kiln_err_clear(&err);
    if (!wl && workload_parse_json(wl_json, sizeof(wl_json) - 1, "t", &wl, &err) != KILN_OK)
        return -1;
    return fs_make_tempdir("given", root, sizeof(root), &err) == KILN_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return fs_remove_tree(root, &err) == KILN_OK ? 0 : -1;
}

static enum kiln_rc open_at(const char *rel, int min_perf, struct given_inputs *g)
{
    kiln_err_clear(&err);
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    return given_inputs_open(p, wl, KILN_BACKEND_CPU, min_perf, root, g, &err);
}

/* The digest as given.h documents it, over files read back from disk. */
static void documented_digest(const char *dir, const char *const *sets, size_t n,
                              char hex[SHA256_HEX_LEN + 1])
{
    struct sha256_ctx all;
    sha256_init(&all);
    sha256_update(&all, "kiln-input-cases-v1\n", 20);
    for (size_t i = 0; i < n; i++) {
        const char *dash = strrchr(sets[i], '-');
        sha256_update(&all, sets[i], (size_t)(dash - sets[i]));
        sha256_update(&all, "", 1);
        sha256_update(&all, dash + 1, strlen(dash + 1) + 1);
        const char *files[] = {"x.npy", "y.npy"};
        for (int f = 0; f < 2; f++) {
            char rel[256], *data;
            size_t len;
            snprintf(rel, sizeof(rel), "%s/%s/in/%s", dir, sets[i], files[f]);
            assert_int_equal(fs_read_file(at(rel), 1 << 20, &data, &len, &err), KILN_OK);
            uint8_t d[SHA256_DIGEST_LEN], le[8];
            struct sha256_ctx c;
            sha256_init(&c);
            sha256_update(&c, data, len);
            sha256_final(&c, d);
            for (int b = 0; b < 8; b++)
                le[b] = (uint8_t)((uint64_t)len >> (8 * b));
            sha256_update(&all, files[f], strlen(files[f]) + 1);
            sha256_update(&all, le, 8);
            sha256_update(&all, d, sizeof(d));
            free(data);
        }
    }
    uint8_t d[SHA256_DIGEST_LEN];
    sha256_final(&all, d);
    sha256_hex(d, hex);
}

static void reads_sets_in_order_with_the_documented_digest(void **state)
{
    (void)state;
    write_set("d/p1-10", 4, 3);
    write_set("d/p1-9", 4, 4);
    write_set("d/c1-5", 2, 5);
    mkdirs("d/c1-5/ref");
    mkdirs("d/scripts");
    assert_int_equal(fs_write_atomic(at("d/c1-5/ok"), "weak 0\n", 7, &err), KILN_OK);
    struct given_inputs g;
    assert_int_equal(open_at("d", 1, &g), KILN_OK);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.sets[0].name, "c1-5");
    assert_string_equal(g.sets[1].name, "p1-9"); /* ascending seed, not name */
    assert_string_equal(g.sets[2].name, "p1-10");
    assert_true(g.sets[2].seed == 10);
    const char *order[] = {"c1-5", "p1-9", "p1-10"};
    char want[SHA256_HEX_LEN + 1];
    documented_digest("d", order, 3, want);
    assert_string_equal(g.sha256, want);
    /* Read back: the bytes on disk. */
    char *data;
    size_t len;
    assert_int_equal(given_inputs_read(&g, 1, 2, &data, &len, &err), KILN_OK);
    assert_true(len > 8 && ((unsigned char *)data)[len - 1] == 5);
    free(data);
    /* Exported and read again: the same digest; wrapped as a run: too. */
    assert_int_equal(given_inputs_export(&g, at("run/work/inputs/0123456789abcdef"), &err),
                     KILN_OK);
    given_inputs_free(&g);
    assert_string_equal(g.sha256, want); /* stays readable after free */
    assert_int_equal(open_at("run", 1, &g), KILN_OK);
    assert_string_equal(g.sha256, want);
    given_inputs_free(&g);
    /* More than 3 sets needed per performance case: a clear error. */
    assert_int_equal(open_at("d", 3, &g), KILN_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "case p1 has 2 input sets, this command needs 3"));
}

static void refuses_hostile_trees(void **state)
{
    (void)state;
    struct given_inputs g;
    write_set("a/c1-5", 2, 1);
    write_set("a/p1-6", 4, 1);
    assert_int_equal(open_at("a", 1, &g), KILN_OK);
    given_inputs_free(&g);
    /* A seed with a leading zero or of 2^53 is not a set name. */
    assert_int_equal(move("a/p1-6", "a/p1-06"), 0);
    assert_int_equal(open_at("a", 1, &g), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "p1-06: unexpected entry"));
    assert_int_equal(move("a/p1-06", "a/p1-9007199254740992"), 0);
    assert_int_equal(open_at("a", 1, &g), KILN_E_REJECTED);
    assert_int_equal(move("a/p1-9007199254740992", "a/p1-9007199254740991"), 0);
    assert_int_equal(open_at("a", 1, &g), KILN_OK);
    given_inputs_free(&g);
    /* A FIFO where an input belongs: refused, and nothing blocks. */
    assert_int_equal(unlink(at("a/c1-5/in/x.npy")), 0);
    assert_int_equal(mkfifo(at("a/c1-5/in/x.npy"), 0600), 0);
    assert_int_equal(open_at("a", 1, &g), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "c1-5/in/x.npy is not a regular file"));
    assert_int_equal(unlink(at("a/c1-5/in/x.npy")), 0);
    /* A symlink to a good file: refused. */
    char target[512];
    snprintf(target, sizeof(target), "%s", at("a/p1-9007199254740991/in/x.npy"));
    assert_int_equal(symlink(target, at("a/c1-5/in/x.npy")), 0);
    assert_int_equal(open_at("a", 1, &g), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "c1-5/in/x.npy is a symbolic link"));
    /* A held-out case's set: refused. */
    write_set("b/c1-5", 2, 1);
    write_set("b/p1-6", 4, 1);
    write_set("b/h-1", 3, 1);
    assert_int_equal(open_at("b", 1, &g), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "held-out inputs are always generated fresh"));
    /* Two candidate roots: the user must pick one. */
    write_set("two/aaaa/c1-5", 2, 1);
    write_set("two/bbbb/c1-5", 2, 1);
    assert_int_equal(open_at("two", 1, &g), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "holds 2 directories"));
}

static void a_file_changed_after_the_check_is_refused(void **state)
{
    (void)state;
    write_set("c/c1-5", 2, 1);
    write_set("c/p1-6", 4, 1);
    struct given_inputs g;
    assert_int_equal(open_at("c", 1, &g), KILN_OK);
    write_set("c/c1-5", 2, 7); /* same shape, other bytes */
    char *data;
    size_t len;
    kiln_err_clear(&err);
    assert_int_equal(given_inputs_read(&g, 0, 1, &data, &len, &err), KILN_E_REJECTED);
    assert_null(data);
    assert_non_null(strstr(err.msg, "changed after kiln checked it"));
    given_inputs_free(&g);
}

static void reference_loader_takes_only_a_python_script(void **state)
{
    (void)state;
    struct given_reference r;
    assert_int_equal(fs_write_atomic(at("ref.py"), "print(1)\n", 9, &err), KILN_OK);
    assert_int_equal(given_reference_load(at("ref.py"), &r, &err), KILN_OK);
    char want[SHA256_HEX_LEN + 1];
    sha256_hex_of("print(1)\n", 9, want);
    assert_string_equal(r.sha256, want);
    assert_int_equal(r.len, 9);
    given_reference_free(&r);
    kiln_err_clear(&err);
    assert_int_equal(given_reference_load(at("missing.py"), &r, &err), KILN_E_NOTFOUND);
    assert_int_equal(err.rc, KILN_E_NOTFOUND);
    mkdirs("dir.py");
    kiln_err_clear(&err);
    assert_int_equal(given_reference_load(at("dir.py"), &r, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "is a directory"));
    assert_int_equal(fs_write_atomic(at("out.npy"), "\x93NUMPY", 6, &err), KILN_OK);
    kiln_err_clear(&err);
    assert_int_equal(given_reference_load(at("out.npy"), &r, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "not a .py file"));
    assert_int_equal(fs_write_atomic(at("nul.py"), "a\0b", 3, &err), KILN_OK);
    kiln_err_clear(&err);
    assert_int_equal(given_reference_load(at("nul.py"), &r, &err), KILN_E_USAGE);
    assert_int_equal(fs_write_atomic(at("empty.py"), "", 0, &err), KILN_OK);
    kiln_err_clear(&err);
    assert_int_equal(given_reference_load(at("empty.py"), &r, &err), KILN_E_USAGE);
    size_t big = WL_MAX_SCRIPT + 1;
    char *text = malloc(big);
    assert_non_null(text);
    memset(text, '#', big);
    assert_int_equal(fs_write_atomic(at("big.py"), text, big, &err), KILN_OK);
    free(text);
    kiln_err_clear(&err);
    assert_int_equal(given_reference_load(at("big.py"), &r, &err), KILN_E_USAGE);
    assert_int_equal(err.rc, KILN_E_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reads_sets_in_order_with_the_documented_digest, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(refuses_hostile_trees, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_changed_after_the_check_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(reference_loader_takes_only_a_python_script, setup,
                                        teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    workload_free(wl);
    return rc;
}
