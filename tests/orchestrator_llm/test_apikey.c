/*
 * test_apikey.c - apikey_load: environment order, .env parsing, and refusal
 * of .env files other users could read or swap (mode, symlink, type, size).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apikey.h"

struct fixture {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/kiln-apikey-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/.env", f->dir);
    unsetenv("KILN_API_KEY");
    unsetenv("OPENAI_API_KEY");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char p[160];
    unlink(f->path);
    rmdir(f->path);
    snprintf(p, sizeof(p), "%s/target", f->dir);
    unlink(p);
    rmdir(f->dir);
    free(f);
    unsetenv("KILN_API_KEY");
    unsetenv("OPENAI_API_KEY");
    return 0;
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static void test_env_order(void **state)
{
    struct fixture *f = *state;
    char key[128];
    struct kiln_err err = {0};
    setenv("OPENAI_API_KEY", "sk-openai-1111", 1);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_OK);
    assert_string_equal(key, "sk-openai-1111");
    setenv("KILN_API_KEY", "sk-kiln-2222", 1);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_OK);
    assert_string_equal(key, "sk-kiln-2222");
    /* The environment wins over a .env, even a bad one. */
    write_file(f->path, "OPENAI_API_KEY=sk-file\n", 23, 0644);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_OK);
    assert_string_equal(key, "sk-kiln-2222");
}

static void test_env_key_with_newline_refused(void **state)
{
    struct fixture *f = *state;
    char key[128];
    struct kiln_err err = {0};
    setenv("OPENAI_API_KEY", "sk-abc\r\nX: y", 1);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "the API key in OPENAI_API_KEY contains a space or control "
                                 "character at position 6: remove it");
    assert_null(strstr(err.msg, "sk-abc"));
}

static void test_dotenv_parsing(void **state)
{
    struct fixture *f = *state;
    char key[128];
    struct kiln_err err = {0};
    const char *text = "# kiln settings\n"
                       "\n"
                       "OTHER=1\n"
                       "OPENAI_API_KEY_OLD=sk-no\n"
                       "  export OPENAI_API_KEY = \"sk-first\"\n"
                       "OPENAI_API_KEY='sk-proj-abc_DEF-123' \r\n"
                       "# OPENAI_API_KEY=sk-commented\n";
    write_file(f->path, text, strlen(text), 0600);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_OK);
    assert_string_equal(key, "sk-proj-abc_DEF-123"); /* the last assignment wins */

    text = "OPENAI_API_KEY=sk-open-9\nKILN_API_KEY=sk-kiln-8 # kiln's own\n";
    write_file(f->path, text, strlen(text), 0400);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_OK);
    assert_string_equal(key, "sk-kiln-8"); /* KILN_API_KEY first, comment cut */
}

static void test_dotenv_loose_mode_refused(void **state)
{
    struct fixture *f = *state;
    char key[128] = "untouched";
    char want[512];
    struct kiln_err err = {0};
    write_file(f->path, "OPENAI_API_KEY=sk-secret-key-1\n", 31, 0644);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    snprintf(want, sizeof(want),
             "refusing to read %s: mode 0644 lets other users read it; chmod 600 %s", f->path,
             f->path);
    assert_string_equal(err.msg, want);
    assert_string_equal(key, "");
    assert_null(strstr(err.msg, "sk-secret"));

    kiln_err_clear(&err);
    write_file(f->path, "OPENAI_API_KEY=sk-secret-key-1\n", 31, 0620);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "mode 0620 lets other users write it"));

    kiln_err_clear(&err);
    write_file(f->path, "OPENAI_API_KEY=sk-secret-key-1\n", 31, 0604);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "mode 0604 lets other users read it"));
}

static void test_dotenv_symlink_refused(void **state)
{
    struct fixture *f = *state;
    char key[128];
    char target[160];
    struct kiln_err err = {0};
    snprintf(target, sizeof(target), "%s/target", f->dir);
    write_file(target, "OPENAI_API_KEY=sk-elsewhere\n", 28, 0600);
    assert_int_equal(symlink(target, f->path), 0);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "it is a symbolic link"));
}

static void test_dotenv_not_regular_refused(void **state)
{
    struct fixture *f = *state;
    char key[128];
    struct kiln_err err = {0};
    assert_int_equal(mkdir(f->path, 0700), 0);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "it is not a regular file"));
    rmdir(f->path);

    /* A FIFO must be refused, not block the reader. */
    kiln_err_clear(&err);
    assert_int_equal(mkfifo(f->path, 0600), 0);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "it is not a regular file"));
}

static void test_dotenv_missing_or_keyless(void **state)
{
    struct fixture *f = *state;
    char key[128];
    struct kiln_err err = {0};
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "no API key: set OPENAI_API_KEY (or KILN_API_KEY)"));

    kiln_err_clear(&err);
    write_file(f->path, "OPENAI_API_KEY=\nFOO=bar\nOPENAI_API_KEY=\"unterminated\n", 52, 0600);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "sets neither KILN_API_KEY nor OPENAI_API_KEY"));
}

static void test_dotenv_size_cap(void **state)
{
    struct fixture *f = *state;
    char key[128];
    struct kiln_err err = {0};
    size_t n = APIKEY_DOTENV_MAX + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, '#', n);
    memcpy(big, "OPENAI_API_KEY=sk-x\n", 20);
    write_file(f->path, big, n, 0600);
    free(big);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "65537 bytes is over the 65536 limit"));
}

static void test_key_too_long_for_buffer(void **state)
{
    struct fixture *f = *state;
    char key[8];
    struct kiln_err err = {0};
    write_file(f->path, "KILN_API_KEY=sk-0123456789\n", 27, 0600);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, "is 13 bytes; kiln accepts at most 7"));
    assert_null(strstr(err.msg, "sk-0123"));
}

static void test_dotenv_key_with_space_refused(void **state)
{
    struct fixture *f = *state;
    char key[128];
    struct kiln_err err = {0};
    write_file(f->path, "OPENAI_API_KEY=\"sk-a b\"\n", 24, 0600);
    assert_int_equal(apikey_load(f->path, key, sizeof(key), &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "contains a space or control character at position 4"));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_env_order),
        T(test_env_key_with_newline_refused),
        T(test_dotenv_parsing),
        T(test_dotenv_loose_mode_refused),
        T(test_dotenv_symlink_refused),
        T(test_dotenv_not_regular_refused),
        T(test_dotenv_missing_or_keyless),
        T(test_dotenv_size_cap),
        T(test_key_too_long_for_buffer),
        T(test_dotenv_key_with_space_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
