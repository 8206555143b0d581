/* px_hello.c: the SNI of a ClientHello relayed unread, and the runtime a ClientHello looks
 * like. The runtime table holds ClientHellos captured on this machine (Debian 12) from
 * curl 7.88, Python 3.11 (urllib, requests), Node 20, Go 1.19 (net/http) and OpenJDK 17
 * (HttpsURLConnection), each with its defaults: cipher suites in order, extensions in order,
 * ALPN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_err.h"
#include "net/px_hello.h"

typedef struct hello_case {
    const char *who;
    uint16_t ciphers[64];
    size_t nciphers;
    int exts[24];
    size_t nexts;
    const char *alpn; /* the ALPN list as sent (length-prefixed), or NULL */
    size_t alpn_len;
    px_runtime_t want;
} hello_case_t;

#define A_H2_H1 "\x02h2\x08http/1.1"
#define A_H1 "\x08http/1.1"

static const hello_case_t hello_cases[] = {
    {"curl",
     {0x1302, 0x1303, 0x1301, 0xc02c, 0xc030, 0x009f, 0xcca9, 0xcca8, 0xccaa, 0xc02b, 0xc02f,
      0x009e, 0xc024, 0xc028, 0x006b, 0xc023, 0xc027, 0x0067, 0xc00a, 0xc014, 0x0039, 0xc009,
      0xc013, 0x0033, 0x009d, 0x009c, 0x003d, 0x003c, 0x0035, 0x002f, 0x00ff},
     31,
     {0, 11, 10, 16, 22, 23, 49, 13, 43, 45, 51, 21},
     12,
     A_H2_H1,
     sizeof(A_H2_H1) - 1,
     PX_RT_CURL},
    {"python urllib",
     {0x1302, 0x1303, 0x1301, 0xc02c, 0xc030, 0x009f, 0xcca9, 0xcca8, 0xccaa, 0xc02b, 0xc02f,
      0x009e, 0xc024, 0xc028, 0x006b, 0xc023, 0xc027, 0x0067, 0xc00a, 0xc014, 0x0039, 0xc009,
      0xc013, 0x0033, 0x009d, 0x009c, 0x003d, 0x003c, 0x0035, 0x002f, 0x00ff},
     31,
     {0, 11, 10, 35, 16, 22, 23, 49, 13, 43, 45, 51, 21},
     13,
     A_H1,
     sizeof(A_H1) - 1,
     PX_RT_PYTHON},
    {"python requests",
     {0x1302, 0x1303, 0x1301, 0xc02c, 0xc030, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0x009f, 0x009e,
      0xccaa, 0xc0af, 0xc0ad, 0xc0ae, 0xc0ac, 0xc024, 0xc028, 0xc023, 0xc027, 0xc00a, 0xc014,
      0xc009, 0xc013, 0xc0a3, 0xc09f, 0xc0a2, 0xc09e, 0x006b, 0x0067, 0x0039, 0x0033, 0x009d,
      0x009c, 0xc0a1, 0xc09d, 0xc0a0, 0xc09c, 0x003d, 0x003c, 0x0035, 0x002f, 0x00ff},
     43,
     {0, 11, 10, 16, 22, 23, 49, 13, 43, 45, 51, 21},
     12,
     A_H1,
     sizeof(A_H1) - 1,
     PX_RT_PYTHON},
    {"node",
     {0x1302, 0x1303, 0x1301, 0xc02f, 0xc02b, 0xc030, 0xc02c, 0x009e, 0xc027, 0x0067,
      0xc028, 0x006b, 0x00a3, 0x009f, 0xcca9, 0xcca8, 0xccaa, 0xc0af, 0xc0ad, 0xc0a3,
      0xc09f, 0xc05d, 0xc061, 0xc057, 0xc053, 0x00a2, 0xc0ae, 0xc0ac, 0xc0a2, 0xc09e,
      0xc05c, 0xc060, 0xc056, 0xc052, 0xc024, 0x006a, 0xc023, 0x0040, 0xc00a, 0xc014,
      0x0039, 0x0038, 0xc009, 0xc013, 0x0033, 0x0032, 0x009d, 0xc0a1, 0xc09d, 0xc051,
      0x009c, 0xc0a0, 0xc09c, 0xc050, 0x003d, 0x003c, 0x0035, 0x002f, 0x00ff},
     59,
     {0, 11, 10, 35, 22, 23, 13, 43, 45, 51},
     10,
     NULL,
     0,
     PX_RT_NODE},
    {"go",
     {0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc009, 0xc013, 0xc00a, 0xc014, 0x009c,
      0x009d, 0x002f, 0x0035, 0xc012, 0x000a, 0x1301, 0x1302, 0x1303},
     19,
     {0, 5, 10, 11, 13, 65281, 16, 18, 43, 51},
     10,
     A_H2_H1,
     sizeof(A_H2_H1) - 1,
     PX_RT_GO},
    {"java",
     {0x1302, 0x1301, 0x1303, 0xc02c, 0xc02b, 0xcca9, 0xc030, 0xcca8, 0xc02f, 0x009f,
      0xccaa, 0x00a3, 0x009e, 0x00a2, 0xc024, 0xc028, 0xc023, 0xc027, 0x006b, 0x006a,
      0x0067, 0x0040, 0xc00a, 0xc014, 0xc009, 0xc013, 0x0039, 0x0038, 0x0033, 0x0032,
      0x009d, 0x009c, 0x003d, 0x003c, 0x0035, 0x002f, 0x00ff},
     37,
     {0, 5, 10, 11, 17, 23, 35, 13, 43, 45, 50, 51},
     12,
     NULL,
     0,
     PX_RT_JAVA},
    {"nothing", {0}, 0, {0}, 0, NULL, 0, PX_RT_UNKNOWN},
};

