/* The Anthropic server-side tool-domain trim (addons/addon_tooldomains.c): the reference's
 * catalogue rows L14 and H12, §3.2's codes, its host_get_open rule (addon_policy_host_get_open)
 * and the cases of its tool_domains tests, plus the deliberate differences of
 * docs/anthropic-tools.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_policy.h"
#include "addons/addon_tooldomains.h"
#include "base/px_err.h"

static const char *const allow_yaml =
    "block:\n"
    "  - {host: blocked-path.example, path: /admin*}\n"
    "domains: [pypi.org, \"*.docs.example\"]\n"
    "url_prefixes:\n"
    "  - {host: api.anthropic.com, path: /v1/messages*, methods: [POST]}\n"
    "  - {host: get.example, methods: [get, HEAD]}\n"
    "  - {host: any.example}\n"
    "  - {host: post.example, methods: [POST]}\n"
    "  - {host: path.example, path: /repos/*}\n"
    "  - {host: blocked-path.example}\n";

typedef struct td_out {
    char buf[8192];
    size_t len;
} td_out_t;

static int td_sink(void *data, const char *buf, size_t len)
{
    td_out_t *o = data;
    if (o->len + len >= sizeof(o->buf))
        return PX_ETOOBIG;
    memcpy(o->buf + o->len, buf, len);
    o->len += len;
    o->buf[o->len] = '\0';
    return 0;
}

static addon_policy_t *td_policy(void)
{
    char err[512];
    addon_policy_t *p = NULL;
    int rc =
        addon_policy_load_buffer("al.yaml", allow_yaml, strlen(allow_yaml), &p, err, sizeof(err));
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    return p;
}

static void test_tooldomains_get_open(void **state)
{
    (void)state;
    addon_policy_t *p = td_policy();
    static const struct {
        const char *host;
        int open;
    } cases[] = {
        {"pypi.org", 1},
        {"PyPI.Org", 1},
        {"pypi.org.", 1},
        {"a.docs.example", 1},
        {"docs.example", 0},
        {"get.example", 1},
        {"any.example", 1},
        {"post.example", 0},
        {"path.example", 0},
        {"unlisted.example", 0},
        {"api.anthropic.com", 0},
        {"blocked-path.example", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        addon_str_t h = {cases[i].host, strlen(cases[i].host)};
        if (addon_policy_host_get_open(p, h) != cases[i].open)
            fail_msg("host %s: want %d", cases[i].host, cases[i].open);
    }
    assert_false(addon_policy_host_get_open(NULL, (addon_str_t){"pypi.org", 8}));
    addon_policy_unref(p);
}

typedef struct td_case {
    const char *path;
    const char *body;
    int rc;           /* ADDON_NEXT, ADDON_REWRITTEN or ADDON_ANSWER */
    const char *want; /* REWRITTEN: the new body; ANSWER: the error code */
    const char *annot;
} td_case_t;

#define WF "{\"type\":\"web_fetch_20250910\""
#define WS "{\"type\":\"web_search_20250305\""

