/* The policy stage (proxy/px_stage_policy.c; docs/allowlist.md, docs/policy-formats.md) in
 * process: the policy addons' head hooks in order. The allowlist allows a request (host, path in
 * every reading, method, port; block entries first) or answers 403 blocked_by_network_allowlist
 * with the reason in its message; a request a body filter must read (a GraphQL endpoint with
 * operation rules, the Anthropic Messages API) is passed on with the body asked for
 * (filter_cap), and the filters stage gathers it. Its on_end runs the addons' end hooks.
 *
 * Driven through the exchange with the fakes (fake_*.c). In test_px_xchg.c already: a denied
 * host, GraphQL mutation refused and query allowed (the filter itself: test_px_stage_filters.c
 * has the body side). */
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
    "block:\n"                                                                                     \
    "  - \"*.evil.example\"\n"                                                                     \
    "  - host: allowed.example\n"                                                                  \
    "    path: /admin/*\n"                                                                         \
    "domains:\n"                                                                                   \
    "  - allowed.example\n"                                                                        \
    "  - \"*.wild.example\"\n"                                                                     \
    "  - api.anthropic.com\n"                                                                      \
    "url_prefixes:\n"                                                                              \
    "  - host: api.example\n"                                                                      \
    "    path: /repos/*\n"                                                                         \
    "    methods: [GET, HEAD]\n"                                                                   \
    "  - host: internal.example\n"                                                                 \
    "    ports: [8443]\n"                                                                          \
    "  - host: gql.example\n"                                                                      \
    "    path: /graphql*\n"                                                                        \
    "    graphql:\n"                                                                               \
    "      queries: [\"*\"]\n"
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
/* clang-format off */
#define ANSWER_OK {U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}
/* clang-format on */
#define ALL_STAGES "precheck leak policy aws ghapp masking budget filters upstream"
#define NOT_LISTED "\"message\": \"This host/path is not in the network allowlist."

/* clang-format off */
/* A request allowed by the policy: it goes upstream as sent and is answered 200. */
#define ALLOWED(nm, method, host, path, port_, scheme, line)                                       \
    {.name = nm,                                                                                   \
     .tls = (scheme)[4] == 's',                                                                    \
     .req = method " " path " HTTP/1.1\r\nHost: " host "\r\n\r\n",                                 \
     .head = ALL_STAGES,                                                                           \
     .steps = {ANSWER_OK},                                                                         \
     .opens = method " " port_ " " path "\n",                                                      \
     .up_head = method " " path,                                                                   \
     .up_ended = 1,                                                                                \
     .up_done = 1,                                                                                 \
     .status = 200,                                                                                \
     .fin = FIN_REUSE,                                                                             \
     .log = "allowed " method " " scheme "://" line " -> 200\n"}

/* A request the policy refuses: 403 with json in the answer, nothing opened upstream. */
#define REFUSED(nm, method, host, path, scheme, json, line)                                        \
    {.name = nm,                                                                                   \
     .tls = (scheme)[4] == 's',                                                                    \
     .req = method " " path " HTTP/1.1\r\nHost: " host "\r\n\r\n",                                 \
     .head = "precheck leak |policy",                                                              \
     .status = 403,                                                                                \
     .down_json = json,                                                                            \
     .fin = FIN_REUSE,                                                                             \
     .log = "BLOCKED " method " " scheme "://" line " -> 403\n"}
/* clang-format on */

/* The stage asked the filters stage for the body. */
static void body_asked(void)
{
    assert_true(fx->x->view->filter_cap > 0);
    assert_int_equal(fake_up.opened, 0); /* nothing upstream before the body is read */
}

