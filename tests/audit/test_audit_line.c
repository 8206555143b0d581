/* audit_line: every line kind the proxy writes (docs/network-log.md and the px_log_printf /
 * px_conn_log_line / addon_req_log call sites), the URL forms, the \xNN escapes, and what the
 * strict parser refuses. Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_line.h"

static void assert_view(audit_str_t s, const char *want)
{
    char buf[AUDIT_LINE_MAX + 1];
    assert_true(s.len <= AUDIT_LINE_MAX);
    memcpy(buf, s.base != NULL ? s.base : "", s.len);
    buf[s.len] = '\0';
    assert_string_equal(buf, want);
}

typedef struct access_case {
    const char *line;
    audit_verdict_t verdict;
    const char *method;
    int status;
    const char *host; /* NULL: the URL is not read */
    unsigned port;
    const char *path;
    const char *tail;
    unsigned masked;
} access_case_t;

static const access_case_t access_cases[] = {
    {"allowed GET https://api.github.com/repos/org/repo/pulls -> 200 [masked: 1]", AUDIT_ALLOWED,
     "GET", 200, "api.github.com", 443, "/repos/org/repo/pulls", "", 1},
    {"BLOCKED GET https://evil.com/exfiltrate -> 403", AUDIT_BLOCKED, "GET", 403, "evil.com", 443,
     "/exfiltrate", "", 0},
    {"allowed PUT https://bucket.s3.amazonaws.com/k -> 200 [masked: 1] [region: us-east-1]",
     AUDIT_ALLOWED, "PUT", 200, "bucket.s3.amazonaws.com", 443, "/k", "", 1},
    /* the body filters' tags (docs/graphql.md, docs/anthropic-tools.md): brackets nest */
    {"allowed POST https://api.github.com/graphql -> 200 [graphql-op: query/viewer] [masked: 1]",
     AUDIT_ALLOWED, "POST", 200, "api.github.com", 443, "/graphql", "", 1},
    {"allowed POST https://api.anthropic.com/v1/messages -> 200 [tool-domains: bash_1: forced "
     "allowed_domains: []; web_fetch_2: forced allowed_domains: []] [masked: 2]",
     AUDIT_ALLOWED, "POST", 200, "api.anthropic.com", 443, "/v1/messages", "", 2},
    {"ERROR GET https://down.example.com/api -> Connection failed: Name or service not known",
     AUDIT_ERROR, "GET", -1, "down.example.com", 443, "/api",
     "Connection failed: Name or service not known", 0},
    {"BLOCKED CONNECT evil.com:443 -> 403 (tunneling not allowed)", AUDIT_BLOCKED, "CONNECT", 403,
     "evil.com", 443, "", "tunneling not allowed", 0},
    {"BLOCKED GET https://a.com/ -> 403 (host mismatch: header=a.com, sni=b.com)", AUDIT_BLOCKED,
     "GET", 403, "a.com", 443, "/", "host mismatch: header=a.com, sni=b.com", 0},
    {"BLOCKED - - -> 400 (malformed request: invalid Host header)", AUDIT_BLOCKED, "-", 400, NULL,
     0, NULL, "malformed request: invalid Host header", 0},
    {"BLOCKED - - -> 408 (request head not received in time)", AUDIT_BLOCKED, "-", 408, NULL, 0,
     NULL, "request head not received in time", 0},
    {"allowed CONNECT pinned.example.com:443 -> 200 tunnel", AUDIT_ALLOWED, "CONNECT", 200,
     "pinned.example.com", 443, "", "", 0},
    {"allowed GET http://plain.test:8080/x?a=1&b=%20 -> 200", AUDIT_ALLOWED, "GET", 200,
     "plain.test", 8080, "/x?a=1&b=%20", "", 0},
    {"allowed GET http://plain.test/ -> 200", AUDIT_ALLOWED, "GET", 200, "plain.test", 80, "/", "",
     0},
    {"allowed GET https://[::1]:8443/v6 -> 200", AUDIT_ALLOWED, "GET", 200, "::1", 8443, "/v6", "",
     0},
    {"allowed OPTIONS http://h.test* -> 200", AUDIT_ALLOWED, "OPTIONS", 200, "h.test", 80, "*", "",
     0},
    {"allowed GET http://h.test?q=1 -> 200", AUDIT_ALLOWED, "GET", 200, "h.test", 80, "?q=1", "",
     0},
    {"ERROR POST https://s3.test/k -> 403 (signing failed: bad date)", AUDIT_ERROR, "POST", 403,
     "s3.test", 443, "/k", "signing failed: bad date", 0},
    {"BLOCKED GET http://h.test/x -> 403 [masked: 2] [dropped: 1] (credential needs https)",
     AUDIT_BLOCKED, "GET", 403, "h.test", 80, "/x", "credential needs https", 2},
    {"allowed GET wss-looking-but-not https://h.test/ws -> 101", AUDIT_ALLOWED, "GET", 0, NULL, 0,
     NULL, NULL, 0}, /* a space in the URL: refused (status 0 marks "malformed") */
    {"allowed GET https://h.test/ws -> 101", AUDIT_ALLOWED, "GET", 101, "h.test", 443, "/ws", "",
     0},
    {"ERROR GET https://h.test/ -> client connection lost", AUDIT_ERROR, "GET", -1, "h.test", 443,
     "/", "client connection lost", 0},
    {"BLOCKED CONNECT p.test:443 -> 403 (host mismatch: connect=p.test, sni=q.test)", AUDIT_BLOCKED,
     "CONNECT", 403, "p.test", 443, "", "host mismatch: connect=p.test, sni=q.test", 0},
};