static const td_case_t cases[] = {
    /* L14 */
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\"pypi.org\",\"airut.org\"]}]}",
     ADDON_REWRITTEN, "{\"tools\":[" WF ",\"allowed_domains\":[\"pypi.org\"]}]}",
     " [tool-domains: web_fetch_20250910: dropped 1 of 2 domains: airut.org]"},
    /* H12: the decoded path decides */
    {"/v1/messag%65s", "{\"tools\":[" WF ",\"allowed_domains\":[\"evil.test\"]}]}", ADDON_REWRITTEN,
     "{\"tools\":[" WF ",\"allowed_domains\":[]}]}",
     " [tool-domains: web_fetch_20250910: dropped 1 of 1 domains: evil.test]"},
    {"/v1/messages?beta=true", "{\"tools\":[" WF "}]}", ADDON_REWRITTEN,
     "{\"tools\":[" WF ",\"allowed_domains\":[]}]}",
     " [tool-domains: web_fetch_20250910: forced allowed_domains: []]"},
    {"/v1/messages/count_tokens", "{\"tools\":[" WF ",\"allowed_domains\":null}]}", ADDON_REWRITTEN,
     "{\"tools\":[" WF ",\"allowed_domains\":[]}]}",
     " [tool-domains: web_fetch_20250910: forced allowed_domains: []]"},
    {"/v1/messages_legacy", "{\"tools\":[" WF "}]}", ADDON_NEXT, NULL, ""},
    {"/v1/models", "not json", ADDON_NEXT, NULL, ""},
    /* unchanged bodies */
    {"/v1/messages", "{\"model\":\"m\"}", ADDON_NEXT, NULL, ""},
    {"/v1/messages", "{\"tools\":[]}", ADDON_NEXT, NULL, ""},
    {"/v1/messages", "{\"tools\":{\"type\":\"web_fetch_1\"}}", ADDON_NEXT, NULL, ""},
    {"/v1/messages",
     "{\"tools\":[{\"type\":\"custom\",\"allowed_domains\":[\"evil.test\"]},1,"
     "null,\"web_fetch_1\",{\"name\":\"mcp\"}]}",
     ADDON_NEXT, NULL, ""},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\"pypi.org\",\"get.example\"]}]}",
     ADDON_NEXT, NULL, ""},
    {"/v1/messages", "42", ADDON_NEXT, NULL, ""},
    {"/v1/messages", "[1, 2, 3]", ADDON_NEXT, NULL, ""},
    {"/v1/messages", "", ADDON_NEXT, NULL, ""}, /* deliberate: an empty body has no tools */
    /* an empty blocked_domains counts as unset */
    {"/v1/messages", "{\"tools\":[" WF ",\"blocked_domains\":[]}]}", ADDON_REWRITTEN,
     "{\"tools\":[" WF ",\"blocked_domains\":[],\"allowed_domains\":[]}]}",
     " [tool-domains: web_fetch_20250910: forced allowed_domains: []]"},
    /* other fields are kept, in their order; the type prefix is case-insensitive */
    {"/v1/messages",
     "{\"a\":1,\"tools\":[{\"name\":\"f\",\"type\":\"Web_Fetch_2\",\"max_uses\":5,"
     "\"allowed_domains\":[\"x.test\"],\"z\":{}}],\"b\":[true,false,null]}",
     ADDON_REWRITTEN,
     "{\"a\":1,\"tools\":[{\"name\":\"f\",\"type\":\"Web_Fetch_2\",\"max_uses\":5,"
     "\"allowed_domains\":[],\"z\":{}}],\"b\":[true,false,null]}",
     " [tool-domains: Web_Fetch_2: dropped 1 of 1 domains: x.test]"},
    /* bash_, computer_, code_execution_ */
    {"/v1/messages",
     "{\"tools\":[{\"type\":\"bash_20250124\"},{\"type\":\"computer_1\"},"
     "{\"type\":\"code_execution_2\"}]}",
     ADDON_REWRITTEN,
     "{\"tools\":[{\"type\":\"bash_20250124\",\"allowed_domains\":[]},"
     "{\"type\":\"computer_1\",\"allowed_domains\":[]},"
     "{\"type\":\"code_execution_2\",\"allowed_domains\":[]}]}",
     " [tool-domains: bash_20250124: forced allowed_domains: []; computer_1: forced "
     "allowed_domains: []; code_execution_2: forced allowed_domains: []]"},
    /* web_search: never [] */
    {"/v1/messages", "{\"tools\":[" WS "}]}", ADDON_NEXT, NULL, ""},
    {"/v1/messages", "{\"tools\":[" WS ",\"allowed_domains\":[\"evil.test\",\"x.test\"]}]}",
     ADDON_REWRITTEN, "{\"tools\":[" WS "}]}",
     " [tool-domains: web_search_20250305: cleared allowed_domains (2 outside allowlist: "
     "evil.test,x.test)]"},
    {"/v1/messages", "{\"tools\":[" WS ",\"allowed_domains\":[]}]}", ADDON_REWRITTEN,
     "{\"tools\":[" WS "}]}",
     " [tool-domains: web_search_20250305: removed empty allowed_domains]"},
    {"/v1/messages", "{\"tools\":[" WS ",\"allowed_domains\":[\"evil.test\",\"pypi.org\"]}]}",
     ADDON_REWRITTEN, "{\"tools\":[" WS ",\"allowed_domains\":[\"pypi.org\"]}]}",
     " [tool-domains: web_search_20250305: dropped 1 of 2 domains: evil.test]"},
    /* Batches, and tools anywhere */
    {"/v1/messages/batches",
     "{\"requests\":[{\"custom_id\":\"a\",\"params\":{\"tools\":[" WF
     ",\"allowed_domains\":[\"evil.test\"]}]}}]}",
     ADDON_REWRITTEN,
     "{\"requests\":[{\"custom_id\":\"a\",\"params\":{\"tools\":[" WF
     ",\"allowed_domains\":[]}]}}]}",
     " [tool-domains: web_fetch_20250910: dropped 1 of 1 domains: evil.test]"},
    {"/v1/messages", "[{\"tools\":[" WF "}]}]", ADDON_REWRITTEN,
     "[{\"tools\":[" WF ",\"allowed_domains\":[]}]}]",
     " [tool-domains: web_fetch_20250910: forced allowed_domains: []]"},
    /* more than ten dropped domains are summarised */
    {"/v1/messages",
     "{\"tools\":[" WF ",\"allowed_domains\":[\"a1\",\"a2\",\"a3\",\"a4\",\"a5\","
     "\"a6\",\"a7\",\"a8\",\"a9\",\"a10\",\"a11\",\"a12\"]}]}",
     ADDON_REWRITTEN, "{\"tools\":[" WF ",\"allowed_domains\":[]}]}",
     " [tool-domains: web_fetch_20250910: dropped 12 of 12 domains: "
     "a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,+2 more]"},
    /* non-ASCII stays as it is, numbers keep their value (0.7 stays 0.7; jansson spells 1e-05
     * 1e-5), lone surrogates survive */
    {"/v1/messages",
     "{\"tools\":[" WF "}],\"temperature\":0.7,\"top_p\":1e-05,\"n\":3,"
     "\"x\":1.0,\"content\":\"caf\\u00e9 \xe2\x9c\x93 \\ud83d\\ude00 tail \\ud83d\"}",
     ADDON_REWRITTEN,
     "{\"tools\":[" WF ",\"allowed_domains\":[]}],\"temperature\":0.7,"
     "\"top_p\":1e-5,\"n\":3,\"x\":1.0,"
     "\"content\":\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 tail \\ud83d\"}",
     " [tool-domains: web_fetch_20250910: forced allowed_domains: []]"},
    /* refusals */
    {"/v1/messages", "{\"tools\":[" WF ",\"blocked_domains\":[\"evil.test\"]}]}", ADDON_ANSWER,
     "blocklist_tool_config_unsupported", " [tool-domains: web_fetch_20250910: blocked-domains]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"blocked_domains\":\"evil.test\"}]}", ADDON_ANSWER,
     "blocklist_tool_config_unsupported", " [tool-domains: web_fetch_20250910: blocked-domains]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\"*.pypi.org\"]}]}", ADDON_ANSWER,
     "wildcard_tool_domain_unsupported", " [tool-domains: web_fetch_20250910: wildcard]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\"pyp?.org\"]}]}", ADDON_ANSWER,
     "wildcard_tool_domain_unsupported", " [tool-domains: web_fetch_20250910: wildcard]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\".pypi.org\"]}]}", ADDON_ANSWER,
     "wildcard_tool_domain_unsupported", " [tool-domains: web_fetch_20250910: wildcard]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\"pypi.org \"]}]}", ADDON_ANSWER,
     "wildcard_tool_domain_unsupported", " [tool-domains: web_fetch_20250910: wildcard]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\"pypi\\u00a0org\"]}]}", ADDON_ANSWER,
     "wildcard_tool_domain_unsupported", " [tool-domains: web_fetch_20250910: wildcard]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[\"\"]}]}", ADDON_ANSWER,
     "wildcard_tool_domain_unsupported", " [tool-domains: web_fetch_20250910: wildcard]"},
    {"/v1/messages", "{\"tools\":[" WF ",\"allowed_domains\":[1]}]}", ADDON_ANSWER,
     "wildcard_tool_domain_unsupported", " [tool-domains: web_fetch_20250910: wildcard]"},
    /* a refusal stops the walk, even after a trim */
    {"/v1/messages", "{\"tools\":[" WF "}," WS ",\"blocked_domains\":[\"x\"]}]}", ADDON_ANSWER,
     "blocklist_tool_config_unsupported",
     " [tool-domains: web_fetch_20250910: forced allowed_domains: []; web_search_20250305: "
     "blocked-domains]"},
    {"/v1/messages/batches",
     "{\"requests\":[{\"params\":{\"tools\":[" WF ",\"blocked_domains\":[\"x\"]}]}}]}",
     ADDON_ANSWER, "blocklist_tool_config_unsupported",
     " [tool-domains: web_fetch_20250910: blocked-domains]"},
    {"/v1/messages", "not json{{{", ADDON_ANSWER, "tool_config_invalid",
     " [tool-domains: <invalid-json>]"},
    {"/v1/messages", "\xff\xfe\x00\x00", ADDON_ANSWER, "tool_config_invalid",
     " [tool-domains: <invalid-json>]"},
    {"/v1/messages", NULL, ADDON_ANSWER, "tool_config_too_large", " [tool-domains: <too-large>]"},
};

