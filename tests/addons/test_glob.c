/* addon_glob: the glob trigger, fnmatch rules (reference notes §2.4 and §10.1), case folding,
 * UTF-8 code points, byte ranges with NUL, and pathological patterns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "addons/addon_glob.h"

typedef struct glob_case {
    const char *pat;
    const char *s;
    int icase;
    int want;
} glob_case_t;

#define CS 0 /* case-sensitive (paths) */
#define CI 1 /* case-insensitive (hosts, header names) */

static const glob_case_t glob_cases[] = {
    /* P1, P2: hosts fold case both ways; plain equality. */
    {"api.github.com", "API.GITHUB.COM", CI, 1},
    {"api.github.com", "Api.GitHub.Com", CI, 1},
    {"API.GITHUB.COM", "api.github.com", CI, 1},
    {"api.github.com", "api.github.co", CI, 0},
    {"api.github.com", "api.github.com.", CI, 0}, /* P11: no dot handling here */
    /* P3, P4, P5, P9, P10: '*' in hosts. */
    {"*.github.com", "api.github.com", CI, 1},
    {"*.github.com", "uploads.github.com", CI, 1},
    {"*.github.com", "github.com", CI, 0},
    {"*.github.com", "GITHUB.COM", CI, 0},
    {"*.github.com", "raw.githubusercontent.com", CI, 0},
    {"*.GitHub.Com", "Uploads.GitHub.Com", CI, 1},
    {"*.github.com", "a.b.github.com", CI, 1},
    {"*.github.com", ".github.com", CI, 1},
    {"*.github.com", "evilgithub.com", CI, 0},
    {"*github.com", "evilgithub.com", CI, 1},
    /* P6: '?' is exactly one character. */
    {"api?.github.com", "api1.github.com", CI, 1},
    {"api?.github.com", "api.github.com", CI, 0},
    {"api?.github.com", "api12.github.com", CI, 0},
    /* P7, P8: '*' alone, empty pattern. */
    {"*", "anything.at.all/with/slashes", CS, 1},
    {"*", "", CS, 1},
    {"", "", CS, 1},
    {"", "anything", CS, 0},
    {"**", "", CS, 1},
    {"***", "abc", CS, 1},
    {"?", "", CS, 0},
    /* P12-P17: paths. */
    {"/repos/foo", "/repos/foo/bar", CS, 0},
    {"/repos/foo", "/repos/foobar", CS, 0},
    {"/repos/foo/*", "/repos/foo/bar", CS, 1},
    {"/repos/foo/*", "/repos/foo/bar/baz", CS, 1},
    {"/repos/foo/*", "/repos/foo/", CS, 1},
    {"/repos/foo/*", "/repos/foo", CS, 0},
    {"/repos/foo*", "/repos/foo", CS, 1},
    {"/repos/foo*", "/repos/foobar", CS, 1},
    {"/repos/foo*", "/repos/foo/bar", CS, 1},
    {"/repos/foo*", "/repos/fo", CS, 0},
    {"/api/*/data", "/api/v1/data", CS, 1},
    {"/api/*/data", "/api/v1/other", CS, 0},
    {"/api/*/data", "/api/v1/x/y/data", CS, 1}, /* '*' crosses '/' */
    {"/v?/api", "/v1/api", CS, 1},
    {"/v?/api", "/v10/api", CS, 0},
    {"/v?/api", "/v//api", CS, 1},
    {"/a*b", "/a.b", CS, 1}, /* '*' crosses '.' */
    /* P18, P19: classes only in globs. */
    {"/v[12]/*", "/v1/a", CS, 1},
    {"/v[12]/*", "/v2/a", CS, 1},
    {"/v[12]/*", "/v3/a", CS, 0},
    {"/v[12]", "/v1", CS, 0},
    {"/v[12]", "/v[12]", CS, 1},
    /* P20: paths are case-sensitive. */
    {"/Api*", "/api", CS, 0},
    {"/Api*", "/Api", CS, 1},
    {"/api", "/API", CS, 0},
    /* P21-P24: header-name style. */
    {"Authorization", "authorization", CI, 1},
    {"Authorization", "AUTHORIZATION", CI, 1},
    {"X-*", "x-api-key", CI, 1},
    {"x-*", "X-Custom", CI, 1},
    {"X-*", "Authorization", CI, 0},
    {"*-Token", "private-token", CI, 1},
    {"*-Token", "Authorization", CI, 0},
    {"X-?-Key", "x-a-key", CI, 1},
    {"X-?-Key", "X-AB-Key", CI, 0},
    /* Classes: sets, negation, ranges, ']' first, '-' first/last, reversed ranges. */
    {"[abc]*", "b", CS, 1},
    {"[abc]*", "d", CS, 0},
    {"[!abc]*", "d", CS, 1},
    {"[!abc]*", "a", CS, 0},
    {"[a-c]?", "bx", CS, 1},
    {"[a-c]?", "dx", CS, 0},
    {"[!a-c]?", "dx", CS, 1},
    {"[0-9][0-9]*", "42", CS, 1},
    {"[0-9][0-9]*", "4x", CS, 0},
    {"[]]*", "]", CS, 1},
    {"[]a]*", "a", CS, 1},
    {"[!]]*", "]", CS, 0},
    {"[!]]*", "x", CS, 1},
    {"[-a]*", "-", CS, 1},
    {"[a-]*", "-", CS, 1},
    {"[a-]*", "b", CS, 0},
    {"[!-a]*", "-", CS, 0},
    {"[a-c-e]*", "-", CS, 1}, /* '-' right after a range is literal */
    {"[a-c-e]*", "d", CS, 0},
    {"[a-c-e]*", "e", CS, 1},
    {"[z-a]*", "m", CS, 0}, /* reversed range: empty class matches nothing */
    {"[z-a]*", "z", CS, 0},
    {"[!z-a]*", "m", CS, 1}, /* negated empty class matches anything */
    {"[z-ab]*", "b", CS, 1}, /* reversed range dropped, 'b' stays */
    {"[z-ab]*", "z", CS, 0},
    {"[c-a-b]*", "-", CS, 1}, /* fnmatch: c-a dropped, then "-b" literal */
    {"[c-a-b]*", "b", CS, 1},
    {"[c-a-b]*", "a", CS, 0},
    {"[^a]*", "^", CS, 1}, /* '^' is not negation in fnmatch */
    {"[^a]*", "b", CS, 0},
    {"[\\]*", "\\", CS, 1}, /* backslash is an ordinary member */
    {"[*]", "*", CS, 1},
    {"[*]", "x", CS, 0},
    {"[*-b]", "-", CS, 1}, /* a range from * to b; the last * is inside a class */
    {"[*-b]", "a", CS, 1},
    {"[]Ab*]", "A", CS, 1},
    {"?[!*]", "x-", CS, 1},
    {"?[!*]", "x*", CS, 0},
    {"*.com]", "a.com]", CS, 1},
    {"[?]", "?", CS, 1},
    {"a[[]*", "a[", CS, 1},
    {"[a-z]*", "/", CS, 0},
    {"[!/]*", "/x", CS, 0},
    /* Class ranges fold under icase: [A-Z] is [a-z]. */
    {"[A-Z]*", "q", CI, 1},
    {"[a-z]*", "Q", CI, 1},
    {"[A-Z]*", "q", CS, 0},
    {"[Z-a]*", "_", CS, 1},
    {"[Z-a]*", "_", CI, 0}, /* lowercased to [z-a]: empty */
    /* An unclosed '[' is literal. */
    {"/v[1*", "/v[1/x", CS, 1},
    {"/v[1*", "/v1/x", CS, 0},
    {"[*", "[abc", CS, 1},
    {"*[", "abc[", CS, 1},
    {"*[", "abc", CS, 0},
    {"[!*", "[!x", CS, 1},
    /* Anchored at both ends. */
    {"b*", "ab", CS, 0},
    {"*a", "ab", CS, 0},
    {"*b*", "abc", CS, 1},
    {"a*c", "abcbc", CS, 1},
    {"a*c", "abcb", CS, 0},
    {"*.*", "a.b", CS, 1},
    {"a*b*c", "aXbYc", CS, 1},
    {"a*b*c", "aXcYb", CS, 0},
    /* '?' is one code point: 'é' is two bytes, '€' three, U+1F600 four. */
    {"/caf?", "/caf\xc3\xa9", CS, 1},
    {"/caf??", "/caf\xc3\xa9", CS, 0},
    {"/?", "/\xe2\x82\xac", CS, 1},
    {"/?", "/\xf0\x9f\x98\x80", CS, 1},
    {"/??", "/\xf0\x9f\x98\x80", CS, 0},
    {"/[\xc3\xa9\xc3\xa8]*", "/\xc3\xa8t\xc3\xa9", CS, 1},
    {"/[a-\xc3\xbf]*", "/\xc3\xa9", CS, 1},
    {"/[!\xc3\xa9]*", "/\xc3\xa9", CS, 0},
    {"*\xc3\xa9", "x\xc3\xa9", CS, 1},
    /* Invalid UTF-8: each maximal ill-formed subpart is one U+FFFD character. */
    {"/?", "/\xff", CS, 1},
    {"/?", "/\xe2\x82", CS, 1}, /* truncated 3-byte sequence: one character */
    {"/??", "/\xe2\x82", CS, 0},
    {"/??", "/\xc0\xaf", CS, 1},    /* overlong: two characters */
    {"/?", "/\xed\xa0\x80", CS, 0}, /* surrogate: three characters */
    {"/???", "/\xed\xa0\x80", CS, 1},
    {"/?/", "/\xe2\x82/", CS, 1}, /* never swallows the ASCII that follows */
    {"/\xef\xbf\xbd*", "/\xff", CS, 1},
    /* Plain patterns compare bytes: no glob rules at all. */
    {"/a.b", "/axb", CS, 0},
    {"/[ab]", "/a", CS, 0},
    {"/a+b", "/a+b", CS, 1},
    {"/a+b", "/a b", CS, 0},
};

