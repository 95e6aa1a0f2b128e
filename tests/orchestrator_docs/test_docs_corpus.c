/* test_docs_corpus.c - the corpus parser: passages, ids, sources, and hostile files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docs_corpus.h"
#include "fsutil.h"

static const char good[] = "# Shared memory\n"
                           "\n"
                           "## Bank conflicts\n"
                           "Source: CUDA C++ Programming Guide, \"Shared Memory\"\n"
                           "\n"
                           "Thirty-two banks.\n"
                           "Pad rows to 33.\n"
                           "\n"
                           "## Tiling, again!\n"
                           "Load a tile.\n"
                           "```\n"
                           "## not a heading inside a fence\n"
                           "```\n"
                           "### a sub-heading is text\n";

static enum kiln_rc parse(struct docs_corpus *c, const char *name, const char *text, unsigned flags,
                          struct kiln_err *err)
{
    kiln_err_clear(err);
    return docs_corpus_parse(c, name, text, strlen(text), flags, err);
}

static void splits_passages(void **state)
{
    (void)state;
    struct docs_corpus c = {0};
    struct kiln_err err;
    assert_int_equal(parse(&c, "smem.md", good, 0, &err), KILN_OK);
    assert_int_equal(c.n, 2);
    struct docs_passage *p = &c.passages[0];
    assert_string_equal(p->id, "smem/bank-conflicts");
    assert_string_equal(p->file, "smem.md");
    assert_string_equal(p->topic, "Shared memory");
    assert_string_equal(p->title, "Bank conflicts");
    assert_string_equal(p->source, "CUDA C++ Programming Guide, \"Shared Memory\"");
    assert_string_equal(p->body, "Thirty-two banks.\nPad rows to 33.");
    assert_int_equal(p->line, 3);
    p = &c.passages[1];
    assert_string_equal(p->id, "smem/tiling-again");
    assert_string_equal(p->source, "smem.md"); /* no Source: line: the file */
    assert_non_null(strstr(p->body, "## not a heading inside a fence"));
    assert_non_null(strstr(p->body, "### a sub-heading is text"));
    docs_corpus_free(&c);
}

static void source_required_for_kilns_corpus(void **state)
{
    (void)state;
    struct docs_corpus c = {0};
    struct kiln_err err;
    assert_int_equal(parse(&c, "smem.md", good, DOCS_REQUIRE_SOURCE, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "smem.md:9"));
    assert_non_null(strstr(err.msg, "Source:"));
    assert_int_equal(c.n, 0); /* all or nothing per file */
    docs_corpus_free(&c);
}

/* Each hostile text is refused with the file, the line and the fix named. */
static void hostile_texts_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want1, *want2;
    } cases[] = {
        {"## T\nok\n\xff bad\n", "x.md:3: invalid UTF-8", "save the file as UTF-8"},
        {"## T\n\xc0\xaf overlong\n", "x.md:2: invalid UTF-8", "UTF-8"},
        {"## T\n\xed\xa0\x80 surrogate\n", "invalid UTF-8", "x.md:2"},
        {"## T\n\xf4\x90\x80\x80 too big\n", "invalid UTF-8", "x.md:2"},
        {"## T\ntruncated \xe2\x82", "invalid UTF-8", "x.md:2"},
        {"## T\nred \x1b[31m text\n", "x.md:2: byte 0x1b", "escape character"},
        {"## T\r\nwindows\r\n", "x.md:1: byte 0x0d", "dos2unix"},
        {"## T\nbell \x07\n", "x.md:2: byte 0x07", "control character"},
        {"## T\ndel \x7f\n", "byte 0x7f", "control character"},
        {"## T\nc1 \xc2\x9b"
         "31m\n",
         "U+009B is a C1 control", "remove it"},
        {"## T\nbidi \xe2\x80\xae txt\n", "U+202E is a bidirectional override", "remove it"},
        {"stray text\n## T\nbody\n", "x.md:1: text before the first", "## Title"},
        {"## T\n\n", "x.md:1: passage \"T\" has no text", "write its text"},
        {"##\nbody\n", "x.md:1: an empty", "give the passage a title"},
        {"## T\nSource:\nbody\n", "x.md:2: an empty \"Source:\" line", "name the guide"},
        {"## T\nbody\n## T\nbody\n", "x.md:3: passage \"T\" has the same id", "different title"},
        {"# A\n## T\nbody\n# B\n", "x.md:4: a second \"# \" heading", "### "},
        {"## S\nx\n## T\ny\n# Late\n", "x.md:5: a second", "### "}, /* S is not kept */
        {"\n\n", "x.md: no passages", "## Title"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct docs_corpus c = {0};
        struct kiln_err err;
        enum kiln_rc rc = parse(&c, "x.md", cases[i].text, 0, &err);
        if (rc == KILN_OK || !strstr(err.msg, cases[i].want1) || !strstr(err.msg, cases[i].want2))
            fail_msg("case %zu: rc %d, message \"%s\", wanted \"%s\" and \"%s\"", i, rc, err.msg,
                     cases[i].want1, cases[i].want2);
        assert_int_equal(c.n, 0);
        docs_corpus_free(&c);
    }
}

