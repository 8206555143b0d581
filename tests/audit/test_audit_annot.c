/* audit_annot: a request line's " [key: value]" annotations split into parts (nested brackets,
 * the counts, a repeated key, a key the log never writes, more than the cap, text between
 * them: each makes the split inexact), and a tail's leak and budget details. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_annot.h"

static audit_str_t str(const char *s)
{
    return (audit_str_t){s, strlen(s)};
}

static void assert_str(audit_str_t got, const char *want)
{
    assert_int_equal(got.len, strlen(want));
    assert_memory_equal(got.base, want, got.len);
}

static void test_annot_split_exact(void **state)
{
    (void)state;
    audit_annot_t a[AUDIT_ANNOT_MAX];
    int exact;
    size_t n = audit_annot_split(str(" [masked: 1] [tool-domains: t: allowed_domains: [a, b]] "
                                     "[dropped: 12]"),
                                 a, &exact);
    assert_int_equal(n, 3);
    assert_int_equal(exact, 1);
    assert_str(a[0].key, "masked");
    assert_str(a[0].value, "1");
    assert_str(a[1].key, "tool-domains");
    assert_str(a[1].value, "t: allowed_domains: [a, b]");
    assert_str(a[2].key, "dropped");
    assert_str(a[2].value, "12");
    assert_int_equal(audit_annot_split(str(""), a, &exact), 0);
    assert_int_equal(exact, 1);
}

static void test_annot_split_inexact(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t n;
    } cases[] = {
        {" [masked: 1] [masked: 2]", 1}, /* the first of a repeated key */
        {" [masked: 01]", 0},            /* a count not as the addons write it */
        {" [masked: many]", 0},
        {" [Region: x]", 0},          /* a key the log never writes */
        {" [region x]", 0},           /* no ": " */
        {" [region: x] and more", 1}, /* text after the annotations */
        {" [region: [x]", 0},         /* an unclosed bracket */
        {"[region: x]", 0},           /* no space before it */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        audit_annot_t a[AUDIT_ANNOT_MAX];
        int exact = 1;
        print_message("%s\n", cases[i].text);
        assert_int_equal(audit_annot_split(str(cases[i].text), a, &exact), cases[i].n);
        assert_int_equal(exact, 0);
    }
    /* one over the cap: the first AUDIT_ANNOT_MAX are kept */
    char text[1024] = "";
    for (int i = 0; i <= AUDIT_ANNOT_MAX; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), " [k%d: v]", i);
    audit_annot_t a[AUDIT_ANNOT_MAX];
    int exact;
    assert_int_equal(audit_annot_split(str(text), a, &exact), AUDIT_ANNOT_MAX);
    assert_int_equal(exact, 0);
    assert_str(a[AUDIT_ANNOT_MAX - 1].key, "k15");
}

static void test_annot_count(void **state)
{
    (void)state;
    long long n = -1;
    assert_int_equal(audit_annot_count(str("0"), &n), 1);
    assert_int_equal(n, 0);
    assert_int_equal(audit_annot_count(str("999999999"), &n), 1);
    assert_int_equal(n, 999999999);
    assert_int_equal(audit_annot_count(str("1000000000"), &n), 0);
    assert_int_equal(audit_annot_count(str(""), &n), 0);
    assert_int_equal(audit_annot_count(str("-1"), &n), 0);
    assert_int_equal(audit_annot_is_count(str("masked")), 1);
    assert_int_equal(audit_annot_is_count(str("dropped")), 1);
    assert_int_equal(audit_annot_is_count(str("region")), 0);
}

static void test_tail_parse(void **state)
{
    (void)state;
    audit_tail_t t;
    audit_tail_parse(str("leak: secret entry[0].value, raw, in url; the request was stopped"), &t);
    assert_int_equal(t.kind, AUDIT_TAIL_LEAK);
    assert_str(t.part[0], "secret");
    assert_str(t.part[1], "entry[0].value");
    assert_str(t.part[2], "raw");
    assert_str(t.part[3], "url");
    audit_tail_parse(str("budget: sent for paste.example, 100000/100000"), &t);
    assert_int_equal(t.kind, AUDIT_TAIL_BUDGET);
    assert_str(t.part[0], "sent");
    assert_str(t.part[1], "paste.example");
    assert_str(t.part[2], "100000/100000");
    assert_int_equal(t.part[3].len, 0);
    audit_tail_parse(str("leak: secret entry[0].value"), &t); /* cut short */
    assert_int_equal(t.kind, AUDIT_TAIL_OTHER);
    audit_tail_parse(str("budget: sent"), &t);
    assert_int_equal(t.kind, AUDIT_TAIL_OTHER);
    audit_tail_parse(str("upstream refused the connection"), &t);
    assert_int_equal(t.kind, AUDIT_TAIL_OTHER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_annot_split_exact),
        cmocka_unit_test(test_annot_split_inexact),
        cmocka_unit_test(test_annot_count),
        cmocka_unit_test(test_tail_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
