/* The pre-checks (px_precheck.c) as a table: a request head, where it came in, and the verdict
 * with the routing or the refusal it gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/px_h1.h"
#include "proxy/px_precheck.h"

enum { HTTP, HTTPS, PROXY, TRANSP };

typedef struct pre_case {
    const char *head;   /* the request head, CRLF line ends */
    int where;          /* HTTP, HTTPS (TLS, SNI below), PROXY, TRANSP */
    const char *sni;    /* "" none */
    const char *tunnel; /* "" none: inside a CONNECT to tunnel:8443 otherwise */
    uint16_t orig_port;
    px_pre_verdict_t verdict;
    const char *detail; /* OK/TUNNEL: "host:port path"; BAD: the reason; MISMATCH: key=other */
    const char *url;    /* the log URL ("" = not checked) */
} pre_case_t;

#define R(line, ...) line "\r\n" __VA_ARGS__ "\r\n"

static const pre_case_t pre_cases[] = {
    {R("GET /a?b HTTP/1.1", "Host: Api.Test\r\n"), HTTP, "", "", 0, PX_PRE_OK, "api.test:80 /a?b",
     "http://Api.Test/a?b"},
    {R("GET /a HTTP/1.1", "Host: api.test:8080\r\n"), HTTP, "", "", 0, PX_PRE_OK,
     "api.test:8080 /a", "http://api.test:8080/a"},
    {R("GET /a HTTP/1.1", "Host: api.test.\r\n"), HTTPS, "api.test", "", 0, PX_PRE_OK,
     "api.test:443 /a", "https://api.test./a"},
    {R("GET /a HTTP/1.1", "Host: [2001:db8::1]:8443\r\n"), HTTPS, "", "", 0, PX_PRE_OK,
     "2001:db8::1:8443 /a", "https://[2001:db8::1]:8443/a"},
    {R("OPTIONS * HTTP/1.1", "Host: a.test\r\n"), HTTP, "", "", 0, PX_PRE_OK, "a.test:80 *",
     "http://a.test*"},
    {R("GET http://a.test/x HTTP/1.1", "Host: a.test\r\n"), PROXY, "", "", 0, PX_PRE_OK,
     "a.test:80 /x", "http://a.test/x"},
    {R("GET http://A.TEST:80 HTTP/1.1", "Host: a.test\r\n"), PROXY, "", "", 0, PX_PRE_OK,
     "a.test:80 /", "http://a.test/"},
    {R("GET /a HTTP/1.1", "Host: a.test\r\n"), TRANSP, "", "", 8080, PX_PRE_OK, "a.test:8080 /a",
     "http://a.test:8080/a"},
    {R("GET /a HTTP/1.1", "Host: api.test\r\n"), HTTPS, "api.test", "api.test", 0, PX_PRE_OK,
     "api.test:8443 /a", "https://api.test:8443/a"},
    /* framing and Host */
    {R("GET / HTTP/1.1", "Host: a\r\nHost: b\r\n"), HTTP, "", "", 0, PX_PRE_BAD,
     "duplicate Host header", ""},
    {R("POST / HTTP/1.1", "Host: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"),
     HTTP, "", "", 0, PX_PRE_BAD, "more than one Transfer-Encoding header", ""},
    {R("POST / HTTP/1.1", "Host: a\r\nTransfer-Encoding: gzip, chunked\r\n"), HTTP, "", "", 0,
     PX_PRE_BAD, "Transfer-Encoding other than chunked", ""},
    {R("POST / HTTP/1.1", "Host: a\r\nTransfer-Encoding: CHUNKED\r\n"), HTTP, "", "", 0, PX_PRE_OK,
     "a:80 /", ""},
    {R("GET / HTTP/1.1", ""), HTTP, "", "", 0, PX_PRE_BAD, "missing Host header", ""},
    {R("GET / HTTP/1.1", "Host: a b\r\n"), HTTP, "", "", 0, PX_PRE_BAD, "invalid Host header", ""},
    {R("GET / HTTP/1.1", "Host: a:99999\r\n"), HTTP, "", "", 0, PX_PRE_BAD, "invalid Host header",
     ""},
    {R("GET / HTTP/1.1", "Host: a:0\r\n"), HTTP, "", "", 0, PX_PRE_BAD, "invalid Host header", ""},
    {R("GET / HTTP/1.1", "Host: [fe80::1%25lo]\r\n"), HTTP, "", "", 0, PX_PRE_BAD,
     "invalid Host header", ""},
    {R("GET ftp://a/ HTTP/1.1", "Host: a\r\n"), PROXY, "", "", 0, PX_PRE_BAD,
     "invalid request target", ""},
    {R("GET http://u@a/ HTTP/1.1", "Host: a\r\n"), PROXY, "", "", 0, PX_PRE_BAD,
     "userinfo in request target", ""},
    /* a fragment anywhere in the target: servers cut it, so they would read another path */
    {R("GET /graphql#x HTTP/1.1", "Host: a\r\n"), HTTP, "", "", 0, PX_PRE_BAD,
     "fragment in request target", ""},
    {R("GET /a?b#c HTTP/1.1", "Host: a\r\n"), HTTPS, "", "", 0, PX_PRE_BAD,
     "fragment in request target", ""},
    {R("GET http://a/x#y HTTP/1.1", "Host: a\r\n"), PROXY, "", "", 0, PX_PRE_BAD,
     "fragment in request target", ""},
    /* CONNECT */
    {R("CONNECT a.test:443 HTTP/1.1", "Host: a.test:443\r\n"), PROXY, "", "", 0, PX_PRE_TUNNEL,
     "a.test:443 ", "a.test:443"},
    {R("CONNECT a.test HTTP/1.1", "Host: a.test\r\n"), PROXY, "", "", 0, PX_PRE_BAD,
     "CONNECT needs host:port", ""},
    {R("CONNECT a.test:443 HTTP/1.1", "Host: a.test:443\r\n"), HTTP, "", "", 0, PX_PRE_NO_TUNNEL,
     "", "a.test:443"},
    {R("CONNECT a.test:443 HTTP/1.1", "Host: a.test:443\r\n"), HTTPS, "a.test", "api.test", 0,
     PX_PRE_NO_TUNNEL, "", ""},
    /* mismatches */
    {R("GET http://evil.test/ HTTP/1.1", "Host: a.test\r\n"), PROXY, "", "", 0, PX_PRE_MISMATCH,
     "url=evil.test", "http://a.test/"},
    {R("GET http://a.test:8080/ HTTP/1.1", "Host: a.test\r\n"), PROXY, "", "", 0, PX_PRE_MISMATCH,
     "url=a.test", ""},
    {R("GET / HTTP/1.1", "Host: evil.test\r\n"), HTTPS, "a.test", "", 0, PX_PRE_MISMATCH,
     "sni=a.test", "https://evil.test/"},
    {R("GET / HTTP/1.1", "Host: A.TEST.:443\r\n"), HTTPS, "a.test", "", 0, PX_PRE_OK,
     "a.test:443 /", ""},
    {R("GET / HTTP/1.1", "Host: evil.test\r\n"), HTTPS, "api.test", "api.test", 0, PX_PRE_MISMATCH,
     "connect=api.test", ""},
    {R("GET / HTTP/1.1", "Host: api.test:9999\r\n"), HTTPS, "api.test", "api.test", 0,
     PX_PRE_MISMATCH, "connect=api.test", ""},
};

