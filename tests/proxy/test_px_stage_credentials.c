/* The credential stages of proxy/px_stage_credentials.c in process: aws (AWS re-signing,
 * addons/addon_aws.c) and masking (masked secrets, addons/addon_masking.c); docs/replacements.md.
 * Each runs its addon's head hook, after the allowlist and after the body filters passed the body
 * (PX_STAGE_AFTER_FILTERS); one mechanism per request (the first that matches). What they decide:
 * the surrogate becomes the real value in scope over https (AWS: the request is signed anew with
 * the real key, the real session token set), a plain-http request that would carry a real value
 * in clear is refused 403 credentials_require_https, a request naming an AWS surrogate that cannot
 * be re-signed 403 signing_failed, a foreign credential is stripped; an AWS body without a payload
 * hash is gathered first. Their on_end frees the addon's per-request state.
 *
 * Driven through the exchange with the fakes (fake_*.c). In test_px_xchg.c already: masking in
 * Authorization over https, and its refusal over plain http. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
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
    "domains:\n  - allowed.example\n  - plain.example\n  - other.example\n"                        \
    "  - \"*.amazonaws.com\"\n"                                                                    \
    "url_prefixes:\n  - host: gql.example\n    path: /graphql\n    graphql:\n"                     \
    "      queries: [\"*\"]\n"
#define REAL "REAL-secret-value-0123456789"
#define SURR "surrogate-token-0123456789abcdef"
#define REPL                                                                                       \
    "{\"" SURR "\": {\"value\": \"" REAL "\", \"scopes\": [\"allowed.example\", \"gql.example\"]," \
    " \"headers\": [\"Authorization\"]},"                                                          \
    " \"plain-surrogate-0123456789abcdef\": {\"value\": \"REAL-plain-value-0123456789\","          \
    " \"scopes\": [\"plain.example\"], \"headers\": [\"X-Api-Key\"], \"allow_plain_http\": true}," \
    " \"AKIASURROGATE0000000\": {\"type\": \"aws-sigv4\", \"access_key_id\": "                     \
    "\"AKIAREALKEYID0000000\", \"secret_access_key\": \"aws-real-secret-0123456789\","             \
    " \"session_token\": \"real-session-token-0123456789\","                                       \
    " \"surrogate_session_token\": \"surr-session-token-0123456789\","                             \
    " \"scopes\": [\"*.amazonaws.com\"]},"                                                         \
    " \"AKIANOSESSION0000000\": {\"type\": \"aws-sigv4\", \"access_key_id\": "                     \
    "\"AKIAREALNOSESS000000\", \"secret_access_key\": \"aws-real-secret-0123456789\","             \
    " \"scopes\": [\"*.amazonaws.com\"]},"                                                         \
    " \"xtok-surrogate-0123456789abcdef\": {\"value\": \"REAL-xtok-value-0123456789\","            \
    " \"scopes\": [\"*.amazonaws.com\"], \"headers\": [\"X-Tok\"]}}"
#define BASIC_SURR "dXNlcjpzdXJyb2dhdGUtdG9rZW4tMDEyMzQ1Njc4OWFiY2RlZg==" /* user:SURR */
#define BASIC_REAL "dXNlcjpSRUFMLXNlY3JldC12YWx1ZS0wMTIzNDU2Nzg5"         /* user:REAL */
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
/* clang-format off */
#define ANSWER_OK {U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}
/* clang-format on */
#define ALL_STAGES "precheck leak policy aws ghapp masking budget filters upstream"

/* ---- AWS requests, signed "now" (an x-amz-date off airlock's clock logs a WARNING line) ---- */