static void test_audit_line_access(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(access_cases) / sizeof(access_cases[0]); i++) {
        const access_case_t *c = &access_cases[i];
        audit_line_t l;
        int rc = audit_line_parse(c->line, strlen(c->line), &l);
        if (c->status == 0) {
            assert_int_not_equal(rc, 0);
            assert_int_equal(l.kind, AUDIT_LINE_MALFORMED);
            continue;
        }
        if (rc != 0)
            fail_msg("case %zu: %s: %s", i, c->line, l.why);
        assert_int_equal(l.kind, AUDIT_LINE_ACCESS);
        assert_int_equal(l.verdict, c->verdict);
        assert_view(l.method, c->method);
        assert_int_equal(l.status, c->status);
        assert_int_equal(l.masked, c->masked);
        if (c->tail != NULL)
            assert_view(l.tail, c->tail);
        if (c->host == NULL) {
            assert_int_equal(l.url.ok, 0);
            continue;
        }
        assert_int_equal(l.url.ok, 1);
        assert_view(l.url.host, c->host);
        assert_int_equal(l.url.port, c->port);
        assert_view(l.url.path, c->path);
    }
}

static void test_audit_line_tunnel_and_annotations(void **state)
{
    (void)state;
    audit_line_t l;
    const char *s = "allowed CONNECT pinned.example.com:443 -> 200 tunnel";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.tunnel, 1);
    assert_int_equal(l.url.authority, 1);
    s = "allowed PUT https://b.test/k -> 200 [masked: 1] [region: us-east-1]";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_view(l.annot, " [masked: 1] [region: us-east-1]");
    assert_int_equal(l.tunnel, 0);
    assert_int_equal(l.tail.len, 0);
}

