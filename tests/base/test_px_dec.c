/* Decimal digits without printf (base/px_dec.h), shared by audit, proxy and dns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_dec.h"

static void test_px_dec_values(void **state)
{
    (void)state;
    static const unsigned long long v[] = {
        0, 1, 9, 10, 99, 100, 4096, 65535, 4294967295ULL, 1000000000000ULL, UINT64_MAX};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char buf[PX_DEC_MAX + 2], want[32];
        memset(buf, 'x', sizeof(buf));
        char *end = buf + 1 + PX_DEC_MAX;
        char *p = px_dec(end, v[i]);
        int wn = snprintf(want, sizeof(want), "%llu", v[i]);
        assert_int_equal(end - p, wn);
        assert_memory_equal(p, want, (size_t)wn);
        assert_true(p >= buf + 1);     /* never more than PX_DEC_MAX digits */
        assert_int_equal(buf[0], 'x'); /* nothing written before them */
        assert_int_equal(*end, 'x');   /* nor at end */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_dec_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