static const scase_t cases[] = {
    /* ---- hosts ------------------------------------------------------------------------------ */
    ALLOWED("a domains entry: any path, any method", "DELETE", "allowed.example", "/any/where",
            "allowed.example:80", "http", "allowed.example/any/where"),
    ALLOWED("hosts compare lowercased, one trailing dot dropped", "GET", "ALLOWED.Example.", "/x",
            "allowed.example:80", "http", "ALLOWED.Example./x"),
    ALLOWED("a glob host: a subdomain matches", "GET", "a.b.wild.example", "/",
            "a.b.wild.example:443", "https", "a.b.wild.example/"),
    REFUSED("a glob host: the apex does not match", "GET", "wild.example", "/", "http",
            "\"error\": \"blocked_by_network_allowlist\", \"host\": \"wild.example\"",
            "wild.example/"),
    /* ---- block entries: checked first, win over any allow ----------------------------------- */
    REFUSED("a blocked host pattern, whatever else", "GET", "x.evil.example", "/", "http",
            "blocked_by_network_allowlist", "x.evil.example/"),
    REFUSED("a blocked path on an allowed host", "GET", "allowed.example", "/admin/users", "http",
            "blocked_by_network_allowlist", "allowed.example/admin/users"),
    REFUSED("a block matches every reading and any case: //ADMIN;v=1/./x", "GET", "allowed.example",
            "//ADMIN;v=1/./x", "http", "blocked_by_network_allowlist",
            "allowed.example//ADMIN;v=1/./x"),
    /* ---- url_prefixes: path, methods, ports ------------------------------------------------- */
    ALLOWED("a path prefix and a listed method", "GET", "api.example", "/repos/o/r",
            "api.example:443", "https", "api.example/repos/o/r"),
    REFUSED("a path outside the prefix", "GET", "api.example", "/user", "https", NOT_LISTED,
            "api.example/user"),
    REFUSED("a method the entry does not list: the message names it", "POST", "api.example",
            "/repos/o/r", "https", "\"message\": \"Method POST is not allowed for this URL.",
            "api.example/repos/o/r"),
    REFUSED("a path that only some readings allow: //repos/x is refused", "GET", "api.example",
            "//repos/x/../../user", "https", "blocked_by_network_allowlist",
            "api.example//repos/x/../../user"),
    ALLOWED("a port the entry lists", "GET", "internal.example:8443", "/", "internal.example:8443",
            "https", "internal.example:8443/"),
    REFUSED("a port no entry lists: the message names it", "GET", "allowed.example:8080", "/",
            "http", "\"message\": \"Port 8080 is not allowed for this host.",
            "allowed.example:8080/"),
    /* ---- the body filters ask for the body ------------------------------------------------- */
    {.name = "a GraphQL endpoint with operation rules: passed on, the body asked for",
     .tls = 1,
     .req = "POST /graphql HTTP/1.1\r\nHost: gql.example\r\nContent-Length: 2\r\n\r\n",
     .head = "precheck leak policy budget |filters",
     .steps = {{CALL, .fn = body_asked}, {C_BODY, "{}"}, {CALL, .fn = body_asked}},
     .status = 0,
     .log = ""},
    {.name = "GraphQL rules: a document in the URL's query is refused at the head",
     .tls = 1,
     .req = "GET /graphql?query=mutation%7Bx%7D HTTP/1.1\r\nHost: gql.example\r\n\r\n",
     .head = "precheck leak |policy",
     .status = 403,
     .down_json = "\"error\": \"graphql_operation_blocked\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET https://gql.example/graphql?query=mutation%7Bx%7D -> 403 [graphql-op: "
            "query-params]\n"},
    {.name = "the Anthropic Messages API: passed on, the body asked for (the tool trim)",
     .tls = 1,
     .req = "POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 2\r\n\r\n",
     .head = "precheck leak policy budget |filters",
     .steps = {{CALL, .fn = body_asked}},
     .log = ""},
    {.name = "a refused request's body is read and dropped: the connection is kept",
     .req = "PUT /repos/o/r HTTP/1.1\r\nHost: api.example\r\nContent-Length: 4\r\n\r\n",
     .tls = 1,
     .head = "precheck leak |policy",
     .steps = {{C_BODY, "data"}, {C_END}},
     .status = 403,
     .down_json = "Method PUT is not allowed",
     .fin = FIN_REUSE,
     .log = "BLOCKED PUT https://api.example/repos/o/r -> 403\n"},
};

static void test_px_stage_policy_case(void **state)
{
    script_run(*state, POLICY);
}

int main(void)
{
    SCRIPT_TESTS(tests, cases, test_px_stage_policy_case);
    return cmocka_run_group_tests_name("test_px_stage_policy", tests, NULL, NULL);
}
