/* Warn mode (docs/allowlist.md, "Warn mode"): `mode: warn` on an allowlist lets a request it
 * would block go on, and a block entry with `mode: warn` blocks nothing; either way the request
 * is marked (req->warn) and annotated with what would have blocked it, so its line says WARN.
 * The path pre-checks are never relaxed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon.h"
#include "addons/addon_allowlist.h"
#include "addons/addon_policy.h"
#include "base/px_err.h"

static addon_policy_t *load(const char *yaml)
{
    char err[512];
    addon_policy_t *p = NULL;
    int rc = addon_policy_load_buffer("al.yaml", yaml, strlen(yaml), &p, err, sizeof(err));
    if (rc != 0)
        fail_msg("load: %s", err);
    return p;
}

static void test_warn_load(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        int rc, warn;
        const char *err;
    } cases[] = {
        {"domains: [a.test]\n", 0, 0, NULL},
        {"mode: enforce\ndomains: [a.test]\n", 0, 0, NULL},
        {"mode: warn\ndomains: [a.test]\n", 0, 1, NULL},
        {"mode: loud\n", PX_ECONFIG, 0, "al.yaml:1:7: mode: expected 'enforce' or 'warn'"},
        {"mode: [warn]\n", PX_ECONFIG, 0, NULL},
        {"block:\n  - host: a.test\n    mode: shadow\n", PX_ECONFIG, 0,
         "block[0].mode: expected 'enforce' or 'warn'"},
        {"url_prefixes:\n  - host: a.test\n    mode: warn\n", PX_ECONFIG, 0, "unknown key 'mode'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512] = "";
        addon_policy_t *p = NULL;
        int rc = addon_policy_load_buffer("al.yaml", cases[i].yaml, strlen(cases[i].yaml), &p, err,
                                          sizeof(err));
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d (%s), want %d", i, rc, err, cases[i].rc);
        if (rc == 0)
            assert_int_equal(addon_policy_warn_mode(p), cases[i].warn);
        if (cases[i].err != NULL && strstr(err, cases[i].err) == NULL)
            fail_msg("case %zu: error '%s', want '%s'", i, err, cases[i].err);
        addon_policy_unref(p);
    }
}

typedef struct warn_case {
    const char *method, *host, *path;
    int rc;            /* ADDON_NEXT or ADDON_ANSWER */
    int warn;          /* req->warn after */
    const char *annot; /* the annotations after */
} warn_case_t;

static void run_cases(const char *yaml, const warn_case_t *cases, size_t n)
{
    addon_policy_t *p = load(yaml);
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_allowlist();
    addon_req_t *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    for (size_t i = 0; i < n; i++) {
        addon_req_reset(r);
        r->method = (addon_str_t){cases[i].method, strlen(cases[i].method)};
        r->host = (addon_str_t){cases[i].host, strlen(cases[i].host)};
        r->path = (addon_str_t){cases[i].path, strlen(cases[i].path)};
        r->target = r->path;
        r->port = 443;
        r->tls = 1;
        r->config = &cfg;
        r->url = "https://x/";
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        int rc = a->on_request_head(a, r, &ans);
        if (rc != cases[i].rc || r->warn != cases[i].warn || strcmp(r->annot, cases[i].annot) != 0)
            fail_msg("%s %s%.40s: rc %d warn %d annot '%s'; want rc %d warn %d annot '%s'",
                     cases[i].method, cases[i].host, cases[i].path, rc, r->warn, r->annot,
                     cases[i].rc, cases[i].warn, cases[i].annot);
        assert_int_equal(r->allowed, rc == ADDON_NEXT);
    }
    addon_req_reset(r);
    free(r);
    addon_policy_unref(p);
}

static void test_warn_file(void **state)
{
    (void)state;
    static const char yaml[] = "mode: warn\n"
                               "domains: [open.test]\n"
                               "url_prefixes:\n"
                               "  - host: api.test\n"
                               "    path: /v1/*\n"
                               "    methods: [GET]\n"
                               "block:\n"
                               "  - host: open.test\n"
                               "    path: /admin*\n";
    static char long_path[ADDON_POLICY_PATH_MAX + 16];
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[0] = '/';
    const warn_case_t cases[] = {
        {"GET", "open.test", "/", ADDON_NEXT, 0, ""},
        {"GET", "api.test", "/v1/x", ADDON_NEXT, 0, ""},
        {"GET", "other.test", "/", ADDON_NEXT, 1, " [warn: host/path not in allowlist]"},
        {"GET", "api.test", "/v2/x", ADDON_NEXT, 1, " [warn: host/path not in allowlist]"},
        {"POST", "api.test", "/v1/x", ADDON_NEXT, 1, " [warn: method not allowed]"},
        {"GET", "open.test", "/admin", ADDON_NEXT, 1, " [warn: block[0] al.yaml:8]"},
        /* a path pre-check is never relaxed */
        {"GET", "open.test", long_path, ADDON_ANSWER, 0, ""},
    };
    run_cases(yaml, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_warn_block_entry(void **state)
{
    (void)state;
    static const char yaml[] = "domains: [open.test]\n"
                               "block:\n"
                               "  - host: open.test\n"
                               "    path: /new-rule*\n"
                               "    mode: warn\n"
                               "  - host: open.test\n"
                               "    path: /admin*\n";
    const warn_case_t cases[] = {
        {"GET", "open.test", "/", ADDON_NEXT, 0, ""},
        {"GET", "open.test", "/new-rule/x", ADDON_NEXT, 1, " [warn: block[0] al.yaml:3]"},
        {"GET", "open.test", "/admin", ADDON_ANSWER, 0, ""},
        /* a warn block entry allows nothing: a request no entry allows is still blocked */
        {"GET", "other.test", "/new-rule", ADDON_ANSWER, 0, ""},
    };
    run_cases(yaml, cases, sizeof(cases) / sizeof(cases[0]));
    addon_policy_t *p = load(yaml);
    size_t bi;
    addon_str_t host = {"open.test", 9};
    assert_int_equal(addon_policy_host_blocked(p, host, &bi), 0); /* a CONNECT is not refused */
    addon_policy_unref(p);
}

/* --print-effective writes the mode back, and the text loads deciding the same. */
static void test_warn_effective(void **state)
{
    (void)state;
    static const char yaml[] = "mode: warn\n"
                               "domains: [open.test]\n"
                               "block:\n"
                               "  - host: open.test\n"
                               "    path: /x\n"
                               "    mode: warn\n";
    addon_policy_t *p = load(yaml);
    char buf[4096];
    addon_policy_print_effective(p, buf, sizeof(buf));
    assert_non_null(strstr(buf, "\nmode: warn"));
    assert_non_null(strstr(buf, "    mode: warn\n"));
    addon_policy_t *back = load(buf);
    assert_int_equal(addon_policy_warn_mode(back), 1);
    addon_policy_query_t q = {
        .method = {"GET", 3}, .host = {"open.test", 9}, .path = {"/x", 2}, .port = 443, .tls = 1};
    addon_policy_decision_t d;
    addon_policy_decide(back, &q, &d);
    assert_int_equal(d.allowed, 1);
    assert_int_equal(d.warn_block, 1);
    addon_policy_unref(back);
    addon_policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_warn_load),
        cmocka_unit_test(test_warn_file),
        cmocka_unit_test(test_warn_block_entry),
        cmocka_unit_test(test_warn_effective),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
