/* Provider fetches (addons/addon_provider*.c, docs/anthropic-tools.md "URLs the provider
 * fetches"): every place a URL the provider fetches can sit, allowed / blocked / not-open
 * hosts, the URL parser's refusals, unknown URL-carrying blocks and fields, the
 * provider_fetch_pass opt-in, duplicate keys, and the OpenAI endpoints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "addons/addon_policy.h"
#include "addons/addon_provider.h"
#include "addons/addon_tooldomains.h"
#include "base/px_err.h"

static const char *const allow_yaml =
    "block:\n"
    "  - {host: blocked-path.example, path: /admin*}\n"
    "domains: [pypi.org, \"*.docs.example\"]\n"
    "url_prefixes:\n"
    "  - {host: api.anthropic.com, path: /v1/messages*, methods: [POST]}\n"
    "  - {host: api.openai.com, path: /v1/*, methods: [POST]}\n"
    "  - {host: img.example}\n"
    "  - {host: path.example, path: /repos/*}\n"
    "  - {host: mcp.example}\n"
    "  - {host: getonly.example, methods: [GET]}\n"
    "  - {host: blocked-path.example}\n"
    "provider_fetch_pass: [newblock, new_field]\n";

static addon_policy_t *pf_policy(void)
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

typedef struct pf_out {
    char buf[8192];
    size_t len;
} pf_out_t;

static int pf_sink(void *data, const char *buf, size_t len)
{
    pf_out_t *o = data;
    if (o->len + len >= sizeof(o->buf))
        return PX_ETOOBIG;
    memcpy(o->buf + o->len, buf, len);
    o->len += len;
    o->buf[o->len] = '\0';
    return 0;
}

typedef struct pf_case {
    const char *path; /* /v1/messages* goes to the Anthropic filter, else to the OpenAI one */
    const char *body;
    int rc;             /* ADDON_NEXT or ADDON_ANSWER */
    const char *error;  /* ANSWER: the error code */
    const char *detail; /* ANSWER: the detail (the JSON path) */
    const char *annot;  /* ANSWER: a substring of the access-line annotation, or NULL */
} pf_case_t;

#define M "/v1/messages"
#define R "/v1/responses"
#define C "/v1/chat/completions"
#define BLK "provider_fetch_blocked"
#define UNK "provider_fetch_unknown"
#define DUP "request_json_duplicate_key"
/* a Messages body whose first user message holds the content blocks X */
#define MSG(X) "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[" X "]}]}"
#define SRC(U) "{\"type\":\"url\",\"url\":\"" U "\"}"
#define IMG(U) "{\"type\":\"image\",\"source\":" SRC(U) "}"
#define DOC(U) "{\"type\":\"document\",\"source\":" SRC(U) "}"
#define MCP(U) "{\"mcp_servers\":[{\"type\":\"url\",\"url\":\"" U "\",\"name\":\"x\"}]}"
#define P0 "messages[0].content[0]"

