/* px_socks.c: the SOCKS5 greeting and request reader (RFC 1928) and the reply writer. Each
 * table case is fed whole, then every proper prefix of it, which must ask for more (0) or give
 * the same refusal as the whole (a refusal is decided as soon as its byte is in). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_err.h"
#include "net/px_socks.h"

typedef struct greet_case {
    const char *what;
    const char *in;
    size_t len;
    int rc;     /* bytes taken, 0 or PX_EPARSE */
    int noauth; /* when whole */
} greet_case_t;

#define B(s) s, sizeof(s) - 1

static const greet_case_t greet_cases[] = {
    {"no auth only", B("\x05\x01\x00"), 3, 1},
    {"user/pass then no auth", B("\x05\x02\x02\x00"), 4, 1},
    {"user/pass only", B("\x05\x01\x02"), 3, 0},
    {"GSSAPI only", B("\x05\x01\x01"), 3, 0},
    {"a request follows", B("\x05\x01\x00\x05\x01\x00\x01"), 3, 1},
    {"no methods", B("\x05\x00"), PX_EPARSE, 0},
    {"SOCKS4", B("\x04\x01\x00\x50"), PX_EPARSE, 0},
    {"HTTP", B("GET / HTTP/1.1\r\n"), PX_EPARSE, 0},
    {"TLS", B("\x16\x03\x01\x02\x00"), PX_EPARSE, 0},
    {"short", B("\x05\x03\x00\x01"), 0, 0},
    {"empty", "", 0, 0, 0},
};

static void test_greeting(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(greet_cases) / sizeof(greet_cases[0]); i++) {
        const greet_case_t *t = &greet_cases[i];
        int noauth = -1;
        int rc = px_socks_greeting((const unsigned char *)t->in, t->len, &noauth);
        if (rc != t->rc || (rc > 0 && noauth != t->noauth)) {
            print_error("%s: rc %d noauth %d\n", t->what, rc, noauth);
            fail();
        }
        for (size_t n = 0; n < t->len && (t->rc > 0 ? n < (size_t)t->rc : 1); n++) {
            int prc = px_socks_greeting((const unsigned char *)t->in, n, &noauth);
            if (prc != 0 && prc != t->rc) {
                print_error("%s: prefix %zu gives %d\n", t->what, n, prc);
                fail();
            }
        }
    }
}

typedef struct req_case {
    const char *what;
    const char *in;
    size_t len;
    int rc;
    uint8_t cmd, atyp;
    const char *host;
    uint16_t port;
    px_socks_rep_t rep; /* PX_EPARSE */
} req_case_t;

static const req_case_t req_cases[] = {
    {"IPv4", B("\x05\x01\x00\x01\x7f\x00\x00\x02\x01\xbb"), 10, 1, 1, "127.0.0.2", 443, 0},
    {"IPv6",
     B("\x05\x01\x00\x04\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"
       "\x00\x50"),
     22, 1, 4, "2001:db8::1", 80, 0},
    {"name",
     B("\x05\x01\x00\x03\x08"
       "app.test"
       "\x01\xbb"),
     15, 1, 3, "app.test", 443, 0},
    {"name, bytes follow",
     B("\x05\x01\x00\x03\x01"
       "a"
       "\x00\x50\x16\x03\x01"),
     8, 1, 3, "a", 80, 0},
    {"name of 255", NULL, 0, 0, 0, 0, NULL, 0, 0}, /* built below */
    {"BIND is read (the caller refuses)", B("\x05\x02\x00\x01\x01\x02\x03\x04\x00\x15"), 10, 2, 1,
     "1.2.3.4", 21, 0},
    {"UDP ASSOCIATE is read", B("\x05\x03\x00\x01\x00\x00\x00\x00\x00\x01"), 10, 3, 1, "0.0.0.0", 1,
     0},
    {"unknown address type", B("\x05\x01\x00\x09\x01\x02"), PX_EPARSE, 1, 9, "", 0,
     PX_SOCKS_BAD_ATYP},
    {"version 4", B("\x04\x01\x00\x01"), PX_EPARSE, 0, 0, "", 0, PX_SOCKS_FAILURE},
    {"reserved byte set", B("\x05\x01\x01\x01\x01\x02\x03\x04\x00\x50"), PX_EPARSE, 0, 0, "", 0,
     PX_SOCKS_FAILURE},
    {"empty name", B("\x05\x01\x00\x03\x00\x00\x50"), PX_EPARSE, 1, 3, "", 0, PX_SOCKS_FAILURE},
    {"NUL in the name",
     B("\x05\x01\x00\x03\x03"
       "a\0b"
       "\x00\x50"),
     PX_EPARSE, 1, 3, "", 0, PX_SOCKS_FAILURE},
    {"port 0", B("\x05\x01\x00\x01\x01\x02\x03\x04\x00\x00"), PX_EPARSE, 1, 1, "", 0,
     PX_SOCKS_FAILURE},
    {"short IPv6", B("\x05\x01\x00\x04\x00\x00"), 0, 0, 0, "", 0, 0},
};

