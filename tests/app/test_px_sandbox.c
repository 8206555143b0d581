/* --sandboxes source matching (px_srcnet.h, px_sandbox_for): IPv4 and IPv6 sources compare in
 * one address space, IPv4 mapped into ::ffff:0:0/96, so that a dual-stack listener's
 * ::ffff:a.b.c.d and an IPv4 listener's a.b.c.d are one agent, and `::/0` overlaps every IPv4
 * sandbox. Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "app/px_sandbox.h"
#include "proxy/px_srcnet.h"

/* a.b.c.d as AF_INET, anything else as AF_INET6 (so "::ffff:a.b.c.d" is a dual-stack source) */
static const struct sockaddr *sa_of(struct sockaddr_storage *ss, const char *ip)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
    } else {
        assert_int_equal(inet_pton(AF_INET6, ip, &v6->sin6_addr), 1);
        v6->sin6_family = AF_INET6;
    }
    return (const struct sockaddr *)ss;
}

typedef struct overlap_case {
    const char *a, *b;
    int want;
} overlap_case_t;

static const overlap_case_t overlap_cases[] = {
    /* one family */
    {"10.77.1.0/24", "10.77.2.0/24", 0},
    {"10.77.0.0/16", "10.77.2.0/24", 1},
    {"10.77.1.5/24", "10.77.1.0/24", 1}, /* host bits do not make another network */
    {"10.77.1.2", "10.77.1.3", 0},
    {"0.0.0.0/0", "192.0.2.1", 1},
    {"2001:db8::/32", "2001:db9::/32", 0},
    {"2001:db8::/32", "2001:db8:1::/48", 1},
    {"::/0", "2001:db8::1", 1},
    /* across families: the dual-stack cases the old check missed */
    {"::/0", "10.0.0.0/8", 1},
    {"::/0", "0.0.0.0/0", 1},
    {"::ffff:0:0/96", "10.77.1.0/24", 1},
    {"::ffff:0:0/95", "10.77.1.0/24", 1},
    {"::ffff:10.77.1.0/120", "10.77.1.0/24", 1},
    {"::ffff:10.77.1.0/120", "10.77.1.128/25", 1},
    {"::ffff:10.77.2.0/120", "10.77.1.0/24", 0},
    {"::ffff:10.77.1.7", "10.77.1.0/24", 1},
    /* other IPv6 forms of an IPv4 address are other addresses: no socket reports them */
    {"::fffe:0:0/96", "10.0.0.0/8", 0},
    {"::a00:0/104", "10.0.0.0/8", 0},  /* IPv4-compatible ::10.0.0.0 */
    {"64:ff9b::/96", "10.0.0.0/8", 0}, /* NAT64 */
    {"2001:db8::/32", "0.0.0.0/0", 0},
};

static void test_px_sandbox_overlap_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(overlap_cases) / sizeof(overlap_cases[0]); i++) {
        const overlap_case_t *k = &overlap_cases[i];
        px_srcnet_t a, b;
        assert_int_equal(px_srcnet_parse(&a, k->a), 0);
        assert_int_equal(px_srcnet_parse(&b, k->b), 0);
        if (px_srcnet_overlap(&a, &b) != k->want || px_srcnet_overlap(&b, &a) != k->want)
            fail_msg("%s and %s: want overlap %d", k->a, k->b, k->want);
    }
}

typedef struct contains_case {
    const char *net, *src;
    int want;
} contains_case_t;

static const contains_case_t contains_cases[] = {
    {"10.77.1.0/24", "10.77.1.2", 1},
    {"10.77.1.0/24", "::ffff:10.77.1.2", 1}, /* the same agent through a dual-stack listener */
    {"10.77.1.0/24", "10.77.2.2", 0},
    {"10.77.1.0/24", "::ffff:10.77.2.2", 0},
    {"::ffff:10.77.1.0/120", "10.77.1.2", 1},
    {"::ffff:10.77.1.0/120", "::ffff:10.77.1.2", 1},
    {"::/0", "10.77.1.2", 1},
    {"::/0", "::ffff:10.77.1.2", 1},
    {"::/0", "2001:db8::1", 1},
    {"0.0.0.0/0", "2001:db8::1", 0},
    {"0.0.0.0/0", "::ffff:192.0.2.1", 1},
    {"10.0.0.0/8", "::a4d:102", 0}, /* ::10.77.1.2, IPv4-compatible: not an IPv4 source */
    {"2001:db8::/32", "2001:db8:1::5", 1},
    {"2001:db8::/32", "2001:db9::5", 0},
    {"10.77.1.2", "10.77.1.2", 1},
    {"10.77.1.2", "10.77.1.3", 0},
    {"10.77.1.2/31", "10.77.1.3", 1},
};

