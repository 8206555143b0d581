/* audit_report / audit_replay: the figures on the page and in replay's summary, escaping of
 * hostile log text, the timeline's streaming bars, the DNS flags, the caps that bound memory,
 * and the supporting modules (table, reader, path patterns, entropy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "addons/addon_replacements.h"
#include "audit/audit_dns.h"
#include "audit/audit_line.h"
#include "audit/audit_path.h"
#include "audit/audit_read.h"
#include "audit/audit_replay.h"
#include "audit/audit_report.h"
#include "audit/audit_tab.h"

static const char *const sample[] = {
    "=== TASK START 2026-02-03T12:34:56Z ===",
    "DNS A api.github.com -> 10.199.1.100",
    "DNS AAAA evil.com -> NODATA",
    "DNS A mzxw6ytboi2dkmjzgq3tqobyha4dqmzzgu2dkobx.exfil.test -> 10.199.1.100",
    "allowed GET https://api.github.com/repos/org/repo/pulls -> 200 [masked: 1]",
    "BLOCKED GET https://evil.com/exfiltrate -> 403",
    "allowed POST https://api.anthropic.com/v1/messages -> 200 [masked: 1]",
    "ERROR GET https://down.example.com/api -> Connection failed: Name or service not known",
    "BLOCKED CONNECT evil.com:443 -> 403 (tunneling not allowed)",
    "BLOCKED GET https://a.com/<script>alert(1)</script> -> 403",
    "STRIPPED header 'authorization' from GET https://api.github.com/user (foreign credential "
    "blocked)",
    "TLS REJECTED api.github.com (client alert: unknown ca; the client does not trust airlock's "
    "CA)",
    "not a log line with a \" quote & <b>tag</b>",
    NULL,
};

static char *report_html(const char *const *lines, const addon_policy_t *cur)
{
    audit_report_t *r = audit_report_new(cur, "cur.yaml");
    assert_non_null(r);
    audit_report_file(r, "net<1>.log");
    for (size_t i = 0; lines[i] != NULL; i++)
        audit_report_line(r, "net<1>.log", i + 1, lines[i], strlen(lines[i]), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    audit_report_write_html(r, f, "t");
    fclose(f);
    audit_report_free(r);
    return text;
}

static void test_audit_report_figures(void **state)
{
    (void)state;
    char *h = report_html(sample, NULL);
    assert_non_null(strstr(h, "id=\"total-lines\">13<"));
    assert_non_null(strstr(h, "id=\"total-requests\">6<"));
    assert_non_null(strstr(h, "id=\"total-allowed\">2<"));
    assert_non_null(strstr(h, "id=\"total-blocked\">3<"));
    assert_non_null(strstr(h, "id=\"total-errors\">1<"));
    assert_non_null(strstr(h, "id=\"total-dns\">3<"));
    assert_non_null(strstr(h, "id=\"total-tls-rejected\">1<"));
    assert_non_null(strstr(h, "id=\"total-stripped\">1<"));
    assert_non_null(strstr(h, "id=\"total-unread\">1<"));
    assert_non_null(strstr(h, "id=\"total-masked\">2<"));
    /* DNS: api.github.com was requested; evil.com too (blocked); the exfil name was not */
    assert_non_null(strstr(h, "id=\"dns-unrequested\">1<"));
    assert_non_null(strstr(h, "id=\"dns-flagged\" class=\"flag\">1<"));
    /* a suggestion for evil.com, none for the CONNECT refusal */
    assert_non_null(strstr(h, "- host: &quot;evil.com&quot;"));
    assert_non_null(strstr(h, "Connection failed: Name or service not known"));
    /* self-contained and inert: no script, nothing fetched */
    assert_null(strstr(h, "<script"));
    assert_null(strstr(h, "src="));
    assert_null(strstr(h, "href="));
    assert_non_null(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(h, "net&lt;1&gt;.log"));
    assert_non_null(strstr(h, "&quot; quote &amp; &lt;b&gt;tag&lt;/b&gt;"));
    free(h);
}

/* The holds' DECISION lines: counted apart (approved, denied), neither requests nor lines not
 * read; replay counts them among the other lines, by name. */
