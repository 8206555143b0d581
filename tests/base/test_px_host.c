/* The one host normalizer (base/px_host.c): the spellings of a name that must meet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_host.h"

static void test_px_host_norm_table(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        const char *out; /* NULL: does not fit in 16 bytes */
    } cases[] = {
        {"example.com", "example.com"},
        {"Example.COM", "example.com"},
        {"EXAMPLE.COM.", "example.com"},
        {"a..", "a."},      /* one trailing dot only */
        {".", "."},         /* the root stays itself */
        {"", ""},
        {"[::1]", "::1"},   /* IPv6 brackets */
        {"[FE80::A]", "fe80::a"},
        {"[::1].", "[::1]"}, /* not a bracketed literal: only the dot goes */
        {"[", "["},
        {"[]", ""},
        {"10.0.0.1", "10.0.0.1"},
        {"[@]^_`{", "[@]^_`{"}, /* only A-Z change */
        {"\xc3\x84.test", "\xc3\x84.test"}, /* non-ASCII bytes are left alone */
        {"abcdefghijklmno", "abcdefghijklmno"},
        {"abcdefghijklmno.", "abcdefghijklmno"}, /* the dot does not count */
        {"abcdefghijklmnop", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[16];
        int n = px_host_norm(out, sizeof(out), cases[i].in, strlen(cases[i].in));
        if (cases[i].out == NULL) {
            assert_int_equal(n, -1);
            assert_string_equal(out, "");
        } else {
            assert_int_equal(n, (int)strlen(cases[i].out));
            assert_string_equal(out, cases[i].out);
        }
    }
}

static void test_px_host_norm_reads_only_len(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(px_host_norm(out, sizeof(out), "ABC.DEF", 3), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(px_host_norm(out, 0, "a", 1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_host_norm_table),
        cmocka_unit_test(test_px_host_norm_reads_only_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