static void text_check_accepts_text(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    const char *t = "tabs\tand newlines\n, \xc3\xa9t\xc3\xa9, \xe2\x80\x94 dash, "
                    "\xf0\x9f\x94\xa5 emoji, U+00A0\xc2\xa0nbsp";
    assert_int_equal(docs_text_check("t.md", t, strlen(t), &err), KILN_OK);
}

static void bad_names_and_sizes(void **state)
{
    (void)state;
    struct docs_corpus c = {0};
    struct kiln_err err;
    assert_int_equal(parse(&c, "../x.md", "## T\nb\n", 0, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "rename it"));
    assert_int_equal(parse(&c, "x.txt", "## T\nb\n", 0, &err), KILN_E_REJECTED);
    size_t big = DOCS_FILE_MAX + 1;
    char *text = malloc(big + 1);
    assert_non_null(text);
    memset(text, 'a', big);
    memcpy(text, "## T\n", 5);
    text[big] = '\0';
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_parse(&c, "big.md", text, big, 0, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "big.md"));
    assert_non_null(strstr(err.msg, "split it"));
    free(text);
    docs_corpus_free(&c);
}

/* ---- directories ---- */

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void make_dir(char *out, size_t cap)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_make_tempdir("docs-test", out, cap, &err), KILN_OK);
}

static void remove_dir(const char *dir)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_remove_tree(dir, &err), KILN_OK);
}

static void loads_directory_in_order_with_digest(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    make_dir(dir, sizeof(dir));
    write_file(dir, "b.md", "## Second\nbee\n", 14);
    write_file(dir, "a.md", "## First\nay\n", 12);
    write_file(dir, "notes.txt", "ignored \x1b", 9);
    write_file(dir, ".hidden.md", "\xff", 1);
    struct docs_corpus c = {0};
    struct kiln_err err;
    kiln_err_clear(&err);
    char d1[65], d2[65];
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, d1, &err), KILN_OK);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.passages[0].id, "a/first");
    assert_string_equal(c.passages[1].id, "b/second");
    assert_int_equal(strlen(d1), 64);
    docs_corpus_free(&c);
    write_file(dir, "b.md", "## Second\nbee!\n", 15);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, d2, &err), KILN_OK);
    assert_string_not_equal(d1, d2); /* a changed file changes the digest */
    docs_corpus_free(&c);
    remove_dir(dir);
}