static void test_glob_table(void **state)
{
    (void)state;
    size_t n = sizeof(glob_cases) / sizeof(glob_cases[0]);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        const glob_case_t *c = &glob_cases[i];
        int got = c->icase ? addon_glob_match_icase(c->pat, strlen(c->pat), c->s, strlen(c->s))
                           : addon_glob_match(c->pat, strlen(c->pat), c->s, strlen(c->s));
        if (got != c->want) {
            print_error("case %zu: pattern '%s' %s '%s': got %d, want %d\n", i, c->pat,
                        c->icase ? "icase" : "case", c->s, got, c->want);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_glob_is_glob(void **state)
{
    (void)state;
    assert_int_equal(addon_glob_is_glob("a*", 2), 1);
    assert_int_equal(addon_glob_is_glob("a?", 2), 1);
    assert_int_equal(addon_glob_is_glob("[ab]", 4), 0);
    assert_int_equal(addon_glob_is_glob("", 0), 0);
    assert_int_equal(addon_glob_is_glob("abc*", 3), 0); /* only the given range counts */
}

static void test_glob_byte_ranges(void **state)
{
    (void)state;
    /* NUL is an ordinary byte on both sides, and nothing is read past len. */
    static const char path[] = {'/', 'a', '\0', 'b'};
    assert_int_equal(addon_glob_match("/a*", 3, path, sizeof(path)), 1);
    assert_int_equal(addon_glob_match("/a?b", 4, path, sizeof(path)), 1);
    assert_int_equal(addon_glob_match("/a", 2, path, sizeof(path)), 0);
    static const char pat[] = {'/', 'a', '\0', 'b'};
    assert_int_equal(addon_glob_match(pat, sizeof(pat), path, sizeof(path)), 1);
    assert_int_equal(addon_glob_match("/abc", 2, "/a", 2), 1);
    assert_int_equal(addon_glob_match("/a*zzz", 3, "/abc", 4), 1);
    /* An unclosed class at the end of the range: "[ab" of "[ab]". */
    assert_int_equal(addon_glob_match("*[ab]", 4, "x[ab", 4), 1);
    /* A multi-byte character cut by the subject's end is one replacement character. */
    assert_int_equal(addon_glob_match("?", 1, "\xc3\xa9", 1), 1);
}

static double glob_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Patterns that are exponential for a naive recursive matcher must stay fast. */
static void test_glob_pathological(void **state)
{
    (void)state;
    enum { LEN = 64 * 1024 };
    char *s = malloc(LEN);
    assert_non_null(s);
    memset(s, 'a', LEN);
    static const char *const pats[] = {
        "*a*a*a*a*a*a*a*a*a*a*b",
        "*a*a*a*a*a*a*a*a*a*a*",
        "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
        "*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?b",
        "*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[!a]",
        "**************************************************b",
    };
    static const int want[] = {0, 1, 0, 0, 0, 0};
    double t0 = glob_now();
    for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
        int got = addon_glob_match(pats[i], strlen(pats[i]), s, LEN);
        assert_int_equal(got, want[i]);
        got = addon_glob_match_icase(pats[i], strlen(pats[i]), s, LEN);
        assert_int_equal(got, want[i]);
    }
    double elapsed = glob_now() - t0;
    /* Linear-ish work is well under 100 ms even under ASan; exponential would never finish. */
    assert_true(elapsed < 5.0);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glob_table),
        cmocka_unit_test(test_glob_is_glob),
        cmocka_unit_test(test_glob_byte_ranges),
        cmocka_unit_test(test_glob_pathological),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
