/* manifest.c: strict parsing of untrusted MANIFEST text, the comparison
 * that names changed, missing, extra and renamed files, the `next` line a
 * crash may leave, and manifest_announce folding a completed write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "manifest.h"

#define H_A "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" /* "abc" */
#define H_E "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" /* "" */

static enum kiln_rc parse(const char *text, struct manifest *m, struct kiln_err *err)
{
    kiln_err_clear(err);
    return manifest_parse(text, strlen(text), m, err);
}

static void parses_and_round_trips(void **state)
{
    (void)state;
    const char *t = "kiln-manifest 1\n" H_A " 3 a/b.txt\n" H_E " 0 c\nnext " H_A " 3 c\n";
    struct manifest m;
    struct kiln_err err;
    assert_int_equal(parse(t, &m, &err), KILN_OK);
    assert_int_equal(m.n, 2);
    assert_string_equal(m.e[0].path, "a/b.txt");
    assert_int_equal(m.e[0].size, 3);
    assert_string_equal(m.next.path, "c");
    char *text;
    size_t len;
    assert_int_equal(manifest_format(&m, &text, &len, &err), KILN_OK);
    assert_int_equal(len, strlen(t));
    assert_memory_equal(text, t, len);
    free(text);
    assert_non_null(manifest_find(&m, "c"));
    assert_null(manifest_find(&m, "d"));
    manifest_free(&m);
}

static void rejects_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "kiln-manifest 2\n",
        "kiln-manifest 1\n" H_A " 3 a\n" H_A " 3 a\n",          /* duplicate */
        "kiln-manifest 1\n" H_A " 3 b\n" H_A " 3 a\n",          /* order */
        "kiln-manifest 1\n" H_A " 3 ../a\n",                    /* escapes */
        "kiln-manifest 1\n" H_A " 3 /a\n",                      /* absolute */
        "kiln-manifest 1\n" H_A " 3 a//b\n",                    /* empty component */
        "kiln-manifest 1\n" H_A " 3 .hidden\n",                 /* hidden */
        "kiln-manifest 1\n" H_A " 3 a b\n",                     /* space in name */
        "kiln-manifest 1\n" H_A " 03 a\n",                      /* leading zero */
        "kiln-manifest 1\n" H_A " 99999999999999999999999 a\n", /* size overflow */
        "kiln-manifest 1\n" H_A " -3 a\n",                      /* sign */
        "kiln-manifest 1\nBA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD 3 a\n",
        "kiln-manifest 1\n" H_A " 3 a",                          /* cut short */
        "kiln-manifest 1\nnext " H_A " 3 a\nnext " H_A " 3 b\n", /* two next */
        "kiln-manifest 1\nnext " H_A " 3 a\n" H_A " 3 b\n",      /* entry after next */
        "kiln-manifest 1\n" H_A "  3 a\n",                       /* two spaces */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct manifest m;
        struct kiln_err err;
        enum kiln_rc rc = parse(bad[i], &m, &err);
        if (rc == KILN_OK)
            fail_msg("accepted bad MANIFEST %zu: %s", i, bad[i]);
        assert_int_equal(m.n, 0);
        assert_null(m.e);
    }
    /* A NUL inside a path. */
    char t[] = "kiln-manifest 1\n" H_A " 3 aXb\n";
    *strchr(t + 20, 'X') = '\0';
    struct manifest m;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_not_equal(manifest_parse(t, sizeof(t) - 1, &m, &err), KILN_OK);
}

static void build(struct manifest *m, const char *const *spec)
{
    memset(m, 0, sizeof(*m));
    struct kiln_err err;
    for (; *spec; spec += 2)
        assert_int_equal(manifest_put(m, spec[0], spec[1], 3, &err), KILN_OK);
}

static void compare_names_each_problem(void **state)
{
    (void)state;
    static const char *const want_s[] = {"a", H_A, "b", H_A "", "c", H_E, "d", H_E, NULL};
    /* a unchanged; b changed; c renamed to c2; d missing; e extra. */
    static const char *const have_s[] = {"a", H_A, "b", H_E, "c2", H_E, "e", H_A, NULL};
    struct manifest want, have;
    build(&want, want_s);
    build(&have, have_s);
    /* d and c have the same digest: the first missing one with it is the rename. */
    struct manifest_diff d;
    manifest_compare(&want, &have, NULL, NULL, &d);
    assert_int_equal(d.n_problems, 4);
    assert_non_null(strstr(d.report, "changed: b"));
    assert_non_null(strstr(d.report, "renamed: c -> c2"));
    assert_non_null(strstr(d.report, "renamed: d -> c2") ? d.report
                                                         : strstr(d.report, "missing: d"));
    assert_non_null(strstr(d.report, "extra: e"));
    manifest_free(&want);
    manifest_free(&have);
}

