/* The upstream stage (proxy/px_stage_upstream.c), the last of the pipeline, in process: the
 * request every earlier stage passed goes upstream. It opens the upstream request toward the
 * routing host (lowercase, no trailing dot), the port and TLS the pre-checks decided; this hop's
 * fields stay here (the fixed hop-by-hop list, what Connection names; "TE: trailers" goes on,
 * Expect goes on only when the upstream answers it); the body mode follows the request's framing
 * (none, a length, chunked), or the gathered body's new length. When the open fails the exchange
 * ends. The head goes at once; the body follows as it comes.
 *
 * Driven through the exchange with the fakes (fake_*.c; fake_upstream's refuse makes the open
 * fail). In test_px_xchg.c already: Connection-named and fixed hop-by-hop fields, TE: trailers,
 * Expect kept when streamed and dropped when gathered, HEAD, chunked and length bodies. */
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

#define POLICY                                                                                     \
    "domains:\n  - allowed.example\n"                                                              \
    "url_prefixes:\n  - host: allowed.example\n    ports: [8443]\n"                                \
    "  - host: gql.example\n    path: /graphql\n    graphql:\n      queries: [\"*\"]\n"
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
/* clang-format off */
#define ANSWER_OK {U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}
/* clang-format on */
#define ALL_STAGES "precheck leak policy aws ghapp masking budget filters upstream"

static void over_tls(void)
{
    assert_int_equal(fake_up.tls, 1);
}

static void over_tcp(void)
{
    assert_int_equal(fake_up.tls, 0);
}

/* The head went before any body byte; nothing ended yet. */
static void head_first(void)
{
    assert_int_equal(fake_up.opened, 1);
    assert_int_equal(fake_up.body_len, 0);
    assert_int_equal(fake_up.ended, 0);
}

static void refuse_open(void)
{
    fake_up.refuse = 1;
}

static const scase_t cases[] = {
    {.name = "routed to the normalised host, the port and TLS the pre-checks decided",
     .tls = 1,
     .sni = "allowed.example",
     .req = "GET /x HTTP/1.1\r\nHost: ALLOWED.Example.:8443\r\n\r\n",
     .head = ALL_STAGES,
     .steps = {{CALL, .fn = over_tls}, ANSWER_OK},
     .opens = "GET allowed.example:8443 /x\n",
     .up_head = "GET /x\nHost: ALLOWED.Example.:8443",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://ALLOWED.Example.:8443/x -> 200\n"},
    {.name = "this hop's fields stay: Proxy-Authorization, Proxy-Connection, TE other than "
             "trailers",
     .req = "GET /x HTTP/1.1\r\nHost: allowed.example\r\nProxy-Authorization: Basic eDp5\r\n"
            "Proxy-Connection: keep-alive\r\nTE: gzip\r\nX-End: 1\r\n\r\n",
     .steps = {{CALL, .fn = over_tcp}, ANSWER_OK},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x\nHost: allowed.example\nX-End: 1",
     .up_not = "Proxy-\nTE",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "an Upgrade other than WebSocket (h2c) is dropped: plain HTTP/1.1 goes on",
     .req = "GET /x HTTP/1.1\r\nHost: allowed.example\r\nConnection: Upgrade, HTTP2-Settings\r\n"
            "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n",
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x\nHost: allowed.example",
     .up_not = "Upgrade\nConnection\nHTTP2-Settings",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "Content-Length: 0: no body mode, the request ends with its head",
     .req = "POST /x HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 0\r\n\r\n",
     .head = ALL_STAGES,
     .steps = {ANSWER_OK},
     .opens = "POST allowed.example:80 /x\n",
     .up_head = "POST /x\nContent-Length: 0",
     .up_body_mode = PX_UP_BODY_NONE,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/x -> 200\n"},
    {.name = "a streamed body: the head goes at once, the body as it comes",
     .req = "PUT /x HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 6\r\n\r\n",
     .head = ALL_STAGES,
     .steps = {{CALL, .fn = head_first},
               {CHECK_OPEN, "PUT /x\nContent-Length: 6"},
               {U_READY},
               {C_BODY, "abc"},
               {C_BODY, "def"},
               {C_END},
               {U_HEAD, OK_2},
               {U_DATA, "ok"},
               {U_END}},
     .opens = "PUT allowed.example:80 /x\n",
     .up_head = "PUT /x",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "abcdef",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed PUT http://allowed.example/x -> 200\n"},
    {.name = "a gathered chunked body: its framing fields replaced by the new length",
     .tls = 1,
     .req = "POST /graphql HTTP/1.1\r\nHost: gql.example\r\nTransfer-Encoding: chunked\r\n\r\n",
     .steps = {{C_BODY, "{\"query\": \"{x}\"}"}, {C_END}, ANSWER_OK},
     .opens = "POST gql.example:443 /graphql\n",
     .up_head = "POST /graphql\nHost: gql.example\nContent-Length: 16",
     .up_not = "Transfer-Encoding",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "{\"query\": \"{x}\"}",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST https://gql.example/graphql -> 200 [graphql-op: query/x]\n"},
    {.name = "the upstream request cannot be opened: the exchange ends, the connection closes",
     .pre = refuse_open,
     .req = "GET /x HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .head = "precheck leak policy aws ghapp masking budget filters |upstream",
     .fin = FIN_NOW,
     /* no line at all for a request the policy allowed (px__x_finish logs only answered ones) */
     .log = ""},
};

static void test_px_stage_upstream_case(void **state)
{
    script_run(*state, POLICY);
}

int main(void)
{
    SCRIPT_TESTS(tests, cases, test_px_stage_upstream_case);
    return cmocka_run_group_tests_name("test_px_stage_upstream", tests, NULL, NULL);
}