static void td_req(addon_req_t *r, const addon_config_t *cfg, const char *host, const char *path)
{
    addon_req_reset(r);
    r->method = (addon_str_t){"POST", 4};
    r->host = (addon_str_t){host, strlen(host)};
    r->path = (addon_str_t){path, strlen(path)};
    r->target = r->path;
    r->port = 443;
    r->tls = 1;
    r->config = cfg;
    r->url = "https://api.anthropic.com/v1/messages";
}

static void test_tooldomains_catalogue(void **state)
{
    (void)state;
    addon_policy_t *p = td_policy();
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_tooldomains();
    addon_req_t *r = calloc(1, sizeof(*r));
    td_out_t *o = calloc(1, sizeof(*o));
    addon_sink_t sink = {td_sink, o};
    int failures = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const td_case_t *c = &cases[i];
        td_req(r, &cfg, "api.anthropic.com", c->path);
        o->len = 0;
        o->buf[0] = '\0';
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        assert_int_equal(a->on_request_head(a, r, &ans), ADDON_NEXT);
        int applies = r->filter_cap == ADDON_TOOLDOMAINS_BODY_CAP;
        size_t len = c->body == NULL                    ? ADDON_TOOLDOMAINS_BODY_CAP + 1
                     : strncmp(c->body, "\xff", 1) == 0 ? 4
                                                        : strlen(c->body);
        int rc = a->on_request_body_filter(a, r, c->body, len, &sink, &ans);
        int ok = rc == c->rc && strcmp(r->annot, c->annot) == 0;
        if (ok && c->rc == ADDON_NEXT && strstr(c->path, "messages_") == NULL &&
            strstr(c->path, "models") == NULL)
            ok = applies;
        if (ok && rc == ADDON_REWRITTEN)
            ok = strcmp(o->buf, c->want) == 0;
        if (ok && rc == ADDON_ANSWER)
            ok = ans.status == 403 && strcmp(ans.error, c->want) == 0 && ans.with_detail &&
                 o->len == 0;
        if (!ok) {
            print_error("case %zu (%s): rc %d out [%s] error [%s] detail [%s] annot [%s]\n", i,
                        c->body ? c->body : "(over)", rc, o->buf, ans.error ? ans.error : "",
                        ans.detail, r->annot);
            failures++;
        }
    }
    addon_req_reset(r);
    free(r);
    free(o);
    addon_policy_unref(p);
    assert_int_equal(failures, 0);
}