static int on_head(void *owner, px_msg_t *m)
{
    *(px_msg_t **)owner = m;
    return 1;
}

static int on_data(void *owner, const char *d, size_t n)
{
    (void)owner;
    (void)d;
    (void)n;
    return 0;
}

static int on_end(void *owner, const px_fields_t *t)
{
    (void)owner;
    (void)t;
    return 1;
}

static const px_h1_cbs_t cbs = {on_head, on_data, on_end};

static void test_px_precheck_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(pre_cases) / sizeof(pre_cases[0]); i++) {
        const pre_case_t *c = &pre_cases[i];
        px_msg_t *m = NULL;
        px_h1_t p;
        px_h1_init(&p, 1, &cbs, &m);
        size_t used;
        if (px_h1_feed(&p, c->head, strlen(c->head), &used) != 0)
            fail_msg("case %zu: %s: %s", i, p.reason, c->head);
        if (m == NULL)
            fail_msg("case %zu: the head does not parse: %s", i, c->head);
        px_pre_ctx_t ctx = {
            .kind = c->where == HTTPS    ? PX_LISTEN_HTTPS
                    : c->where == PROXY  ? PX_LISTEN_PROXY
                    : c->where == TRANSP ? PX_LISTEN_TRANSPARENT
                                         : PX_LISTEN_HTTP,
            .tls = c->where == HTTPS,
            .sni = c->sni,
            .tunnel = c->tunnel,
            .tunnel_port = 8443,
            .orig_port = c->orig_port,
        };
        px_pre_t *o = malloc(sizeof(*o));
        px_precheck(m, &ctx, o);
        char got[512];
        switch (o->verdict) {
        case PX_PRE_OK:
        case PX_PRE_TUNNEL:
            snprintf(got, sizeof(got), "%s:%u %.*s", o->norm_host, o->port, (int)o->path_len,
                     o->path != NULL ? o->path : "");
            break;
        case PX_PRE_BAD:
            snprintf(got, sizeof(got), "%s", o->reason);
            break;
        case PX_PRE_MISMATCH:
            snprintf(got, sizeof(got), "%s=%.*s", o->other_key, (int)o->other_len, o->other);
            break;
        default:
            got[0] = '\0';
        }
        if (o->verdict != c->verdict || strcmp(got, c->detail) != 0)
            fail_msg("case %zu (%.40s): verdict %d [%s], want %d [%s]", i, c->head, o->verdict, got,
                     c->verdict, c->detail);
        if (c->url[0] != '\0' && strcmp(o->url, c->url) != 0)
            fail_msg("case %zu: url [%s], want [%s]", i, o->url, c->url);
        free(o);
        px_msg_free(m);
        px_h1_free(&p);
    }
}

static void test_px_precheck_host_norm(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(px_host_norm(out, sizeof(out), "AbC.", 4), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(px_host_norm(out, sizeof(out), "abcdefgh", 8), -1);
    assert_string_equal(out, "");
    assert_int_equal(px_host_norm(out, sizeof(out), "abcdefg.", 8), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_precheck_table),
        cmocka_unit_test(test_px_precheck_host_norm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
