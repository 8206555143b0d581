/* audit_event: every line format of docs/network-log.md rendered from a record is the
 * documented text byte for byte, and parsing the text gives the same record back (round trip),
 * also with bytes the log escapes (\xNN) and for a line over the length cap. Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_event.h"

#define S(lit)                                                                                     \
    {                                                                                              \
        lit, sizeof(lit) - 1                                                                       \
    }
#define REQ(v, m, u, st)                                                                           \
    .kind = AUDIT_EV_REQUEST, .verdict = (v), .method = S(m), .url = S(u), .status = (st)
#define CON(v, u, st)                                                                              \
    .kind = AUDIT_EV_CONNECT, .verdict = (v), .method = S("CONNECT"), .url = S(u), .status = (st)
#define DEC(v, id, m, h, p, by, n)                                                                 \
    .kind = AUDIT_EV_DECISION, .verdict = (v), .status = -1, .hold = (id), .method = S(m),         \
    .host = S(h), .path = S(p), .who = S(by), .count = (n)
#define B AUDIT_EV_BLOCKED
#define A AUDIT_EV_ALLOWED
#define E AUDIT_EV_ERROR

typedef struct ev_case {
    const char *line;
    audit_event_t ev;
} ev_case_t;

static const ev_case_t cases[] = {
    /* Start, DNS */
    {"=== TASK START 2026-02-03T12:34:56Z ===",
     {.kind = AUDIT_EV_TASK_START, .status = -1, .text = S("2026-02-03T12:34:56Z")}},
    {"DNS A api.github.com -> 10.199.1.100",
     {.kind = AUDIT_EV_DNS,
      .status = -1,
      .dns_type = S("A"),
      .host = S("api.github.com"),
      .reason = S("10.199.1.100")}},
    {"DNS AAAA api.github.com -> NODATA",
     {.kind = AUDIT_EV_DNS,
      .status = -1,
      .dns_type = S("AAAA"),
      .host = S("api.github.com"),
      .reason = S("NODATA")}},
    {"DNS ? ? -> FORMERR",
     {.kind = AUDIT_EV_DNS,
      .status = -1,
      .dns_type = S("?"),
      .host = S("?"),
      .reason = S("FORMERR")}},
    {"DNS TYPE65534 a\\255b.example -> NODATA",
     {.kind = AUDIT_EV_DNS,
      .status = -1,
      .dns_type = S("TYPE65534"),
      .host = S("a\\255b.example"),
      .reason = S("NODATA")}},
    /* Requests */
    {"allowed GET https://api.github.com/repos/org/repo/pulls -> 200 [masked: 1]",
     {REQ(A, "GET", "https://api.github.com/repos/org/repo/pulls", 200), .annot = S(" [masked: 1]"),
      .masked = 1}},
    {"BLOCKED GET https://evil.com/exfiltrate?d=c2VjcmV0 -> 403",
     {REQ(B, "GET", "https://evil.com/exfiltrate?d=c2VjcmV0", 403)}},
    {"allowed PUT https://bucket.s3.amazonaws.com/k -> 200 [masked: 1] [region: us-east-1]",
     {REQ(A, "PUT", "https://bucket.s3.amazonaws.com/k", 200),
      .annot = S(" [masked: 1] [region: us-east-1]"), .masked = 1}},
    {"allowed GET https://api.github.com/user -> 200 [dropped: 1]",
     {REQ(A, "GET", "https://api.github.com/user", 200), .annot = S(" [dropped: 1]"),
      .dropped = 1}},
    {"allowed POST https://api.github.com/graphql -> 200 [graphql-op: query/viewer]",
     {REQ(A, "POST", "https://api.github.com/graphql", 200),
      .annot = S(" [graphql-op: query/viewer]")}},
    {"allowed POST https://api.anthropic.com/v1/messages -> 200 [tool-domains: web_fetch_1: forced "
     "allowed_domains: []]",
     {REQ(A, "POST", "https://api.anthropic.com/v1/messages", 200),
      .annot = S(" [tool-domains: web_fetch_1: forced allowed_domains: []]")}},
    {"ERROR GET https://down.example.com/api -> Connection failed: DNS server returned SERVFAIL",
     {REQ(E, "GET", "https://down.example.com/api", -1),
      .reason = S("Connection failed: DNS server returned SERVFAIL")}},
    {"ERROR GET https://h/p -> Server disconnected before sending a response (connection reset)",
     {REQ(E, "GET", "https://h/p", -1),
      .reason = S("Server disconnected before sending a response (connection reset)")}},
    {"BLOCKED GET https://a.com/ -> 403 (host mismatch: header=a.com, sni=b.com)",
     {REQ(B, "GET", "https://a.com/", 403), .tail = S("host mismatch: header=a.com, sni=b.com")}},
    {"allowed GET https://h/ws -> 101", {REQ(A, "GET", "https://h/ws", 101)}},
    {"BLOCKED GET https://h/ws -> 101 (leak: secret entry[0].value, raw, in a WebSocket message; "
     "the WebSocket was closed with 1008)",
     {REQ(B, "GET", "https://h/ws", 101),
      .tail = S("leak: secret entry[0].value, raw, in a WebSocket message; the WebSocket was "
                "closed with 1008")}},
    {"BLOCKED GET http://h/p -> 403 (credential needs https)",
     {REQ(B, "GET", "http://h/p", 403), .tail = S("credential needs https")}},
    {"BLOCKED GET - -> 400 (malformed request: missing Host header)",
     {REQ(B, "GET", "-", 400), .tail = S("malformed request: missing Host header")}},
    {"BLOCKED - - -> 400 (malformed request: bare LF)",
     {REQ(B, "-", "-", 400), .tail = S("malformed request: bare LF")}},
    {"BLOCKED - - -> 408 (request head not received in time)",
     {REQ(B, "-", "-", 408), .tail = S("request head not received in time")}},
    {"ERROR PUT https://h/p -> 403 (signing failed: no date)",
     {REQ(E, "PUT", "https://h/p", 403), .tail = S("signing failed: no date")}},
    {"BLOCKED GET https://h/p -> 429 (budget: rate for all, 60/min)",
     {REQ(B, "GET", "https://h/p", 429), .tail = S("budget: rate for all, 60/min")}},
    {"BLOCKED GET https://h/... -> 403 (leak: secret entry[0].value, raw, in url)",
     {REQ(B, "GET", "https://h/...", 403), .tail = S("leak: secret entry[0].value, raw, in url")}},
    {"allowed OPTIONS http://h.test* -> 200", {REQ(A, "OPTIONS", "http://h.test*", 200)}},
    /* CONNECT */
    {"BLOCKED CONNECT evil.com:443 -> 403", {CON(B, "evil.com:443", 403)}},
    {"BLOCKED CONNECT h:443 -> 403 (tunneling not allowed)",
     {CON(B, "h:443", 403), .tail = S("tunneling not allowed")}},
    {"BLOCKED CONNECT - -> 403 (leak: canary ssh-marker, raw, in the CONNECT target)",
     {CON(B, "-", 403), .tail = S("leak: canary ssh-marker, raw, in the CONNECT target")}},
    {"allowed CONNECT api.github.com:443 -> 200", {CON(A, "api.github.com:443", 200)}},
    {"allowed CONNECT pinned.example.com:443 -> 200 tunnel",
     {.kind = AUDIT_EV_TUNNEL,
      .verdict = A,
      .method = S("CONNECT"),
      .url = S("pinned.example.com:443"),
      .status = 200}},
    {"BLOCKED CONNECT h:443 -> 200 tunnel (budget: received for all, 10/10; the tunnel was cut "
     "after 12 bytes received)",
     {.kind = AUDIT_EV_TUNNEL,
      .verdict = B,
      .method = S("CONNECT"),
      .url = S("h:443"),
      .status = 200,
      .tail = S("budget: received for all, 10/10; the tunnel was cut after 12 bytes received")}},
    {"BLOCKED CONNECT h:443 -> 429 (budget: sent for h, 100000/100000)",
     {CON(B, "h:443", 429), .tail = S("budget: sent for h, 100000/100000")}},
    {"BLOCKED CONNECT h:443 -> 403 (host mismatch: connect=h, sni=none)",
     {CON(B, "h:443", 403), .tail = S("host mismatch: connect=h, sni=none")}},
    {"ERROR CONNECT h:443 -> connect timed out",
     {CON(E, "h:443", -1), .reason = S("connect timed out")}},
    /* Sandboxes */
    {"BLOCKED - - -> closed (source 10.77.3.2 is in no sandbox)",
     {.kind = AUDIT_EV_CONNECTION,
      .verdict = B,
      .method = S("-"),
      .url = S("-"),
      .status = -1,
      .reason = S("closed"),
      .tail = S("source 10.77.3.2 is in no sandbox")}},
    {"BLOCKED DNS - -> no answer (source 10.77.3.2 is in no sandbox)",
     {.kind = AUDIT_EV_CONNECTION,
      .verdict = B,
      .method = S("DNS"),
      .url = S("-"),
      .status = -1,
      .reason = S("no answer"),
      .tail = S("source 10.77.3.2 is in no sandbox")}},
    {"BLOCKED - - -> closed (sandbox web removed; connection from 10.77.3.2 closes after its "
     "requests in flight)",
     {.kind = AUDIT_EV_CONNECTION,
      .verdict = B,
      .method = S("-"),
      .url = S("-"),
      .status = -1,
      .reason = S("closed"),
      .tail = S("sandbox web removed; connection from 10.77.3.2 closes after its requests in "
                "flight")}},
    /* Credentials */
    {"STRIPPED header 'authorization' from GET https://api.github.com/user (foreign credential "
     "blocked)",
     {.kind = AUDIT_EV_STRIPPED,
      .status = -1,
      .header = S("authorization"),
      .method = S("GET"),
      .url = S("https://api.github.com/user"),
      .tail = S("foreign credential blocked")}},
    {"COLLAPSED 2 duplicate 'authorization' headers in GET https://h/p (duplicate credential "
     "headers removed)",
     {.kind = AUDIT_EV_COLLAPSED,
      .status = -1,
      .count = 2,
      .header = S("authorization"),
      .method = S("GET"),
      .url = S("https://h/p"),
      .tail = S("duplicate credential headers removed")}},
    {"WARNING: Container clock skew detected: x-amz-date=20260203T120000Z, "
     "proxy-time=20260203T124000Z (drift=40m). Upstream rejection likely.",
     {.kind = AUDIT_EV_WARNING,
      .verdict = AUDIT_EV_WARN,
      .status = -1,
      .tail = S("Container clock skew detected: x-amz-date=20260203T120000Z, "
                "proxy-time=20260203T124000Z (drift=40m). Upstream rejection likely.")}},
    /* TLS REJECTED */
    {"TLS REJECTED pypi.org (client alert: unknown CA; the client does not trust airlock's CA; it "
     "looks like Python: set REQUESTS_CA_BUNDLE and SSL_CERT_FILE to airlock's CA certificate "
     "(pip: PIP_CERT))",
     {.kind = AUDIT_EV_TLS_REJECTED,
      .verdict = AUDIT_EV_REJECTED,
      .status = -1,
      .host = S("pypi.org"),
      .tail = S("client alert: unknown CA; the client does not trust airlock's CA; it looks like "
                "Python: set REQUESTS_CA_BUNDLE and SSL_CERT_FILE to airlock's CA certificate "
                "(pip: PIP_CERT)")}},
    {"TLS REJECTED new.example (no certificate: outside the conversation CA's name constraints; "
     "start a new conversation)",
     {.kind = AUDIT_EV_TLS_REJECTED,
      .verdict = AUDIT_EV_REJECTED,
      .status = -1,
      .host = S("new.example"),
      .tail = S("no certificate: outside the conversation CA's name constraints; start a new "
                "conversation")}},
    /* GitHub App credentials */
    {"GitHub App token refresh failed for GET https://api.github.com/user: HTTP 401",
     {.kind = AUDIT_EV_GHAPP_TOKEN,
      .verdict = E,
      .status = -1,
      .method = S("GET"),
      .url = S("https://api.github.com/user"),
      .tail = S("HTTP 401")}},
    {"GitHub App repo node ID resolution failed: timed out",
     {.kind = AUDIT_EV_GHAPP_REPOS, .verdict = E, .status = -1, .tail = S("timed out")}},
    {"GraphQL repo-scope check failed: unreadable: <too-large>",
     {.kind = AUDIT_EV_GRAPHQL_SCOPE,
      .verdict = B,
      .status = -1,
      .tail = S("unreadable: <too-large>")}},
    /* DECISION: a held request approved (with the approval's scope) or denied */
    {"DECISION h1 approved GET other.test /a by uid 1000 (scope once, 1 request)",
     {DEC(A, 1, "GET", "other.test", "/a", "uid 1000", 1), .scope = S("once")}},
    {"DECISION h12 approved POST other.test /v1/x?a=b by webhook (scope conversation, 2 "
     "requests)",
     {DEC(A, 12, "POST", "other.test", "/v1/x?a=b", "webhook", 2), .scope = S("conversation")}},
    {"DECISION h7 approved GET other.test /p/1 by uid 0 (scope persist, 1 request)",
     {DEC(A, 7, "GET", "other.test", "/p/1", "uid 0", 1), .scope = S("persist")}},
    {"DECISION h3 denied GET other.test /deny by webhook (1 request)",
     {DEC(B, 3, "GET", "other.test", "/deny", "webhook", 1)}},
    /* a path holding " by " and " (": who is after the last " by ", the counts in the last " (" */
    {"DECISION h18446744073709551615 denied DELETE [::1]:8080 /a by b (c) by uid 7 (32 requests)",
     {DEC(B, UINT64_MAX, "DELETE", "[::1]:8080", "/a by b (c)", "uid 7", 32)}},
    /* bytes the log escapes: a host, a path and a reason with control and high bytes */
    {"BLOCKED GET https://h\\x0a.test/a\\x1b[2J\\xc3\\xa9 -> 403 (host mismatch: "
     "header=h\\x0a.test, "
     "sni=x)",
     {REQ(B, "GET", "https://h\n.test/a\x1b[2J\xc3\xa9", 403),
      .tail = S("host mismatch: header=h\n.test, sni=x")}},
    {"TLS REJECTED \\x7f\\x00z (client alert: unknown CA; the client does not trust airlock's CA)",
     {.kind = AUDIT_EV_TLS_REJECTED,
      .verdict = AUDIT_EV_REJECTED,
      .status = -1,
      .host = {"\x7f\0z", 3},
      .tail = S("client alert: unknown CA; the client does not trust airlock's CA")}},
    {"ERROR GET https://h/p -> Connection failed: bad\\x0d\\x0aline",
     {REQ(E, "GET", "https://h/p", -1), .reason = S("Connection failed: bad\r\nline")}},
};

