/* audit_json: each kind of record renders to the documented JSON object byte for byte
 * (docs/events.md), strings are escaped per RFC 8259 (controls, quotes, well-formed UTF-8 kept,
 * other bytes as \xNN), a record read back from the log's escaped form gives the same object,
 * an over-long record is cut into valid JSON marked "truncated", and reading an object back
 * (audit_jread_line) gives the very text line the record renders to. Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "audit/audit_event.h"
#include "audit/audit_jread.h"
#include "audit/audit_json.h"

#define S(lit)                                                                                     \
    {                                                                                              \
        lit, sizeof(lit) - 1                                                                       \
    }
#define REQ(v, m, u, st)                                                                           \
    .kind = AUDIT_EV_REQUEST, .verdict = (v), .method = S(m), .url = S(u), .status = (st)
#define B AUDIT_EV_BLOCKED
#define A AUDIT_EV_ALLOWED
#define E AUDIT_EV_ERROR
#define T0 1770122096789LL /* 2026-02-03T12:34:56.789Z */
#define HEAD "{\"v\":2,\"time\":\"2026-02-03T12:34:56.789Z\","

typedef struct json_case {
    audit_event_t ev;
    const char *json;
} json_case_t;

static const json_case_t cases[] = {
    {{.kind = AUDIT_EV_TASK_START, .status = -1, .text = S("2026-02-03T12:34:56Z")},
     HEAD "\"kind\":\"task_start\",\"started\":\"2026-02-03T12:34:56Z\"}"},
    {{.kind = AUDIT_EV_DNS,
      .status = -1,
      .dns_type = S("A"),
      .host = S("api.github.com"),
      .reason = S("10.199.1.100")},
     HEAD "\"kind\":\"dns\",\"dns_type\":\"A\",\"host\":\"api.github.com\","
          "\"dns_answer\":\"10.199.1.100\"}"},
    {{REQ(A, "GET", "https://api.github.com/repos/o/r/pulls?page=2", 200),
      .annot = S(" [masked: 1] [region: us-east-1]")},
     HEAD "\"kind\":\"request\",\"decision\":\"allowed\",\"method\":\"GET\","
          "\"url\":\"https://api.github.com/repos/o/r/pulls?page=2\",\"scheme\":\"https\","
          "\"host\":\"api.github.com\",\"port\":443,\"path\":\"/repos/o/r/pulls?page=2\","
          "\"status\":200,\"annotations\":{\"masked\":1,\"region\":\"us-east-1\"}}"},
    {{REQ(A, "POST", "https://api.anthropic.com/v1/messages", 200),
      .annot = S(" [tool-domains: web_fetch_1: forced allowed_domains: []] [github-app: x/y]")},
     HEAD "\"kind\":\"request\",\"decision\":\"allowed\",\"method\":\"POST\","
          "\"url\":\"https://api.anthropic.com/v1/messages\",\"scheme\":\"https\","
          "\"host\":\"api.anthropic.com\",\"port\":443,\"path\":\"/v1/messages\",\"status\":200,"
          "\"annotations\":{\"tool-domains\":\"web_fetch_1: forced allowed_domains: []\","
          "\"github-app\":\"x/y\"}}"},
    /* a repeated annotation: the object keeps the first, the text is kept whole */
    {{REQ(A, "GET", "http://h.test:8080/", 200), .annot = S(" [masked: 1] [masked: 2]")},
     HEAD "\"kind\":\"request\",\"decision\":\"allowed\",\"method\":\"GET\","
          "\"url\":\"http://h.test:8080/\",\"scheme\":\"http\",\"host\":\"h.test\",\"port\":8080,"
          "\"path\":\"/\",\"status\":200,\"annotations\":{\"masked\":1},"
          "\"annot_text\":\" [masked: 1] [masked: 2]\"}"},
    {{REQ(B, "GET", "https://h/p", 403), .tail = S("leak: secret entry[0].value, raw, in url")},
     HEAD
     "\"kind\":\"request\",\"decision\":\"blocked\",\"method\":\"GET\",\"url\":\"https://h/p\","
     "\"scheme\":\"https\",\"host\":\"h\",\"port\":443,\"path\":\"/p\",\"status\":403,"
     "\"detail\":\"leak: secret entry[0].value, raw, in url\",\"leak\":{\"kind\":\"secret\","
     "\"entry\":\"entry[0].value\",\"encoding\":\"raw\",\"where\":\"url\"}}"},
    {{REQ(B, "POST", "https://h/p", 429),
      .tail = S("budget: sent for paste.example, 100000/100000; the upload was stopped")},
     HEAD
     "\"kind\":\"request\",\"decision\":\"blocked\",\"method\":\"POST\",\"url\":\"https://h/p\","
     "\"scheme\":\"https\",\"host\":\"h\",\"port\":443,\"path\":\"/p\",\"status\":429,"
     "\"detail\":\"budget: sent for paste.example, 100000/100000; the upload was stopped\","
     "\"budget\":{\"kind\":\"sent\",\"for\":\"paste.example\",\"count\":\"100000/100000\"}}"},
    {{REQ(E, "GET", "https://down.example.com/api", -1),
      .reason = S("Connection failed: DNS server returned SERVFAIL")},
     HEAD "\"kind\":\"request\",\"decision\":\"error\",\"method\":\"GET\","
          "\"url\":\"https://down.example.com/api\",\"scheme\":\"https\","
          "\"host\":\"down.example.com\",\"port\":443,\"path\":\"/api\","
          "\"reason\":\"Connection failed: DNS server returned SERVFAIL\"}"},
    {{.kind = AUDIT_EV_CONNECT,
      .verdict = A,
      .method = S("CONNECT"),
      .url = S("[2001:db8::1]:8443"),
      .status = 200,
      .stage = S("policy"),
      .entry = S("allow.yaml:3")},
     HEAD "\"kind\":\"connect\",\"decision\":\"allowed\",\"method\":\"CONNECT\","
          "\"url\":\"[2001:db8::1]:8443\",\"host\":\"2001:db8::1\",\"port\":8443,\"status\":200,"
          "\"stage\":\"policy\",\"entry\":\"allow.yaml:3\"}"},
    /* what the exchange relayed: bytes, duration (ms, microseconds as decimals), upstream */
    {{REQ(A, "POST", "http://h.test/up", 201), .stage = S("policy"),
      .entry = S("domains[0] /etc/airlock/allow.yaml:2"), .xfer = 1, .bytes_up = 1048576,
      .bytes_down = 6, .duration_us = 12345, .upstream = S("127.0.0.1:80")},
     HEAD "\"kind\":\"request\",\"decision\":\"allowed\",\"method\":\"POST\","
          "\"url\":\"http://h.test/up\",\"scheme\":\"http\",\"host\":\"h.test\",\"port\":80,"
          "\"path\":\"/up\",\"status\":201,\"stage\":\"policy\","
          "\"entry\":\"domains[0] /etc/airlock/allow.yaml:2\",\"bytes_up\":1048576,"
          "\"bytes_down\":6,\"duration_ms\":12.345,\"upstream_addr\":\"127.0.0.1:80\"}"},
    /* refused before any upstream: no address; a sub-millisecond duration is not 0 */
    {{REQ(B, "GET", "https://h/p", 403), .stage = S("leak"), .xfer = 1, .duration_us = 7},
     HEAD "\"kind\":\"request\",\"decision\":\"blocked\",\"method\":\"GET\","
          "\"url\":\"https://h/p\",\"scheme\":\"https\",\"host\":\"h\",\"port\":443,"
          "\"path\":\"/p\",\"status\":403,\"stage\":\"leak\",\"bytes_up\":0,"
          "\"bytes_down\":0,\"duration_ms\":0.007}"},
    {{.kind = AUDIT_EV_TUNNEL,
      .verdict = B,
      .method = S("CONNECT"),
      .url = S("h:443"),
      .status = 200,
      .tail = S("budget: received for all, 5/5; the tunnel was cut after 9 bytes received")},
     HEAD "\"kind\":\"tunnel\",\"decision\":\"blocked\",\"method\":\"CONNECT\",\"url\":\"h:443\","
          "\"host\":\"h\",\"port\":443,\"status\":200,\"detail\":\"budget: received for all, 5/5; "
          "the tunnel was cut after 9 bytes received\",\"budget\":{\"kind\":\"received\","
          "\"for\":\"all\",\"count\":\"5/5\"}}"},
    {{.kind = AUDIT_EV_CONNECTION,
      .verdict = B,
      .method = S("-"),
      .url = S("-"),
      .status = -1,
      .reason = S("closed"),
      .tail = S("source 10.77.3.2 is in no sandbox")},
     HEAD "\"kind\":\"connection\",\"decision\":\"blocked\",\"reason\":\"closed\","
          "\"detail\":\"source 10.77.3.2 is in no sandbox\"}"},
    {{.kind = AUDIT_EV_STRIPPED,
      .status = -1,
      .header = S("authorization"),
      .method = S("GET"),
      .url = S("https://api.github.com/user"),
      .tail = S("foreign credential blocked")},
     HEAD
     "\"kind\":\"stripped\",\"header\":\"authorization\",\"method\":\"GET\","
     "\"url\":\"https://api.github.com/user\",\"scheme\":\"https\",\"host\":\"api.github.com\","
     "\"port\":443,\"path\":\"/user\",\"detail\":\"foreign credential blocked\"}"},
    {{.kind = AUDIT_EV_COLLAPSED,
      .status = -1,
      .count = 2,
      .header = S("authorization"),
      .method = S("GET"),
      .url = S("http://h/p"),
      .tail = S("duplicate credential headers removed")},
     HEAD "\"kind\":\"collapsed\",\"header\":\"authorization\",\"count\":2,\"method\":\"GET\","
          "\"url\":\"http://h/p\",\"scheme\":\"http\",\"host\":\"h\",\"port\":80,\"path\":\"/p\","
          "\"detail\":\"duplicate credential headers removed\"}"},
    {{.kind = AUDIT_EV_WARNING, .status = -1, .tail = S("Container clock skew detected")},
     HEAD "\"kind\":\"warning\",\"decision\":\"warning\","
          "\"detail\":\"Container clock skew detected\"}"},
    {{.kind = AUDIT_EV_TLS_REJECTED,
      .status = -1,
      .host = S("pypi.org"),
      .tail = S("client alert: unknown CA")},
     HEAD "\"kind\":\"tls_rejected\",\"decision\":\"rejected\",\"host\":\"pypi.org\","
          "\"detail\":\"client alert: unknown CA\"}"},
    {{.kind = AUDIT_EV_GHAPP_TOKEN,
      .status = -1,
      .method = S("GET"),
      .url = S("https://api.github.com/x"),
      .tail = S("HTTP 401")},
     HEAD "\"kind\":\"ghapp_token\",\"decision\":\"error\",\"method\":\"GET\","
          "\"url\":\"https://api.github.com/x\",\"scheme\":\"https\",\"host\":\"api.github.com\","
          "\"port\":443,\"path\":\"/x\",\"detail\":\"HTTP 401\"}"},
    {{.kind = AUDIT_EV_GHAPP_REPOS, .status = -1, .tail = S("timed out")},
     HEAD "\"kind\":\"ghapp_repos\",\"decision\":\"error\",\"detail\":\"timed out\"}"},
    {{.kind = AUDIT_EV_GRAPHQL_SCOPE, .status = -1, .tail = S("unreadable: x")},
     HEAD "\"kind\":\"graphql_scope\",\"decision\":\"blocked\",\"detail\":\"unreadable: x\"}"},
    /* DECISION: approved (its scope) and denied (none); the hold's own members */
    {{.kind = AUDIT_EV_DECISION,
      .verdict = A,
      .status = -1,
      .hold = 12,
      .method = S("POST"),
      .host = S("other.test"),
      .path = S("/v1/x?a=b"),
      .who = S("uid 1000"),
      .scope = S("conversation"),
      .count = 2},
     HEAD "\"kind\":\"decision\",\"decision\":\"approved\",\"hold\":\"h12\",\"method\":\"POST\","
          "\"host\":\"other.test\",\"path\":\"/v1/x?a=b\",\"by\":\"uid 1000\","
          "\"scope\":\"conversation\",\"requests\":2}"},
    {{.kind = AUDIT_EV_DECISION,
      .verdict = B,
      .status = -1,
      .hold = 3,
      .method = S("GET"),
      .host = S("other.test"),
      .path = S("/deny"),
      .who = S("webhook"),
      .count = 1},
     HEAD "\"kind\":\"decision\",\"decision\":\"denied\",\"hold\":\"h3\",\"method\":\"GET\","
          "\"host\":\"other.test\",\"path\":\"/deny\",\"by\":\"webhook\",\"requests\":1}"},
    /* escaping: quote, backslash, controls, DEL, C1, UTF-8 kept, other bytes as \xNN */
    {{.kind = AUDIT_EV_WARNING,
      .status = -1,
      .tail = S("q\" b\\ n\n t\t e\x1b d\x7f c1\xc2\x85 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 "
                "bad\xff\xc3 ov\xc0\xaf sur\xed\xa0\x80 end")},
     HEAD "\"kind\":\"warning\",\"decision\":\"warning\",\"detail\":\"q\\\" b\\\\ n\\n t\\t "
          "e\\u001b d\\u007f c1\\u0085 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 bad\\\\xff\\\\xc3 "
          "ov\\\\xc0\\\\xaf sur\\\\xed\\\\xa0\\\\x80 end\"}"},
};

