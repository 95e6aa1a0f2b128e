/* test_docs_index.c - retrieval from kiln's built docs.db, the query
 * reduction, and a user's corpus indexed on first use into the cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docs_index.h"
#include "fsutil.h"

static struct docs_index *open_builtin(void)
{
    struct docs_index *ix = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (docs_index_open(DOCS_DB, &ix, &err) != KILN_OK)
        fail_msg("%s", err.msg);
    return ix;
}

/* The passage `want` is among the first `within` hits for `query`. */
static void expect_hit(struct docs_index *ix, const char *query, const char *want, size_t within)
{
    struct docs_hits h;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (docs_index_search(ix, query, within, &h, &err) != KILN_OK)
        fail_msg("%s: %s", query, err.msg);
    bool found = false;
    for (size_t i = 0; i < h.n; i++)
        found |= strcmp(h.v[i].id, want) == 0;
    if (!found)
        fail_msg("\"%s\": %s is not in the first %zu hits (first: %s)", query, want, within,
                 h.n ? h.v[0].id : "none");
    docs_hits_free(&h);
}

static void queries_find_their_passages(void **state)
{
    (void)state;
    struct docs_index *ix = open_builtin();
    assert_true(docs_index_count(ix) >= 30);
    assert_int_equal(strlen(docs_index_digest(ix)), 64);
    expect_hit(ix, "uncoalesced global loads", "coalescing/uncoalesced-and-strided-access-patterns",
               1);
    expect_hit(ix, "bank conflicts", "shared-memory/bank-conflicts", 1);
    expect_hit(ix, "softmax overflow", "numerics/stable-softmax-subtract-the-row-maximum", 1);
    expect_hit(ix, "TF32 fails the fp32 tolerance",
               "tensor-cores/why-tf32-and-fp16-fail-an-fp32-tolerance", 1);
    expect_hit(ix, "register spills", "register-blocking/register-pressure-and-spills", 2);
    expect_hit(ix, "warp shuffle", "warp-reductions/warp-shuffle-functions", 2);
    expect_hit(ix, "__launch_bounds__", "occupancy/launch-bounds", 2);
    expect_hit(ix, "cp.async double buffering", "async-copy/multi-stage-pipelines-double-buffering",
               2);
    expect_hit(ix, "TMA Hopper tensor map", "async-copy/tensor-memory-accelerator-on-hopper", 1);
    expect_hit(ix, "L2 persisting access policy window",
               "l2-cache/persisting-accesses-and-the-access-policy-window", 2);
    expect_hit(ix, "layernorm variance Welford",
               "numerics/layer-normalization-variance-without-cancellation", 1);
    expect_hit(ix, "float4 vectorized loads", "vectorized-loads/wide-loads-with-float2-and-float4",
               1);
    expect_hit(ix, "achieved occupancy low", "ncu-metrics/achieved-and-theoretical-occupancy", 2);
    expect_hit(ix, "DRAM throughput memory bound",
               "ncu-metrics/duration-dram-throughput-and-sm-throughput", 2);
    docs_index_close(ix);
}

static void hits_carry_title_source_excerpt(void **state)
{
    (void)state;
    struct docs_index *ix = open_builtin();
    struct docs_hits h;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(docs_index_search(ix, "bank conflicts shared memory", 3, &h, &err), KILN_OK);
    assert_int_equal(h.n, 3);
    assert_string_equal(h.v[0].title, "Bank conflicts");
    assert_non_null(strstr(h.v[0].source, "Programming Guide"));
    assert_string_equal(h.v[0].topic, "Shared memory and tiling");
    assert_non_null(strstr(h.v[0].excerpt, "bank"));
    assert_null(strchr(h.v[0].excerpt, '\n'));
    assert_non_null(strstr(h.v[0].body, "32 banks"));
    assert_true(h.v[0].score <= h.v[1].score && h.v[1].score <= h.v[2].score); /* best first */
    docs_hits_free(&h);
    docs_index_close(ix);
}

/* Free text never reaches FTS5's syntax: operators, quotes and stars are
 * plain characters; only stop words or nothing gives no hits, not an error. */
static void queries_are_reduced_to_words(void **state)
{
    (void)state;
    char *m = NULL;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(docs_query_match("The BANK-conflicts of 32 \"banks\"*", &m, &err), KILN_OK);
    assert_string_equal(m, "\"bank\" OR \"conflicts\" OR \"banks\"");
    free(m);
    assert_int_equal(docs_query_match("the a of 1024 x", &m, &err), KILN_OK);
    assert_string_equal(m, "");
    free(m);
    struct docs_index *ix = open_builtin();
    static const char *const hostile[] = {
        "\"",
        "NEAR(bank conflicts)",
        "bank AND NOT",
        "title:bank",
        "*",
        "bank^",
        "(((",
        "'--",
        "OR OR OR",
        "\xff\xfe",
    };
    for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        struct docs_hits h;
        if (docs_index_search(ix, hostile[i], 5, &h, &err) != KILN_OK)
            fail_msg("query \"%s\": %s", hostile[i], err.msg);
        docs_hits_free(&h);
    }
    struct docs_hits h;
    assert_int_equal(docs_index_search(ix, "the of and", 5, &h, &err), KILN_OK);
    assert_int_equal(h.n, 0);
    assert_int_equal(docs_index_search(ix, "bank", 0, &h, &err), KILN_E_USAGE);
    docs_index_close(ix);
}