#define SIGNED "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" SIG64
#define SIG64 "0000000000000000000000000000000000000000000000000000000000000000"
#define AUTH(key) "AWS4-HMAC-SHA256 Credential=" key "/%1$.8s/us-east-1/s3/aws4_request, "
/* %1$s: the x-amz-date */
static const char *const aws_tpl[] = {
    /* 0: a GET with the session key, its payload unsigned */
    "GET /bucket/key HTTP/1.1\r\nHost: s3.amazonaws.com\r\nx-amz-date: %1$s\r\n"
    "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\nX-Amz-Security-Token: "
    "surr-session-token-0123456789\r\nX-Tok: xtok-surrogate-0123456789abcdef\r\n"
    "Authorization: " AUTH("AKIASURROGATE0000000") SIGNED "\r\n\r\n",
    /* 1: the key without a session token */
    "GET /bucket/key HTTP/1.1\r\nHost: s3.amazonaws.com\r\nx-amz-date: %1$s\r\n"
    "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n"
    "Authorization: " AUTH("AKIANOSESSION0000000") SIGNED "\r\n\r\n",
    /* 2: an Authorization naming the surrogate that does not parse */
    "GET /bucket/key HTTP/1.1\r\nHost: s3.amazonaws.com\r\nx-amz-date: %1$s\r\n"
    "Authorization: AWS4-HMAC-SHA256 Credential=AKIASURROGATE0000000\r\n\r\n",
    /* 3: a PUT without a payload hash: hashed once gathered */
    "PUT /bucket/key HTTP/1.1\r\nHost: s3.amazonaws.com\r\nx-amz-date: %1$s\r\n"
    "Content-Length: 5\r\nAuthorization: " AUTH(
        "AKIANOSESSION0000000") "SignedHeaders=host;x-amz-date, Signature=" SIG64 "\r\n\r\n",
    /* 4: a surrogate key id out of the entry's scopes (a domain the policy allows) */
    "GET /x HTTP/1.1\r\nHost: other.example\r\nx-amz-date: %1$s\r\n"
    "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n"
    "Authorization: " AUTH("AKIANOSESSION0000000") SIGNED "\r\n\r\n",
};
static char aws_req[5][1024];

static void stamp(void)
{
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
    for (size_t i = 0; i < 5; i++)
        snprintf(aws_req[i], sizeof(aws_req[i]), aws_tpl[i], date);
}

/* The re-signed request: the real key id in the credential, a signature other than the sent
 * one. */
static void resigned(const char *real_key)
{
    const char *a = strstr(fake_up.head, "\nAuthorization: AWS4-HMAC-SHA256 Credential=");
    assert_non_null(a);
    a += strlen("\nAuthorization: AWS4-HMAC-SHA256 Credential=");
    assert_memory_equal(a, real_key, strlen(real_key));
    assert_null(strstr(fake_up.head, SIG64));
    assert_null(strstr(fake_up.head, "AKIASURROGATE"));
    assert_null(strstr(fake_up.head, "AKIANOSESSION"));
}

static void resigned_session(void)
{
    resigned("AKIAREALKEYID0000000");
}

static void resigned_nosession(void)
{
    resigned("AKIAREALNOSESS000000");
}

static void unchanged(void)
{
    assert_non_null(strstr(fake_up.head, "Credential=AKIANOSESSION0000000/"));
    assert_non_null(strstr(fake_up.head, "Signature=" SIG64 "\n"));
}

static void body_gathered(void)
{
    assert_int_equal(fake_up.opened, 0);
    assert_int_equal(fx->x->gath.len, 5);
}

