/* audit_sugg / audit_suggest: the entries suggested for blocked requests (path prefix at a
 * segment boundary, exact paths, methods, ports, glob characters kept literal, pre-checks
 * left out), and the round trip the issue asks for: the current allowlist plus the suggestion,
 * replayed against the same log, turns exactly the suggested requests to allowed and nothing
 * else changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_replay.h"
#include "audit/audit_req.h"
#include "audit/audit_suggest.h"

static addon_policy_t *load(const char *yaml)
{
    addon_policy_t *p = NULL;
    char err[512];
    if (addon_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, err, sizeof(err)) != 0)
        fail_msg("%s\n---\n%s", err, yaml);
    return p;
}

/* Runs suggest over lines (NULL-terminated) and returns its YAML (caller frees). */
static char *suggest(const char *const *lines, const addon_policy_t *cur)
{
    audit_suggest_t *s = audit_suggest_new(cur);
    assert_non_null(s);
    for (size_t i = 0; lines[i] != NULL; i++)
        audit_suggest_line(s, "t.log", i + 1, lines[i], strlen(lines[i]), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    audit_suggest_write(s, f);
    fclose(f);
    audit_suggest_free(s);
    return text;
}

static void test_audit_sugg_entries(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "BLOCKED GET https://api.test/v1/users/1 -> 403",
        "BLOCKED GET https://api.test/v1/users/2?x=1 -> 403",
        "BLOCKED POST https://api.test/v1/orders -> 403",
        "BLOCKED GET https://one.test/exact/path -> 403",
        "BLOCKED GET https://q.test/exact -> 403",
        "BLOCKED GET https://q.test/exact?y=2 -> 403",
        "BLOCKED GET https://seg.test/files -> 403",
        "BLOCKED GET https://seg.test/files/a -> 403",
        "BLOCKED PUT http://port.test:8080/a -> 403",
        "BLOCKED PUT https://port.test:8443/a -> 403",
        "BLOCKED GET https://glob.test/a*b%3F[c -> 403",
        "BLOCKED GET https://root.test/a -> 403",
        "BLOCKED GET https://root.test/b -> 403",
        "BLOCKED CONNECT tun.test:8443 -> 403",
        "BLOCKED GET https://pre.test/a/../b -> 403",
        "allowed GET https://ok.test/ -> 200",
        "BLOCKED GET https://a.test/ -> 403 (host mismatch: header=a.test, sni=b.test)",
        NULL,
    };
    char *y = suggest(lines, NULL);
    /* api.test: common prefix /v1/, methods GET and POST */
    assert_non_null(strstr(y, "  - host: \"api.test\"\n    path: \"/v1/*\"\n"
                              "    methods: [\"GET\", \"POST\"]\n"));
    /* a single path without query: exact */
    assert_non_null(strstr(y, "  - host: \"one.test\"\n    path: \"/exact/path\"\n"));
    /* the same path, once with a query: the path then anything */
    assert_non_null(strstr(y, "  - host: \"q.test\"\n    path: \"/exact*\"\n"));
    /* "/files" and "/files/a" share the whole segment "files" */
    assert_non_null(strstr(y, "  - host: \"seg.test\"\n    path: \"/files*\"\n"));
    /* non-default ports, for plain http and TLS */
    assert_non_null(strstr(y, "  - host: \"port.test\"\n    path: \"/a\"\n"
                              "    methods: [\"PUT\"]\n    ports: [8080, 8443]\n"));
    /* glob characters in a path match only themselves */
    assert_non_null(strstr(y, "path: \"/a[*]b[?][[]c\""));
    /* no common prefix beyond "/": any path */
    assert_non_null(strstr(y, "  - host: \"root.test\"\n    methods: [\"GET\"]\n"));
    /* CONNECT: host and port, no path nor methods */
    assert_non_null(strstr(y, "  - host: \"tun.test\"\n    ports: [8443]\n"));
    /* pre-checks and pre-policy lines are named, never suggested */
    assert_null(strstr(y, "\"pre.test\""));
    assert_non_null(strstr(y, "no entry can allow (1)"));
    assert_non_null(strstr(y, "path has a .. segment"));
    assert_non_null(strstr(y, "host mismatch"));
    assert_null(strstr(y, "ok.test\""));
    /* the output is itself a valid allowlist */
    addon_policy_t *p = load(y);
    addon_policy_unref(p);
    free(y);
}

static void test_audit_sugg_nothing(void **state)
{
    (void)state;
    static const char *const lines[] = {"allowed GET https://ok.test/ -> 200", NULL};
    char *y = suggest(lines, NULL);
    assert_non_null(strstr(y, "url_prefixes: []\n"));
    addon_policy_t *p = load(y);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_URL_PREFIXES), 0);
    addon_policy_unref(p);
    free(y);
}

/* The requests of the round trip; the log is written by deciding each under CUR, as the proxy
 * would have. */