/* The parsed view s, unescaped, holds the bytes of want. */
static void assert_field(const char *line, const char *name, audit_str_t got, audit_str_t want)
{
    char buf[AUDIT_EVENT_LINE_CAP];
    size_t n = audit_unescape(got, buf, sizeof(buf));
    assert_true(n != (size_t)-1);
    if (n != want.len || (n > 0 && memcmp(buf, want.base, n) != 0))
        fail_msg("%s: field %s: got '%.*s', want '%.*s'", line, name, (int)n, buf, (int)want.len,
                 want.base != NULL ? want.base : "");
}

static void test_audit_event_render(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[AUDIT_EVENT_LINE_CAP];
        int n = audit_event_render(&cases[i].ev, buf, sizeof(buf));
        if (n < 0 || strcmp(buf, cases[i].line) != 0 || (size_t)n != strlen(cases[i].line))
            fail_msg("case %zu:\n got  %s\n want %s", i, n < 0 ? "(error)" : buf, cases[i].line);
    }
}

static void test_audit_event_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const ev_case_t *c = &cases[i];
        const audit_event_t *w = &c->ev;
        audit_event_t ev;
        if (audit_event_parse(c->line, strlen(c->line), &ev) != 0)
            fail_msg("case %zu: %s: %s", i, c->line, ev.why);
        if (ev.kind != w->kind || ev.verdict != w->verdict || ev.status != w->status ||
            ev.count != w->count || ev.masked != w->masked || ev.dropped != w->dropped)
            fail_msg("case %zu: %s: kind %d/%d verdict %d/%d status %d/%d", i, c->line, ev.kind,
                     w->kind, ev.verdict, w->verdict, ev.status, w->status);
        assert_field(c->line, "method", ev.method, w->method);
        assert_field(c->line, "url", ev.url, w->url);
        assert_field(c->line, "reason", ev.reason, w->reason);
        assert_field(c->line, "annot", ev.annot, w->annot);
        assert_field(c->line, "tail", ev.tail, w->tail);
        assert_field(c->line, "host", ev.host, w->host);
        assert_field(c->line, "dns_type", ev.dns_type, w->dns_type);
        assert_field(c->line, "header", ev.header, w->header);
        assert_field(c->line, "text", ev.text, w->text);
        assert_field(c->line, "who", ev.who, w->who);
        assert_field(c->line, "scope", ev.scope, w->scope);
        assert_field(c->line, "path", ev.path, w->path);
        if (ev.hold != w->hold)
            fail_msg("case %zu: %s: hold %llu, want %llu", i, c->line, (unsigned long long)ev.hold,
                     (unsigned long long)w->hold);
        /* and the parsed record (escaped views) renders the same line again */
        char buf[AUDIT_EVENT_LINE_CAP];
        assert_true(audit_event_render(&ev, buf, sizeof(buf)) >= 0);
        assert_string_equal(buf, c->line);
    }
}