/* 1 when s[0..n) is one valid JSON object (jansson's parser, RFC 8259). */
static int json_ok(const char *s, size_t n)
{
    json_error_t e;
    json_t *o = json_loadb(s, n, JSON_REJECT_DUPLICATES, &e);
    int ok = json_is_object(o);
    if (!ok)
        print_error("invalid JSON (%s): %.*s\n", e.text, (int)n, s);
    json_decref(o);
    return ok;
}

static void test_audit_json_render_table(void **state)
{
    (void)state;
    static char buf[AUDIT_JSON_LINE_CAP];
    audit_json_ctx_t ctx = {.time_ms = T0};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = audit_json_render(&cases[i].ev, &ctx, buf, sizeof(buf));
        if (n < 0 || strcmp(buf, cases[i].json) != 0)
            print_error("case %zu:\n got  %s\n want %s\n", i, buf, cases[i].json);
        assert_int_equal(n, (int)strlen(cases[i].json));
        assert_string_equal(buf, cases[i].json);
        assert_true(json_ok(buf, (size_t)n));
    }
}

/* Reading an object back gives the record's text line exactly (what replay and report read). */
static void test_audit_json_read_back_gives_the_text_line(void **state)
{
    (void)state;
    static char js[AUDIT_JSON_LINE_CAP];
    char text[AUDIT_EVENT_LINE_CAP], back[AUDIT_EVENT_LINE_CAP];
    audit_json_ctx_t ctx = {.time_ms = T0, .sandbox = S("sb1")};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = audit_json_render(&cases[i].ev, &ctx, js, sizeof(js));
        assert_true(n > 0);
        int t = audit_event_render(&cases[i].ev, text, sizeof(text));
        int b = audit_jread_line(js, (size_t)n, back, sizeof(back));
        if (b != t || strcmp(text, back) != 0)
            print_error("case %zu:\n text %s\n back %s\n", i, text, back);
        assert_int_equal(b, t);
        assert_string_equal(back, text);
    }
}