static void check_req(const req_case_t *t, const char *in, size_t len)
{
    px_socks_req_t r;
    int rc = px_socks_request((const unsigned char *)in, len, &r);
    if (rc != t->rc) {
        print_error("%s: rc %d, want %d\n", t->what, rc, t->rc);
        fail();
    }
    if (rc > 0 && (r.cmd != t->cmd || r.atyp != t->atyp || strcmp(r.host, t->host) != 0 ||
                   r.port != t->port || r.rep != PX_SOCKS_OK)) {
        print_error("%s: cmd %u atyp %u host %s port %u\n", t->what, r.cmd, r.atyp, r.host, r.port);
        fail();
    }
    if (rc == PX_EPARSE && r.rep != t->rep) {
        print_error("%s: reply %d, want %d\n", t->what, r.rep, t->rep);
        fail();
    }
    size_t whole = rc > 0 ? (size_t)rc : len;
    for (size_t n = 0; n < whole; n++) {
        int prc = px_socks_request((const unsigned char *)in, n, &r);
        if (prc != 0 && prc != t->rc) {
            print_error("%s: prefix %zu gives %d\n", t->what, n, prc);
            fail();
        }
    }
}

static void test_request(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
        const req_case_t *t = &req_cases[i];
        if (t->in != NULL) {
            check_req(t, t->in, t->len);
            continue;
        }
        /* the longest name there is: 255 bytes, NUL-terminated in host[256] */
        char in[PX_SOCKS_REQUEST_MAX], name[256];
        memset(name, 'a', 255);
        name[255] = '\0';
        memcpy(in, "\x05\x01\x00\x03\xff", 5);
        memcpy(in + 5, name, 255);
        in[260] = 0x01;
        in[261] = (char)0xbb;
        req_case_t c = {t->what, in, 262, 262, 1, 3, name, 443, 0};
        check_req(&c, in, sizeof(in));
    }
}

static void test_reply(void **state)
{
    (void)state;
    unsigned char out[PX_SOCKS_REPLY_MAX];
    size_t n = px_socks_reply(out, PX_SOCKS_NOT_ALLOWED, NULL, 0, 0);
    assert_int_equal(n, 10);
    assert_memory_equal(out, "\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00", 10);
    const uint8_t v4[4] = {127, 0, 0, 1};
    n = px_socks_reply(out, PX_SOCKS_OK, v4, 4, 1080);
    assert_int_equal(n, 10);
    assert_memory_equal(out, "\x05\x00\x00\x01\x7f\x00\x00\x01\x04\x38", 10);
    uint8_t v6[16] = {0};
    v6[15] = 1;
    n = px_socks_reply(out, PX_SOCKS_OK, v6, 16, 443);
    assert_int_equal(n, 22);
    assert_int_equal(out[3], PX_SOCKS_IPV6);
    assert_int_equal(out[19], 1);
    assert_int_equal(out[20], 0x01);
    assert_int_equal(out[21], 0xbb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greeting),
        cmocka_unit_test(test_request),
        cmocka_unit_test(test_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