static void test_audit_line_other_kinds(void **state)
{
    (void)state;
    audit_line_t l;
    const char *s = "=== TASK START 2026-02-03T12:34:56Z ===";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_TASK_START);
    assert_view(l.text, "2026-02-03T12:34:56Z");

    s = "DNS A api.github.com -> 10.199.1.100";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_DNS);
    assert_view(l.dns_type, "A");
    assert_view(l.dns_name, "api.github.com");
    assert_view(l.dns_answer, "10.199.1.100");
    s = "DNS AAAA evil.com -> NODATA";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_view(l.dns_answer, "NODATA");
    s = "DNS ? ? -> FORMERR";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_view(l.dns_name, "?");

    s = "STRIPPED header 'authorization' from GET https://api.github.com/user (foreign "
        "credential blocked)";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_STRIPPED);
    assert_view(l.header, "authorization");
    assert_view(l.method, "GET");
    assert_view(l.url.host, "api.github.com");
    assert_view(l.reason, "foreign credential blocked");

    s = "COLLAPSED 3 duplicate 'x-api-key' headers in POST https://api.test/v1 (duplicate "
        "credential headers removed)";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_COLLAPSED);
    assert_int_equal(l.count, 3);
    assert_view(l.header, "x-api-key");
    assert_view(l.url.path, "/v1");

    s = "WARNING: Container clock skew detected: x-amz-date=20260101T000000Z, "
        "proxy-time=20260101T010000Z (drift=60m). Upstream rejection likely.";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_WARNING);

    s = "TLS REJECTED api.github.com (client alert: unknown ca; the client does not trust "
        "airlock's CA)";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_TLS_REJECTED);
    assert_view(l.text, "api.github.com");
    assert_view(l.reason, "client alert: unknown ca; the client does not trust airlock's CA");

    s = "DECISION h4 approved POST other.test /v1/x by uid 1000 (scope conversation, 2 requests)";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_DECISION);
    assert_int_equal(l.verdict, AUDIT_ALLOWED);
    assert_view(l.method, "POST");
    assert_int_equal(l.count, 2);
    assert_view(l.text, "uid 1000");
    assert_view(l.reason, "conversation");
    s = "DECISION h5 denied GET other.test /deny by webhook (1 request)";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_DECISION);
    assert_int_equal(l.verdict, AUDIT_BLOCKED);
    assert_view(l.text, "webhook");
    assert_view(l.reason, "");

    assert_int_equal(audit_line_parse("", 0, &l), 0);
    assert_int_equal(l.kind, AUDIT_LINE_BLANK);
    s = "allowed GET https://h.test/ -> 200\r"; /* CRLF files */
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.status, 200);
}

static const char *const malformed[] = {
    "garbage",
    "allowed",
    "allowed GET",
    "allowed GET https://h.test/",
    "allowed GET https://h.test/ ->",
    "allowed GET https://h.test/ -> ",
    "allowed GET https://h.test/ -> OK", /* only ERROR lines carry a text */
    "BLOCKED GET https://h.test/ -> 403 extra",
    "BLOCKED GET https://h.test/ -> 403 [masked: 1",
    "BLOCKED G(T https://h.test/ -> 403",
    "allowed GETTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT https://h.test/ -> 200",
    "DNS A",
    "DNS A name",
    "DNS A name ->",
    "DNS A name -> 1.2.3.4 extra",
    "=== TASK START ===",
    "=== TASK START a b ===",
    "STRIPPED header authorization from GET https://h.test/ (x)",
    "STRIPPED header 'a' from GET https://h.test/",
    "COLLAPSED x duplicate 'a' headers in GET https://h.test/ (x)",
    "COLLAPSED 2 duplicate 'a' headers GET https://h.test/ (x)",
    "TLS REJECTED host",
    "TLS REJECTED (x)",
    "allowed GET https://h.test/\x1b[2J -> 200", /* raw control byte: not airlock's */
    "allowed GET https://h.test/\xc3\xa9 -> 200",
};

static void test_audit_line_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        audit_line_t l;
        if (audit_line_parse(malformed[i], strlen(malformed[i]), &l) == 0)
            fail_msg("accepted: %s", malformed[i]);
        assert_int_equal(l.kind, AUDIT_LINE_MALFORMED);
        assert_non_null(l.why);
    }
    /* a NUL inside the line is a raw control byte too */
    audit_line_t l;
    assert_int_not_equal(audit_line_parse("allowed GET https://h\0/ -> 200", 31, &l), 0);
}

