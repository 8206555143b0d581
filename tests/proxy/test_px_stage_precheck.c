/* The pre-check stage (proxy/px_stage_precheck.c) in process: what it decides on the verdict of
 * the pre-checks (proxy/px_precheck.c, table-tested on its own in test_px_precheck.c). A refused
 * request is answered here and goes no further (400 and the connection closes for a malformed
 * head; 403 for a CONNECT where no tunnel goes or a Host that disagrees with the URL or the
 * CONNECT host), after the secret guard scanned it when its answer would show the Host or the
 * target; an accepted one gets the view and goes on to the next stages.
 *
 * Driven through the exchange with the fakes (fake_*.c). The Host-against-SNI mismatch is in
 * test_px_xchg.c. */
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
#define CANARY "CANARY-7f3a9b2c4d5e6f70a1"
#define REPL "{\"canaries\": [{\"name\": \"planted-marker\", \"value\": \"" CANARY "\"}]}"
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
/* clang-format off */
#define ANSWER_OK {U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}
/* clang-format on */

static const scase_t cases[] = {
    /* ---- malformed heads: 400, the connection closes, the URL is not logged -------------- */
    {.name = "no Host: 400 bad_request, closed, nothing after the pre-check ran",
     .req = "GET /x HTTP/1.1\r\n\r\n",
     .head = "|precheck",
     .status = 400,
     .close = 1,
     .down_json = "\"error\": \"bad_request\", \"message\": \"missing Host header\"",
     .fin = FIN_CLOSE,
     .log = "BLOCKED GET - -> 400 (malformed request: missing Host header)\n"},
    {.name = "two Host fields: 400, the request never reaches the allowlist",
     .req = "GET /x HTTP/1.1\r\nHost: allowed.example\r\nHost: other.example\r\n\r\n",
     .head = "|precheck",
     .status = 400,
     .close = 1,
     .down_json = "duplicate Host header",
     .fin = FIN_CLOSE,
     .log = "BLOCKED GET - -> 400 (malformed request: duplicate Host header)\n"},
    {.name = "a fragment in the target: 400 (servers cut it and would read another path)",
     .req = "GET /graphql#x HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .head = "|precheck",
     .status = 400,
     .close = 1,
     .down_json = "fragment in request target",
     .fin = FIN_CLOSE,
     .log = "BLOCKED GET - -> 400 (malformed request: fragment in request target)\n"},
    {.name = "Transfer-Encoding other than chunked: 400 before any body is read",
     .req = "POST /x HTTP/1.1\r\nHost: allowed.example\r\nTransfer-Encoding: gzip, chunked\r\n"
            "\r\n",
     .head = "|precheck",
     .status = 400,
     .close = 1,
     .down_json = "Transfer-Encoding other than chunked",
     .fin = FIN_CLOSE,
     .log = "BLOCKED POST - -> 400 (malformed request: Transfer-Encoding other than chunked)\n"},
    {.name = "a malformed head is not scanned: a canary in it is neither refused as a leak nor "
             "logged",
     .repl = REPL,
     .req = "GET /x HTTP/1.1\r\nHost: allowed.example\r\nHost: " CANARY ".example\r\n\r\n",
     .head = "|precheck",
     .status = 400,
     .close = 1,
     .down_json = "duplicate Host header",
     .fin = FIN_CLOSE,
     .log = "BLOCKED GET - -> 400 (malformed request: duplicate Host header)\n"},
    /* ---- CONNECT where no tunnel goes ----------------------------------------------------- */
    {.name = "CONNECT on a plain listener: 403 tunneling not allowed, never reused",
     .req = "CONNECT allowed.example:443 HTTP/1.1\r\nHost: allowed.example:443\r\n\r\n",
     .head = "|precheck",
     .status = 403,
     .close = 1,
     .down_json = "\"error\": \"blocked_by_network_allowlist\", \"host\": "
                  "\"allowed.example:443\", \"method\": \"CONNECT\"",
     .fin = FIN_CLOSE,
     .log = "BLOCKED CONNECT allowed.example:443 -> 403 (tunneling not allowed)\n"},
    {.name = "CONNECT whose target holds a canary: refused as a leak, the target not logged",
     .repl = REPL,
     .req = "CONNECT " CANARY ".example:443 HTTP/1.1\r\nHost: " CANARY ".example:443\r\n\r\n",
     .head = "|precheck",
     .status = 403,
     /* unlike the plain refusal above ("never reuse: the client may start its tunnel"), the
      * leak's answer keeps the connection (px_stage_leak.c answers every head it refuses so) */
     .down_json = "\"error\": \"blocked_secret_leak\", \"kind\": \"canary\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED CONNECT - -> 403 (leak: canary planted-marker, raw, in url)\n"},
    /* ---- the Host disagrees with the URL or the CONNECT host ------------------------------ */
    {.name = "absolute form naming another host than Host: 403 url_host",
     .kind = PX_LISTEN_PROXY,
     .req = "GET http://evil.example/x HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .head = "|precheck",
     .status = 403,
     .down_json = "\"host\": \"allowed.example\", \"url_host\": \"evil.example\", \"method\": "
                  "\"GET\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/x -> 403 (host mismatch: header=allowed.example, "
            "url=evil.example)\n"},
    {.name = "inside a CONNECT tunnel, a Host other than the tunnel's: 403 connect_host",
     .tls = 1,
     .sni = "allowed.example",
     .tunnel = "allowed.example",
     .req = "GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n",
     .head = "|precheck",
     .status = 403,
     .down_json = "\"host\": \"evil.example\", \"connect_host\": \"allowed.example\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET https://evil.example/x -> 403 (host mismatch: header=evil.example, "
            "connect=allowed.example)\n"},
    {.name = "a mismatch whose Host holds a canary: the guard refuses it, Host never logged",
     .repl = REPL,
     .kind = PX_LISTEN_PROXY,
     .req = "GET http://allowed.example/x HTTP/1.1\r\nHost: " CANARY ".example\r\n\r\n",
     .head = "|precheck",
     .status = 403,
     .down_json = "\"where\": \"header\", \"header\": \"Host\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET - -> 403 (leak: canary planted-marker, raw, in header 'Host')\n"},
    {.name = "a mismatch whose URL holds a canary: refused as a leak in the url",
     .repl = REPL,
     .kind = PX_LISTEN_PROXY,
     .req = "GET http://evil.example/?k=" CANARY " HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .head = "|precheck",
     .status = 403,
     .down_json = "\"where\": \"url\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://allowed.example/... -> 403 (leak: canary planted-marker, raw, in "
            "url)\n"},
    /* ---- accepted: the view is made, the next stages run ---------------------------------- */
    {.name = "accepted origin form: every stage passes, the request goes upstream",
     .req = "GET /x HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
     .head = "precheck leak policy aws ghapp masking budget filters upstream",
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:80 /x\n",
     .up_head = "GET /x\nHost: allowed.example",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .down_body = "ok",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example/x -> 200\n"},
    {.name = "accepted absolute form on the proxy listener: routed by its host and port",
     .policy = POLICY "url_prefixes:\n  - host: allowed.example\n    ports: [8080]\n",
     .kind = PX_LISTEN_PROXY,
     .req = "GET http://allowed.example:8080/x?y=1 HTTP/1.1\r\nHost: allowed.example:8080\r\n\r\n",
     .head = "precheck leak policy aws ghapp masking budget filters upstream",
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:8080 /x?y=1\n",
     .up_head = "GET http://allowed.example:8080/x?y=1\nHost: allowed.example:8080",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .down_body = "ok",
     .fin = FIN_REUSE,
     .log = "allowed GET http://allowed.example:8080/x?y=1 -> 200\n"},
    {.name = "accepted, then refused by a later stage: the pre-check passed it on",
     .req = "GET /x HTTP/1.1\r\nHost: denied.example\r\n\r\n",
     .head = "precheck leak |policy",
     .status = 403,
     .down_json = "blocked_by_network_allowlist",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://denied.example/x -> 403\n"},
};

static void test_px_stage_precheck_case(void **state)
{
    script_run(*state, POLICY);
}

int main(void)
{
    SCRIPT_TESTS(tests, cases, test_px_stage_precheck_case);
    return cmocka_run_group_tests_name("test_px_stage_precheck", tests, NULL, NULL);
}
