/* base/px_b64: strict padded decoding, encoding, one character's value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_b64.h"

static long dec(const char *s, unsigned char *out, size_t cap)
{
    return px_b64_decode(s, strlen(s), out, cap);
}

static void test_b64_decode(void **state)
{
    (void)state;
    unsigned char out[64];
    assert_int_equal(dec("dXNlcjpwYXNz", out, sizeof(out)), 9);
    assert_memory_equal(out, "user:pass", 9);
    assert_int_equal(dec("YQ==", out, sizeof(out)), 1);
    assert_int_equal(out[0], 'a');
    assert_int_equal(dec("YWI=", out, sizeof(out)), 2);
    assert_memory_equal(out, "ab", 2);
    assert_int_equal(dec("+/+/", out, sizeof(out)), 3);
    assert_memory_equal(out, "\xfb\xff\xbf", 3);
    /* refused: empty, not a multiple of 4, data after '=', '=' too early, another alphabet,
     * too small an output */
    assert_int_equal(dec("", out, sizeof(out)), -1);
    assert_int_equal(dec("YWI", out, sizeof(out)), -1);
    assert_int_equal(dec("YQ=a", out, sizeof(out)), -1);
    assert_int_equal(dec("Y===", out, sizeof(out)), -1);
    assert_int_equal(dec("YQ==YQ==", out, sizeof(out)), -1);
    assert_int_equal(dec("-_-_", out, sizeof(out)), -1);
    assert_int_equal(dec("dXNlcjpwYXNz", out, 8), -1);
}

static void test_b64_encode_round_trip(void **state)
{
    (void)state;
    unsigned char in[40] = {0}, back[40];
    char enc[64];
    for (size_t n = 0; n < sizeof(in); n++) {
        for (size_t i = 0; i < n; i++)
            in[i] = (unsigned char)(i * 37 + n);
        long e = px_b64_encode(in, n, enc, sizeof(enc));
        assert_int_equal(e, (long)((n + 2) / 3 * 4));
        if (n == 0)
            continue;
        assert_int_equal(px_b64_decode(enc, (size_t)e, back, sizeof(back)), (long)n);
        assert_memory_equal(back, in, n);
    }
    assert_int_equal(px_b64_encode((const unsigned char *)"abcd", 4, enc, 7), -1);
    assert_int_equal(px_b64_encode((const unsigned char *)"abcd", 4, enc, 8), 8);
    assert_memory_equal(enc, "YWJjZA==", 8);
}

/* URL-safe and unpadded: what a JWT and a node ID carry. */
static void test_b64_encode_as(void **state)
{
    (void)state;
    static const unsigned char in[] = {0xfb, 0xff, 0xbf, 0xfe};
    char enc[16];
    assert_int_equal(px_b64_encode_as(in, 4, 0, enc, sizeof(enc)), 8);
    assert_memory_equal(enc, "+/+//g==", 8);
    assert_int_equal(px_b64_encode_as(in, 4, PX_B64_URL, enc, sizeof(enc)), 8);
    assert_memory_equal(enc, "-_-__g==", 8);
    assert_int_equal(px_b64_encode_as(in, 4, PX_B64_URL | PX_B64_NOPAD, enc, sizeof(enc)), 6);
    assert_memory_equal(enc, "-_-__g", 6);
    assert_int_equal(px_b64_encode_as(in, 3, PX_B64_NOPAD, enc, sizeof(enc)), 4);
    assert_int_equal(px_b64_encode_as(in, 2, PX_B64_NOPAD, enc, sizeof(enc)), 3);
    assert_int_equal(px_b64_encode_as(in, 4, PX_B64_NOPAD, enc, 5), -1);
    assert_int_equal(px_b64_encode_as(in, 4, PX_B64_NOPAD, enc, 6), 6);
}

static void test_b64_value(void **state)
{
    (void)state;
    assert_int_equal(px_b64_value('A', 0), 0);
    assert_int_equal(px_b64_value('z', 1), 51);
    assert_int_equal(px_b64_value('9', 0), 61);
    assert_int_equal(px_b64_value('+', 0), 62);
    assert_int_equal(px_b64_value('/', 0), 63);
    assert_int_equal(px_b64_value('-', 1), 62);
    assert_int_equal(px_b64_value('_', 1), 63);
    assert_int_equal(px_b64_value('-', 0), -1);
    assert_int_equal(px_b64_value('/', 1), -1);
    assert_int_equal(px_b64_value('=', 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64_decode),
        cmocka_unit_test(test_b64_encode_round_trip),
        cmocka_unit_test(test_b64_encode_as),
        cmocka_unit_test(test_b64_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