static const pf_case_t cases[] = {
    /* image and document blocks: open host, closed host, path-restricted (not open) host */
    {M, MSG(IMG("https://img.example/a.png")), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG(DOC("https://pypi.org/x.pdf")), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG(IMG("https://a.docs.example/a.png")), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG(IMG("https://evil.test/a.png")), ADDON_ANSWER, BLK, P0 ".source.url",
     "not open to unrestricted GET"},
    {M, MSG(DOC("https://path.example/repos/x.pdf")), ADDON_ANSWER, BLK, P0 ".source.url",
     "not open"},
    {M, MSG(IMG("https://blocked-path.example/a.png")), ADDON_ANSWER, BLK, P0 ".source.url", NULL},
    {M, MSG(IMG("https://api.anthropic.com/v1/files/x")), ADDON_ANSWER, BLK, P0 ".source.url",
     NULL},
    /* every nesting place: a later message and block, tool_result content, a document's
     * content source, system blocks, Batches params */
    {M,
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":"
     "\"ok\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}," DOC(
         "https://evil.test/d") "]}]}",
     ADDON_ANSWER, BLK, "messages[2].content[1].source.url", NULL},
    {M,
     MSG("{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[" IMG(
         "https://evil.test/i") "]}"),
     ADDON_ANSWER, BLK, P0 ".content[0].source.url", NULL},
    {M,
     MSG("{\"type\":\"document\",\"source\":{\"type\":\"content\",\"content\":[" IMG(
         "https://evil.test/i") "]}}"),
     ADDON_ANSWER, BLK, P0 ".source.content[0].source.url", NULL},
    {M, "{\"system\":[{\"type\":\"text\",\"text\":\"s\"}," DOC("https://evil.test/d") "]}",
     ADDON_ANSWER, BLK, "system[1].source.url", NULL},
    {M "/batches",
     "{\"requests\":[{\"custom_id\":\"a\",\"params\":" MSG(IMG("https://evil.test/i")) "}]}",
     ADDON_ANSWER, BLK, "requests[0].params." P0 ".source.url", NULL},
    /* mcp_servers: the host must be open and take POST */
    {M, MCP("https://mcp.example/mcp"), ADDON_NEXT, NULL, NULL, NULL},
    {M, MCP("https://evil.test/mcp"), ADDON_ANSWER, BLK, "mcp_servers[0].url", "not open"},
    {M, MCP("https://getonly.example/mcp"), ADDON_ANSWER, BLK, "mcp_servers[0].url",
     "does not allow POST"},
    {M "/batches", "{\"requests\":[{\"params\":" MCP("https://getonly.example/m") "}]}",
     ADDON_ANSWER, BLK, "requests[0].params.mcp_servers[0].url", "POST"},
    /* the URL parser: scheme, user info, ports, IPv6, percent-encoding, case, trailing dot */
    {M, MSG(IMG("http://img.example/a.png")), ADDON_ANSWER, BLK, P0 ".source.url", "not https"},
    {M, MSG(IMG("data:image/png;base64,AAAA")), ADDON_ANSWER, BLK, P0 ".source.url", "not https"},
    {M, MSG(IMG("https:img.example/a")), ADDON_ANSWER, BLK, P0 ".source.url", "not https"},
    {M, MSG(IMG("https://img.example@evil.test/a")), ADDON_ANSWER, BLK, P0 ".source.url",
     "user info"},
    {M, MSG(IMG("https://evil.test\\\\@img.example/a")), ADDON_ANSWER, BLK, P0 ".source.url",
     "backslash"},
    {M, MSG(IMG("https://img.ex\\tample/a")), ADDON_ANSWER, BLK, P0 ".source.url", "white space"},
    {M, MSG(IMG("https://img.example:8443/a")), ADDON_ANSWER, BLK, P0 ".source.url", "port"},
    {M, MSG(IMG("https://img.example:443/a")), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG(IMG("https://img.example:/a")), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG(IMG("https://img.example:44x/a")), ADDON_ANSWER, BLK, P0 ".source.url", "port"},
    {M, MSG(IMG("HTTPS://IMG.Example./a")), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG(IMG("https://img.example../a")), ADDON_ANSWER, BLK, P0 ".source.url", "plain DNS"},
    {M, MSG(IMG("https://img..example/a")), ADDON_ANSWER, BLK, P0 ".source.url", "plain DNS"},
    {M, MSG(IMG("https://./a")), ADDON_ANSWER, BLK, P0 ".source.url", "plain DNS"},
    {M, MSG(IMG("https://img%2eexample/a")), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG(IMG("https://evil.test%2f.img.example/a")), ADDON_ANSWER, BLK, P0 ".source.url",
     "plain DNS name"},
    {M, MSG(IMG("https://evil.test%00.img.example/a")), ADDON_ANSWER, BLK, P0 ".source.url",
     "plain DNS name"},
    {M, MSG(IMG("https://[::1]/a")), ADDON_ANSWER, BLK, P0 ".source.url", "not open"},
    {M, MSG(IMG("https://[::1/a")), ADDON_ANSWER, BLK, P0 ".source.url", "plain DNS name"},
    {M, MSG(IMG("https://[img.example]/a")), ADDON_ANSWER, BLK, P0 ".source.url", "plain DNS"},
    {M, MSG(IMG("https:///img.example/a")), ADDON_ANSWER, BLK, P0 ".source.url", "plain DNS"},
    {M, MSG(IMG("https://img.example:443:443/a")), ADDON_ANSWER, BLK, P0 ".source.url", NULL},
    {M, MSG("{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":7}}"), ADDON_ANSWER, BLK,
     P0 ".source.url", "not a string"},
    {M, MSG("{\"type\":\"image\",\"source\":{\"type\":\"url\"}}"), ADDON_ANSWER, BLK,
     P0 ".source.url", "not a string"},
    /* unknown URL-carrying blocks and fields are refused; without a URL they pass */
    {M, MSG("{\"type\":\"video\",\"href\":{\"link_url\":\"x\"}}"), ADDON_ANSWER, UNK,
     P0 ".href.link_url", "unknown type 'video' carries a URL"},
    {M, MSG("{\"type\":\"video\",\"src\":[\"https://evil.test/v\"]}"), ADDON_ANSWER, UNK,
     P0 ".src[0]", NULL},
    {M, MSG("{\"type\":\"video\",\"data\":\"AAAA\"}"), ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG("{\"type\":\"image\",\"source\":{\"type\":\"remote\",\"uri\":\"x\"}}"), ADDON_ANSWER,
     UNK, P0 ".source.uri", NULL},
    {M, "{\"callback_url\":\"x\",\"messages\":[]}", ADDON_ANSWER, UNK, "callback_url",
     "unknown field 'callback_url'"},
    {M, "{\"webhook\":{\"target\":\"wss://evil.test/\"}}", ADDON_ANSWER, UNK, "webhook.target",
     NULL},
    {M, "{\"future\":{\"n\":1},\"stream\":true}", ADDON_NEXT, NULL, NULL, NULL},
    {M "/batches", "{\"requests\":[{\"params\":{\"callback_url\":\"x\"}}]}", ADDON_ANSWER, UNK,
     "requests[0].params.callback_url", NULL},
    /* the opt-in lets an unknown block or field through, never a known fetch inside it */
    {M, MSG("{\"type\":\"newblock\",\"href\":\"https://evil.test/\"}"), ADDON_NEXT, NULL, NULL,
     NULL},
    {M, "{\"new_field\":{\"u\":\"https://evil.test/\"}}", ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG("{\"type\":\"newblock\",\"inner\":" IMG("https://evil.test/") "}"), ADDON_ANSWER, BLK,
     P0 ".inner.source.url", NULL},
    /* known blocks whose URLs the provider does not fetch: search results, citations, records
     * of server tools, agent tool input, tool schemas */
    {M,
     "{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"web_search_tool_result\","
     "\"tool_use_id\":\"s\",\"content\":[{\"type\":\"web_search_result\",\"url\":\"https://"
     "evil.test/\",\"title\":\"t\",\"encrypted_content\":\"e\"}]},{\"type\":\"text\",\"text\":"
     "\"https://evil.test/\",\"citations\":[{\"type\":\"web_search_result_location\",\"url\":"
     "\"https://evil.test/\",\"cited_text\":\"c\"}]}]}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {M, MSG("{\"type\":\"search_result\",\"source\":\"https://evil.test/\",\"title\":\"t\"}"),
     ADDON_NEXT, NULL, NULL, NULL},
    {M,
     "{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
     "\"name\":\"f\",\"input\":" SRC("https://evil.test/") "}]}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {M,
     "{\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"url\":"
     "{\"type\":\"string\",\"default\":\"https://evil.test/\"}}}}],\"metadata\":{\"user_id\":"
     "\"https://evil.test/\"}}",
     ADDON_NEXT, NULL, NULL, NULL},
    {M,
     "{\"tools\":[{\"type\":\"custom\",\"name\":\"f\",\"input_schema\":{\"properties\":"
     "{\"url\":{\"type\":\"string\"}}}},{\"type\":\"v2tool\",\"input_schema\":{\"properties\""
     ":{\"url\":{}}}}],\"output_format\":{\"type\":\"json_schema\",\"schema\":{\"properties\":{"
     "\"url\":{}}}},\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}}",
     ADDON_NEXT, NULL, NULL, NULL},
    {R,
     "{\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"n\",\"schema\":{\"properties\""
     ":{\"source_url\":{}}}}},\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\""
     ":{\"properties\":{\"url\":{}}}}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    /* duplicate keys anywhere, in the body or deep inside */
    {M, "{\"model\":\"a\",\"model\":\"b\"}", ADDON_ANSWER, DUP, "<duplicate-key \"model\">",
     "duplicate key \"model\" at byte"},
    {M,
     MSG("{\"type\":\"image\",\"source\":" SRC("https://img.example/") ",\"source\":" SRC(
         "https://evil.test/") "}"),
     ADDON_ANSWER, DUP, "<duplicate-key \"source\">", NULL},
    {R, "{\"input\":[{\"role\":\"user\",\"role\":\"user\"}]}", ADDON_ANSWER, DUP,
     "<duplicate-key \"role\">", NULL},
    /* OpenAI Responses: input_image, input_file, remote MCP, web_search */
    {R,
     "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":"
     "\"https://img.example/a.png\"},{\"type\":\"input_image\",\"image_url\":\"data:image/png;"
     "base64,AAAA\"},{\"type\":\"input_image\",\"file_id\":\"f\"}]}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {R,
     "{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":"
     "\"https://evil.test/a.png\"}]}]}",
     ADDON_ANSWER, BLK, "input[0].content[0].image_url", NULL},
    {R,
     "{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
     "\"text\":\"x\"},{\"type\":\"input_file\",\"file_url\":\"https://path.example/x.pdf\"}]}]}",
     ADDON_ANSWER, BLK, "input[0].content[1].file_url", NULL},
    {R,
     "{\"tools\":[{\"type\":\"mcp\",\"server_label\":\"x\",\"server_url\":\"https://"
     "mcp.example/\"}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {R,
     "{\"tools\":[{\"type\":\"mcp\",\"server_label\":\"x\",\"server_url\":\"https://"
     "getonly.example/\"}]}",
     ADDON_ANSWER, BLK, "tools[0].server_url", "POST"},
    {R, "{\"tools\":[{\"type\":\"web_search\"}]}", ADDON_ANSWER, BLK, "tools[0]",
     "without allowed_domains"},
    {R, "{\"tools\":[{\"type\":\"web_search_preview\"}]}", ADDON_ANSWER, BLK, "tools[0]", NULL},
    {R, "{\"tools\":[{\"type\":\"web_search\",\"filters\":{\"allowed_domains\":[\"pypi.org\"]}}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {R,
     "{\"tools\":[{\"type\":\"web_search\",\"filters\":{\"allowed_domains\":[\"pypi.org\","
     "\"path.example\"]}}]}",
     ADDON_ANSWER, BLK, "tools[0].filters.allowed_domains[1]", NULL},
    {R,
     "{\"input\":[{\"type\":\"web_search_call\",\"id\":\"w\",\"status\":\"completed\","
     "\"action\":{\"type\":\"open_page\",\"url\":\"https://evil.test/\"}}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {R, "{\"input\":\"hi\",\"webhook_url\":\"x\"}", ADDON_ANSWER, UNK, "webhook_url", NULL},
    /* Chat Completions: image_url parts */
    {C,
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
     "{\"url\":\"https://img.example/a.png\",\"detail\":\"low\"}}]}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {C,
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
     "{\"url\":\"https://evil.test/a.png\"}}]}]}",
     ADDON_ANSWER, BLK, "messages[0].content[0].image_url.url", NULL},
    {C,
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
     "{\"url\":\"data:image/png;base64,AAAA\"}}]}]}",
     ADDON_NEXT, NULL, NULL, NULL},
    {C, "not json", ADDON_ANSWER, "provider_request_invalid", "<invalid-json>", NULL},
    /* other OpenAI paths are not read */
    {"/v1/embeddings", "{\"a\":1,\"a\":1}", ADDON_NEXT, NULL, NULL, NULL},
};

static void pf_req(addon_req_t *r, const addon_config_t *cfg, const char *host, const char *path)
{
    addon_req_reset(r);
    r->method = (addon_str_t){"POST", 4};
    r->host = (addon_str_t){host, strlen(host)};
    r->path = (addon_str_t){path, strlen(path)};
    r->target = r->path;
    r->port = 443;
    r->tls = 1;
    r->config = cfg;
    r->url = "https://provider/";
}

/* Runs one body through the filter the path selects: rc, with ans and r->annot filled. */
static int pf_run(addon_req_t *r, const addon_config_t *cfg, const char *path, const char *body,
                  size_t len, addon_answer_t *ans, pf_out_t *o)
{
    int anthropic = strncmp(path, "/v1/messages", 12) == 0;
    const addon_t *a = anthropic ? addon_tooldomains() : addon_provider();
    pf_req(r, cfg, anthropic ? "api.anthropic.com" : "api.openai.com", path);
    memset(ans, 0, sizeof(*ans));
    o->len = 0;
    o->buf[0] = '\0';
    addon_sink_t sink = {pf_sink, o};
    assert_int_equal(a->on_request_head(a, r, ans), ADDON_NEXT);
    return a->on_request_body_filter(a, r, body, len, &sink, ans);
}

static void test_provider_fetch_table(void **state)
{
    (void)state;
    addon_policy_t *p = pf_policy();
    addon_config_t cfg = {.policy = p};
    addon_req_t *r = calloc(1, sizeof(*r));
    pf_out_t *o = calloc(1, sizeof(*o));
    int failures = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const pf_case_t *c = &cases[i];
        addon_answer_t ans;
        int rc = pf_run(r, &cfg, c->path, c->body, strlen(c->body), &ans, o);
        int ok = rc == c->rc;
        if (ok && rc == ADDON_NEXT)
            ok = o->len == 0; /* nothing here needs a rewrite: the body goes on as it is */
        if (ok && rc == ADDON_ANSWER)
            ok = ans.status == 403 && strcmp(ans.error, c->error) == 0 && ans.with_detail &&
                 strcmp(ans.detail, c->detail) == 0 && o->len == 0 &&
                 strstr(ans.message, "airlock") != NULL &&
                 (c->annot == NULL || strstr(r->annot, c->annot) != NULL);
        if (!ok) {
            print_error("case %zu (%s %s): rc %d error [%s] detail [%s] annot [%s] msg [%s]\n", i,
                        c->path, c->body, rc, ans.error ? ans.error : "", ans.detail, r->annot,
                        ans.message);
            failures++;
        }
    }
    addon_req_reset(r);
    free(r);
    free(o);
    addon_policy_unref(p);
    assert_int_equal(failures, 0);
}