/* A line as the log has it (escaped, parsed) renders to the same object as the record with the
 * raw bytes; and every text line of the table parsed gives the object of its record. */
static void test_audit_json_escaped_views_decode(void **state)
{
    (void)state;
    static char a[AUDIT_JSON_LINE_CAP], b[AUDIT_JSON_LINE_CAP];
    char text[AUDIT_EVENT_LINE_CAP];
    audit_json_ctx_t raw = {.time_ms = T0}, esc = {.time_ms = T0, .escaped = 1};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int t = audit_event_render(&cases[i].ev, text, sizeof(text));
        audit_event_t ev;
        assert_int_equal(audit_event_parse(text, (size_t)t, &ev), 0);
        ev.stage = cases[i].ev.stage; /* not in the text line */
        ev.entry = cases[i].ev.entry;
        ev.xfer = cases[i].ev.xfer;
        ev.bytes_up = cases[i].ev.bytes_up;
        ev.bytes_down = cases[i].ev.bytes_down;
        ev.duration_us = cases[i].ev.duration_us;
        ev.upstream = cases[i].ev.upstream;
        assert_true(audit_json_render(&cases[i].ev, &raw, a, sizeof(a)) > 0);
        assert_true(audit_json_render(&ev, &esc, b, sizeof(b)) > 0);
        if (strcmp(a, b) != 0)
            print_error("case %zu:\n raw %s\n esc %s\n", i, a, b);
        assert_string_equal(a, b);
    }
    /* a literal "\x41" (printable) stays as written; "\x0a" is the byte */
    audit_event_t w = {.kind = AUDIT_EV_WARNING, .status = -1, .tail = S("a\\x41\\x0ab")};
    assert_true(audit_json_render(&w, &esc, a, sizeof(a)) > 0);
    assert_non_null(strstr(a, "\"detail\":\"a\\\\x41\\nb\""));
}