/* The URL of a parsed request line is split for the tools (host, port, path). */
static void test_audit_event_url_parts(void **state)
{
    (void)state;
    audit_event_t ev;
    const char *l = "allowed GET http://plain.test:8080/x?a=1 -> 200";
    assert_int_equal(audit_event_parse(l, strlen(l), &ev), 0);
    assert_int_equal(ev.url_parts.ok, 1);
    assert_int_equal(ev.url_parts.port, 8080);
    assert_int_equal(ev.url_parts.tls, 0);
    l = "BLOCKED CONNECT [::1]:8443 -> 403";
    assert_int_equal(audit_event_parse(l, strlen(l), &ev), 0);
    assert_int_equal(ev.url_parts.ok, 1);
    assert_int_equal(ev.url_parts.bracketed, 1);
    assert_int_equal(ev.url_parts.port, 8443);
}

/* Over AUDIT_EVENT_TEXT_MAX the line is cut at a whole unit (never inside a \xNN) and marked,
 * as the proxy's writer always did; the cut line still parses, marked truncated. */
static void test_audit_event_cut(void **state)
{
    (void)state;
    const char *head = "BLOCKED GET https://h/";
    size_t hl = strlen(head);
    /* fill up to 2 bytes short of the cap, then a byte that takes 4 */
    size_t fill = AUDIT_EVENT_TEXT_MAX - hl - 2;
    char url[AUDIT_EVENT_TEXT_MAX + 32];
    memcpy(url, "https://h/", 10);
    memset(url + 10, 'a', fill);
    url[10 + fill] = '\x01';
    memcpy(url + 11 + fill, "zz", 2);
    audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, "GET", NULL, 403);
    ev.url.base = url;
    ev.url.len = 13 + fill;
    char buf[AUDIT_EVENT_LINE_CAP];
    int n = audit_event_render(&ev, buf, sizeof(buf));
    assert_int_equal(n, (int)(AUDIT_EVENT_TEXT_MAX - 2 + strlen(AUDIT_EVENT_TRUNC_MARK)));
    assert_string_equal(buf + n - strlen(AUDIT_EVENT_TRUNC_MARK), AUDIT_EVENT_TRUNC_MARK);
    assert_int_equal(buf[n - (int)strlen(AUDIT_EVENT_TRUNC_MARK) - 1], 'a');
    audit_event_t back;
    assert_int_not_equal(audit_event_parse(buf, (size_t)n, &back), 0);
    assert_int_equal(back.truncated, 1);
    /* a small buffer cuts earlier, still with the mark and a NUL */
    char small[40];
    n = audit_event_render(&ev, small, sizeof(small));
    assert_int_equal(n, 39);
    assert_string_equal(small + n - strlen(AUDIT_EVENT_TRUNC_MARK), AUDIT_EVENT_TRUNC_MARK);
    assert_int_equal(audit_event_render(&ev, small, 8), -1);
}

