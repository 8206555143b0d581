/* The filters stage (proxy/px_stage_filters.c; docs/graphql.md, docs/anthropic-tools.md) in
 * process. When a body filter (the GraphQL operation rules, the Anthropic tool-domain trim, the
 * provider-fetch check) or a credential addon that signs the body asked for it, the stage
 * gathers the body whole (WAIT until it ended; px_xchg_body_end resumes it), runs the filters
 * on it in list order, and either answers (a filter's refusal, or 403 filter_error) or passes
 * it on, rewritten or not: then the credential stages run and the body goes up with its new
 * length. A body over its cap is refused by the filter its own way (on_body_over).
 *
 * Driven through the exchange with the fakes (fake_*.c). In test_px_xchg.c already: a GraphQL
 * mutation refused and a query allowed on a gathered body, 100-continue answered here. */
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
#include "addons/addon_graphql.h"
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
    "domains:\n  - allowed.example\n  - api.anthropic.com\n  - api.openai.com\n"                   \
    "url_prefixes:\n  - host: gql.example\n    path: /graphql\n    graphql:\n"                     \
    "      queries: [\"*\"]\n"
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
/* clang-format off */
#define ANSWER_OK {U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}
/* clang-format on */
#define GATHERING "precheck leak policy budget |filters"
#define GQL_CHUNKED                                                                                \
    "POST /graphql HTTP/1.1\r\nHost: gql.example\r\nTransfer-Encoding: chunked\r\n"                \
    "TE: trailers\r\n\r\n"
#define MESSAGES(len)                                                                              \
    "POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: " #len "\r\n\r\n"
#define FETCH_TWO                                                                                  \
    "{\"tools\": [{\"type\": \"web_fetch_20250910\", \"allowed_domains\": [\"allowed.example\", "  \
    "\"evil.example\"]}]}"
#define FETCH_NONE "{\"tools\": [{\"type\": \"web_fetch_20250910\"}]}"
#define FETCH_BLOCK                                                                                \
    "{\"tools\": [{\"type\": \"web_fetch_20250910\", \"blocked_domains\": [\"x.example\"]}]}"
#define IMAGE_URL                                                                                  \
    "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image\", \"source\": "        \
    "{\"type\": \"url\", \"url\": \"https://evil.example/a.png\"}}]}]}"

/* Nothing went upstream while the body is gathered; the stage still waits. */
static void still_gathering(void)
{
    assert_int_equal(fake_up.opened, 0);
    assert_true(fx->x->gath.on);
    assert_int_equal(fx->x->sink, PX__SINK_BUFFER);
    check_head(GATHERING);
}

/* One piece over the GraphQL cap. */
static void too_big(void)
{
    size_t n = ADDON_GRAPHQL_BODY_CAP + 1;
    char *b = malloc(n);
    assert_non_null(b);
    memset(b, ' ', n);
    px_xchg_body(fx->x, b, n);
    free(b);
}