static const char *const decisions[] = {
    "DECISION h1 approved GET other.test /a by uid 1000 (scope once, 1 request)",
    "allowed GET http://other.test/a -> 200 [held: h1 approved by uid 1000]",
    "DECISION h2 approved POST other.test /b by webhook (scope persist, 2 requests)",
    "DECISION h3 denied GET other.test /c by webhook (1 request)",
    "BLOCKED GET http://other.test/c -> 403 [held: h3 denied by webhook]",
    NULL,
};

static void test_audit_report_decisions(void **state)
{
    (void)state;
    char *h = report_html(decisions, NULL);
    assert_non_null(strstr(h, "id=\"total-lines\">5<"));
    assert_non_null(strstr(h, "id=\"total-requests\">2<"));
    assert_non_null(strstr(h, "id=\"total-approved\">2<"));
    assert_non_null(strstr(h, "id=\"total-denied\">1<"));
    assert_non_null(strstr(h, "id=\"total-warnings\">0<"));
    assert_non_null(strstr(h, "id=\"total-unread\">0<"));
    free(h);
    addon_policy_t *p = NULL;
    char err[256];
    const char *y = "domains: [open.test]\n";
    assert_int_equal(addon_policy_load_buffer("p.yaml", y, strlen(y), &p, err, sizeof(err)), 0);
    audit_replay_t *r = audit_replay_new(p, "p.yaml");
    for (size_t i = 0; decisions[i] != NULL; i++)
        audit_replay_line(r, "net.log", i + 1, decisions[i], strlen(decisions[i]), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    audit_replay_write(r, f);
    fclose(f);
    assert_non_null(strstr(text, "other lines:              3 (DECISION 3)\n"));
    assert_non_null(strstr(text, "lines not read:           0\n"));
    free(text);
    audit_replay_free(r);
    addon_policy_unref(p);
}

static void test_audit_report_explained_by_current(void **state)
{
    (void)state;
    addon_policy_t *p = NULL;
    char err[256];
    const char *y = "domains: [evil.com]\n";
    assert_int_equal(addon_policy_load_buffer("cur.yaml", y, strlen(y), &p, err, sizeof(err)), 0);
    char *h = report_html(sample, p);
    /* evil.com is allowed by the current allowlist: said so, and no suggestion */
    assert_non_null(strstr(h, "now allowed: allowed by domains[0]"));
    assert_null(strstr(h, "- host: &quot;evil.com&quot;"));
    free(h);
    addon_policy_unref(p);
}

/* Sums the data-allowed/blocked/errors of the timeline's bars. */
static void bar_sums(const char *h, unsigned long *a, unsigned long *b, unsigned long *e,
                     unsigned long *bars)
{
    *a = *b = *e = *bars = 0;
    const char *p = h;
    while ((p = strstr(p, "<g class=\"bar\" data-allowed=\"")) != NULL) {
        unsigned long x, y, z;
        assert_int_equal(sscanf(p,
                                "<g class=\"bar\" data-allowed=\"%lu\" data-blocked=\"%lu\" "
                                "data-errors=\"%lu\"",
                                &x, &y, &z),
                         3);
        *a += x;
        *b += y;
        *e += z;
        (*bars)++;
        p++;
    }
}

static void test_audit_report_timeline(void **state)
{
    (void)state;
    audit_report_t *r = audit_report_new(NULL, NULL);
    audit_report_file(r, "big.log");
    char line[128];
    unsigned long want[3] = {0, 0, 0};
    for (unsigned long i = 0; i < 100003; i++) {
        int k = (int)(i % 7 == 0 ? 1 : i % 11 == 0 ? 2 : 0);
        if (i % 5000 == 0) {
            snprintf(line, sizeof(line), "=== TASK START 2026-01-01T00:%02lu:00Z ===", i / 5000);
            audit_report_line(r, "big.log", i, line, strlen(line), 0);
        }
        snprintf(line, sizeof(line), "%s GET https://h%lu.test/x -> %s",
                 k == 0   ? "allowed"
                 : k == 1 ? "BLOCKED"
                          : "ERROR",
                 i % 50,
                 k == 0   ? "200"
                 : k == 1 ? "403"
                          : "boom");
        audit_report_line(r, "big.log", i, line, strlen(line), 0);
        want[k]++;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    audit_report_write_html(r, f, "t");
    fclose(f);
    unsigned long a, b, e, bars;
    bar_sums(text, &a, &b, &e, &bars);
    assert_int_equal(a, want[0]);
    assert_int_equal(b, want[1]);
    assert_int_equal(e, want[2]);
    assert_true(bars > 60 && bars <= 120);
    assert_non_null(strstr(text, "data-per-bar=\"1024\""));
    assert_non_null(strstr(text, "TASK START 2026-01-01T00:20:00Z"));
    free(text);
    audit_report_free(r);
}

/* Memory stays under the caps however many distinct hosts, groups and names arrive. */
static void test_audit_report_bounded(void **state)
{
    (void)state;
    audit_report_t *r = audit_report_new(NULL, NULL);
    char line[256];
    size_t at_half = 0;
    for (unsigned long i = 0; i < 300000; i++) {
        if (i % 3 == 0)
            snprintf(line, sizeof(line), "BLOCKED GET https://h%lu.test/p%lu/x -> 403", i, i);
        else if (i % 3 == 1)
            snprintf(line, sizeof(line), "DNS A n%lu.flood.test -> 10.0.0.1", i);
        else
            snprintf(line, sizeof(line), "ERROR GET https://e.test/ -> cause %lu", i);
        audit_report_line(r, "flood.log", i + 1, line, strlen(line), 0);
        if (i == 150000)
            at_half = audit_report_bytes(r);
    }
    size_t end = audit_report_bytes(r);
    /* the tables were full by half-way: nothing grew after */
    assert_int_equal(at_half, end);
    assert_true(end < 64u * 1024 * 1024);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    audit_report_write_html(r, f, "t");
    fclose(f);
    assert_non_null(strstr(text, "(memory cap)"));
    assert_non_null(strstr(text, "id=\"total-requests\">200000<"));
    /* the page itself is bounded too: at most AUDIT_REPORT_ROWS_MAX rows a table */
    assert_true(len < 8u * 1024 * 1024);
    free(text);
    audit_report_free(r);
}

static void test_audit_replay_summary(void **state)
{
    (void)state;
    addon_policy_t *p = NULL;
    char err[256];
    const char *y = "domains: [api.anthropic.com, evil.com, down.example.com]\n";
    assert_int_equal(addon_policy_load_buffer("new.yaml", y, strlen(y), &p, err, sizeof(err)), 0);
    audit_replay_t *r = audit_replay_new(p, "new.yaml");
    audit_replay_file(r, "net.log");
    for (size_t i = 0; sample[i] != NULL; i++)
        audit_replay_line(r, "net.log", i + 1, sample[i], strlen(sample[i]), 0);
    audit_replay_line(r, "net.log", 99, "", 0, 1);
    assert_int_equal(audit_replay_changed(r), 2);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    audit_replay_write(r, f);
    fclose(f);
    assert_non_null(strstr(text, "allowed before, BLOCKED now: 1\n"));
    assert_non_null(strstr(text, "blocked before, ALLOWED now: 1\n"));
    assert_non_null(strstr(text, "  api.github.com\n         1  GET /repos/org/repo/pulls\n"));
    assert_non_null(strstr(text, "now: allowed by domains[1] (evil.com)"));
    assert_non_null(strstr(text, "was: net.log:6: BLOCKED GET https://evil.com/exfiltrate"));
    /* named, never dropped */
    assert_non_null(strstr(text, "not re-decidable:         1\n"));
    assert_non_null(strstr(text, "CONNECT on port 80/443, refused before the allowlist"));
    assert_non_null(strstr(text, "lines not read:           2\n"));
    assert_non_null(strstr(text, "line over the length cap"));
    assert_non_null(strstr(text, "net.log:13: not a log line"));
    free(text);
    audit_replay_free(r);

    /* escaped bytes are decided unescaped but shown escaped: no raw ESC on a terminal */
    r = audit_replay_new(p, "new.yaml");
    const char *esc = "allowed GET https://x\\x1bq.test/\\x1b]0;pwned\\x07 -> 200";
    audit_replay_line(r, "net.log", 1, esc, strlen(esc), 0);
    assert_int_equal(audit_replay_changed(r), 1);
    f = open_memstream(&text, &len);
    audit_replay_write(r, f);
    fclose(f);
    assert_null(memchr(text, 0x1b, len));
    assert_null(memchr(text, 0x07, len));
    assert_non_null(strstr(text, "  x\\x1bq.test\n"));
    free(text);
    audit_replay_free(r);

    /* nothing changes under the policy that produced the log */
    const char *same = "domains: [api.github.com, api.anthropic.com, down.example.com]\n";
    addon_policy_t *q = NULL;
    assert_int_equal(
        addon_policy_load_buffer("same.yaml", same, strlen(same), &q, err, sizeof(err)), 0);
    r = audit_replay_new(q, "same.yaml");
    for (size_t i = 0; sample[i] != NULL; i++)
        audit_replay_line(r, "net.log", i + 1, sample[i], strlen(sample[i]), 0);
    assert_int_equal(audit_replay_changed(r), 0);
    audit_replay_free(r);

    /* replacements: a masked request whose host no entry covers any more is a change */
    const char *rj = "{\"sk-surrogate-1234567890\": {\"value\": \"real-secret-value-123\", "
                     "\"scopes\": [\"api.anthropic.com\"], \"headers\": [\"x-api-key\"]}}";
    addon_replacements_t *repl = NULL;
    assert_int_equal(
        addon_replacements_load_buffer("repl.json", rj, strlen(rj), &repl, err, sizeof(err)), 0);
    r = audit_replay_new(q, "same.yaml");
    audit_replay_set_replacements(r, repl, "repl.json");
    for (size_t i = 0; sample[i] != NULL; i++)
        audit_replay_line(r, "net.log", i + 1, sample[i], strlen(sample[i]), 0);
    assert_int_equal(audit_replay_changed(r), 1); /* api.github.com's [masked: 1] */
    f = open_memstream(&text, &len);
    audit_replay_write(r, f);
    fclose(f);
    assert_non_null(strstr(text, "api.github.com: no entry covers this host now"));
    assert_null(strstr(text, "real-secret"));
    free(text);
    audit_replay_free(r);
    addon_replacements_unref(repl);
    addon_policy_unref(q);
    addon_policy_unref(p);
}

static int count_line(void *arg, unsigned long lineno, const char *line, size_t len, int overlong)
{
    unsigned long *c = arg;
    (void)line;
    c[0]++;
    c[1] = lineno;
    c[2] += overlong;
    c[3] += len;
    return 0;
}

static void test_audit_read_stream(void **state)
{
    (void)state;
    char path[] = "/tmp/audit-read-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 3000; i++)
        fprintf(f, "allowed GET https://h.test/%d -> 200\n", i);
    for (int i = 0; i < AUDIT_LINE_MAX + AUDIT_READ_BUF + 10; i++)
        fputc('x', f); /* one line longer than a whole read */
    fputs("\nlast line without newline", f);
    fclose(f);
    unsigned long c[4] = {0, 0, 0, 0};
    char err[256];
    assert_int_equal(audit_read_file(path, count_line, c, err, sizeof(err)), 0);
    assert_int_equal(c[0], 3002);
    assert_int_equal(c[1], 3002);
    assert_int_equal(c[2], 1);
    unlink(path);
    assert_int_not_equal(audit_read_file(path, count_line, c, err, sizeof(err)), 0);
    assert_non_null(strstr(err, path));
}

static void test_audit_tab_caps(void **state)
{
    (void)state;
    audit_tab_t *t = audit_tab_new(1000, sizeof(unsigned long));
    char key[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof(key), "k%d", i % 2000);
        unsigned long *v = audit_tab_get(t, key, (size_t)n, 1, NULL);
        if (i % 2000 < 1000) {
            assert_non_null(v);
            (*v)++;
        } else {
            assert_null(v);
        }
    }
    assert_int_equal(audit_tab_count(t), 1000);
    assert_int_equal(audit_tab_refused(t), 2000);
    unsigned long *v = audit_tab_get(t, "k7", 2, 0, NULL);
    assert_int_equal(*v, 3);
    const char *k;
    audit_tab_at(t, 999, &k, NULL);
    assert_string_equal(k, "k999");
    audit_tab_free(t);
}

static void test_audit_path_patterns(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"/repos/17/pulls/3?x=1", "/repos/*/pulls/*?*"},
        {"/v1/messages", "/v1/messages"},
        {"/", "/"},
        {"/u/550e8400-e29b-41d4-a716-446655440000/x", "/u/*/x"},
        {"/blob/0123abcd", "/blob/*"},
        {"/blob/deadbeef", "/blob/deadbeef"}, /* no digit: a word */
        {"/t/aGVsbG8gd29ybGQgdGhpcyBpcyBzZWNyZXQ1", "/t/*"},
        {"*", "*"},
        {"?only", "?*"},
    };
    char out[AUDIT_PATTERN_MAX];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        audit_path_pattern(cases[i][0], strlen(cases[i][0]), out, sizeof(out));
        assert_string_equal(out, cases[i][1]);
    }
    char longp[2000];
    memset(longp, 'a', sizeof(longp));
    longp[0] = '/';
    size_t n = audit_path_pattern(longp, sizeof(longp), out, sizeof(out));
    assert_true(n < sizeof(out));
    assert_string_equal(out + n - 3, "...");
}