static void test_px_sandbox_contains_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(contains_cases) / sizeof(contains_cases[0]); i++) {
        const contains_case_t *k = &contains_cases[i];
        px_srcnet_t n;
        struct sockaddr_storage ss;
        uint8_t a[16];
        assert_int_equal(px_srcnet_parse(&n, k->net), 0);
        assert_int_equal(px_srcnet_addr(sa_of(&ss, k->src), a), 0);
        if (px_srcnet_contains(&n, a) != k->want)
            fail_msg("%s in %s: want %d", k->src, k->net, k->want);
    }
}

static void test_px_sandbox_parse_refused(void **state)
{
    (void)state;
    static const char *bad[] = {"",         "10.0.0.0/33", "::/129",
                                "10.0.0/8", "host.test",   "10.0.0.0/-1"};
    px_srcnet_t n;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (px_srcnet_parse(&n, bad[i]) == 0)
            fail_msg("'%s' parsed", bad[i]);
    struct sockaddr other = {.sa_family = AF_UNIX};
    uint8_t a[16];
    assert_int_not_equal(px_srcnet_addr(&other, a), 0);
}

/* px_sandbox_for() over sandboxes made from sandbox.conf text, as a connection or a DNS query
 * from each source finds them. */
typedef struct for_case {
    const char *src;
    const char *want; /* the sandbox's name, or NULL: in none */
} for_case_t;

static const for_case_t for_cases[] = {
    {"10.77.1.2", "v4"},
    {"::ffff:10.77.1.2", "v4"},
    {"10.77.2.9", "mapped"}, /* named as ::ffff:10.77.2.0/120, reached over IPv4 */
    {"::ffff:10.77.2.9", "mapped"},
    {"2001:db8::7", "v6"},
    {"10.77.3.1", NULL},
    {"::ffff:10.77.3.1", NULL},
    {"2001:db9::7", NULL},
    {"10.77.4.1", NULL}, /* its sandbox is removed */
};

static void test_px_sandbox_for_table(void **state)
{
    (void)state;
    static const char *confs[][2] = {
        {"v4", "source 10.77.1.0/24\n"},
        {"mapped", "source ::ffff:10.77.2.0/120 # written as IPv6\nmax-connections 4\n"},
        {"v6", "source 2001:db8::/32\n"},
        {"gone", "source 10.77.4.0/24\n"},
    };
    px_sandboxes_t *eng = calloc(1, sizeof(*eng));
    px_sandbox_t *sbs = calloc(4, sizeof(*sbs));
    assert_non_null(eng);
    assert_non_null(sbs);
    for (size_t i = 0; i < 4; i++) {
        char text[128], err[200];
        snprintf(text, sizeof(text), "%s", confs[i][1]);
        snprintf(sbs[i].name, sizeof(sbs[i].name), "%s", confs[i][0]);
        if (px_sandbox_conf_parse(&sbs[i], text, err, sizeof(err)) != 0)
            fail_msg("%s: %s", confs[i][0], err);
        sbs[i].next = eng->list;
        eng->list = &sbs[i];
    }
    sbs[3].scope.gone = 1;
    for (size_t i = 0; i < sizeof(for_cases) / sizeof(for_cases[0]); i++) {
        struct sockaddr_storage ss;
        px_sandbox_t *sb = px_sandbox_for(eng, sa_of(&ss, for_cases[i].src));
        const char *got = sb != NULL ? sb->name : NULL;
        if ((got == NULL) != (for_cases[i].want == NULL) ||
            (got != NULL && strcmp(got, for_cases[i].want) != 0))
            fail_msg("%s: sandbox %s, want %s", for_cases[i].src, got ? got : "(none)",
                     for_cases[i].want ? for_cases[i].want : "(none)");
    }
    free(sbs);
    free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_sandbox_overlap_table),
        cmocka_unit_test(test_px_sandbox_contains_table),
        cmocka_unit_test(test_px_sandbox_parse_refused),
        cmocka_unit_test(test_px_sandbox_for_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