static const scase_t cases[] = {
    /* ---- masking -------------------------------------------------------------------------- */
    {.name = "masking: the surrogate as Basic's password is replaced and re-encoded",
     .repl = REPL,
     .tls = 1,
     .req =
         "GET / HTTP/1.1\r\nHost: allowed.example\r\nAuthorization: Basic " BASIC_SURR "\r\n\r\n",
     .head = ALL_STAGES,
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:443 /\n",
     .up_head = "GET /\nAuthorization: Basic " BASIC_REAL,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://allowed.example/ -> 200 [masked: 1]\n"},
    {.name = "masking: two Authorization fields collapse into the one replaced value",
     .repl = REPL,
     .tls = 1,
     .req = "GET / HTTP/1.1\r\nHost: allowed.example\r\nAuthorization: Bearer " SURR
            "\r\nAuthorization: Bearer attacker-own-token\r\n\r\n",
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:443 /\n",
     .up_head = "GET /\nAuthorization: Bearer " REAL,
     .up_not = "Authorization: Bearer attacker\nAuthorization: Bearer " SURR,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "COLLAPSED 2 duplicate 'authorization' headers in GET https://allowed.example/ "
            "(duplicate credential headers removed)\n"
            "allowed GET https://allowed.example/ -> 200 [masked: 1]\n"},
    {.name = "masking: a foreign credential in the entry's header is stripped",
     .repl = REPL,
     .tls = 1,
     .req = "GET / HTTP/1.1\r\nHost: allowed.example\r\nAuthorization: Bearer my-own\r\n\r\n",
     .steps = {ANSWER_OK},
     .opens = "GET allowed.example:443 /\n",
     .up_head = "GET /",
     .up_not = "Authorization",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "STRIPPED header 'authorization' from GET https://allowed.example/ (foreign "
            "credential blocked)\n"
            "allowed GET https://allowed.example/ -> 200 [dropped: 1]\n"},
    {.name = "masking: a surrogate toward a host outside its scopes goes out unchanged",
     .repl = REPL,
     .tls = 1,
     .req = "GET / HTTP/1.1\r\nHost: other.example\r\nAuthorization: Bearer " SURR "\r\n\r\n",
     .steps = {ANSWER_OK},
     .opens = "GET other.example:443 /\n",
     .up_head = "GET /\nAuthorization: Bearer " SURR,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://other.example/ -> 200\n"},
    {.name = "masking: allow_plain_http replaces over plain http",
     .repl = REPL,
     .req = "GET / HTTP/1.1\r\nHost: plain.example\r\nX-Api-Key: "
            "plain-surrogate-0123456789abcdef\r\n\r\n",
     .steps = {ANSWER_OK},
     .opens = "GET plain.example:80 /\n",
     .up_head = "GET /\nX-Api-Key: REAL-plain-value-0123456789",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET http://plain.example/ -> 200 [masked: 1]\n"},
    {.name = "masking waits for the body filters: passed over, then run on the filtered body",
     .repl = REPL,
     .tls = 1,
     .req = "POST /graphql HTTP/1.1\r\nHost: gql.example\r\nAuthorization: Bearer " SURR
            "\r\nContent-Length: 16\r\n\r\n",
     .head = "precheck leak policy budget |filters",
     .steps = {{C_BODY, "{\"query\": \"{x"}, {C_BODY, "}\"}"}, {C_END}, ANSWER_OK},
     .opens = "POST gql.example:443 /graphql\n",
     .up_head = "POST /graphql\nAuthorization: Bearer " REAL,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "{\"query\": \"{x}\"}",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed POST https://gql.example/graphql -> 200 [graphql-op: query/x] [masked: 1]\n"},
    {.name = "a body filter refuses: the credential stages never ran, nothing real was made",
     .repl = REPL,
     .tls = 1,
     .req = "POST /graphql HTTP/1.1\r\nHost: gql.example\r\nAuthorization: Bearer " SURR
            "\r\nContent-Length: 23\r\n\r\n",
     .head = "precheck leak policy budget |filters",
     .steps = {{C_BODY, "{\"query\": \"mutation{x}\"}"}, {C_END}},
     .status = 403,
     .down_json = "graphql_operation_blocked",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://gql.example/graphql -> 403 [graphql-op: mutation/x]\n"},
    /* ---- AWS -------------------------------------------------------------------------------- */
    {.name = "aws: re-signed with the real key, the real session token set; masking not run",
     .repl = REPL,
     .tls = 1,
     .pre = stamp,
     .req = aws_req[0],
     .head = ALL_STAGES,
     .steps = {{CALL, .fn = resigned_session}, ANSWER_OK},
     .opens = "GET s3.amazonaws.com:443 /bucket/key\n",
     .up_head = "GET /bucket/key\nX-Amz-Security-Token: real-session-token-0123456789",
     /* one mechanism per request: the masked X-Tok surrogate stays as sent */
     .up_not = "X-Tok: REAL",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://s3.amazonaws.com/bucket/key -> 200 [masked: 1] [region: "
            "us-east-1]\n"},
    {.name = "aws over plain http with a session token: 403, the token never in clear",
     .repl = REPL,
     .pre = stamp,
     .req = aws_req[0],
     .head = "precheck leak policy |aws",
     .status = 403,
     .down_json = "credentials_require_https",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://s3.amazonaws.com/bucket/key -> 403 (credential needs https)\n"},
    {.name = "aws over plain http without a session token: re-signed (the signature reveals no "
             "secret)",
     .repl = REPL,
     .pre = stamp,
     .req = aws_req[1],
     .head = ALL_STAGES,
     .steps = {{CALL, .fn = resigned_nosession}, ANSWER_OK},
     .opens = "GET s3.amazonaws.com:80 /bucket/key\n",
     .up_head = "GET /bucket/key",
     .up_not = "X-Amz-Security-Token",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET http://s3.amazonaws.com/bucket/key -> 200 [masked: 1] [region: "
            "us-east-1]\n"},
    {.name = "aws: an Authorization naming the surrogate that does not parse: 403 signing_failed",
     .repl = REPL,
     .tls = 1,
     .pre = stamp,
     .req = aws_req[2],
     .head = "precheck leak policy |aws",
     .status = 403,
     .down_json = "\"error\": \"signing_failed\"",
     .fin = FIN_REUSE,
     .log = "ERROR GET https://s3.amazonaws.com/bucket/key -> 403 (signing failed: malformed "
            "Authorization)\n"},
    {.name = "aws: no payload hash: the body is gathered, then hashed and signed",
     .repl = REPL,
     .tls = 1,
     .pre = stamp,
     .req = aws_req[3],
     .head = "precheck leak policy aws ghapp masking budget |filters",
     .steps = {{C_BODY, "hello"}, {CALL, .fn = body_gathered}, {C_END}, ANSWER_OK},
     .opens = "PUT s3.amazonaws.com:443 /bucket/key\n",
     .up_head = "PUT /bucket/key\nContent-Length: 5",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "hello",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed PUT https://s3.amazonaws.com/bucket/key -> 200 [masked: 1] [region: "
            "us-east-1]\n"},
    {.name = "aws: the client leaves while its body is gathered: on_end frees the state (ASan)",
     .repl = REPL,
     .tls = 1,
     .pre = stamp,
     .req = aws_req[3],
     .steps = {{C_BODY, "hel"}, {C_ABORT, "Client disconnected."}},
     .log = "ERROR PUT https://s3.amazonaws.com/bucket/key -> Client disconnected.\n"},
    {.name = "aws: a surrogate key toward a host outside its scopes goes out unchanged",
     .repl = REPL,
     .tls = 1,
     .pre = stamp,
     .req = aws_req[4],
     .head = ALL_STAGES,
     .steps = {{CALL, .fn = unchanged}, ANSWER_OK},
     .opens = "GET other.example:443 /x\n",
     .up_head = "GET /x\nHost: other.example",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://other.example/x -> 200\n"},
};

static void test_px_stage_credentials_case(void **state)
{
    script_run(*state, POLICY);
}

int main(void)
{
    SCRIPT_TESTS(tests, cases, test_px_stage_credentials_case);
    return cmocka_run_group_tests_name("test_px_stage_credentials", tests, NULL, NULL);
}