/* The opt-in list as the allowlist reads and prints it. */
static void test_provider_fetch_pass_config(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        int rc;
        const char *err;
    } pcases[] = {
        {"provider_fetch_pass: [a.b-c_d]\n", 0, NULL},
        {"provider_fetch_pass:\n", 0, NULL},
        {"provider_fetch_pass: x\n", PX_ECONFIG, "provider_fetch_pass: expected"},
        {"provider_fetch_pass: [\"a b\"]\n", PX_ECONFIG, "provider_fetch_pass[0]: a block type"},
        {"provider_fetch_pass: [ok, 1]\n", PX_ECONFIG, "provider_fetch_pass[1]"},
        {"provider_fetch_pass: [url]\n", PX_ECONFIG, "'url' is one airlock knows"},
        {"provider_fetch_pass: [mcp_servers]\n", PX_ECONFIG, "'mcp_servers' is one"},
    };
    for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
        char err[512] = "";
        addon_policy_t *p = NULL;
        int rc = addon_policy_load_buffer("al.yaml", pcases[i].yaml, strlen(pcases[i].yaml), &p,
                                          err, sizeof(err));
        if (rc != pcases[i].rc || (pcases[i].err != NULL && strstr(err, pcases[i].err) == NULL))
            fail_msg("case %zu: rc %d err %s", i, rc, err);
        addon_policy_unref(p);
    }
    /* printed by `airlock check` and --print-effective, and read back the same */
    addon_policy_t *p = pf_policy();
    char text[4096], err[512];
    addon_policy_describe(p, text, sizeof(text));
    assert_non_null(strstr(text, "provider_fetch_pass: newblock new_field\n"));
    addon_policy_print_effective(p, text, sizeof(text));
    assert_non_null(strstr(text, "provider_fetch_pass:\n  - \"newblock\"\n  - \"new_field\"\n"));
    addon_policy_t *q = NULL;
    assert_int_equal(addon_policy_load_buffer("eff", text, strlen(text), &q, err, sizeof(err)), 0);
    char again[4096];
    addon_policy_print_effective(q, again, sizeof(again));
    assert_non_null(strstr(again, "provider_fetch_pass:\n  - \"newblock\"\n  - \"new_field\"\n"));
    addon_policy_unref(q);
    addon_policy_unref(p);
}