static void test_audit_json_sandbox_time_and_other(void **state)
{
    (void)state;
    static char buf[AUDIT_JSON_LINE_CAP];
    audit_event_t ev = {.kind = AUDIT_EV_TASK_START, .status = -1, .text = S("x")};
    const struct {
        int64_t ms;
        const char *want;
    } times[] = {
        {0, "1970-01-01T00:00:00.000Z"},
        {-5, "1970-01-01T00:00:00.000Z"},
        {T0, "2026-02-03T12:34:56.789Z"},
        /* the second's text is kept between events: the next second, back, the same second */
        {T0 + 1000, "2026-02-03T12:34:57.789Z"},
        {T0 - 789, "2026-02-03T12:34:56.000Z"},
        {T0 - 788, "2026-02-03T12:34:56.001Z"},
        {INT64_MAX, "9999-12-31T23:59:59.999Z"},
    };
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
        audit_json_ctx_t ctx = {.time_ms = times[i].ms, .sandbox = S("team-a")};
        assert_true(audit_json_render(&ev, &ctx, buf, sizeof(buf)) > 0);
        char want[128];
        snprintf(want, sizeof(want), "\"time\":\"%s\",\"sandbox\":\"team-a\",", times[i].want);
        assert_non_null(strstr(buf, want));
    }
    audit_json_ctx_t ctx = {.time_ms = T0};
    const char line[] = "DNS A [name withheld: it holds canary c] -> 1.2.3.4 \\x1b";
    int n = audit_json_render_other(line, sizeof(line) - 1, &ctx, buf, sizeof(buf));
    assert_string_equal(buf, HEAD "\"kind\":\"other\",\"text\":\"DNS A [name withheld: it holds "
                                  "canary c] -> 1.2.3.4 \\u001b\"}");
    char back[AUDIT_EVENT_LINE_CAP];
    assert_int_equal(audit_jread_line(buf, (size_t)n, back, sizeof(back)), (int)sizeof(line) - 1);
    assert_string_equal(back, line);
}

