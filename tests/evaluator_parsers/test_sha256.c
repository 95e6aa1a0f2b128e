/* SHA-256 against the FIPS 180-4 example vectors, including a multi-block
 * message and lengths around the padding boundary fed in odd pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "sha256.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_vectors),
        cmocka_unit_test(million_a_in_pieces),
        cmocka_unit_test(padding_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
