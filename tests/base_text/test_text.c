/* base/text.h: terminal escapes in untrusted text, UTF-8-safe cuts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

static void controls_are_escaped(void **state)
{
    (void)state;
    char out[256];
    /* A title change, a clear screen, a carriage return that hides what
     * came before, a bell, DEL. */
    text_escape_control(out, sizeof(out), "a\033]0;pwned\007b\033[2Jc\rd\x7f");
    assert_string_equal(out, "a\\e]0;pwned\\x07b\\e[2Jc\\rd\\x7f");
    assert_null(strchr(out, 0x1b));
}

static void newline_tab_and_utf8_stay(void **state)
{
    (void)state;
    char out[256];
    text_escape_control(out, sizeof(out), "line 1\n\tx = 2 \xc2\xb5s \xe2\x82\xac");
    assert_string_equal(out, "line 1\n\tx = 2 \xc2\xb5s \xe2\x82\xac");
}

static void c1_bidi_and_bad_bytes_are_escaped(void **state)
{
    (void)state;
    char out[256];
    /* U+009B (8-bit CSI), U+202E (right-to-left override), a lone 0x9b, a
     * truncated sequence. */
    text_escape_control(out, sizeof(out),
                        "\xc2\x9b"
                        "1m|\xe2\x80\xae|\x9b|\xe2\x82");
    assert_string_equal(out, "\\xc2\\x9b1m|\\xe2\\x80\\xae|\\x9b|\\xe2\\x82");
}

static void escaping_never_splits(void **state)
{
    (void)state;
    char out[6], out5[5], out4[4];
    text_escape_control(out, sizeof(out), "ab\033cd");
    assert_string_equal(out, "ab\\ec");
    text_escape_control(out5, sizeof(out5), "ab\033cd");
    assert_string_equal(out5, "ab\\e");
    text_escape_control(out4, sizeof(out4), "ab\033cd");
    assert_string_equal(out4, "ab"); /* \e would need 2 more bytes: whole or absent */
    char small[4];
    text_escape_control(small, sizeof(small), "a\001");
    assert_string_equal(small, "a"); /* \x01 needs 4 bytes */
    char none[1];
    text_escape_control(none, sizeof(none), "abc");
    assert_string_equal(none, "");
}

static void fputs_escapes_nul_and_everything(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    text_fputs_escaped(f, "x\0y\033z\n", 6);
    fclose(f);
    assert_string_equal(buf, "x\\x00y\\ez\n");
    free(buf);
}

static void cut_keeps_whole_characters(void **state)
{
    (void)state;
    const char *s = "ab\xe2\x82\xac"
                    "cd"; /* a b EURO c d */
    size_t n = strlen(s);
    assert_int_equal(utf8_cut(s, n, 100), n);
    assert_int_equal(utf8_cut(s, n, 2), 2);
    assert_int_equal(utf8_cut(s, n, 3), 2);
    assert_int_equal(utf8_cut(s, n, 4), 2);
    assert_int_equal(utf8_cut(s, n, 5), 5);
    assert_int_equal(utf8_cut(s, n, 6), 6);
    const char *four = "\xf0\x9f\x98\x80"; /* an emoji */
    for (size_t m = 0; m < 4; m++)
        assert_int_equal(utf8_cut(four, 4, m), 0);
}

/* The run-aborting bug: a rationale cut at a byte limit inside a character
 * made json_pack fail. Every cut of a multi-byte text must stay JSON. */
static void every_cut_packs_as_json(void **state)
{
    (void)state;
    const char *text = "r\xc3\xa9"
                       "duit la latence \xe2\x80\x94 d\xc3\xa9j\xc3\xa0 \xf0\x9f\x9a\x80 ok";
    for (size_t cap = 1; cap <= strlen(text) + 1; cap++) {
        char dst[128];
        text_copy_utf8(dst, cap, text);
        assert_true(strlen(dst) < cap);
        assert_memory_equal(dst, text, strlen(dst));
        json_t *j = json_pack("{s:s}", "note", dst);
        assert_non_null(j);
        json_decref(j);
    }
}

static void trim_drops_a_cut_character(void **state)
{
    (void)state;
    char a[16], b[16], c[16];
    snprintf(a, sizeof(a), "%s", "ok \xe2\x82");     /* EURO cut after 2 of 3 */
    snprintf(b, sizeof(b), "%s", "ok \xe2\x82\xac"); /* whole */
    snprintf(c, sizeof(c), "%s", "ok \xf0");         /* 1 of 4 */
    utf8_trim_partial(a);
    utf8_trim_partial(b);
    utf8_trim_partial(c);
    assert_string_equal(a, "ok ");
    assert_string_equal(b, "ok \xe2\x82\xac");
    assert_string_equal(c, "ok ");
}

/* HTML/SVG text: markup escaped, XML-forbidden bytes replaced, long text
 * cut on a character with an ellipsis. */
static void markup_is_escaped_and_cut(void **state)
{
    (void)state;
    struct strbuf sb;
    strbuf_init(&sb);
    assert_int_equal(text_put_markup(&sb, "<script>'a'&\"b\"</script>", 100), 0);
    assert_string_equal(sb.data, "&lt;script&gt;&#39;a&#39;&amp;&quot;b&quot;&lt;/script&gt;");
    strbuf_free(&sb);
    strbuf_init(&sb);
    assert_int_equal(text_put_markup(&sb,
                                     "a\x01"
                                     "b\xff"
                                     "c\xe2\x80\xae"
                                     "d\n",
                                     100),
                     0);
    assert_string_equal(sb.data, "a\xef\xbf\xbd"
                                 "b\xef\xbf\xbd"
                                 "c\xef\xbf\xbd"
                                 "d\n");
    strbuf_free(&sb);
    strbuf_init(&sb);
    assert_int_equal(text_put_markup(&sb, "\xc2\xb5s<\xc2\xb5s", 3), 1);
    assert_string_equal(sb.data, "\xc2\xb5s&lt;\xe2\x80\xa6");
    strbuf_free(&sb);
    strbuf_init(&sb);
    assert_int_equal(text_put_markup(&sb, "abc", 3), 0);
    assert_int_equal(text_put_markup(&sb, NULL, 3), 0);
    assert_string_equal(sb.data, "abc");
    strbuf_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(controls_are_escaped),
        cmocka_unit_test(newline_tab_and_utf8_stay),
        cmocka_unit_test(c1_bidi_and_bad_bytes_are_escaped),
        cmocka_unit_test(escaping_never_splits),
        cmocka_unit_test(fputs_escapes_nul_and_everything),
        cmocka_unit_test(cut_keeps_whole_characters),
        cmocka_unit_test(every_cut_packs_as_json),
        cmocka_unit_test(trim_drops_a_cut_character),
        cmocka_unit_test(markup_is_escaped_and_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