/* A string's bytes are checked a word at a time (8 or 16 bytes) while none needs escaping, the
 * last word overlapping: each byte that does, at every offset of strings of every length up to
 * more than two 16-byte words, is still escaped exactly as alone. */
static void test_audit_json_escape_at_every_offset(void **state)
{
    (void)state;
    static char buf[AUDIT_JSON_LINE_CAP];
    const struct {
        const char *in, *out;
    } bytes[] = {
        {"\"", "\\\""},          {"\\", "\\\\"},      {"\n", "\\n"},       {"\x01", "\\u0001"},
        {"\x1f", "\\u001f"},     {"\x7f", "\\u007f"}, {"\xff", "\\\\xff"}, {"\xc3\xa9", "\xc3\xa9"},
        {"\xc2\x85", "\\u0085"}, {" ", " "},          {"~", "~"},
    };
    for (size_t b = 0; b < sizeof(bytes) / sizeof(bytes[0]); b++) {
        for (size_t fill = 0; fill <= 40; fill++) {
            for (size_t at = 0; at <= fill; at++) {
                char in[64], want[128];
                size_t il = strlen(bytes[b].in);
                memset(in, 'a', sizeof(in));
                memcpy(in + at, bytes[b].in, il);
                size_t n = fill + il;
                audit_event_t ev = {.kind = AUDIT_EV_TASK_START, .status = -1, .text = {in, n}};
                assert_true(audit_json_render(&ev, NULL, buf, sizeof(buf)) > 0);
                snprintf(want, sizeof(want), "\"started\":\"%.*s%s%.*s\"}", (int)at, in,
                         bytes[b].out, (int)(n - at - il), in + at + il);
                if (strstr(buf, want) == NULL)
                    print_error("byte %zu at %zu of %zu: %s\n want %s\n", b, at, n, buf, want);
                assert_non_null(strstr(buf, want));
            }
        }
    }
}

