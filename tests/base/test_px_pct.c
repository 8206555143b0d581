/* Lenient percent-decoding (base/px_pct.c), shared by the policy, the secret guard and audit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_pct.h"

static void test_px_pct_unquote_table(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
        size_t out_len;
    } cases[] = {
        {"/a%2Fb", "/a/b", 4}, {"%2e%2E", "..", 2}, {"a+b", "a+b", 3}, /* '+' stays */
        {"%", "%", 1},         {"%4", "%4", 2},     {"%4g", "%4g", 3}, /* not escapes */
        {"ab%41", "abA", 3},   {"%2541", "%41", 3}, /* decoded once */
        {"%00x", "\0x", 2},    {"", "", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[16];
        size_t n = px_pct_unquote(cases[i].in, strlen(cases[i].in), out);
        assert_int_equal(n, cases[i].out_len);
        assert_memory_equal(out, cases[i].out, n);
    }
    assert_int_equal(px_pct_at("%41", 3, 0), 0x41);
    assert_int_equal(px_pct_at("%41", 2, 0), -1); /* only len bytes are read */
    assert_int_equal(px_pct_at("x%41", 4, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_pct_unquote_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
