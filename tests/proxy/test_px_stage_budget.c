/* The budget stage (proxy/px_stage_budget.c; docs/budgets.md) in process: once the allowlist and
 * the credential stages passed a request, the budgets matching its host admit it (it counts:
 * requests by one, rate a token) or answer 429 egress_budget_exceeded (it counts for none); then
 * its request body is counted as it goes upstream (a piece that crosses a sent budget is cut at
 * the budget, the upstream request aborted, 429 and the connection closes, or the connection is
 * cut once the response began) and its response body as it comes back (cut at a received
 * budget). on_end gives the request's counters back (addon_budget_end).
 *
 * Driven through the exchange with the fakes (fake_*.c); the counters live in the environment's
 * budget table, so a case runs earlier exchanges first (.pre) to use a budget up. */
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

#define DOMAINS                                                                                    \
    "domains:\n  - allowed.example\n  - other.example\n"                                           \
    "url_prefixes:\n  - host: gql.example\n    path: /graphql\n    graphql:\n"                     \
    "      queries: [\"*\"]\n"
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
#define OK_10 "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
/* clang-format off */
#define ANSWER_OK {U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}
/* clang-format on */
#define ALL_STAGES "precheck leak policy aws ghapp masking budget filters upstream"
#define AT_BUDGET "precheck leak policy aws ghapp masking |budget"
#define GET_X "GET /x HTTP/1.1\r\nHost: allowed.example\r\n\r\n"
#define POST_CHUNKED                                                                               \
    "POST /up HTTP/1.1\r\nHost: allowed.example\r\nTransfer-Encoding: chunked\r\n\r\n"

static const step_t answer_ok[] = {{.op = U_READY},
                                   {.op = U_HEAD, .s = OK_2},
                                   {.op = U_DATA, .s = "ok"},
                                   {.op = U_END},
                                   {.op = END_OF_SCRIPT}};

/* One allowed GET answered "ok" before the case's request. */
static void one_get(void)
{
    script_prior(GET_X, 0, answer_ok);
}

/* One GET the allowlist refuses before the case's request. */
static void one_denied(void)
{
    static const step_t none[] = {{.op = END_OF_SCRIPT}};
    script_prior("GET / HTTP/1.1\r\nHost: denied.example\r\n\r\n", 0, none);
}

