/* px_dest_special(): every non-global destination is refused, IPv6 forms that embed an IPv4
 * address are judged by it, and global addresses pass. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "proxy/px_config.h"
#include "proxy/px_dest.h"

typedef struct dest_case {
    const char *addr;
    const char *want; /* a substring of the reason, or NULL: global */
} dest_case_t;

static const dest_case_t dest_cases[] = {
    /* IPv4 */
    {"8.8.8.8", NULL},
    {"1.1.1.1", NULL},
    {"93.184.216.34", NULL},
    {"0.0.0.0", "unspecified"},
    {"0.1.2.3", "unspecified"},
    {"10.99.0.5", "RFC 1918"},
    {"10.0.0.0", "RFC 1918"},
    {"172.16.0.1", "RFC 1918"},
    {"172.31.255.255", "RFC 1918"},
    {"172.32.0.1", NULL},
    {"192.168.1.1", "RFC 1918"},
    {"100.64.0.1", "shared address space"},
    {"100.100.100.200", "shared address space"}, /* a cloud metadata address */
    {"100.127.255.255", "shared address space"},
    {"100.128.0.1", NULL},
    {"127.0.0.1", "loopback"},
    {"127.1.2.3", "loopback"},
    {"169.254.169.254", "link-local"},
    {"192.0.0.9", "IETF protocol assignments"},
    {"192.0.2.1", "documentation"},
    {"192.88.99.1", "6to4 relay"},
    {"198.18.0.1", "benchmarking"},
    {"198.19.255.255", "benchmarking"},
    {"198.20.0.1", NULL},
    {"198.51.100.7", "documentation"},
    {"203.0.113.9", "documentation"},
    {"224.0.0.1", "multicast"},
    {"239.255.255.250", "multicast"},
    {"240.0.0.1", "reserved"},
    {"255.255.255.254", "reserved"},
    {"255.255.255.255", "broadcast"},
    /* IPv6 */
    {"2606:4700:4700::1111", NULL},
    {"2a00:1450:4001:81b::200e", NULL},
    {"::", "unspecified"},
    {"::1", "loopback"},
    {"::10.0.0.1", "IPv4-compatible"},
    {"::8.8.8.8", "IPv4-compatible"},
    {"fe80::1", "link-local"},
    {"febf::1", "link-local"},
    {"fec0::5", "site-local"},
    {"fd00:ec2::254", "unique local"}, /* a cloud metadata address over IPv6 */
    {"fc00::1", "unique local"},
    {"ff02::1", "multicast"},
    {"100::1", "discard-only"},
    {"2001:db8::1", "documentation"},
    {"3fff::1", "documentation"},
    {"2001:2::1", "benchmarking"},
    {"2001:10::1", "ORCHID"},
    {"5f00::1", "SRv6"},
    {"64:ff9b:1::a00:1", "local-use NAT64"},
    /* IPv6 forms embedding IPv4: judged by the embedded address */
    {"::ffff:10.0.0.1", "IPv4-mapped of 10.0.0.1: private"},
    {"::ffff:127.0.0.1", "IPv4-mapped of 127.0.0.1: loopback"},
    {"::ffff:8.8.8.8", NULL},
    {"64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254: link-local"},
    {"64:ff9b::10.1.2.3", "NAT64 of 10.1.2.3: private"},
    {"64:ff9b::8.8.8.8", NULL},
    {"2002:a00:1::1", "6to4 of 10.0.0.1: private"},
    {"2002:7f00:1::", "6to4 of 127.0.0.1: loopback"},
    {"2002:808:808::1", NULL},
    /* Teredo: server 65.54.227.120 (global), client 10.0.0.1 inverted = f5ff:fffe */
    {"2001:0:4136:e378:8000:63bf:f5ff:fffe", "Teredo of 10.0.0.1: private"},
    /* client global (8.8.8.8 inverted = f7f7:f7f7), server private 192.168.0.1 = c0a8:0001 */
    {"2001:0:c0a8:1:8000:63bf:f7f7:f7f7", "Teredo of 192.168.0.1: private"},
    {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", NULL},
};

static void test_px_dest_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(dest_cases) / sizeof(dest_cases[0]); i++) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        const char *a = dest_cases[i].addr;
        if (strchr(a, ':') != NULL) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            s6->sin6_family = AF_INET6;
            assert_int_equal(inet_pton(AF_INET6, a, &s6->sin6_addr), 1);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            s4->sin_family = AF_INET;
            assert_int_equal(inet_pton(AF_INET, a, &s4->sin_addr), 1);
        }
        char buf[96];
        const char *why = px_dest_special((const struct sockaddr *)&ss, buf, sizeof(buf));
        const char *want = dest_cases[i].want;
        if (want == NULL && why != NULL)
            fail_msg("%s: refused (%s), want global", a, why);
        if (want != NULL && (why == NULL || strstr(why, want) == NULL))
            fail_msg("%s: %s, want [%s]", a, why != NULL ? why : "global", want);
    }
}