static double pf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Linear in the body: unknown blocks nested as deep as jansson allows, each holding the next
 * (a scan per block would be quadratic), and a wide body of many blocks. */
static void test_provider_fetch_linear(void **state)
{
    (void)state;
    addon_policy_t *p = pf_policy();
    addon_config_t cfg = {.policy = p};
    addon_req_t *r = calloc(1, sizeof(*r));
    pf_out_t *o = calloc(1, sizeof(*o));
    addon_answer_t ans;
    size_t depth = 1000, cap = depth * 64 + 256, n = 0;
    char *deep = malloc(cap);
    n += (size_t)snprintf(deep + n, cap - n, "{\"messages\":[{\"role\":\"user\",\"content\":[");
    for (size_t i = 0; i < depth; i++)
        n += (size_t)snprintf(deep + n, cap - n, "{\"type\":\"v%zu\",\"data\":\"d\",\"in\":", i);
    n += (size_t)snprintf(deep + n, cap - n, "\"https://evil.test/\"");
    for (size_t i = 0; i < depth; i++)
        deep[n++] = '}';
    n += (size_t)snprintf(deep + n, cap - n, "]}]}");
    double t0 = pf_now();
    assert_int_equal(pf_run(r, &cfg, M, deep, n, &ans, o), ADDON_ANSWER);
    assert_string_equal(ans.error, UNK);
    assert_non_null(strstr(ans.detail, "messages[0].content[0].in"));
    /* the same without the URL: every block is scanned once */
    char *at = strstr(deep, "\"https://evil.test/\"");
    memcpy(at, "\"no url here at all\"", 20);
    assert_int_equal(pf_run(r, &cfg, M, deep, n, &ans, o), ADDON_NEXT);
    double t1 = pf_now();
    free(deep);

    size_t wide = 200000;
    cap = wide * 40 + 256;
    char *w = malloc(cap);
    n = (size_t)snprintf(w, cap, "{\"messages\":[{\"role\":\"user\",\"content\":[");
    for (size_t i = 0; i < wide; i++)
        n += (size_t)snprintf(w + n, cap - n, "%s{\"type\":\"x\",\"d\":[1,2]}", i ? "," : "");
    n += (size_t)snprintf(w + n, cap - n, "]}]}");
    double t2 = pf_now();
    assert_int_equal(pf_run(r, &cfg, M, w, n, &ans, o), ADDON_NEXT);
    double t3 = pf_now();
    print_message("deep (%zu levels, twice): %.3f s; wide (%zu blocks, %zu bytes): %.3f s\n", depth,
                  t1 - t0, wide, n, t3 - t2);
    if (getenv("AIRLOCK_SLOW") == NULL) { /* wall-clock bounds mean nothing under valgrind */
        assert_true(t1 - t0 < 2.0);
        assert_true(t3 - t2 < 5.0);
    }
    free(w);
    addon_req_reset(r);
    free(r);
    free(o);
    addon_policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provider_fetch_table),
        cmocka_unit_test(test_provider_fetch_pass_config),
        cmocka_unit_test(test_provider_fetch_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
