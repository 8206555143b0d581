/* audit_req: which access lines can be re-decided (and why not), what the allowlist said then,
 * and re-deciding with the proxy's policy code (addon_policy_decide / has_host), escapes
 * undone; the probe that finds requests no entry can allow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_req.h"

static addon_policy_t *load(const char *yaml)
{
    addon_policy_t *p = NULL;
    char err[256];
    if (addon_policy_load_buffer("t.yaml", yaml, strlen(yaml), &p, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    return p;
}

static int req(const char *line, audit_req_t *r)
{
    audit_line_t l;
    audit_line_parse(line, strlen(line), &l);
    return audit_req_from_line(&l, r);
}

typedef struct class_case {
    const char *line;
    int redecidable;
    int then_allowed;
    const char *not_why_part;
} class_case_t;

static const class_case_t class_cases[] = {
    {"allowed GET https://a.test/x -> 200", 1, 1, NULL},
    {"allowed GET https://a.test/ws -> 101", 1, 1, NULL},
    {"BLOCKED GET https://a.test/x -> 403", 1, 0, NULL},
    {"ERROR GET https://a.test/x -> Connection failed: refused", 1, 1, NULL},
    {"ERROR PUT https://s3.test/k -> 403 (signing failed: no date)", 1, 1, NULL},
    {"BLOCKED GET http://a.test/x -> 403 (credential needs https)", 1, 1, NULL},
    {"BLOCKED POST https://a.test/x -> 413 (request body over the limit)", 1, 1, NULL},
    {"allowed CONNECT a.test:443 -> 200", 1, 1, NULL},
    {"allowed CONNECT a.test:443 -> 200 tunnel", 1, 1, NULL},
    {"BLOCKED CONNECT a.test:443 -> 403", 1, 0, NULL},
    {"BLOCKED - - -> 400 (malformed request: invalid Host header)", 0, 0, "400/431"},
    {"BLOCKED GET - -> 400 (malformed request: missing Host header)", 0, 0, "400/431"},
    {"BLOCKED GET https://a.test/ -> 431 (request head too large: x)", 0, 0, "400/431"},
    {"BLOCKED - - -> 408 (request head not received in time)", 0, 0, "408"},
    {"BLOCKED GET https://a.test/ -> 403 (host mismatch: header=a.test, sni=b.test)", 0, 0,
     "host mismatch"},
    {"BLOCKED CONNECT b.test:443 -> 403 (host mismatch: connect=b.test, sni=c.test)", 0, 0,
     "host mismatch"},
    {"BLOCKED CONNECT a.test:443 -> 403 (tunneling not allowed)", 0, 0, "CONNECT on port 80/443"},
    {"BLOCKED CONNECT a.test:443 -> 403 (tunnel: no TLS ClientHello)", 0, 0, "ClientHello"},
    {"ERROR GET https://a.test/ -> internal error in an addon", 0, 0, "internal error"},
    {"BLOCKED GET https://a.test/ -> 403 (canary leaked: ssh-marker)", 0, 0,
     "other than the allowlist"},
    {"allowed GET https://a.test/aaa -> 200 ...(truncated)", 0, 0, "cut"},
    {"DNS A a.test -> 1.2.3.4", 0, 0, "not an access line"},
};

static void test_audit_req_classes(void **state)
{
    (void)state;
    static audit_req_t r;
    for (size_t i = 0; i < sizeof(class_cases) / sizeof(class_cases[0]); i++) {
        const class_case_t *c = &class_cases[i];
        assert_int_equal(req(c->line, &r), 0);
        if (r.redecidable != c->redecidable)
            fail_msg("%s: redecidable %d", c->line, r.redecidable);
        if (c->redecidable) {
            assert_int_equal(r.then_allowed, c->then_allowed);
        } else {
            assert_non_null(r.not_why);
            if (strstr(r.not_why, c->not_why_part) == NULL)
                fail_msg("%s: %s", c->line, r.not_why);
        }
    }
}

static void test_audit_req_fields(void **state)
{
    (void)state;
    static audit_req_t r;
    assert_int_equal(req("allowed GET https://API.Test.:8443/a%2Fb?q=\\x01 -> 200", &r), 0);
    assert_int_equal(r.redecidable, 1);
    assert_string_equal(r.host, "api.test");
    assert_int_equal(r.port, 8443);
    assert_int_equal(r.tls, 1);
    assert_int_equal(r.path_len, 10);
    assert_memory_equal(r.path, "/a%2Fb?q=\x01", 10);
    assert_string_equal(r.method, "GET");
    assert_int_equal(req("allowed GET http://[::1]/ -> 200", &r), 0);
    assert_string_equal(r.host, "::1");
    assert_int_equal(r.port, 80);
    assert_int_equal(r.tls, 0);
}

static void test_audit_req_decide(void **state)
{
    (void)state;
    addon_policy_t *p = load("domains: [a.test]\n"
                             "url_prefixes:\n"
                             "  - host: api.test\n"
                             "    path: /v1/*\n"
                             "    methods: [GET]\n"
                             "  - host: alt.test\n"
                             "    ports: [8443]\n");
    static audit_req_t r;
    char why[AUDIT_WHY_MAX];
    req("BLOCKED GET https://a.test/x -> 403", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 1);
    assert_non_null(strstr(why, "domains[0]"));
    req("allowed POST https://api.test/v1/m -> 200", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "method POST"));
    req("allowed GET https://api.test/v2/m -> 200", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 0);
    req("allowed GET https://a.test:8443/ -> 200", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 0);
    req("allowed GET https://alt.test:8443/ -> 200", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 1);
    /* percent-decoding happens in the policy, as in the proxy: %2e%2e is a dot segment */
    req("BLOCKED GET https://a.test/x/%2e%2e/y -> 403", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "pre-check"));
    /* CONNECT: host and port only */
    req("BLOCKED CONNECT alt.test:8443 -> 403", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 1);
    assert_non_null(strstr(why, "alt.test"));
    req("allowed CONNECT evil.test:443 -> 200", &r);
    assert_int_equal(audit_req_decide(p, &r, why, sizeof(why)), 0);
    assert_int_equal(audit_req_decide(NULL, &r, NULL, 0), 0);
    addon_policy_unref(p);
}

static void test_audit_req_unallowable(void **state)
{
    (void)state;
    addon_policy_t *probe = audit_req_probe_policy();
    assert_non_null(probe);
    static audit_req_t r;
    char why[AUDIT_WHY_MAX];
    req("BLOCKED GET https://x.test/a/..;/b -> 403", &r);
    assert_int_equal(audit_req_unallowable(probe, &r, why, sizeof(why)), 1);
    assert_non_null(strstr(why, "pre-check"));
    req("BLOCKED GET https://x.test/a%5cb -> 403", &r);
    assert_int_equal(audit_req_unallowable(probe, &r, why, sizeof(why)), 1);
    req("BLOCKED GET https://x.test:9999/ok -> 403", &r); /* a port an entry can list */
    assert_int_equal(audit_req_unallowable(probe, &r, why, sizeof(why)), 0);
    req("BLOCKED DELETE http://x.test/ok -> 403", &r);
    assert_int_equal(audit_req_unallowable(probe, &r, why, sizeof(why)), 0);
    req("BLOCKED CONNECT x.test:443 -> 403", &r);
    assert_int_equal(audit_req_unallowable(probe, &r, why, sizeof(why)), 0);
    addon_policy_unref(probe);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audit_req_classes),
        cmocka_unit_test(test_audit_req_fields),
        cmocka_unit_test(test_audit_req_decide),
        cmocka_unit_test(test_audit_req_unallowable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