/* A NUL byte is written as the text log writes it, \x00 (JSON "\\x00"), never \u0000: valid
 * JSON, but PostgreSQL's jsonb and jansson's default refuse it and C consumers cut the string
 * there, so the event would be lost or shortened downstream. From a raw view, from the log's
 * escaped form, and in a line that is not an event; the text line reads back. */
static void test_audit_json_nul_as_text_log_escape(void **state)
{
    (void)state;
    static char buf[AUDIT_JSON_LINE_CAP];
    char text[AUDIT_EVENT_LINE_CAP], back[AUDIT_EVENT_LINE_CAP];
    audit_json_ctx_t raw = {.time_ms = T0}, esc = {.time_ms = T0, .escaped = 1};
    audit_event_t r = {.kind = AUDIT_EV_WARNING, .status = -1, .tail = {"a\0b\0", 4}};
    int n = audit_json_render(&r, &raw, buf, sizeof(buf));
    assert_true(n > 0);
    assert_null(strstr(buf, "\\u0000"));
    assert_non_null(strstr(buf, "\"detail\":\"a\\\\x00b\\\\x00\""));
    assert_true(json_ok(buf, (size_t)n));
    int t = audit_event_render(&r, text, sizeof(text));
    assert_int_equal(audit_jread_line(buf, (size_t)n, back, sizeof(back)), t);
    assert_string_equal(back, text);

    audit_event_t e = {.kind = AUDIT_EV_WARNING, .status = -1, .tail = S("a\\x00b")};
    n = audit_json_render(&e, &esc, buf, sizeof(buf));
    assert_true(n > 0);
    assert_non_null(strstr(buf, "\"detail\":\"a\\\\x00b\""));
    assert_true(json_ok(buf, (size_t)n));

    const char line[] = "DNS A x\\x00y";
    n = audit_json_render_other(line, sizeof(line) - 1, &raw, buf, sizeof(buf));
    assert_true(n > 0);
    assert_non_null(strstr(buf, "\"text\":\"DNS A x\\\\x00y\""));
    assert_true(json_ok(buf, (size_t)n));
    assert_int_equal(audit_jread_line(buf, (size_t)n, back, sizeof(back)), (int)sizeof(line) - 1);
    assert_string_equal(back, line);
}