static void hostile_directories_refused(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    struct docs_corpus c = {0};
    struct kiln_err err;

    /* an oversize file, named, with the fix */
    make_dir(dir, sizeof(dir));
    size_t big = DOCS_FILE_MAX + 10;
    char *text = malloc(big);
    assert_non_null(text);
    memset(text, 'x', big);
    memcpy(text, "## T\n", 5);
    write_file(dir, "huge.md", text, big);
    free(text);
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "huge.md"));
    assert_non_null(strstr(err.msg, "split it"));
    remove_dir(dir);

    /* an escape sequence in the second file: named with its line */
    make_dir(dir, sizeof(dir));
    write_file(dir, "a.md", "## A\nfine\n", 10);
    write_file(dir, "b.md", "## B\nline\n\x1b]0;title\x07\n", 21);
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "b.md:3"));
    assert_non_null(strstr(err.msg, dir));
    assert_int_equal(c.n, 0); /* a.md's passage is not kept either */
    remove_dir(dir);

    /* a symlink and a FIFO are not read */
    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/link.md", dir);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "link.md is not a regular file"));
    unlink(path);
    snprintf(path, sizeof(path), "%s/fifo.md", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_REJECTED);
    unlink(path);

    /* a name with odd characters, too many files, none at all */
    write_file(dir, "a b.md", "## A\nx\n", 7);
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "rename it"));
    snprintf(path, sizeof(path), "%s/a b.md", dir);
    unlink(path);
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "no .md files"));
    for (int i = 0; i <= DOCS_FILES_MAX; i++) {
        char name[32];
        snprintf(name, sizeof(name), "f%03d.md", i);
        write_file(dir, name, "## A\nx\n", 7);
    }
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "more than 256 .md files"));
    assert_int_equal(c.n, 0);
    remove_dir(dir);

    /* the total cap: many files each under the per-file cap */
    make_dir(dir, sizeof(dir));
    size_t each = DOCS_FILE_MAX - 16;
    text = malloc(each);
    assert_non_null(text);
    memset(text, 'y', each);
    memcpy(text, "## T\n", 5);
    for (size_t i = 0; i * each <= DOCS_TOTAL_MAX; i++) {
        char name[32];
        snprintf(name, sizeof(name), "t%03zu.md", i);
        write_file(dir, name, text, each);
    }
    free(text);
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, 0, NULL, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "byte limit"));
    assert_non_null(strstr(err.msg, "fewer or shorter files"));
    docs_corpus_free(&c);
    remove_dir(dir);
}

/* kiln's own corpus passes the strict check: every passage has a source. */
static void kilns_corpus_is_valid(void **state)
{
    (void)state;
    const char *src = getenv("KILN_SOURCE_DIR");
    if (!src)
        skip();
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/docs/cuda", src);
    struct docs_corpus c = {0};
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(docs_corpus_load_dir(&c, dir, DOCS_REQUIRE_SOURCE, NULL, &err), KILN_OK);
    assert_true(c.n >= 30);
    for (size_t i = 0; i < c.n; i++) {
        assert_true(strstr(c.passages[i].source, "Guide") != NULL);
        assert_true(strlen(c.passages[i].body) < 2000); /* short passages */
    }
    docs_corpus_free(&c);
}

/* docs_corpus_slot: the one place a corpus grows (the parser's passages and
 * the index's read-back share it): a zeroed slot past the last passage,
 * not counted until the caller counts it, the earlier passages kept. */
static void slot_grows_and_is_zeroed(void **state)
{
    (void)state;
    struct docs_corpus c = {0};
    struct kiln_err e;
    kiln_err_clear(&e);
    for (size_t i = 0; i < 100; i++) {
        struct docs_passage *p = docs_corpus_slot(&c, &e);
        assert_non_null(p);
        assert_ptr_equal(p, &c.passages[i]);
        assert_int_equal(c.n, i);
        assert_true(c.cap > i);
        assert_null(p->file);
        assert_null(p->body);
        assert_int_equal(p->id[0], 0);
        assert_int_equal(p->line, 0);
        p->line = (unsigned)i + 1;
        p->file = strdup("f.md");
        assert_non_null(p->file);
        c.n++;
        if (c.n < c.cap) /* junk in the next slot: the next call must clear it */
            memset(&c.passages[c.n], 0xab, sizeof(c.passages[c.n]));
    }
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(c.passages[i].line, i + 1);
    docs_corpus_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits_passages),
        cmocka_unit_test(source_required_for_kilns_corpus),
        cmocka_unit_test(hostile_texts_refused),
        cmocka_unit_test(text_check_accepts_text),
        cmocka_unit_test(bad_names_and_sizes),
        cmocka_unit_test(loads_directory_in_order_with_digest),
        cmocka_unit_test(hostile_directories_refused),
        cmocka_unit_test(kilns_corpus_is_valid),
        cmocka_unit_test(slot_grows_and_is_zeroed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