static bool allow_e(const char *path, void *ctx)
{
    (void)ctx;
    return !strcmp(path, "e");
}

static void next_line_and_tolerance(void **state)
{
    (void)state;
    static const char *const want_s[] = {"a", H_A, NULL};
    static const char *const have_new[] = {"a", H_E, "e", H_E, NULL};
    struct manifest want, have;
    build(&want, want_s);
    build(&have, have_new);
    /* a announced with H_E: both its old and its new digest are intact. */
    want.next.path = strdup("a");
    memcpy(want.next.sha256, H_E, sizeof(want.next.sha256));
    struct manifest_diff d;
    manifest_compare(&want, &have, allow_e, NULL, &d);
    assert_int_equal(d.n_problems, 0);
    assert_int_equal(d.n_tolerated, 1);
    manifest_compare(&want, &have, NULL, NULL, &d);
    assert_int_equal(d.n_problems, 1); /* e, without the tolerance */
    manifest_free(&want);
    manifest_free(&have);
}

static void announce_folds_completed_writes(void **state)
{
    (void)state;
    char dir[] = "/tmp/kiln-manifest-XXXXXX", p[128];
    assert_non_null(mkdtemp(dir));
    struct kiln_err err;
    kiln_err_clear(&err);
    /* No MANIFEST yet: nothing to do. */
    assert_int_equal(manifest_announce(dir, "x", "abc", 3, &err), KILN_OK);
    snprintf(p, sizeof(p), "%s/x", dir);
    assert_int_equal(fs_write_atomic(p, "abc", 3, &err), KILN_OK);
    assert_int_equal(manifest_write_dir(dir, NULL, NULL, NULL, 0, &err), KILN_OK);
    struct manifest_diff d;
    assert_int_equal(manifest_check_dir(dir, NULL, NULL, NULL, &d, &err), KILN_OK);
    /* Announce y, crash before writing it: still intact. */
    assert_int_equal(manifest_announce(dir, "y", "", 0, &err), KILN_OK);
    assert_int_equal(manifest_check_dir(dir, NULL, NULL, NULL, &d, &err), KILN_OK);
    /* Write y; announce x's new content; crash before writing x: intact, and y folded in. */
    snprintf(p, sizeof(p), "%s/y", dir);
    assert_int_equal(fs_write_atomic(p, "", 0, &err), KILN_OK);
    assert_int_equal(manifest_announce(dir, "x", "new", 3, &err), KILN_OK);
    assert_int_equal(manifest_check_dir(dir, NULL, NULL, NULL, &d, &err), KILN_OK);
    /* Then y is tampered with: named. */
    assert_int_equal(fs_write_atomic(p, "zz", 2, &err), KILN_OK);
    assert_int_equal(manifest_check_dir(dir, NULL, NULL, NULL, &d, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "changed: y"));
    /* A symbolic link is refused by the scan. */
    snprintf(p, sizeof(p), "%s/l", dir);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    kiln_err_clear(&err); /* the first error stays in err until cleared */
    assert_int_equal(manifest_check_dir(dir, NULL, NULL, NULL, &d, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "symbolic link"));
    assert_int_equal(fs_remove_tree(dir, &err), KILN_OK);
}

/* A kill -9 mid-write leaves atomic-write temporaries (fs_write_atomic's
 * NAME.tmp-XXXXXX, beneath.c's .NAME.tmp-<12 hex>): a scan skips them, so
 * resume does not refuse the run; other hidden names are still refused. */
static void scan_skips_atomic_leftovers(void **state)
{
    (void)state;
    char dir[] = "/tmp/kiln-test-manifest-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[256];
    const char *names[] = {"a.json", "b.json.tmp-Ab3xZ9", ".compile.json.tmp-0123456789ab"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("abc", f);
        fclose(f);
    }
    struct manifest m;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(manifest_scan(dir, NULL, &m, &err), KILN_OK);
    assert_int_equal(m.n, 1);
    assert_string_equal(m.e[0].path, "a.json");
    manifest_free(&m);
    snprintf(p, sizeof(p), "%s/.compile.json.tmp-0123456789zz", dir); /* not hex: refused */
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(manifest_scan(dir, NULL, &m, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, ".compile.json.tmp-0123456789zz"));
    unlink(p);
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_and_round_trips),
        cmocka_unit_test(rejects_malformed),
        cmocka_unit_test(compare_names_each_problem),
        cmocka_unit_test(next_line_and_tolerance),
        cmocka_unit_test(announce_folds_completed_writes),
        cmocka_unit_test(scan_skips_atomic_leftovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
