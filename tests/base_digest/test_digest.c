/* The digest module (OpenSSL EVP): SHA-256 against the FIPS 180-4 example
 * vectors, a multi-block message and lengths around the padding boundary fed
 * in odd pieces; the file and fd helpers with their size limit, symbolic
 * links and non-regular files; a discarded context. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"

static void known_vectors(void **state)
{
    (void)state;
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex_of("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha256_hex_of("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex_of(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void million_a_in_pieces(void **state)
{
    (void)state;
    static char a[1000];
    memset(a, 'a', sizeof(a));
    struct sha256_ctx c;
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 1];
    sha256_init(&c);
    /* Pieces of 997 bytes: exercises partial blocks. */
    size_t left = 1000000;
    while (left > 0) {
        size_t n = left < 997 ? left : 997;
        sha256_update(&c, a, n);
        left -= n;
    }
    sha256_final(&c, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void padding_boundary(void **state)
{
    (void)state;
    /* 55, 56, 63 and 64 bytes straddle the length field; hashing in one
     * piece and byte by byte must agree. */
    char buf[64];
    memset(buf, 'x', sizeof(buf));
    size_t lens[] = {55, 56, 63, 64};
    for (size_t i = 0; i < 4; i++) {
        char one[SHA256_HEX_LEN + 1], bytes[SHA256_HEX_LEN + 1];
        sha256_hex_of(buf, lens[i], one);
        struct sha256_ctx c;
        uint8_t d[SHA256_DIGEST_LEN];
        sha256_init(&c);
        for (size_t k = 0; k < lens[i]; k++)
            sha256_update(&c, buf + k, 1);
        sha256_final(&c, d);
        sha256_hex(d, bytes);
        assert_string_equal(one, bytes);
    }
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex_of(buf, 64, hex); /* python3: hashlib.sha256(b"x" * 64) */
    assert_string_equal(hex, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
}

static void file_and_fd(void **state)
{
    (void)state;
    char dir[] = "/tmp/kiln-digest-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], link[128];
    snprintf(path, sizeof(path), "%s/f", dir);
    snprintf(link, sizeof(link), "%s/l", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("abc", f);
    fclose(f);
    char hex[SHA256_HEX_LEN + 1];
    uint64_t size = 0;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(sha256_file_hex(path, 3, hex, &size, &err), KILN_OK);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_int_equal(size, 3);
    assert_true(sha256_is_hex(hex));
    /* One byte over the limit is refused, and the path is named. */
    assert_int_equal(sha256_file_hex(path, 2, hex, NULL, &err), KILN_E_LIMIT);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(sha256_file_hex(link, 100, hex, NULL, &err), KILN_E_REJECTED);
    assert_int_equal(sha256_file_hex(dir, 100, hex, NULL, &err), KILN_E_REJECTED);
    snprintf(link, sizeof(link), "%s/absent", dir);
    assert_int_equal(sha256_file_hex(link, 100, hex, NULL, &err), KILN_E_NOTFOUND);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(sha256_fd_hex(fd, 100, hex, &size, &err), KILN_OK);
    close(fd);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unlink(path);
    unlink(link);
    snprintf(link, sizeof(link), "%s/l", dir);
    unlink(link);
    rmdir(dir);
    assert_false(sha256_is_hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
    assert_false(sha256_is_hex("abc"));
}

static void discard_and_spent(void **state)
{
    (void)state;
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, "abc", 3);
    sha256_discard(&c); /* no leak under ASan, no digest afterwards */
    uint8_t d[SHA256_DIGEST_LEN];
    assert_false(sha256_final(&c, d));
    for (int i = 0; i < SHA256_DIGEST_LEN; i++)
        assert_int_equal(d[i], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(file_and_fd),      cmocka_unit_test(discard_and_spent),
        cmocka_unit_test(known_vectors),    cmocka_unit_test(million_a_in_pieces),
        cmocka_unit_test(padding_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
