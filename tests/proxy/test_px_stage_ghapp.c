/* The GitHub App stage (proxy/px_stage_ghapp.c; docs/replacements.md, "GitHub App credentials")
 * in process. A request carrying an in-scope github-app surrogate gets the entry's installation
 * token: from the cache, or the stage WAITs while it asks the token endpoint (POST
 * /app/installations/{id}/access_tokens with an RS256 app JWT), then the installation's
 * repositories, and resumes. A failed token request answers 502; plain http 403; a GraphQL
 * request has its body gathered first and is checked against the repositories; a foreign
 * Authorization is stripped. on_end takes a waiting exchange off the job (and ends the job when
 * airlock is stopping and nobody waits).
 *
 * Driven through the exchange with the fakes (fake_*.c): the token endpoint and the
 * repositories endpoint are answered through fake_upstream, which records each request opened
 * (opens). The App's key is made once by main(). The entry's "timeout" is run out once (1 s, the
 * token request; tests/integration/test_ghapp.sh runs it end to end). Not here: several
 * exchanges waiting on one job (the script runs one exchange at a time). */
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
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

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

#define POLICY "domains:\n  - api.github.com\n  - other.example\n"
#define SURR "ghs_SurrogateTokenValue1234567890abcde"
#define TOKEN "ghs_RealInstallationToken0123456789abcd"
#define OK_2 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
/* clang-format off */
#define ANSWER_OK {U_READY}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}
/* clang-format on */
#define TOKEN_JSON "{\"token\": \"" TOKEN "\", \"expires_at\": \"2099-01-01T00:00:00Z\"}"
#define REPOS_JSON                                                                                 \
    "{\"total_count\": 1, \"repositories\": [{\"id\": 42, \"node_id\": \"R_kgDOAAAAKg\", "         \
    "\"full_name\": \"o/r\"}]}"
/* the token endpoint answers 201, then the repositories page 200 */
/* clang-format off */
#define MINT_OK                                                                                    \
    {CALL, .fn = mint_asked},                                                                      \
    {U_HEAD, "HTTP/1.1 201 Created\r\n\r\n"}, {U_DATA, TOKEN_JSON}, {U_END},                      \
    {CALL, .fn = repos_asked},                                                                     \
    {U_HEAD, "HTTP/1.1 200 OK\r\n\r\n"}, {U_DATA, REPOS_JSON}, {U_END}
/* clang-format on */
#define MINT_PATH "POST api.github.com:443 /app/installations/678/access_tokens\n"
#define REPOS_PATH "GET api.github.com:443 /installation/repositories?per_page=100&page=1\n"
#define MINT_BODY "{\"permissions\":{\"contents\":\"read\"}}" /* the configured scoping */
#define WAITING "precheck leak policy aws |ghapp"
#define GQL(len)                                                                                   \
    "POST /graphql HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer " SURR                \
    "\r\nContent-Length: " #len "\r\n\r\n"
#define GQL_IN "{\"query\": \"{ repository(owner: \\\"o\\\", name: \\\"r\\\") { id } }\"}"
#define GQL_OUT "{\"query\": \"{ repository(owner: \\\"x\\\", name: \\\"y\\\") { id } }\"}"

static EVP_PKEY *app_key;
static char repl[8192];    /* made by main() with the key */
static char repl_t1[8192]; /* the same entry with "timeout": 1 */

/* ---- what the token and repositories requests carry ------------------------------------------ */