static void test_px_dest_other_family(void **state)
{
    (void)state;
    struct sockaddr sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_family = AF_UNIX;
    char buf[96];
    assert_non_null(px_dest_special(&sa, buf, sizeof(buf)));
}

/* An address:port as a sockaddr (IPv4 "a.b.c.d" or IPv6 "x::y"). */
static const struct sockaddr *sa_of(struct sockaddr_storage *ss, const char *a, uint16_t port)
{
    memset(ss, 0, sizeof(*ss));
    if (strchr(a, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        assert_int_equal(inet_pton(AF_INET6, a, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        assert_int_equal(inet_pton(AF_INET, a, &s4->sin_addr), 1);
    }
    return (const struct sockaddr *)ss;
}

/* The whole decision: address class, --allow-upstream-cidr, own addresses, the proxy IP and
 * airlock's own listeners (which no re-opened range re-opens). */
static void test_px_dest_forbidden_table(void **state)
{
    (void)state;
    static px_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    assert_int_equal(px_cidr_parse(&cfg.allow_cidrs[0], "127.0.0.1/32"), 0);
    assert_int_equal(px_cidr_parse(&cfg.allow_cidrs[1], "127.0.0.2/32"), 0);
    assert_int_equal(px_cidr_parse(&cfg.allow_cidrs[2], "10.1.0.0/16"), 0);
    cfg.n_allow_cidrs = 3;
    assert_int_equal(px_listen_parse(&cfg.listen_http, "127.0.0.1:8080"), 0);
    assert_int_equal(px_listen_parse(&cfg.listen_https, "0.0.0.0:8443"), 0);
    assert_int_equal(px_listen_parse(&cfg.listen_proxy, "[::]:3128"), 0);
    px_cidr_t own[2];
    assert_int_equal(px_cidr_parse(&own[0], "8.8.4.4/32"), 0);
    assert_int_equal(px_cidr_parse(&own[1], "10.1.2.3/32"), 0);
    struct in_addr pip;
    inet_pton(AF_INET, "1.2.3.4", &pip);
    px_dest_ctx_t d = {.cfg = &cfg, .own = own, .n_own = 2, .proxy_ip = pip.s_addr};
    static const struct {
        const char *addr;
        uint16_t port;
        const char *want; /* NULL: may be dialed */
    } cases[] = {
        {"8.8.8.8", 443, NULL},
        {"127.0.0.2", 80, NULL},             /* loopback, re-opened */
        {"127.0.0.3", 80, "loopback"},       /* loopback, not re-opened */
        {"127.0.0.1", 9999, NULL},           /* re-opened, no listener there */
        {"127.0.0.1", 8080, "own listener"}, /* re-opened, but airlock listens there */
        {"127.0.0.1", 8443, "own listener"}, /* the wildcard listener takes loopback too */
        {"127.0.0.1", 3128, "own listener"}, /* "::" takes IPv4 (dual stack) */
        {"8.8.4.4", 443, "own address"},     /* global, but this machine's */
        {"8.8.4.4", 8443, "own"},            /* and a wildcard listener's port */
        {"1.2.3.4", 80, "own address"},      /* the proxy IP */
        {"10.1.9.9", 80, NULL},              /* private, re-opened */
        {"10.1.2.3", 8443, "own listener"},  /* re-opened, own, and a listener's port */
        {"10.2.0.1", 80, "private"},
        {"::1", 80, "loopback"},
        {"::1", 3128, "loopback"}, /* refused by its class first */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sockaddr_storage ss;
        char why[160] = "";
        int rc = px_dest_forbidden(&d, sa_of(&ss, cases[i].addr, cases[i].port), why, sizeof(why));
        if (cases[i].want == NULL && rc != 0)
            fail_msg("%s:%u refused (%s), want allowed", cases[i].addr, cases[i].port, why);
        if (cases[i].want != NULL && (rc != 1 || strstr(why, cases[i].want) == NULL))
            fail_msg("%s:%u: [%s], want [%s]", cases[i].addr, cases[i].port, rc ? why : "allowed",
                     cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_dest_table),
        cmocka_unit_test(test_px_dest_forbidden_table),
        cmocka_unit_test(test_px_dest_other_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
