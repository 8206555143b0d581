/* The secret guard stage (proxy/px_stage_leak.c; docs/leak-scanning.md) in process: everything
 * it decides. The real value of a credential airlock holds, or a canary, anywhere in a request
 * (the target as sent and percent-decoded, a header's name or value, the body as it streams,
 * a trailer), in any encoding, refuses the request with 403 blocked_secret_leak before the
 * allowlist, for any host; the answer and the log line name the entry, never the value. In the
 * body the bytes that may begin a value are held back until the next piece shows they do not;
 * a match once the head went upstream aborts that request. on_end frees what it holds.
 *
 * Driven through the exchange with the fakes (fake_*.c). In test_px_xchg.c already: a secret
 * in a header value, a canary in a trailer, clean trailers, a canary split across pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>

#include "addons/addon_budget.h"
#include "http/px_h1.h"
#include "proxy/px_ctx.h"
#include "proxy/px_log.h"
#include "proxy/px_policy.h"
#include "proxy/px_precheck.h"
#include "proxy/px_upstream.h"
#include "proxy/px_xchg.h"
#include "proxy/px_xchg_int.h"

#include "fake_upstream.c"
#include "fake_down.c"
#include "fake_env.c"
#include "fake_script.c"

#define POLICY "domains:\n  - allowed.example\n"
#define REAL_SECRET "REAL-secret-value-0123456789"
#define SURROGATE "surrogate-token-0123456789abcdef"
#define CANARY "CANARY-7f3a9b2c4d5e6f70a1"
#define AWS_SECRET "aws-real-secret-access-key-0123456789"
/* entry[0] a masked secret, entry[1] an AWS key, and a canary */
#define REPL                                                                                       \
    "{\"" SURROGATE "\": {\"value\": \"" REAL_SECRET "\", \"scopes\": [\"allowed.example\"],"      \
    " \"headers\": [\"Authorization\"]},"                                                          \
    " \"AKIASURROGATE0000000\": {\"type\": \"aws-sigv4\", \"access_key_id\": "                     \
    "\"AKIAREALKEYID0000000\", \"secret_access_key\": \"" AWS_SECRET "\","                         \
    " \"scopes\": [\"*.amazonaws.com\"]},"                                                         \
    " \"canaries\": [{\"name\": \"planted-marker\", \"value\": \"" CANARY "\"},"                   \
    " {\"name\": \"url-marker\", \"value\": \"p@ss/w0rd+k-canary\"}]}"
#define BASIC_REAL "dXNlcjpSRUFMLXNlY3JldC12YWx1ZS0wMTIzNDU2Nzg5" /* user:REAL_SECRET */
#define HEX_REAL "5245414c2d7365637265742d76616c75652d30313233343536373839"
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
#define POST_CHUNKED                                                                               \
    "POST /up HTTP/1.1\r\nHost: allowed.example\r\nTransfer-Encoding: chunked\r\n\r\n"
#define ALL_STAGES "precheck leak policy aws ghapp masking budget filters upstream"

/* What the guard holds back of a body, checked between two pieces. */
static void sent_abc(void)
{
    assert_int_equal(fake_up.body_len, 4);
    assert_memory_equal(fake_up.body, "abc ", 4);
    assert_int_equal(fx->x->leak.held_len, strlen("CANARY-7f3a"));
}

static void guard_off(void)
{
    assert_false(fx->x->leak.on); /* nothing configured: the body is not scanned */
}