static const char *const rt_requests[][2] = {
    {"GET", "https://api.test/v1/users/1"},
    {"GET", "https://api.test/v1/users/2?page=3"},
    {"POST", "https://api.test/v1/users"},
    {"DELETE", "https://api.test/v1/users/1"},
    {"GET", "https://api.test/v2/other"},
    {"GET", "https://new.test/"},
    {"GET", "https://new.test/docs/index.html"},
    {"POST", "https://new.test/docs/upload"},
    {"HEAD", "http://plain.test/x"},
    {"GET", "http://plain.test:8080/y"},
    {"GET", "https://enc.test/a%20b/c%2Fd"},
    {"GET", "https://enc.test/a%20b/e"},
    {"GET", "https://utf.test/caf%C3%A9/menu"},
    {"GET", "https://utf.test/caf%C3%A9/drinks"},
    {"GET", "https://glob.test/weird*name?q=[1]"},
    {"GET", "https://dots.test/a/%2e%2e/etc"},
    {"GET", "https://dots.test/ok"},
    {"GET", "https://[2001:db8::1]/v6"},
    {"OPTIONS", "http://star.test*"},
    {"GET", "https://github.test/repos/x"},
    {"PATCH", "https://github.test/repos/x"},
    {"CONNECT", "tun.test:443"},
    {"CONNECT", "tun2.test:8443"},
    {"CONNECT", "api.test:443"},
};

static const char rt_current[] = "domains: [github.test]\n"
                                 "url_prefixes:\n"
                                 "  - host: api.test\n"
                                 "    path: /v1/users*\n"
                                 "    methods: [GET]\n"
                                 "  - host: tun.test\n"
                                 "    ports: [8443]\n"
                                 "    path: /never\n";

static void test_audit_sugg_round_trip(void **state)
{
    (void)state;
    addon_policy_t *cur = load(rt_current);
    size_t n = sizeof(rt_requests) / sizeof(rt_requests[0]);
    char **lines = calloc(n + 1, sizeof(*lines));
    int *then = calloc(n, sizeof(*then));
    static audit_req_t r;
    for (size_t i = 0; i < n; i++) {
        char tmp[1024];
        snprintf(tmp, sizeof(tmp), "allowed %s %s -> 200", rt_requests[i][0], rt_requests[i][1]);
        audit_line_t l;
        assert_int_equal(audit_line_parse(tmp, strlen(tmp), &l), 0);
        audit_req_from_line(&l, &r);
        assert_int_equal(r.redecidable, 1);
        then[i] = audit_req_decide(cur, &r, NULL, 0);
        lines[i] = malloc(1100);
        snprintf(lines[i], 1100, "%s %s %s -> %s", then[i] ? "allowed" : "BLOCKED",
                 rt_requests[i][0], rt_requests[i][1], then[i] ? "200" : "403");
    }
    char *y = suggest((const char *const *)lines, cur);
    /* merge: CUR's text, then the suggested items under its url_prefixes */
    const char *items = strstr(y, "url_prefixes:\n");
    assert_non_null(items);
    items += strlen("url_prefixes:\n");
    size_t mlen = strlen(rt_current) + strlen(items) + 1;
    char *merged = malloc(mlen);
    snprintf(merged, mlen, "%s%s", rt_current, items);
    addon_policy_t *next = load(merged);

    /* expected: every request CUR blocks turns allowed, except what no entry can allow */
    addon_policy_t *probe = audit_req_probe_policy();
    unsigned long want_changes = 0;
    for (size_t i = 0; i < n; i++) {
        audit_line_t l;
        audit_line_parse(lines[i], strlen(lines[i]), &l);
        audit_req_from_line(&l, &r);
        int now = audit_req_decide(next, &r, NULL, 0);
        int expect = then[i] || !audit_req_unallowable(probe, &r, NULL, 0);
        if (now != expect)
            fail_msg("%s: now %d, expected %d\n%s", lines[i], now, expect, merged);
        want_changes += now != then[i];
    }
    assert_true(want_changes >= 15);

    /* replay says the same: only blocked -> allowed, as many as suggested */
    audit_replay_t *rp = audit_replay_new(next, "merged");
    audit_suggest_t *s = audit_suggest_new(cur);
    for (size_t i = 0; i < n; i++) {
        audit_replay_line(rp, "t.log", i + 1, lines[i], strlen(lines[i]), 0);
        audit_suggest_line(s, "t.log", i + 1, lines[i], strlen(lines[i]), 0);
    }
    assert_int_equal(audit_replay_changed(rp), want_changes);
    assert_int_equal(audit_sugg_requests(audit_suggest_sugg(s)), want_changes);
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    audit_replay_write(rp, f);
    fclose(f);
    assert_non_null(strstr(text, "allowed before, BLOCKED now: 0\n"));
    free(text);
    audit_suggest_free(s);
    audit_replay_free(rp);

    addon_policy_unref(probe);
    addon_policy_unref(next);
    addon_policy_unref(cur);
    free(merged);
    free(y);
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    free(then);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_sugg_entries),
        cmocka_unit_test(test_audit_sugg_nothing),
        cmocka_unit_test(test_audit_sugg_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