static const scase_t cases[] = {
    {.name = "gathered: WAIT until the body ended, then filtered, sent with its length",
     .tls = 1,
     .req = GQL_CHUNKED,
     .head = GATHERING,
     .steps = {{C_BODY, "{\"query\": "},
               {CALL, .fn = still_gathering},
               {C_BODY, "\"{x}\"}"},
               {CALL, .fn = still_gathering},
               /* trailers of a gathered body are dropped: the body is re-framed */
               {C_END, "X-Sum: 1"},
               {CHECK_HEAD, "precheck leak policy aws ghapp masking budget filters upstream"},
               ANSWER_OK},
     .opens = "POST gql.example:443 /graphql\n",
     .up_head = "POST /graphql\nContent-Length: 16",
     .up_not = "Transfer-Encoding",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "{\"query\": \"{x}\"}",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST https://gql.example/graphql -> 200 [graphql-op: query/x]\n"},
    {.name = "a request without a body is filtered at once: no wait",
     .tls = 1,
     .req = "POST /graphql HTTP/1.1\r\nHost: gql.example\r\nContent-Length: 0\r\n\r\n",
     .head = "precheck leak policy budget |filters",
     .status = 403,
     .down_json = "\"error\": \"graphql_operation_blocked\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://gql.example/graphql -> 403\n"},
    {.name = "a body over the GraphQL cap: the filter refuses it its own way (too-large)",
     .tls = 1,
     .req = GQL_CHUNKED,
     .head = GATHERING,
     /* the answer goes at once; the rest of the body is read and dropped */
     .steps = {{CALL, .fn = too_big}, {C_BODY, "more"}, {C_END}},
     .status = 403,
     .down_json = "\"detail\": \"<too-large>\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://gql.example/graphql -> 403\n"},
    {.name = "the client leaves while the body is gathered: it is freed (ASan)",
     .tls = 1,
     .req = GQL_CHUNKED,
     .steps = {{C_BODY, "{\"query\": "}, {C_ABORT, "Client disconnected."}},
     .log = "ERROR POST https://gql.example/graphql -> Client disconnected.\n"},
    /* ---- the Anthropic tool-domain trim: a filter that rewrites ----------------------------- */
    {.name = "trim: a domain outside the allowlist is dropped, the body re-serialised",
     .tls = 1,
     .req = MESSAGES(99),
     .head = GATHERING,
     .steps = {{C_BODY, FETCH_TWO}, {C_END}, ANSWER_OK},
     .opens = "POST api.anthropic.com:443 /v1/messages\n",
     .up_head = "POST /v1/messages\nContent-Length: 79",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "{\"tools\":[{\"type\":\"web_fetch_20250910\",\"allowed_domains\":"
                "[\"allowed.example\"]}]}",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST https://api.anthropic.com/v1/messages -> 200 [tool-domains: "
            "web_fetch_20250910: dropped 1 of 2 domains: evil.example]\n"},
    {.name = "trim: a fetch tool without allowed_domains gets an empty list (deny all)",
     .tls = 1,
     .req = MESSAGES(43),
     .steps = {{C_BODY, FETCH_NONE}, {C_END}, ANSWER_OK},
     .opens = "POST api.anthropic.com:443 /v1/messages\n",
     .up_head = "POST /v1/messages",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "{\"tools\":[{\"type\":\"web_fetch_20250910\",\"allowed_domains\":[]}]}",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST https://api.anthropic.com/v1/messages -> 200 [tool-domains: "
            "web_fetch_20250910: forced allowed_domains: []]\n"},
    {.name = "trim: blocked_domains cannot be reconciled: 403, nothing upstream",
     .tls = 1,
     .req = MESSAGES(77),
     .steps = {{C_BODY, FETCH_BLOCK}, {C_END}},
     .status = 403,
     .down_json = "\"error\": \"blocklist_tool_config_unsupported\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://api.anthropic.com/v1/messages -> 403 [tool-domains: "
            "web_fetch_20250910: blocked-domains]\n"},
    {.name = "provider fetch: an image URL on a host the allowlist does not open: 403",
     .tls = 1,
     .req = MESSAGES(128),
     .steps = {{C_BODY, IMAGE_URL}, {C_END}},
     .status = 403,
     .down_json = "evil.example",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://api.anthropic.com/v1/messages -> 403 [provider-fetch: "
            "messages[0].content[0].source.url: its host is not open to unrestricted GET in the "
            "network allowlist]\n"},
    {.name = "an untouched body goes on byte for byte, with its length",
     .tls = 1,
     .req = MESSAGES(13),
     .steps = {{C_BODY, "{\"tools\": []}"}, {C_END}, ANSWER_OK},
     .opens = "POST api.anthropic.com:443 /v1/messages\n",
     .up_head = "POST /v1/messages\nContent-Length: 13",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "{\"tools\": []}",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST https://api.anthropic.com/v1/messages -> 200\n"},
    {.name = "no filter asked: the stage passes at once, the body streams",
     .req = "POST /up HTTP/1.1\r\nHost: allowed.example\r\nContent-Length: 2\r\n\r\n",
     .head = "precheck leak policy aws ghapp masking budget filters upstream",
     .steps = {{U_READY}, {C_BODY, "hi"}, {C_END}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}},
     .opens = "POST allowed.example:80 /up\n",
     .up_head = "POST /up",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "hi",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST http://allowed.example/up -> 200\n"},
};

static void test_px_stage_filters_case(void **state)
{
    script_run(*state, POLICY);
}

int main(void)
{
    SCRIPT_TESTS(tests, cases, test_px_stage_filters_case);
    return cmocka_run_group_tests_name("test_px_stage_filters", tests, NULL, NULL);
}