/* 6 response bytes received before the case's request. */
static void six_received(void)
{
    static const step_t six[] = {
        {.op = U_READY},
        {.op = U_HEAD, .s = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n"},
        {.op = U_DATA, .s = "123456"},
        {.op = U_END},
        {.op = END_OF_SCRIPT}};
    script_prior(GET_X, 0, six);
}

/* Under the budget a piece goes on whole. */
static void counted_4(void)
{
    assert_int_equal(fake_up.body_len, 4);
    assert_non_null(fx->x->budget);
}

static const scase_t cases[] = {
    /* ---- at the head ------------------------------------------------------------------------ */
    {.name = "requests: within the budget the request goes (and counts)",
     .policy = DOMAINS "budgets:\n  - host: allowed.example\n    requests: 1\n",
     .req = GET_X,
     .head = ALL_STAGES,
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "requests: used up: 429, nothing upstream",
     .policy = DOMAINS "budgets:\n  - host: allowed.example\n    requests: 1\n",
     .pre = one_get,
     .req = GET_X,
     .head = AT_BUDGET,
     .status = 429,
     .down_json = "\"error\": \"egress_budget_exceeded\"",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"
            "BLOCKED GET http://allowed.example/x -> 429 (budget: requests for allowed.example, "
            "1/1)\n"},
    {.name = "requests: a request the allowlist refused counted for none",
     .policy = DOMAINS "budgets:\n  - host: all\n    requests: 1\n",
     .pre = one_denied,
     .req = GET_X,
     .head = ALL_STAGES,
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://denied.example/ -> 403\n"
            "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "a budget for another host does not apply",
     .policy = DOMAINS "budgets:\n  - host: other.example\n    requests: 1\n",
     .pre = one_get,
     .req = GET_X,
     .head = ALL_STAGES,
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"
            "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "rate: no token left: 429 with resets_in",
     .policy = DOMAINS "budgets:\n  - host: all\n    rate: 1/min\n",
     .pre = one_get,
     .req = GET_X,
     .head = AT_BUDGET,
     .status = 429,
     .down_json = "\"resets_in\": ",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"
            "BLOCKED GET http://allowed.example/x -> 429 (budget: rate for all, 1/min)\n"},
    {.name = "sent: a declared length over what is left: 429 before any byte goes",
     .policy = DOMAINS "budgets:\n  - host: all\n    sent: 8\n",
     .req = "POST /up HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 9\r\n\r\n",
     .head = AT_BUDGET,
     .steps = {{C_BODY, "123456789"}, {C_END}},
     .status = 429,
     .down_json = "egress_budget_exceeded",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST http://allowed.example/up -> 429 (budget: sent for all, 0/8; body of 9 "
            "bytes)\n"},
    {.name = "received: used up: any response would cross it, 429 at the head",
     .policy = DOMAINS "budgets:\n  - host: all\n    received: 6\n",
     .pre = six_received,
     .req = GET_X,
     .head = AT_BUDGET,
     .status = 429,
     .down_json = "egress_budget_exceeded",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"
            "BLOCKED GET http://allowed.example/x -> 429 (budget: received for all, 6/6)\n"},
    /* ---- the request body ------------------------------------------------------------------- */
    {.name = "sent: a streamed body crossing the budget is cut at it, aborted, 429, closed",
     .policy = DOMAINS "budgets:\n  - host: all\n    sent: 6\n",
     .req = POST_CHUNKED,
     .head = ALL_STAGES,
     .steps = {{U_READY}, {C_BODY, "1234"}, {CALL, .fn = counted_4}, {C_BODY, "56789"}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "123456",
     .up_aborted = 1,
     .status = 429,
     .close = 1,
     .down_json = "egress_budget_exceeded",
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 429 (budget: sent for all, 6/6; the upload "
            "was stopped after 6 bytes, the upstream request aborted)\n"},
    {.name = "sent: crossed once the response began: the connection is cut",
     .policy = DOMAINS "budgets:\n  - host: all\n    sent: 6\n",
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {U_HEAD, OK_2}, {U_DATA, "o"}, {C_BODY, "123456789"}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "123456",
     .up_aborted = 1,
     .status = 200,
     .down_body = "o",
     .cut = 1,
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST http://allowed.example/up -> 200 (budget: sent for all, 6/6; the upload "
            "was stopped after 6 bytes, the upstream request aborted, the connection cut)\n"},
    {.name = "sent: a request without a body still goes when the budget is used up",
     .policy = DOMAINS "budgets:\n  - host: all\n    sent: 0\n",
     .req = GET_X,
     .head = ALL_STAGES,
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "sent: a filtered body is counted as it is gathered: refused before anything goes",
     .policy = DOMAINS "budgets:\n  - host: all\n    sent: 10\n",
     .tls = 1,
     .req = "POST /graphql HTTP/1.1\r\nHost: gql.example\r\nTransfer-Encoding: chunked\r\n\r\n",
     .head = "precheck leak policy budget |filters",
     .steps = {{C_BODY, "{\"query\": "}, {C_BODY, "\"{x}\"}"}},
     .status = 429,
     .close = 1,
     .down_json = "egress_budget_exceeded",
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST https://gql.example/graphql -> 429 (budget: sent for all, 10/10; the "
            "upload was stopped after 10 bytes)\n"},
    {.name = "the client leaves mid-body: on_end gives the counters back (ASan)",
     .policy = DOMAINS "budgets:\n  - host: all\n    sent: 100\n",
     .req = POST_CHUNKED,
     .steps = {{U_READY}, {C_BODY, "1234"}, {C_ABORT, "Client disconnected."}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_CHUNKED,
     .up_body = "1234",
     .up_aborted = 1,
     .log = "ERROR POST http://allowed.example/up -> Client disconnected.\n"},
    /* ---- the response body ----------------------------------------------------------------- */
    {.name = "received: the piece crossing the budget is relayed up to it, then cut",
     .policy = DOMAINS "budgets:\n  - host: all\n    received: 6\n",
     .req = GET_X,
     .steps = {{U_READY}, {U_HEAD, OK_10}, {U_DATA, "1234"}, {U_DATA, "567890"}},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x",
     .up_ended = 1,
     .up_aborted = 1,
     .status = 200,
     .down_body = "123456",
     .cut = 1,
     .fin = FIN_CLOSE,
     .log = "BLOCKED GET http://allowed.example/x -> 200 (budget: received for all, 6/6; the "
            "response was cut after 6 bytes)\n"},
};

static void test_px_stage_budget_case(void **state)
{
    script_run(*state, DOMAINS);
}

int main(void)
{
    SCRIPT_TESTS(tests, cases, test_px_stage_budget_case);
    return cmocka_run_group_tests_name("test_px_stage_budget", tests, NULL, NULL);
}
