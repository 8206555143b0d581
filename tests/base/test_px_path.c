/* The readings of a path (base/px_path.c): the spellings upstreams read one path as. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_path.h"

#define PA PX_PATH_PARAMS
#define DO PX_PATH_DOTS
#define ME PX_PATH_MERGE

static void test_px_path_reading_table(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        unsigned how;
        const char *out;
    } cases[] = {
        {"/a/b", 0, "/a/b"},
        {"/a/b", PX_PATH_ALL, "/a/b"},
        {"//admin/x", ME, "/admin/x"},
        {"/v1//messages", ME, "/v1/messages"},
        {"///", ME, "/"},
        {"/a//", ME, "/a/"},
        {"/a/", ME, "/a/"},
        {"/", ME, "/"},
        {"/admin;x/y", PA, "/admin/y"},
        {"/admin;x/y", ME, "/admin;x/y"},
        {"/a;b;c/d;e", PA, "/a/d"},
        {"/;x/a", PA, "//a"},
        {"/;x/a", PA | ME, "/a"},
        {"/./InRelease", DO, "/InRelease"},
        {"/a/./b", DO, "/a/b"},
        {"/a/.", DO, "/a/"},
        {"/a/.b/c.", DO, "/a/.b/c."},
        {"/.;x/admin", PA, "/./admin"},
        {"/.;x/admin", PA | DO, "/admin"},
        {"/a/.//b", DO, "/a//b"},
        {"/a/.//b", DO | ME, "/a/b"},
        {"//./admin;p//x", PX_PATH_ALL, "/admin/x"},
        {"/graphql.json", PX_PATH_ALL, "/graphql.json"},
        {"*", PX_PATH_ALL, "*"},
        {"", PX_PATH_ALL, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        size_t n = px_path_reading(cases[i].in, strlen(cases[i].in), cases[i].how, out);
        if (n != strlen(cases[i].out) || memcmp(out, cases[i].out, n) != 0)
            fail_msg("case %zu: %s how %u: got '%.*s', want '%s'", i, cases[i].in, cases[i].how,
                     (int)n, out, cases[i].out);
    }
}

static void test_px_path_changes_table(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        unsigned changes;
    } cases[] = {
        {"/a/b", 0},           {"/", 0},           {"/a/", 0},   {"//a", ME},  {"/a//b", ME},
        {"/a/./b", DO},        {"/a/.", DO},       {"/a/.b", 0}, {"/a/b.", 0}, {"/a/../b", 0},
        {"/a;b", PX_PATH_ALL}, {"//./x", ME | DO}, {"", 0},      {"*", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned c = px_path_changes(cases[i].in, strlen(cases[i].in));
        if (c != cases[i].changes)
            fail_msg("case %zu: %s: changes %u, want %u", i, cases[i].in, c, cases[i].changes);
        /* every transformation outside the changes leaves the path as it is */
        for (unsigned how = 1; how <= PX_PATH_ALL; how++) {
            if (px_path_worth(c, how))
                continue;
            char out[64];
            size_t n = px_path_reading(cases[i].in, strlen(cases[i].in), how & c, out);
            char full[64];
            size_t m = px_path_reading(cases[i].in, strlen(cases[i].in), how, full);
            assert_int_equal(n, m);
            assert_memory_equal(out, full, n);
        }
    }
}

typedef struct seen {
    char r[8][64];
    size_t n;
    const char *want;
} seen_t;

static int record(const char *p, size_t len, void *ctx)
{
    seen_t *s = ctx;
    if (s->n < 8)
        snprintf(s->r[s->n++], sizeof(s->r[0]), "%.*s", (int)len, p);
    return s->want != NULL && strlen(s->want) == len && memcmp(s->want, p, len) == 0 ? 7 : 0;
}

static void test_px_path_any(void **state)
{
    (void)state;
    seen_t s = {.n = 0, .want = NULL};
    /* one reading for a plain path; the query is not part of it */
    assert_int_equal(px_path_any("/a/b?x=//y;z", 12, record, &s), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.r[0], "/a/b");
    /* decoded once: %2f is a '/', %3b a ';', %2e a '.' */
    s = (seen_t){.n = 0, .want = "/v1/messages"};
    assert_int_equal(px_path_any("/v1%2f%2Fmessages", 17, record, &s), 7);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.r[0], "/v1//messages");
    s = (seen_t){.n = 0, .want = "/graphql"};
    assert_int_equal(px_path_any("/%2e/graphql%3bx", 16, record, &s), 7);
    s = (seen_t){.n = 0, .want = "/nope"};
    assert_int_equal(px_path_any("/a;b/./c//d", 11, record, &s), 0);
    assert_int_equal(s.n, 8); /* as sent and all seven transformations */
    /* a path too long to read: fail-secure */
    static char big[PX_PATH_ANY_MAX + 2];
    memset(big, 'a', sizeof(big));
    big[0] = '/';
    s = (seen_t){.n = 0, .want = NULL};
    assert_int_equal(px_path_any(big, sizeof(big), record, &s), 1);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_path_reading_table),
        cmocka_unit_test(test_px_path_changes_table),
        cmocka_unit_test(test_px_path_any),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