static void test_px_hello_runtime(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(hello_cases) / sizeof(hello_cases[0]); i++) {
        const hello_case_t *c = &hello_cases[i];
        px_hello_info_t h = {
            c->ciphers, c->nciphers, c->exts, c->nexts, (const unsigned char *)c->alpn,
            c->alpn_len};
        px_runtime_t got = px_hello_runtime(&h);
        if (got != c->want)
            fail_msg("%s: got %s, want %s", c->who, px_runtime_name(got), px_runtime_name(c->want));
        assert_non_null(px_runtime_fix(got));
    }
}

/* A minimal ClientHello carrying server_name sni (len bytes). */
static size_t hello(unsigned char *out, const char *sni, size_t len)
{
    unsigned char body[600];
    size_t n = 0;
    body[n++] = 3, body[n++] = 3;
    memset(body + n, 0, 32), n += 32;
    body[n++] = 0;                                                    /* session id */
    body[n++] = 0, body[n++] = 2, body[n++] = 0xc0, body[n++] = 0x2f; /* ciphers */
    body[n++] = 1, body[n++] = 0;                                     /* compression */
    size_t ext = 2 + 2 + 2 + 1 + 2 + len;
    body[n++] = (unsigned char)(ext >> 8), body[n++] = (unsigned char)ext;
    body[n++] = 0, body[n++] = 0; /* server_name */
    body[n++] = (unsigned char)((ext - 4) >> 8), body[n++] = (unsigned char)(ext - 4);
    body[n++] = (unsigned char)((len + 3) >> 8), body[n++] = (unsigned char)(len + 3);
    body[n++] = 0;
    body[n++] = (unsigned char)(len >> 8), body[n++] = (unsigned char)len;
    memcpy(body + n, sni, len), n += len;
    out[0] = 0x16, out[1] = 3, out[2] = 1;
    out[3] = (unsigned char)((n + 4) >> 8), out[4] = (unsigned char)(n + 4);
    out[5] = 1, out[6] = 0, out[7] = (unsigned char)(n >> 8), out[8] = (unsigned char)n;
    memcpy(out + 9, body, n);
    return n + 9;
}

static void test_px_hello_sni(void **state)
{
    (void)state;
    unsigned char buf[700];
    char sni[256];
    size_t n = hello(buf, "a.test", 6);
    assert_int_equal(px_hello_sni(buf, n, sni, sizeof(sni)), 1);
    assert_string_equal(sni, "a.test");
    for (size_t k = 0; k < n; k++)
        assert_int_equal(px_hello_sni(buf, k, sni, sizeof(sni)), k < 5 ? 0 : k < n ? 0 : 1);
    char big[300];
    memset(big, 'a', sizeof(big));
    n = hello(buf, big, 255);
    assert_int_equal(px_hello_sni(buf, n, sni, sizeof(sni)), 1);
    n = hello(buf, big, 256); /* one byte more than the buffer can hold with its NUL */
    assert_int_equal(px_hello_sni(buf, n, sni, sizeof(sni)), PX_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_hello_runtime),
        cmocka_unit_test(test_px_hello_sni),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