/* A record no line can express is refused, not half written. */
static void test_audit_event_bad(void **state)
{
    (void)state;
    char buf[64];
    audit_event_t ev = {.kind = AUDIT_EV_NONE};
    assert_int_equal(audit_event_render(&ev, buf, sizeof(buf)), -1);
    ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_V_NONE, "GET", "https://h/", 200);
    assert_int_equal(audit_event_render(&ev, buf, sizeof(buf)), -1);
    /* NULL and "" method and URL are written "-" */
    ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, NULL, "", 400);
    assert_true(audit_event_render(&ev, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "BLOCKED - - -> 400");
}

/* DECISION lines airlock does not write are not read as one (each fails with a reason). */
static void test_audit_event_decision_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "DECISION 1 approved GET h /a by x (1 request)",          /* no 'h' */
        "DECISION h01 approved GET h /a by x (1 request)",        /* a leading zero */
        "DECISION h1 maybe GET h /a by x (1 request)",            /* outcome */
        "DECISION h1 approved G(T h /a by x (1 request)",         /* method */
        "DECISION h1 approved GET h /a by x",                     /* no counts */
        "DECISION h1 approved GET h /a x (1 request)",            /* no " by " */
        "DECISION h1 approved GET h /a by  (1 request)",          /* who empty */
        "DECISION h1 approved GET h /a by x (2 request)",         /* plural */
        "DECISION h1 approved GET h /a by x (1 requests)",        /* plural */
        "DECISION h1 approved GET h /a by x (scope , 1 request)", /* empty scope */
        "DECISION h1 approved GET h /a by x (scope a b, 1 request)",
        "DECISION h1 approved GET h /a by x (01 request)",
        "DECISION h1 approved GET h",
        "DECISION h1 approved Gy c (scope once, 1 request)", /* no path, no who (fuzz) */
        "DECISION h18446744073709551616 denied GET h /a by x (1 request)", /* over 64 bits */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        audit_event_t ev;
        if (audit_event_parse(bad[i], strlen(bad[i]), &ev) == 0)
            fail_msg("read as an event: %s", bad[i]);
        assert_int_equal(ev.kind, AUDIT_EV_NONE);
        assert_non_null(ev.why);
    }
    /* a decision is approved or denied: another verdict is not written */
    char buf[128];
    audit_event_t ev = {DEC(AUDIT_EV_WARN, 1, "GET", "h", "/", "x", 1)};
    assert_int_equal(audit_event_render(&ev, buf, sizeof(buf)), -1);
    /* empty fields are written "-", and read back as such */
    ev = (audit_event_t){.kind = AUDIT_EV_DECISION, .verdict = B, .hold = 2};
    assert_true(audit_event_render(&ev, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "DECISION h2 denied - - - by - (0 requests)");
    audit_event_t back;
    assert_int_equal(audit_event_parse(buf, strlen(buf), &back), 0);
    assert_int_equal(back.kind, AUDIT_EV_DECISION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_event_render),
        cmocka_unit_test(test_audit_event_round_trip),
        cmocka_unit_test(test_audit_event_url_parts),
        cmocka_unit_test(test_audit_event_cut),
        cmocka_unit_test(test_audit_event_bad),
        cmocka_unit_test(test_audit_event_decision_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