/* Over-long strings are cut at a whole character; the object stays valid and says so. */
static void test_audit_json_truncated_is_valid(void **state)
{
    (void)state;
    static char big[3 * AUDIT_JSON_LINE_MAX], buf[AUDIT_JSON_LINE_CAP];
    const char *fills[] = {"a", "\x01", "\xe2\x82\xac", "\xff", "\""};
    for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
        size_t fl = strlen(fills[f]), n = 0;
        while (n + fl <= sizeof(big)) {
            memcpy(big + n, fills[f], fl);
            n += fl;
        }
        audit_event_t ev = {REQ(B, "GET", "https://h/p", 403)};
        ev.tail = (audit_str_t){big, n};
        ev.url = (audit_str_t){big, n / 2};
        const size_t caps[] = {sizeof(buf), 4096, 5000};
        for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
            int len = audit_json_render(&ev, NULL, buf, caps[c]);
            assert_true(len > 0 && (size_t)len < caps[c] && (size_t)len <= AUDIT_JSON_LINE_MAX);
            assert_int_equal(buf[len], '\0');
            assert_true(json_ok(buf, (size_t)len));
            assert_non_null(strstr(buf, ",\"truncated\":true}"));
        }
    }
    audit_event_t ev = {REQ(A, "GET", "http://h/", 200)};
    assert_int_equal(audit_json_render(&ev, NULL, buf, 4095), -1);
    ev.verdict = AUDIT_EV_V_NONE; /* the text line cannot be written either */
    assert_int_equal(audit_json_render(&ev, NULL, buf, sizeof(buf)), -1);
    ev.kind = AUDIT_EV_NONE;
    assert_int_equal(audit_json_render(&ev, NULL, buf, sizeof(buf)), -1);
}

/* What is not an event object is refused: invalid JSON, another version, an unknown kind. */
static void test_audit_json_read_refuses(void **state)
{
    (void)state;
    const char *bad[] = {
        "{",
        "[]",
        "{\"v\":1}",
        "{\"v\":3,\"kind\":\"dns\"}", /* a version above the one known */
        "{\"kind\":\"dns\"}",
        "{\"v\":1,\"kind\":\"nonsense\"}",
        "{\"v\":1,\"kind\":\"dns\",\"kind\":\"dns\"}",
        "{\"v\":1,\"kind\":\"request\",\"method\":\"GET\"}", /* no decision: no line */
        /* a DECISION without a hold ID, with one that is not hN, or not approved/denied */
        "{\"v\":2,\"kind\":\"decision\",\"decision\":\"approved\",\"method\":\"GET\"}",
        "{\"v\":2,\"kind\":\"decision\",\"decision\":\"denied\",\"hold\":\"7\"}",
        "{\"v\":2,\"kind\":\"decision\",\"decision\":\"denied\",\"hold\":\"h07\"}",
        "{\"v\":2,\"kind\":\"decision\",\"decision\":\"denied\",\"hold\":"
        "\"h18446744073709551616\"}",
        "{\"v\":2,\"kind\":\"decision\",\"decision\":\"allowed\",\"hold\":\"h1\"}",
    };
    char out[AUDIT_EVENT_LINE_CAP];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(audit_jread_line(bad[i], strlen(bad[i]), out, sizeof(out)), -1);
    /* a version-1 object (written before the relay members) is still read */
    const char v1[] = "{\"v\":1,\"time\":\"2026-02-03T12:34:56.789Z\",\"kind\":\"dns\","
                      "\"dns_type\":\"A\",\"host\":\"h\",\"dns_answer\":\"1.2.3.4\"}";
    assert_int_equal(audit_jread_line(v1, sizeof(v1) - 1, out, sizeof(out)),
                     (int)strlen("DNS A h -> 1.2.3.4"));
    assert_string_equal(out, "DNS A h -> 1.2.3.4");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_json_render_table),
        cmocka_unit_test(test_audit_json_read_back_gives_the_text_line),
        cmocka_unit_test(test_audit_json_escaped_views_decode),
        cmocka_unit_test(test_audit_json_sandbox_time_and_other),
        cmocka_unit_test(test_audit_json_escape_at_every_offset),
        cmocka_unit_test(test_audit_json_nul_as_text_log_escape),
        cmocka_unit_test(test_audit_json_truncated_is_valid),
        cmocka_unit_test(test_audit_json_read_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