static const scase_t cases[] = {
    /* ---- the head: target, then each field's name and value ------------------------------ */
    {.name = "a secret in the query: refused, the log shows scheme://host/... only",
     .repl = REPL,
     .req = "GET /x?token=" REAL_SECRET " HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "\"error\": \"blocked_secret_leak\", \"kind\": \"secret\", \"name\": "
                  "\"entry[0].value\", \"encoding\": \"raw\", \"where\": \"url\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/... -> 403 (leak: secret entry[0].value, raw, "
            "in url)\n"},
    {.name = "a value partly percent-encoded in the path: found in the decoded target",
     .repl = REPL,
     .req = "GET /CAN%41RY-7f3a9b2c4d5e6f70a1 HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "\"kind\": \"canary\", \"name\": \"planted-marker\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/... -> 403 (leak: canary planted-marker, raw, in "
            "url)\n"},
    {.name = "the real value inside Basic base64(user:value): base64, in header",
     .repl = REPL,
     .tls = 1,
     .req =
         "GET / HTTP/1.1\r\nHost: allowed.example\r\nAuthorization: Basic " BASIC_REAL "\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "\"encoding\": \"base64\", \"where\": \"header\", \"header\": \"Authorization\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET https://allowed.example/ -> 403 (leak: secret entry[0].value, base64, in "
            "header 'Authorization')\n"},
    {.name = "the real value in hex in a cookie",
     .repl = REPL,
     .req = "GET / HTTP/1.1\r\nHost: allowed.example\r\nCookie: s=" HEX_REAL "\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "\"encoding\": \"hex\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/ -> 403 (leak: secret entry[0].value, hex, in "
            "header 'Cookie')\n"},
    {.name = "an AWS secret access key: named by its entry and field",
     .repl = REPL,
     .req = "GET / HTTP/1.1\r\nHost: allowed.example\r\nX-Debug: " AWS_SECRET "\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "\"name\": \"entry[1].secret_access_key\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/ -> 403 (leak: secret entry[1].secret_access_key, "
            "raw, in header 'X-Debug')\n"},
    {.name = "a value in a header name: refused, the name is not shown",
     .repl = REPL,
     .req = "GET / HTTP/1.1\r\nHost: allowed.example\r\nX-" CANARY ": 1\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "\"where\": \"header name\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/ -> 403 (leak: canary planted-marker, raw, in a "
            "header name)\n"},
    {.name = "a value in the Host: the log line's URL is '-'",
     .repl = REPL,
     .req = "GET / HTTP/1.1\r\nHost: " CANARY ".allowed.example\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "\"header\": \"Host\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET - -> 403 (leak: canary planted-marker, raw, in header 'Host')\n"},
    {.name = "any host: a denied host with a value is refused as a leak, before the allowlist",
     .repl = REPL,
     .req = "GET / HTTP/1.1\r\nHost: denied.example\r\nX-K: " REAL_SECRET "\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .down_json = "blocked_secret_leak",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://denied.example/ -> 403 (leak: secret entry[0].value, raw, in "
            "header 'X-K')\n"},
    {.name = "a head refused with its body still to come: the connection closes",
     .repl = REPL,
     .req =
         "POST / HTTP/1.1\r\nHost: allowed.example\r\nX-K: " CANARY "\r\nContent-Length: 5\r\n\r\n",
     .head = "precheck |leak",
     .status = 403,
     .close = 1,
     .down_json = "blocked_secret_leak",
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/ -> 403 (leak: canary planted-marker, raw, in "
            "header 'X-K')\n"},
    {.name = "the surrogate is no leak: it passes the guard (the masking stage swaps it)",
     .repl = REPL,
     .tls = 1,
     .req =
         "GET / HTTP/1.1\r\nHost: allowed.example\r\nAuthorization: Bearer " SURROGATE "\r\n\r\n",
     .head = ALL_STAGES,
     .steps = {{U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}},
     .opens = "GET allowed.example:443 /\n",
     .up_head = "GET /\nAuthorization: Bearer " REAL_SECRET,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://allowed.example/ -> 200 [masked: 1]\n"},
    /* ---- the body --------------------------------------------------------------------------- */
    {.name = "a value in one body piece: the upstream request is aborted, 403, closed",
     .repl = REPL,
     .req = POST_CHUNKED,
     .head = ALL_STAGES,
     .steps = {{U_READY}, {C_BODY, "clean "}, {C_BODY, "x=" REAL_SECRET}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "clean ",
     .up_aborted = 1,
     .status = 403,
     .close = 1,
     .down_json = "\"where\": \"body\"",
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 403 (leak: secret entry[0].value, raw, in "
            "body; the upstream request was aborted)\n"},
    {.name = "a value url-encoded in the body (a form field)",
     .repl = REPL,
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {C_BODY, "q=p%40ss%2Fw0rd%2Bk-canary&r=1"}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_aborted = 1,
     .status = 403,
     .close = 1,
     .down_json = "\"name\": \"url-marker\", \"encoding\": \"url\", \"where\": \"body\"",
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 403 (leak: canary url-marker, url, in "
            "body; the upstream request was aborted)\n"},
    {.name = "a possible start is held back, then let go in order when the next piece clears it",
     .repl = REPL,
     .req = POST_CHUNKED,
     .steps = {{U_READY},
               {C_BODY, "abc CANARY-7f3a"},
               {CALL, .fn = sent_abc},
               {C_BODY, "-not-it"},
               {C_END},
               {U_HEAD, OK_2},
               {U_DATA, "ok"},
               {U_END}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "abc CANARY-7f3a-not-it",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
    {.name = "the held tail goes on when the body ends",
     .repl = REPL,
     .req = POST_CHUNKED,
     .steps =
         {{U_READY}, {C_BODY, "abc CANARY-7f3a"}, {C_END}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "abc CANARY-7f3a",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
    {.name = "the client goes away while bytes are held: on_end frees them (ASan)",
     .repl = REPL,
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {C_BODY, "abc CANARY-7f3a"}, {C_ABORT, "Client disconnected."}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "abc ",
     .up_aborted = 1,
     .log = "ERROR POST http://allowed.example/up -> Client disconnected.\n"},
    /* the line says 403 although the client got the upstream's 200 (see the budget's cut) */
    {.name = "a value in the body after the response began: the connection just ends",
     .repl = REPL,
     .req = POST_CHUNKED,
     /* chunked: the scrub stage passes it as it streams (a short Content-Length body it would
      * hold, and the client would get no head at all) */
     .steps = {{U_READY},
               {U_HEAD, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"},
               {U_DATA, "ok"},
               {C_BODY, CANARY}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_aborted = 1,
     .status = 200,
     .down_body = "ok",
     .cut = 1,
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 403 (leak: canary planted-marker, raw, in "
            "body; the upstream request was aborted)\n"},
    {.name = "a refused request's body goes nowhere: it is not scanned",
     .repl = REPL,
     .req = "POST /up HTTP/1.1\r\nHost: denied.example\r\nContent-Length: 25\r\n\r\n",
     .head = "precheck leak |policy",
     .steps = {{C_BODY, CANARY}, {C_END}},
     .status = 403,
     .down_json = "blocked_by_network_allowlist",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST http://denied.example/up -> 403\n"},
    {.name = "a value in a trailer name: the upstream request aborted, the name not shown",
     .repl = REPL,
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {C_BODY, "part"}, {C_END, "X-" CANARY ": 1"}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "part",
     .up_aborted = 1,
     .status = 403,
     .close = 1,
     .down_json = "\"where\": \"trailer name\"",
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 403 (leak: canary planted-marker, raw, in "
            "a trailer name; the upstream request was aborted)\n"},
    {.name = "no secret nor canary configured: the guard passes everything, scans no body",
     .req = "POST /up HTTP/1.1\r\nHost: allowed.example\r\nX-K: " CANARY
            "\r\nContent-Length: 2\r\n\r\n",
     .head = ALL_STAGES,
     .steps = {{CALL, .fn = guard_off},
               {U_READY},
               {C_BODY, "hi"},
               {C_END},
               {U_HEAD, OK_2},
               {U_DATA, "ok"},
               {U_END}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up\nX-K: " CANARY,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "hi",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
};

static void test_px_stage_leak_case(void **state)
{
    script_run(*state, POLICY);
}

int main(void)
{
    SCRIPT_TESTS(tests, cases, test_px_stage_leak_case);
    return cmocka_run_group_tests_name("test_px_stage_leak", tests, NULL, NULL);
}