static void test_audit_dns_flags(void **state)
{
    (void)state;
    assert_int_equal(audit_dns_flags("api.github.com", 14), 0);
    assert_int_equal(audit_dns_flags("storage.googleapis.com", 22), 0);
    const char *hex = "6b2f3a9c0d1e4f5a6b7c8d9e.evil.test";
    assert_true(audit_dns_flags(hex, strlen(hex)) & AUDIT_DNS_FLAG_ENTROPY);
    const char *lng = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.x.test";
    assert_true(audit_dns_flags(lng, strlen(lng)) & AUDIT_DNS_FLAG_LONG);
    assert_int_equal(audit_dns_parent("a.b.evil.test", 13), 4);
    assert_int_equal(audit_dns_parent("evil.test", 9), 0);
    size_t n;
    assert_true(audit_dns_entropy("aaaa.x.y", 8, &n) < 0.01);
    assert_int_equal(n, 4);
}

/* `airlock health` leaves a DNS line and a Host-less GET refused by the pre-checks: probes, not
 * the agent's traffic. A Host-less GET with no health query before it is still blocked. */
static void test_audit_report_health_probes(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "DNS A airlock-health.invalid -> 127.0.0.1",
        "BLOCKED GET - -> 400 (malformed request: missing Host header)",
        "allowed GET https://api.github.com/x -> 200",
        "DNS A airlock-health.invalid -> 127.0.0.1",
        "BLOCKED GET - -> 400 (malformed request: missing Host header)",
        "BLOCKED GET - -> 400 (malformed request: missing Host header)",
        "DNS A api.github.com -> 127.0.0.1",
        NULL,
    };
    char *h = report_html(lines, NULL);
    assert_non_null(strstr(h, "id=\"total-health\">2<"));
    assert_non_null(strstr(h, "id=\"total-requests\">2<"));
    assert_non_null(strstr(h, "id=\"total-blocked\">1<"));
    assert_non_null(strstr(h, "id=\"total-dns\">1<"));
    assert_null(strstr(h, "airlock-health.invalid"));
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_report_figures),
        cmocka_unit_test(test_audit_report_decisions),
        cmocka_unit_test(test_audit_report_health_probes),
        cmocka_unit_test(test_audit_report_explained_by_current),
        cmocka_unit_test(test_audit_report_timeline),
        cmocka_unit_test(test_audit_report_bounded),
        cmocka_unit_test(test_audit_replay_summary),
        cmocka_unit_test(test_audit_read_stream),
        cmocka_unit_test(test_audit_tab_caps),
        cmocka_unit_test(test_audit_path_patterns),
        cmocka_unit_test(test_audit_dns_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