static void not_an_index_is_refused(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_make_tempdir("docs-test", dir, sizeof(dir), &err), KILN_OK);
    snprintf(path, sizeof(path), "%s/x.db", dir);
    assert_int_equal(fs_write_atomic(path, "not sqlite", 10, &err), KILN_OK);
    struct docs_index *ix = NULL;
    assert_int_not_equal(docs_index_open(path, &ix, &err), KILN_OK);
    assert_null(ix);
    kiln_err_clear(&err);
    snprintf(path, sizeof(path), "%s/none.db", dir);
    assert_int_equal(docs_index_open(path, &ix, &err), KILN_E_NOTFOUND);
    assert_int_equal(fs_remove_tree(dir, &err), KILN_OK);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_write_atomic(path, text, strlen(text), &err), KILN_OK);
}

static size_t count_db_files(const char *dir)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '\\.db$'", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    unsigned n = 0;
    assert_int_equal(fscanf(p, "%u", &n), 1);
    pclose(p);
    return n;
}

static void user_corpus_indexed_once_per_content(void **state)
{
    (void)state;
    char root[PATH_MAX], docs[PATH_MAX + 8], cache[PATH_MAX + 8];
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_make_tempdir("docs-test", root, sizeof(root), &err), KILN_OK);
    snprintf(docs, sizeof(docs), "%s/docs", root);
    snprintf(cache, sizeof(cache), "%s/cache", root);
    assert_int_equal(fs_mkdirs(docs, &err), KILN_OK);
    setenv("KILN_DOCS_DB", DOCS_DB, 1);
    setenv("KILN_DOCS_CACHE", cache, 1);
    write_text(docs, "mine.md",
               "# House rules\n\n## Zebra striping of kernels\nSource: our wiki\n\n"
               "Interleave the zebra stripes so every warp reads a stripe.\n");

    struct docs_index *ix = NULL;
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_OK);
    struct docs_hits h;
    assert_int_equal(docs_index_search(ix, "zebra stripes", 2, &h, &err), KILN_OK);
    assert_true(h.n >= 1);
    assert_string_equal(h.v[0].id, "user/mine/zebra-striping-of-kernels");
    assert_string_equal(h.v[0].source, "our wiki");
    docs_hits_free(&h);
    /* kiln's passages are in the same index and ranking */
    expect_hit(ix, "bank conflicts", "shared-memory/bank-conflicts", 1);
    char key[65];
    snprintf(key, sizeof(key), "%s", docs_index_digest(ix));
    docs_index_close(ix);
    assert_int_equal(count_db_files(cache), 1);

    /* the same content: the cached index, not a new one */
    char path[PATH_MAX + 80];
    snprintf(path, sizeof(path), "%s/%s.db", cache, key);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_OK);
    assert_string_equal(docs_index_digest(ix), key);
    docs_index_close(ix);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(count_db_files(cache), 1);

    /* changed content: another digest, another index, the new text found */
    write_text(docs, "mine.md",
               "## Zebra striping of kernels\n\nNow with giraffe patterns instead.\n");
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_OK);
    assert_string_not_equal(docs_index_digest(ix), key);
    assert_int_equal(docs_index_search(ix, "giraffe", 2, &h, &err), KILN_OK);
    assert_int_equal(h.n, 1);
    docs_hits_free(&h);
    docs_index_close(ix);
    assert_int_equal(count_db_files(cache), 2);

    /* The cache file is checked like any untrusted file: text appended to a
     * cached passage (an escape sequence for the terminal), a file others
     * may write, a link: each is rebuilt from the corpus, never used. */
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_OK);
    snprintf(key, sizeof(key), "%s", docs_index_digest(ix));
    docs_index_close(ix);
    snprintf(path, sizeof(path), "%s/%s.db", cache, key);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE passages SET body = body || char(27) || '[2J owned' "
                                  "WHERE body LIKE '%giraffe%'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_OK);
    assert_int_equal(docs_index_search(ix, "giraffe", 2, &h, &err), KILN_OK);
    assert_int_equal(h.n, 1);
    assert_null(strchr(h.v[0].body, 0x1b));
    assert_null(strstr(h.v[0].body, "owned"));
    docs_hits_free(&h);
    docs_index_close(ix);
    assert_int_equal(stat(path, &after), 0);
    assert_int_not_equal(before.st_ino, after.st_ino);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_OK);
    docs_index_close(ix);
    assert_int_equal(stat(path, &after), 0);
    assert_int_not_equal(before.st_ino, after.st_ino);
    assert_int_equal(after.st_mode & 022, 0);
    /* The same check refuses a tampered index opened directly. */
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "UPDATE passages SET title = title || char(7)", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    kiln_err_clear(&err);
    assert_int_equal(docs_index_open(path, &ix, &err), KILN_E_REJECTED);
    assert_null(ix);
    assert_non_null(strstr(err.msg, "title"));

    /* a hostile file is refused before anything is indexed */
    write_text(docs, "evil.md", "## Evil\n\x1b[2J cleared your screen\n");
    kiln_err_clear(&err);
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_E_REJECTED);
    assert_null(ix);
    assert_non_null(strstr(err.msg, "evil.md:2"));
    assert_int_equal(count_db_files(cache), 2);

    /* a cache directory others can write to is not trusted */
    snprintf(path, sizeof(path), "%s/evil.md", docs);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(chmod(cache, 0777), 0);
    kiln_err_clear(&err);
    assert_int_equal(docs_index_open_user(docs, &ix, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "writable by others"));
    assert_int_equal(chmod(cache, 0700), 0);

    unsetenv("KILN_DOCS_CACHE");
    unsetenv("KILN_DOCS_DB");
    assert_int_equal(fs_remove_tree(root, &err), KILN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(queries_find_their_passages),
        cmocka_unit_test(hits_carry_title_source_excerpt),
        cmocka_unit_test(queries_are_reduced_to_words),
        cmocka_unit_test(not_an_index_is_refused),
        cmocka_unit_test(user_corpus_indexed_once_per_content),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