/* Only api.anthropic.com (any case, one trailing dot); details; deep nesting; encodings. */
static void test_tooldomains_edges(void **state)
{
    (void)state;
    addon_policy_t *p = td_policy();
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_tooldomains();
    addon_req_t *r = calloc(1, sizeof(*r));
    td_out_t *o = calloc(1, sizeof(*o));
    addon_sink_t sink = {td_sink, o};
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    const char *body = "{\"tools\":[" WF "}]}";

    td_req(r, &cfg, "api.anthropic.com.evil", "/v1/messages");
    a->on_request_head(a, r, &ans);
    assert_int_equal(r->filter_cap, 0);
    assert_int_equal(a->on_request_body_filter(a, r, body, strlen(body), &sink, &ans), ADDON_NEXT);
    td_req(r, &cfg, "API.Anthropic.COM.", "/v1/messages");
    a->on_request_head(a, r, &ans);
    assert_int_equal(r->filter_cap, ADDON_TOOLDOMAINS_BODY_CAP);
    assert_int_equal(a->on_request_body_filter(a, r, body, strlen(body), &sink, &ans),
                     ADDON_REWRITTEN);

    /* the answer's detail is the tool type */
    td_req(r, &cfg, "api.anthropic.com", "/v1/messages");
    const char *bl = "{\"tools\":[" WF ",\"blocked_domains\":[\"x\"]}]}";
    assert_int_equal(a->on_request_body_filter(a, r, bl, strlen(bl), &sink, &ans), ADDON_ANSWER);
    assert_string_equal(ans.detail, "web_fetch_20250910");

    /* nesting past the parser's depth: refused, never forwarded untrimmed */
    size_t depth = 50000;
    char *deep = malloc(depth * 6 + 2);
    size_t n = 0;
    for (size_t i = 0; i < depth; i++) {
        memcpy(deep + n, "{\"a\":", 5);
        n += 5;
    }
    deep[n++] = '1';
    memset(deep + n, '}', depth);
    n += depth;
    memset(&ans, 0, sizeof(ans));
    td_req(r, &cfg, "api.anthropic.com", "/v1/messages");
    assert_int_equal(a->on_request_body_filter(a, r, deep, n, &sink, &ans), ADDON_ANSWER);
    assert_string_equal(ans.error, "tool_config_invalid");
    assert_string_equal(ans.detail, "<invalid-json>");
    free(deep);

    /* what comes from the request is escaped on the log line, raw (JSON-escaped) in the answer */
    td_req(r, &cfg, "api.anthropic.com", "/v1/messages");
    const char *inj = "{\"tools\":[{\"type\":\"web_fetch_\\n] x\",\"allowed_domains\":[\"a]b\","
                      "\"c\\u0001d\"]}]}";
    o->len = 0;
    assert_int_equal(a->on_request_body_filter(a, r, inj, strlen(inj), &sink, &ans),
                     ADDON_REWRITTEN);
    assert_string_equal(r->annot, " [tool-domains: web_fetch_\\x0a\\x5d x: dropped 2 of 2 "
                                  "domains: a\\x5db,c\\x01d]");
    td_req(r, &cfg, "api.anthropic.com", "/v1/messages");
    const char *inj2 = "{\"tools\":[{\"type\":\"web_fetch_\\n] x\",\"blocked_domains\":[1]}]}";
    assert_int_equal(a->on_request_body_filter(a, r, inj2, strlen(inj2), &sink, &ans),
                     ADDON_ANSWER);
    assert_string_equal(ans.detail, "web_fetch_\n] x");

    /* a long tag is cut to the line's room, never inside "[]" */
    td_req(r, &cfg, "api.anthropic.com", "/v1/messages");
    char many[4096];
    size_t m = (size_t)snprintf(many, sizeof(many), "{\"tools\":[");
    for (int i = 0; i < 40; i++)
        m += (size_t)snprintf(many + m, sizeof(many) - m, "%s{\"type\":\"bash_%d\"}", i ? "," : "",
                              i);
    m += (size_t)snprintf(many + m, sizeof(many) - m, "]}");
    assert_int_equal(a->on_request_body_filter(a, r, many, m, &sink, &ans), ADDON_REWRITTEN);
    assert_true(r->annot_len < ADDON_ANNOT_MAX);
    assert_non_null(strstr(r->annot, "... (truncated)]"));
    int level = 0;
    for (size_t i = 0; i < r->annot_len; i++) {
        level += r->annot[i] == '[' ? 1 : r->annot[i] == ']' ? -1 : 0;
        assert_true(level >= 0);
    }
    assert_int_equal(level, 0);

    /* a Content-Encoding cannot be read: refused */
    td_req(r, &cfg, "api.anthropic.com", "/v1/messages");
    assert_int_equal(addon_req_add_header(r, "Content-Encoding", 16, "gzip", 4), 0);
    assert_int_equal(a->on_request_body_filter(a, r, body, strlen(body), &sink, &ans),
                     ADDON_ANSWER);
    assert_string_equal(ans.error, "tool_config_invalid");

    /* a body already holding the private-use range used for lone surrogates: refused */
    td_req(r, &cfg, "api.anthropic.com", "/v1/messages");
    const char *pua = "{\"tools\":[" WF "}],\"c\":\"\\ue000 \\ud800\"}";
    assert_int_equal(a->on_request_body_filter(a, r, pua, strlen(pua), &sink, &ans), ADDON_ANSWER);
    addon_req_reset(r);
    free(r);
    free(o);
    addon_policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tooldomains_get_open),
        cmocka_unit_test(test_tooldomains_catalogue),
        cmocka_unit_test(test_tooldomains_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