static void test_audit_line_caps(void **state)
{
    (void)state;
    static char big[AUDIT_LINE_MAX + 2];
    memset(big, 'a', sizeof(big));
    audit_line_t l;
    assert_int_not_equal(audit_line_parse(big, AUDIT_LINE_MAX + 1, &l), 0);
    assert_string_equal(l.why, "line over the length cap");

    /* a line the proxy cut: parsed for what it is, marked */
    const char *s = "allowed GET https://h.test/aaaa -> 200 ...(truncated)";
    assert_int_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_int_equal(l.truncated, 1);
    s = "allowed GET https://h.test/aaaaaaaaaaaaaaa ...(truncated)";
    assert_int_not_equal(audit_line_parse(s, strlen(s), &l), 0);
    assert_string_equal(l.why, "cut by the proxy's line cap");

    /* the proxy's 2 KiB URL cap: 2032 bytes and "..." */
    static char line[4096];
    size_t n = (size_t)snprintf(line, sizeof(line), "allowed GET https://h.test/");
    size_t url_start = strlen("allowed GET ");
    while (n - url_start < 2032)
        line[n++] = 'x';
    n += (size_t)snprintf(line + n, sizeof(line) - n, "... -> 200");
    assert_int_equal(audit_line_parse(line, n, &l), 0);
    assert_int_equal(l.url.cut, 1);
    line[url_start + 2032] = 'y'; /* "y.." is not the cut mark */
    assert_int_equal(audit_line_parse(line, n, &l), 0);
    assert_int_equal(l.url.cut, 0);
}

static void test_audit_line_unescape(void **state)
{
    (void)state;
    char out[64];
    audit_str_t s = {"/a\\x1bb\\x7f\\xff", 15};
    size_t n = audit_unescape(s, out, sizeof(out));
    assert_int_equal(n, 6);
    assert_memory_equal(out,
                        "/a\x1b"
                        "b\x7f\xff",
                        6);
    /* a printable byte is never escaped by the log: "\x41" is a literal backslash sequence */
    audit_str_t lit = {"/\\x41\\q\\x4", 10};
    n = audit_unescape(lit, out, sizeof(out));
    assert_int_equal(n, 10);
    assert_memory_equal(out, "/\\x41\\q\\x4", 10);
    /* too small */
    assert_int_equal(audit_unescape(lit, out, 4), (size_t)-1);

    /* an escaped SNI in a CONNECT mismatch and an escaped path still parse */
    const char *line = "BLOCKED GET https://h.test/\\x01x -> 403";
    audit_line_t l;
    assert_int_equal(audit_line_parse(line, strlen(line), &l), 0);
    assert_view(l.url.path, "/\\x01x");
}

static void test_audit_line_url(void **state)
{
    (void)state;
    audit_url_t u;
    static const char *const bad[] = {
        "ftp://h/",      "https://",       "https:///x",   "https://h:0/", "https://h:99999/",
        "https://h:8a/", "https://[::1/x", "https://[]/x", "https://h",    "https://a:b:c/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        audit_str_t s = {bad[i], strlen(bad[i])};
        if (audit_url_parse(s, 0, &u) == 0)
            fail_msg("accepted %s", bad[i]);
        assert_int_equal(u.ok, 0);
    }
    audit_str_t c = {"h.test", 6};
    assert_int_not_equal(audit_url_parse(c, 1, &u), 0); /* CONNECT needs a port */
    audit_str_t c6 = {"[2001:db8::1]:8443", 18};
    assert_int_equal(audit_url_parse(c6, 1, &u), 0);
    assert_view(u.host, "2001:db8::1");
    assert_int_equal(u.port, 8443);
    assert_int_equal(u.bracketed, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_line_access),
        cmocka_unit_test(test_audit_line_tunnel_and_annotations),
        cmocka_unit_test(test_audit_line_other_kinds),
        cmocka_unit_test(test_audit_line_malformed),
        cmocka_unit_test(test_audit_line_caps),
        cmocka_unit_test(test_audit_line_unescape),
        cmocka_unit_test(test_audit_line_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