static size_t b64url_decode(const char *s, size_t n, unsigned char *out, size_t cap)
{
    char tmp[2048];
    assert_true(n + 4 < sizeof(tmp));
    for (size_t i = 0; i < n; i++)
        tmp[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
    size_t m = n;
    while (m % 4 != 0)
        tmp[m++] = '=';
    assert_true(m / 4 * 3 <= cap);
    int len = EVP_DecodeBlock(out, (const unsigned char *)tmp, (int)m);
    assert_true(len >= 0);
    return (size_t)len - (m - n); /* the padding decodes as zero bytes */
}

/* The token request: the app JWT (RS256 under the app's key, iss = the app id), GitHub's
 * Accept, the configured permissions in the body. */
static void mint_asked(void)
{
    fake_up_live(&fake_up);
    assert_true(fake_up.tls);
    assert_lines_in(fake_up.head, "Host: api.github.com\nAccept: application/vnd.github+json",
                    "token request");
    const char *jwt = strstr(fake_up.head, "\nAuthorization: Bearer ");
    assert_non_null(jwt);
    jwt += strlen("\nAuthorization: Bearer ");
    const char *end = strchr(jwt, '\n');
    const char *d1 = strchr(jwt, '.');
    const char *d2 = d1 != NULL ? strchr(d1 + 1, '.') : NULL;
    assert_true(d1 != NULL && d2 != NULL && d2 < end);
    unsigned char buf[1024];
    size_t n = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), buf, sizeof(buf) - 1);
    buf[n] = '\0';
    assert_non_null(strstr((char *)buf, "\"iss\":\"12345\""));
    size_t slen = b64url_decode(d2 + 1, (size_t)(end - d2 - 1), buf, sizeof(buf));
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, app_key), 1);
    assert_int_equal(
        EVP_DigestVerify(md, buf, slen, (const unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
    EVP_MD_CTX_free(md);
    assert_int_equal(fake_up.body_len, strlen(MINT_BODY));
    assert_memory_equal(fake_up.body, MINT_BODY, fake_up.body_len);
}

/* The repositories request carries the new token. */
static void repos_asked(void)
{
    fake_up_live(&fake_up);
    assert_lines_in(fake_up.head, "Authorization: Bearer " TOKEN, "repositories request");
}

static void check_waiting(void)
{
    check_head(WAITING);
    assert_non_null(fx->x->gh.mint);
}

/* airlock is stopping: the last waiter to leave ends the job. */
static void stopping(void)
{
    fx->ctx.stopping = 1;
}

static const step_t mint_ok[] = {{.op = CALL, .fn = mint_asked},
                                 {.op = U_HEAD, .s = "HTTP/1.1 201 Created\r\n\r\n"},
                                 {.op = U_DATA, .s = TOKEN_JSON},
                                 {.op = U_END},
                                 {.op = U_HEAD, .s = "HTTP/1.1 200 OK\r\n\r\n"},
                                 {.op = U_DATA, .s = REPOS_JSON},
                                 {.op = U_END},
                                 {.op = U_READY},
                                 {.op = U_HEAD, .s = OK_2},
                                 {.op = U_DATA, .s = "ok"},
                                 {.op = U_END},
                                 {.op = END_OF_SCRIPT}};

/* An earlier request minted the token: it is in the entry's cache. */
static void minted_before(void)
{
    script_prior("GET /first HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer " SURR
                 "\r\n\r\n",
                 1, mint_ok);
}

#define GET_USER                                                                                   \
    "GET /user HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer " SURR "\r\n\r\n"

static const scase_t cases[] = {
    {.name = "no token yet: WAIT, the token then the repositories are fetched, the token goes in",
     .repl = repl,
     .tls = 1,
     .req = GET_USER,
     .head = WAITING,
     .steps = {{CALL, .fn = check_waiting},
               MINT_OK,
               {CHECK_HEAD, "precheck leak policy aws ghapp masking budget filters upstream"},
               ANSWER_OK},
     .opens = MINT_PATH REPOS_PATH "GET api.github.com:443 /user\n",
     .up_head = "GET /user\nAuthorization: Bearer " TOKEN,
     .up_not = "Authorization: Bearer " SURR,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://api.github.com/user -> 200 [github-app: refreshed] [masked: 1]\n"},
    {.name = "a cached token: no request of the stage's own, no wait",
     .repl = repl,
     .tls = 1,
     .pre = minted_before,
     .req = GET_USER,
     .head = "precheck leak policy aws ghapp masking budget filters upstream",
     .steps = {ANSWER_OK},
     .opens = "GET api.github.com:443 /user\n",
     .up_head = "GET /user\nAuthorization: Bearer " TOKEN,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://api.github.com/first -> 200 [github-app: refreshed] [masked: 1]\n"
            "allowed GET https://api.github.com/user -> 200 [github-app: cached] [masked: 1]\n"},
    {.name = "Basic x-access-token:<surrogate> (git): the password replaced, re-encoded",
     .repl = repl,
     .tls = 1,
     .pre = minted_before,
     /* x-access-token:SURR, and x-access-token:TOKEN */
     .req = "GET /o/r.git/info/refs HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Basic "
            "eC1hY2Nlc3MtdG9rZW46Z2hzX1N1cnJvZ2F0ZVRva2VuVmFsdWUxMjM0NTY3ODkwYWJjZGU=\r\n\r\n",
     .steps = {ANSWER_OK},
     .opens = "GET api.github.com:443 /o/r.git/info/refs\n",
     .up_head = "GET /o/r.git/info/refs\nAuthorization: Basic "
                "eC1hY2Nlc3MtdG9rZW46Z2hzX1JlYWxJbnN0YWxsYXRpb25Ub2tlbjAxMjM0NTY3ODlhYmNk",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "allowed GET https://api.github.com/first -> 200 [github-app: refreshed] [masked: 1]\n"
            "allowed GET https://api.github.com/o/r.git/info/refs -> 200 [github-app: cached] "
            "[masked: 1]\n"},
    {.name = "the token endpoint answers 500: 502 github_app_token_refresh_failed",
     .repl = repl,
     .tls = 1,
     .req = GET_USER,
     .head = WAITING,
     .steps = {{U_HEAD, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"},
               {U_END}},
     .opens = MINT_PATH,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = MINT_BODY,
     .up_done = 1,
     .up_ended = 1,
     .status = 502,
     .down_json = "\"error\": \"github_app_token_refresh_failed\"",
     .fin = FIN_REUSE,
     .log = "GitHub App token refresh failed for GET https://api.github.com/user: the token "
            "endpoint answered HTTP 500\n"
            "allowed GET https://api.github.com/user -> 502 [github-app: refresh-failed]\n"},
    {.name = "the token endpoint cannot be reached: 502, the cause in the line",
     .repl = repl,
     .tls = 1,
     .req = GET_USER,
     .steps = {{U_ERROR, "Connection failed: connection refused"}},
     .opens = MINT_PATH,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = MINT_BODY,
     .up_ended = 1,
     .status = 502,
     .down_json = "github_app_token_refresh_failed",
     .fin = FIN_REUSE,
     .log = "GitHub App token refresh failed for GET https://api.github.com/user: Connection "
            "failed: connection refused\n"
            "allowed GET https://api.github.com/user -> 502 [github-app: refresh-failed]\n"},
    {.name = "the token endpoint never answers: 502 once the entry's timeout (1 s) is out",
     .repl = repl_t1,
     .tls = 1,
     .req = GET_USER,
     .head = WAITING,
     .steps = {{WAIT, .n = 200}, {CHECK_HEAD, WAITING}, {WAIT, .n = 1000}},
     .opens = MINT_PATH,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = MINT_BODY,
     .up_ended = 1,
     .up_aborted = 1,
     .status = 502,
     .down_json = "github_app_token_refresh_failed",
     .fin = FIN_REUSE,
     .log = "GitHub App token refresh failed for GET https://api.github.com/user: the token "
            "request timed out after 1 s\n"
            "allowed GET https://api.github.com/user -> 502 [github-app: refresh-failed]\n"},
    {.name = "an answer without a token: 502, the parse error in the line",
     .repl = repl,
     .tls = 1,
     .req = GET_USER,
     .steps = {{U_HEAD, "HTTP/1.1 201 Created\r\n\r\n"}, {U_DATA, "{\"nope\": 1}"}, {U_END}},
     .opens = MINT_PATH,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = MINT_BODY,
     .up_ended = 1,
     .up_done = 1,
     .status = 502,
     .down_json = "github_app_token_refresh_failed",
     .fin = FIN_REUSE,
     .log = "GitHub App token refresh failed for GET https://api.github.com/user: the answer has "
            "no \"token\" string\n"
            "allowed GET https://api.github.com/user -> 502 [github-app: refresh-failed]\n"},
    {.name = "the repositories cannot be fetched: the token still serves a REST request",
     .repl = repl,
     .tls = 1,
     .req = GET_USER,
     .steps = {{U_HEAD, "HTTP/1.1 201 Created\r\n\r\n"},
               {U_DATA, TOKEN_JSON},
               {U_END},
               {U_HEAD, "HTTP/1.1 500 Internal Server Error\r\n\r\n"},
               {U_END},
               ANSWER_OK},
     .opens = MINT_PATH REPOS_PATH "GET api.github.com:443 /user\n",
     .up_head = "GET /user\nAuthorization: Bearer " TOKEN,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "GitHub App repo node ID resolution failed: the repositories endpoint answered HTTP "
            "500\n"
            "allowed GET https://api.github.com/user -> 200 [github-app: refreshed] [masked: 1]\n"},
    {.name = "plain http: 403 credentials_require_https, no token request",
     .repl = repl,
     .req = GET_USER,
     .head = "precheck leak policy aws |ghapp",
     .status = 403,
     .down_json = "credentials_require_https",
     .fin = FIN_REUSE,
     .log = "BLOCKED GET http://api.github.com/user -> 403 (credential needs https)\n"},
    {.name = "a foreign Authorization toward an in-scope host is stripped, no token request",
     .repl = repl,
     .tls = 1,
     .req = "GET /user HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer mine\r\n\r\n",
     .head = "precheck leak policy aws ghapp masking budget filters upstream",
     .steps = {ANSWER_OK},
     .opens = "GET api.github.com:443 /user\n",
     .up_head = "GET /user",
     .up_not = "Authorization",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .fin = FIN_REUSE,
     .log = "STRIPPED header 'authorization' from GET https://api.github.com/user (foreign "
            "credential blocked)\n"
            "allowed GET https://api.github.com/user -> 200\n"},
    {.name = "the surrogate toward a host outside the scopes goes out unchanged",
     .repl = repl,
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
    {.name = "a request body waits paused while the token is minted, then goes on intact",
     .repl = repl,
     .tls = 1,
     .req = "POST /repos/o/r/issues HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer " SURR
            "\r\nContent-Length: 4\r\n\r\n",
     .head = WAITING,
     .steps =
         {MINT_OK, {U_READY}, {C_BODY, "data"}, {C_END}, {U_HEAD, OK_2}, {U_DATA, "ok"}, {U_END}},
     .opens = MINT_PATH REPOS_PATH "POST api.github.com:443 /repos/o/r/issues\n",
     .up_head = "POST /repos/o/r/issues\nAuthorization: Bearer " TOKEN,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = "data",
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .pauses = "10",
     .fin = FIN_REUSE,
     .log = "allowed POST https://api.github.com/repos/o/r/issues -> 200 [github-app: refreshed] "
            "[masked: 1]\n"},
    /* ---- GraphQL repository scoping ------------------------------------------------------ */
    {.name = "GraphQL with a query string: refused at once (query-params), no token request",
     .repl = repl,
     .tls = 1,
     .req = "POST /graphql?x=1 HTTP/1.1\r\nHost: api.github.com\r\nAuthorization: Bearer " SURR
            "\r\nContent-Length: 2\r\n\r\n",
     .head = "precheck leak policy aws |ghapp",
     .steps = {{C_BODY, "{}"}, {C_END}}, /* read and dropped */
     .status = 403,
     .down_json = "\"error\": \"graphql_repo_scope_blocked\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://api.github.com/graphql?x=1 -> 403 [github-app: query-params]\n"},
    {.name = "GraphQL naming an installation repository: body gathered, checked, token in",
     .repl = repl,
     .tls = 1,
     .req = GQL(61),
     .head = WAITING,
     .steps = {{C_BODY, GQL_IN},
               {C_END},
               {CHECK_HEAD, "precheck leak policy aws budget filters |ghapp"},
               MINT_OK,
               ANSWER_OK},
     .opens = MINT_PATH REPOS_PATH "POST api.github.com:443 /graphql\n",
     .up_head = "POST /graphql\nAuthorization: Bearer " TOKEN "\nContent-Length: 61",
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = GQL_IN,
     .up_ended = 1,
     .up_done = 1,
     .status = 200,
     .pauses = "10",
     .fin = FIN_REUSE,
     .log = "allowed POST https://api.github.com/graphql -> 200 [github-app: refreshed, "
            "graphql-scoped] [masked: 1]\n"},
    {.name = "GraphQL naming another repository: 403 graphql_repo_scope_blocked",
     .repl = repl,
     .tls = 1,
     .req = GQL(61),
     .steps = {{C_BODY, GQL_OUT}, {C_END}, MINT_OK},
     .opens = MINT_PATH REPOS_PATH,
     .up_ended = 1,
     .up_done = 1,
     .status = 403,
     .pauses = "10",
     .down_json = "\"detail\": \"repository:x/y\"",
     .fin = FIN_REUSE,
     .log = "BLOCKED POST https://api.github.com/graphql -> 403 [github-app: "
            "graphql-scope-blocked: repository:x/y]\n"},
    /* ---- leaving while waiting ----------------------------------------------------------- */
    {.name = "the waiter leaves: the job goes on alone and fills the cache",
     .repl = repl,
     .tls = 1,
     .req = GET_USER,
     .steps = {{C_ABORT, "Client disconnected."},
               {U_HEAD, "HTTP/1.1 201 Created\r\n\r\n"},
               {U_DATA, TOKEN_JSON},
               {U_END}},
     .opens = MINT_PATH,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = MINT_BODY,
     .up_ended = 1,
     .up_done = 1,
     .log = "ERROR GET https://api.github.com/user -> Client disconnected.\n"},
    {.name = "the last waiter leaves while airlock stops: on_end ends the job",
     .repl = repl,
     .tls = 1,
     .req = GET_USER,
     .steps = {{CALL, .fn = stopping}, {C_ABORT, "Client disconnected."}},
     .opens = MINT_PATH,
     .up_body_mode = PX_UP_BODY_LENGTH,
     .up_body = MINT_BODY,
     .up_ended = 1,
     .up_aborted = 1,
     .log = "ERROR GET https://api.github.com/user -> Client disconnected.\n"},
};

static void test_px_stage_ghapp_case(void **state)
{
    script_run(*state, POLICY);
}

/* The replacements file: the App entry with a fresh 2048-bit key (PEM, newlines escaped). */
static void make_repl(void)
{
    app_key = EVP_RSA_gen(2048);
    assert_non_null(app_key);
    BIO *b = BIO_new(BIO_s_mem());
    assert_int_equal(PEM_write_bio_PrivateKey(b, app_key, NULL, NULL, 0, NULL, NULL), 1);
    char *pem = NULL;
    long n = BIO_get_mem_data(b, &pem);
    char esc[4096];
    size_t e = 0;
    for (long i = 0; i < n && e + 2 < sizeof(esc); i++) {
        if (pem[i] == '\n') {
            esc[e++] = '\\';
            esc[e++] = 'n';
        } else {
            esc[e++] = pem[i];
        }
    }
    esc[e] = '\0';
    BIO_free(b);
    for (int t = 0; t < 2; t++)
        snprintf(t == 0 ? repl : repl_t1, sizeof(repl),
                 "{\"" SURR "\": {\"type\": \"github-app\", \"app_id\": \"12345\", "
                 "\"private_key\": \"%s\", \"installation_id\": 678, \"base_url\": "
                 "\"https://api.github.com\", \"scopes\": [\"api.github.com\"], "
                 "\"permissions\": {\"contents\": \"read\"}%s}}",
                 esc, t == 0 ? "" : ", \"timeout\": 1");
}

int main(void)
{
    make_repl();
    SCRIPT_TESTS(tests, cases, test_px_stage_ghapp_case);
    int rc = cmocka_run_group_tests_name("test_px_stage_ghapp", tests, NULL, NULL);
    EVP_PKEY_free(app_key);
    return rc;
}
